//! Tuples of parallel iterators zipped together: `(a, b, c).into_par_iter()`
//! yields `(a_i, b_i, c_i)` for the length of the shortest (rayon's
//! `MultiZip`), for tuples of two to six indexed iterators (or things
//! that turn into them: `(&v, &mut w)`).
//!
//! ```
//! use terroir::prelude::*;
//! let (a, b, c) = (vec![1, 2, 3], vec![10, 20, 30], vec![100, 200]);
//! let sums: Vec<i32> = (&a, &b, &c).into_par_iter().map(|(x, y, z)| x + y + z).collect();
//! assert_eq!(sums, [111, 222]);
//! ```

use super::{IndexedParallelIterator, IntoParallelIterator, Map, Zip};

/// A tuple of two to six parallel iterators zipped: the nested [`Zip`]s
/// with their items flattened into one tuple.
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

macro_rules! multizip {
    ($first:ident, $($name:ident),+; $zipped:ty; |$pat:pat_param| ($($out:ident),+)) => {
        impl<$first, $($name),+> IntoParallelIterator for ($first, $($name),+)
        where
            $first: IntoParallelIterator<Iter: IndexedParallelIterator>,
            $($name: IntoParallelIterator<Iter: IndexedParallelIterator>),+
        {
            type Iter = MultiZip<$zipped, ($first::Item, $($name::Item),+)>;
            type Item = ($first::Item, $($name::Item),+);
            #[allow(non_snake_case)]
            fn into_par_iter(self) -> Self::Iter {
                let ($first, $($name),+) = self;
                let zipped = $first.into_par_iter()$(.zip($name))+;
                let flat: fn(<$zipped as super::ParallelIterator>::Item) -> Self::Item =
                    |$pat| ($($out),+);
                super::ParallelIterator::map(zipped, flat)
            }
        }
    };
}

multizip!(A, B, C; Zip<Zip<A::Iter, B::Iter>, C::Iter>; |((a, b), c)| (a, b, c));
multizip!(A, B, C, D; Zip<Zip<Zip<A::Iter, B::Iter>, C::Iter>, D::Iter>;
    |(((a, b), c), d)| (a, b, c, d));
multizip!(A, B, C, D, E; Zip<Zip<Zip<Zip<A::Iter, B::Iter>, C::Iter>, D::Iter>, E::Iter>;
    |((((a, b), c), d), e)| (a, b, c, d, e));
multizip!(A, B, C, D, E, F;
    Zip<Zip<Zip<Zip<Zip<A::Iter, B::Iter>, C::Iter>, D::Iter>, E::Iter>, F::Iter>;
    |(((((a, b), c), d), e), f)| (a, b, c, d, e, f));
