//! [`Either`] (the `either` crate's, re-exported as rayon does) as a
//! parallel iterator, a collection to extend, and the result of
//! [`partition_map`](super::ParallelIterator::partition_map).

pub use either::Either;

use super::engine::{Consumer, Extent, Hints, Piece};
use super::{
    FromParallelIterator, IndexedParallelIterator, IntoParallelIterator, ParallelExtend,
    ParallelIterator,
};

/// Either of two parallel iterators with the same items: runs the one it
/// holds (indexed when both are).
///
/// ```
/// use terroir::iter::Either;
/// use terroir::prelude::*;
/// let pick = |evens: bool| if evens {
///     Either::Left((0..10).into_par_iter().filter(|x| x % 2 == 0))
/// } else {
///     Either::Right((0..10).into_par_iter().filter(|x| x % 2 == 1))
/// };
/// assert_eq!(pick(true).sum::<i32>(), 20);
/// assert_eq!(pick(false).sum::<i32>(), 25);
/// type V = terroir::vec::IntoIter<usize>;
/// let e: Either<V, terroir::iter::Rev<V>> = Either::Left(vec![1, 2, 3].into_par_iter());
/// assert_eq!(e.enumerate().map(|(i, x)| i * x).sum::<usize>(), 8);
/// ```
impl<L, R> ParallelIterator for Either<L, R>
where
    L: ParallelIterator,
    R: ParallelIterator<Item = L::Item>,
{
    type Item = L::Item;
    fn drive_engine<C: Consumer<L::Item>>(self, consumer: C) -> C::Result {
        match self {
            Either::Left(l) => l.drive_engine(consumer),
            Either::Right(r) => r.drive_engine(consumer),
        }
    }
    fn opt_len(&self) -> Option<usize> {
        match self {
            Either::Left(l) => l.opt_len(),
            Either::Right(r) => r.opt_len(),
        }
    }
}

impl<L, R> IndexedParallelIterator for Either<L, R>
where
    L: IndexedParallelIterator,
    R: IndexedParallelIterator<Item = L::Item>,
{
    type Piece<'a>
        = Either<L::Piece<'a>, R::Piece<'a>>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        match self {
            Either::Left(l) => Either::Left(l.piece()),
            Either::Right(r) => Either::Right(r.piece()),
        }
    }
    fn len(&self) -> usize {
        match self {
            Either::Left(l) => l.len(),
            Either::Right(r) => r.len(),
        }
    }
}

/// The piece of either side.
impl<A, B> Piece for Either<A, B>
where
    A: Piece,
    B: Piece<Item = A::Item>,
{
    type Item = A::Item;
    type Seq<'s>
        = Either<A::Seq<'s>, B::Seq<'s>>
    where
        Self: 's;
    type RevSeq<'s>
        = Either<A::RevSeq<'s>, B::RevSeq<'s>>
    where
        Self: 's;
    fn units(&self) -> usize {
        either::for_both!(self, p => p.units())
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        match self {
            Either::Left(p) => {
                let (a, b) = p.split_at(mid);
                (Either::Left(a), Either::Left(b))
            }
            Either::Right(p) => {
                let (a, b) = p.split_at(mid);
                (Either::Right(a), Either::Right(b))
            }
        }
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        match self {
            Either::Left(p) => Either::Left(p.front(n)),
            Either::Right(p) => Either::Right(p.front(n)),
        }
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        match self {
            Either::Left(p) => Either::Left(p.back_rev(n)),
            Either::Right(p) => Either::Right(p.back_rev(n)),
        }
    }
    fn hints(&self) -> Hints {
        either::for_both!(self, p => p.hints())
    }
    fn layout(&self, out: &mut Vec<Extent>) {
        either::for_both!(self, p => p.layout(out))
    }
    fn pure(&self) -> bool {
        either::for_both!(self, p => p.pure())
    }
}

/// Extends the collection it holds.
///
/// ```
/// use std::collections::BTreeSet;
/// use terroir::iter::Either;
/// use terroir::prelude::*;
/// let mut e: Either<Vec<i32>, BTreeSet<i32>> = Either::Right(BTreeSet::new());
/// e.par_extend((0..5).into_par_iter().map(|x| x % 3));
/// assert_eq!(e, Either::Right(BTreeSet::from([0, 1, 2])));
/// ```
impl<L, R, T> ParallelExtend<T> for Either<L, R>
where
    L: ParallelExtend<T>,
    R: ParallelExtend<T>,
    T: Send,
{
    fn par_extend<I>(&mut self, par_iter: I)
    where
        I: IntoParallelIterator<Item = T>,
    {
        match self {
            Either::Left(l) => l.par_extend(par_iter),
            Either::Right(r) => r.par_extend(par_iter),
        }
    }
}

/// The `Left` and the `Right` values of each run, in order.
fn sides<I, L, R>(iter: I) -> (Vec<Vec<L>>, Vec<Vec<R>>)
where
    I: ParallelIterator<Item = Either<L, R>>,
    L: Send,
    R: Send,
{
    let runs: Vec<(Vec<L>, Vec<R>)> = iter
        .fold(
            || (Vec::new(), Vec::new()),
            |(mut ls, mut rs), e| {
                match e {
                    Either::Left(l) => ls.push(l),
                    Either::Right(r) => rs.push(r),
                }
                (ls, rs)
            },
        )
        .collect();
    runs.into_iter().unzip()
}

/// Collects the `Left` values into the first collection and the `Right`
/// values into the second, each in order (rayon's unzip of `Either`s).
///
/// ```
/// use terroir::iter::Either;
/// use terroir::prelude::*;
/// let (small, big): (Vec<i32>, Vec<i32>) = (0..6).into_par_iter()
///     .map(|x| if x < 4 { Either::Left(x) } else { Either::Right(x * 10) })
///     .collect();
/// assert_eq!((small, big), (vec![0, 1, 2, 3], vec![40, 50]));
/// ```
impl<L, R, A, B> FromParallelIterator<Either<L, R>> for (A, B)
where
    L: Send,
    R: Send,
    A: Send + FromParallelIterator<L>,
    B: Send + FromParallelIterator<R>,
{
    fn from_par_iter<I>(par_iter: I) -> Self
    where
        I: IntoParallelIterator<Item = Either<L, R>>,
    {
        let (ls, rs) = sides(par_iter.into_par_iter());
        (
            ls.into_par_iter().flatten_iter().collect(),
            rs.into_par_iter().flatten_iter().collect(),
        )
    }
}

/// Extends the first collection with the `Left` values and the second
/// with the `Right` values, each in order.
impl<L, R, A, B> ParallelExtend<Either<L, R>> for (A, B)
where
    L: Send,
    R: Send,
    A: Send + ParallelExtend<L>,
    B: Send + ParallelExtend<R>,
{
    fn par_extend<I>(&mut self, par_iter: I)
    where
        I: IntoParallelIterator<Item = Either<L, R>>,
    {
        let (ls, rs) = sides(par_iter.into_par_iter());
        self.0.par_extend(ls.into_par_iter().flatten_iter());
        self.1.par_extend(rs.into_par_iter().flatten_iter());
    }
}

/// [`ParallelIterator::partition_map`].
pub(crate) fn partition_map<I, A, B, P, L, R>(iter: I, predicate: P) -> (A, B)
where
    I: ParallelIterator,
    A: Default + Send + ParallelExtend<L>,
    B: Default + Send + ParallelExtend<R>,
    P: Fn(I::Item) -> Either<L, R> + Sync + Send,
    L: Send,
    R: Send,
{
    let mut out = (A::default(), B::default());
    out.par_extend(iter.map(predicate));
    out
}
