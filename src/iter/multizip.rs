//! Tuples of parallel iterators zipped together: `(a, b, c).into_par_iter()`
//! yields `(a_i, b_i, c_i)` for the length of the shortest (rayon's
//! `MultiZip`), for tuples of one to twelve indexed iterators (or things
//! that turn into them: `(&v, &mut w)`), and references to tuples of
//! collections (`(&(v, w)).into_par_iter()` iterates `(&v[i], &w[i])`,
//! `&mut` gives `&mut` items).
//!
//! ```
//! use terroir::prelude::*;
//! let (a, b, c) = (vec![1, 2, 3], vec![10, 20, 30], vec![100, 200]);
//! let sums: Vec<i32> = (&a, &b, &c).into_par_iter().map(|(x, y, z)| x + y + z).collect();
//! assert_eq!(sums, [111, 222]);
//! let mut pair = (vec![1, 2], vec![3, 4]);
//! (&mut pair).into_par_iter().for_each(|(x, y)| std::mem::swap(x, y));
//! assert_eq!(pair, (vec![3, 4], vec![1, 2]));
//! ```

use super::{
    IndexedParallelIterator, IntoParallelIterator, IntoParallelRefIterator,
    IntoParallelRefMutIterator, Map, Zip,
};

/// A tuple of one or three to twelve parallel iterators zipped: the
/// nested [`Zip`]s with their items flattened into one tuple (a pair is a
/// plain [`Zip`]).
pub type MultiZip<Z, T> = Map<Z, fn(<Z as super::ParallelIterator>::Item) -> T>;

impl<A, B> IntoParallelIterator for (A, B)
where
    A: IntoParallelIterator<Iter: IndexedParallelIterator>,
    B: IntoParallelIterator<Iter: IndexedParallelIterator>,
{
    type Iter = Zip<A::Iter, B::Iter>;
    type Item = (A::Item, B::Item);
    fn into_par_iter(self) -> Self::Iter {
        self.0.into_par_iter().zip(self.1)
    }
}

/// The nested zips of a tuple's iterators, right-nested: `Zip<A, Zip<B, C>>`.
macro_rules! zipped {
    ($a:ident) => { $a::Iter };
    ($a:ident, $($r:ident),+) => { Zip<$a::Iter, zipped!($($r),+)> };
}

/// The expression of [`zipped!`].
macro_rules! zip_expr {
    ($a:ident) => { $a.into_par_iter() };
    ($a:ident, $($r:ident),+) => { $a.into_par_iter().zip(zip_expr!($($r),+)) };
}

/// The pattern of a [`zipped!`] item: `(a, (b, c))`.
macro_rules! zip_pat {
    ($a:ident) => { $a };
    ($a:ident, $($r:ident),+) => { ($a, zip_pat!($($r),+)) };
}

macro_rules! multizip {
    ($($idx:tt $t:ident $v:ident),+) => {
        impl<$($t),+> IntoParallelIterator for ($($t,)+)
        where
            $($t: IntoParallelIterator<Iter: IndexedParallelIterator>),+
        {
            type Iter = MultiZip<zipped!($($t),+), ($($t::Item,)+)>;
            type Item = ($($t::Item,)+);
            fn into_par_iter(self) -> Self::Iter {
                let ($($v,)+) = self;
                let zipped = zip_expr!($($v),+);
                let flat: fn(<zipped!($($t),+) as super::ParallelIterator>::Item) -> Self::Item =
                    |zip_pat!($($v),+)| ($($v,)+);
                super::ParallelIterator::map(zipped, flat)
            }
        }
        multizip!(refs $($idx $t),+);
    };
    (refs $($idx:tt $t:ident),+) => {
        impl<'a, $($t),+> IntoParallelIterator for &'a ($($t,)+)
        where
            $($t: IntoParallelRefIterator<'a, Iter: IndexedParallelIterator>),+
        {
            type Iter = <($($t::Iter,)+) as IntoParallelIterator>::Iter;
            type Item = <($($t::Iter,)+) as IntoParallelIterator>::Item;
            fn into_par_iter(self) -> Self::Iter {
                ($(self.$idx.par_iter(),)+).into_par_iter()
            }
        }

        impl<'a, $($t),+> IntoParallelIterator for &'a mut ($($t,)+)
        where
            $($t: IntoParallelRefMutIterator<'a, Iter: IndexedParallelIterator>),+
        {
            type Iter = <($($t::Iter,)+) as IntoParallelIterator>::Iter;
            type Item = <($($t::Iter,)+) as IntoParallelIterator>::Item;
            fn into_par_iter(self) -> Self::Iter {
                ($(self.$idx.par_iter_mut(),)+).into_par_iter()
            }
        }
    };
}

multizip!(0 A a);
multizip!(refs 0 A, 1 B);
multizip!(0 A a, 1 B b, 2 C c);
multizip!(0 A a, 1 B b, 2 C c, 3 D d);
multizip!(0 A a, 1 B b, 2 C c, 3 D d, 4 E e);
multizip!(0 A a, 1 B b, 2 C c, 3 D d, 4 E e, 5 F f);
multizip!(0 A a, 1 B b, 2 C c, 3 D d, 4 E e, 5 F f, 6 G g);
multizip!(0 A a, 1 B b, 2 C c, 3 D d, 4 E e, 5 F f, 6 G g, 7 H h);
multizip!(0 A a, 1 B b, 2 C c, 3 D d, 4 E e, 5 F f, 6 G g, 7 H h, 8 I i);
multizip!(0 A a, 1 B b, 2 C c, 3 D d, 4 E e, 5 F f, 6 G g, 7 H h, 8 I i, 9 J j);
multizip!(0 A a, 1 B b, 2 C c, 3 D d, 4 E e, 5 F f, 6 G g, 7 H h, 8 I i, 9 J j, 10 K k);
multizip!(0 A a, 1 B b, 2 C c, 3 D d, 4 E e, 5 F f, 6 G g, 7 H h, 8 I i, 9 J j, 10 K k, 11 L l);
