//! [`IndexedParallelIterator`]: iterators that know their length and can
//! be split at any index.

use std::cmp::Ordering;

use super::blocks::{ExponentialBlocks, UniformBlocks};
use super::engine::{self, Consumer, Piece};
use super::fold_chunks::{FoldChunks, FoldChunksWith};
use super::indexed_adaptors::{Enumerate, MaxLen, MinLen, Positions, Rev, Zip, ZipEq};
use super::interleave::{Interleave, InterleaveShortest};
use super::regroup::{Chunks, Skip, StepBy, Take};
use super::{IntoParallelIterator, ParallelIterator};

/// A parallel iterator that knows its length and can be split at any index
/// (rayon's `IndexedParallelIterator`): ranges, slices, `Vec`s, and `map`,
/// `zip`, `enumerate`, … of them.
///
/// ```
/// use terroir::prelude::*;
/// let a = [1, 2, 3, 4];
/// let b = [10, 20, 30];
/// let dot: i32 = a.par_iter().zip(&b).map(|(x, y)| x * y).sum(); // shortest wins
/// assert_eq!(dot, 140);
/// assert_eq!(a.par_iter().enumerate().rev().map(|(i, _)| i).collect::<Vec<_>>(), [3, 2, 1, 0]);
/// ```
#[allow(clippy::len_without_is_empty)] // rayon's trait has no `is_empty`
pub trait IndexedParallelIterator: ParallelIterator {
    /// The splittable form of the iterator (terroir's engine).
    #[doc(hidden)]
    type Piece<'a>: Piece<Item = Self::Item>
    where
        Self: 'a;

    /// The splittable form, borrowing the iterator (which keeps owning
    /// what the piece refers to).
    #[doc(hidden)]
    fn piece(&mut self) -> Self::Piece<'_>;

    /// The number of items.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// assert_eq!((0..10).into_par_iter().step_by(3).len(), 4);
    /// ```
    fn len(&self) -> usize;

    /// Collects the items into `target`, in order, replacing its contents
    /// (reusing its allocation when large enough).
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let mut v = vec![9; 2];
    /// (0..5).into_par_iter().map(|x| x * 2).collect_into_vec(&mut v);
    /// assert_eq!(v, [0, 2, 4, 6, 8]);
    /// ```
    fn collect_into_vec(self, target: &mut Vec<Self::Item>) {
        super::collect::collect_into_vec(self, target)
    }

    /// Splits pairs into `left` and `right`, in order, replacing their
    /// contents.
    fn unzip_into_vecs<A, B>(self, left: &mut Vec<A>, right: &mut Vec<B>)
    where
        Self: IndexedParallelIterator<Item = (A, B)>,
        A: Send,
        B: Send,
    {
        left.clear();
        right.clear();
        (left, right).par_extend_pairs(self)
    }

    /// Pairs the items with those of `zip_op`; the shorter one sets the
    /// length.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v: Vec<(i32, char)> = (0..5).into_par_iter().zip(vec!['a', 'b']).collect();
    /// assert_eq!(v, [(0, 'a'), (1, 'b')]);
    /// ```
    fn zip<Z>(self, zip_op: Z) -> Zip<Self, Z::Iter>
    where
        Z: IntoParallelIterator<Iter: IndexedParallelIterator>,
    {
        Zip::new(self, zip_op.into_par_iter())
    }

    /// [`zip`](Self::zip) for iterators that must have the same length.
    ///
    /// # Panics
    /// When the lengths differ.
    #[track_caller]
    fn zip_eq<Z>(self, zip_op: Z) -> ZipEq<Self, Z::Iter>
    where
        Z: IntoParallelIterator<Iter: IndexedParallelIterator>,
    {
        let other = zip_op.into_par_iter();
        assert_eq!(
            self.len(),
            other.len(),
            "iterators must have the same length"
        );
        ZipEq::new(self, other)
    }

    /// One item of `self`, then one of `other`, in turn; when one has no
    /// items left, the rest of the other.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v: Vec<i32> = (0..3).into_par_iter().interleave(vec![7, 8, 9, 10]).collect();
    /// assert_eq!(v, [0, 7, 1, 8, 2, 9, 10]);
    /// ```
    fn interleave<I>(self, other: I) -> Interleave<Self, I::Iter>
    where
        I: IntoParallelIterator<
            Item = Self::Item,
            Iter: IndexedParallelIterator<Item = Self::Item>,
        >,
    {
        Interleave::new(self, other.into_par_iter())
    }

    /// [`interleave`](Self::interleave) that ends as soon as the iterator
    /// whose turn it is has no items left.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v: Vec<i32> = (0..3).into_par_iter().interleave_shortest(vec![7, 8, 9, 10]).collect();
    /// assert_eq!(v, [0, 7, 1, 8, 2, 9]);
    /// ```
    fn interleave_shortest<I>(self, other: I) -> InterleaveShortest<Self, I::Iter>
    where
        I: IntoParallelIterator<
            Item = Self::Item,
            Iter: IndexedParallelIterator<Item = Self::Item>,
        >,
    {
        InterleaveShortest::new(self, other.into_par_iter())
    }

    /// Runs the loop as a sequence of parallel loops over consecutive
    /// blocks, each finished before the next starts: the first block has
    /// one item per worker, each next one twice as many (rayon's sizes).
    /// A search (`find_first`, `position_first`, …) then ends after the
    /// block that holds its match, without touching later ones.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let first = (0..1_000_000u64).into_par_iter().by_exponential_blocks().find_first(|x| x * x > 1000);
    /// assert_eq!(first, Some(32));
    /// ```
    fn by_exponential_blocks(self) -> ExponentialBlocks<Self> {
        ExponentialBlocks::new(self)
    }

    /// [`by_exponential_blocks`](Self::by_exponential_blocks) with every
    /// block of `block_size` items (the last one shorter).
    ///
    /// # Panics
    /// When `block_size` is 0.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v: Vec<u32> = (0..10u32).into_par_iter().by_uniform_blocks(4).map(|x| x * 2).collect();
    /// assert_eq!(v, [0, 2, 4, 6, 8, 10, 12, 14, 16, 18]);
    /// ```
    #[track_caller]
    fn by_uniform_blocks(self, block_size: usize) -> UniformBlocks<Self> {
        assert!(block_size != 0, "block_size must not be zero");
        UniformBlocks::new(self, block_size)
    }

    /// Folds each chunk of `chunk_size` consecutive items (the last one
    /// shorter) into one value, starting from `identity()`: the values
    /// in order.
    ///
    /// # Panics
    /// When `chunk_size` is 0.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let sums: Vec<i32> = (1..=10).into_par_iter().fold_chunks(3, || 0, |a, x| a + x).collect();
    /// assert_eq!(sums, [6, 15, 24, 10]);
    /// ```
    #[track_caller]
    fn fold_chunks<T, ID, F>(
        self,
        chunk_size: usize,
        identity: ID,
        fold_op: F,
    ) -> FoldChunks<Self, ID, F>
    where
        ID: Fn() -> T + Send + Sync,
        F: Fn(T, Self::Item) -> T + Send + Sync,
        T: Send,
    {
        assert!(chunk_size != 0, "chunk_size must not be zero");
        FoldChunks::new(self, chunk_size, identity, fold_op)
    }

    /// [`fold_chunks`](Self::fold_chunks) starting each chunk from a clone
    /// of `init`.
    ///
    /// # Panics
    /// When `chunk_size` is 0.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v: Vec<String> = ['a', 'b', 'c'].par_iter().fold_chunks_with(2, String::from(">"), |mut s, c| { s.push(*c); s }).collect();
    /// assert_eq!(v, [">ab", ">c"]);
    /// ```
    #[track_caller]
    fn fold_chunks_with<T, F>(
        self,
        chunk_size: usize,
        init: T,
        fold_op: F,
    ) -> FoldChunksWith<Self, T, F>
    where
        T: Send + Clone,
        F: Fn(T, Self::Item) -> T + Send + Sync,
    {
        assert!(chunk_size != 0, "chunk_size must not be zero");
        FoldChunksWith::new(self, chunk_size, init, fold_op)
    }

    /// The items in `Vec`s of `chunk_size` (the last one shorter).
    ///
    /// # Panics
    /// When `chunk_size` is 0 (`"chunk_size must not be zero"`, as rayon).
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let c: Vec<Vec<i32>> = (0..5).into_par_iter().chunks(2).collect();
    /// assert_eq!(c, [vec![0, 1], vec![2, 3], vec![4]]);
    /// ```
    #[track_caller]
    fn chunks(self, chunk_size: usize) -> Chunks<Self> {
        assert!(chunk_size != 0, "chunk_size must not be zero");
        Chunks::new(self, chunk_size)
    }

    /// Compares the items with those of `other`, lexicographically.
    ///
    /// ```
    /// use std::cmp::Ordering;
    /// use terroir::prelude::*;
    /// assert_eq!((0..3).into_par_iter().cmp(0..4), Ordering::Less);
    /// ```
    fn cmp<I>(self, other: I) -> Ordering
    where
        I: IntoParallelIterator<Item = Self::Item, Iter: IndexedParallelIterator>,
        Self::Item: Ord,
    {
        let other = other.into_par_iter();
        let lengths = self.len().cmp(&other.len());
        self.zip(other)
            .map(|(a, b)| a.cmp(&b))
            .find_first(|&o| o != Ordering::Equal)
            .unwrap_or(lengths)
    }

    /// Compares the items with those of `other`, lexicographically, where
    /// the items are only partially ordered.
    fn partial_cmp<I>(self, other: I) -> Option<Ordering>
    where
        I: IntoParallelIterator<Iter: IndexedParallelIterator>,
        Self::Item: PartialOrd<I::Item>,
    {
        let other = other.into_par_iter();
        let lengths = self.len().cmp(&other.len());
        self.zip(other)
            .map(|(a, b)| a.partial_cmp(&b))
            .find_first(|&o| o != Some(Ordering::Equal))
            .unwrap_or(Some(lengths))
    }

    /// Whether the items equal those of `other`.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// assert!((0..3).into_par_iter().eq(vec![0, 1, 2]));
    /// ```
    fn eq<I>(self, other: I) -> bool
    where
        I: IntoParallelIterator<Iter: IndexedParallelIterator>,
        Self::Item: PartialEq<I::Item>,
    {
        let other = other.into_par_iter();
        self.len() == other.len() && self.zip(other).all(|(a, b)| a.eq(&b))
    }

    /// Whether the items differ from those of `other`.
    fn ne<I>(self, other: I) -> bool
    where
        I: IntoParallelIterator<Iter: IndexedParallelIterator>,
        Self::Item: PartialEq<I::Item>,
    {
        !self.eq(other)
    }

    /// Whether the items are lexicographically less than those of `other`.
    fn lt<I>(self, other: I) -> bool
    where
        I: IntoParallelIterator<Iter: IndexedParallelIterator>,
        Self::Item: PartialOrd<I::Item>,
    {
        self.partial_cmp(other) == Some(Ordering::Less)
    }

    /// Whether the items are lexicographically less than or equal to those
    /// of `other`.
    fn le<I>(self, other: I) -> bool
    where
        I: IntoParallelIterator<Iter: IndexedParallelIterator>,
        Self::Item: PartialOrd<I::Item>,
    {
        matches!(
            self.partial_cmp(other),
            Some(Ordering::Less | Ordering::Equal)
        )
    }

    /// Whether the items are lexicographically greater than those of
    /// `other`.
    fn gt<I>(self, other: I) -> bool
    where
        I: IntoParallelIterator<Iter: IndexedParallelIterator>,
        Self::Item: PartialOrd<I::Item>,
    {
        self.partial_cmp(other) == Some(Ordering::Greater)
    }

    /// Whether the items are lexicographically greater than or equal to
    /// those of `other`.
    fn ge<I>(self, other: I) -> bool
    where
        I: IntoParallelIterator<Iter: IndexedParallelIterator>,
        Self::Item: PartialOrd<I::Item>,
    {
        matches!(
            self.partial_cmp(other),
            Some(Ordering::Greater | Ordering::Equal)
        )
    }

    /// Pairs every item with its index.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v: Vec<(usize, char)> = ['a', 'b'].par_iter().copied().enumerate().collect();
    /// assert_eq!(v, [(0, 'a'), (1, 'b')]);
    /// ```
    fn enumerate(self) -> Enumerate<Self> {
        Enumerate::new(self)
    }

    /// Every `step`-th item, starting with the first.
    ///
    /// # Panics
    /// When `step` is 0.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v: Vec<i32> = (0..10).into_par_iter().step_by(4).collect();
    /// assert_eq!(v, [0, 4, 8]);
    /// ```
    #[track_caller]
    fn step_by(self, step: usize) -> StepBy<Self> {
        assert!(step != 0, "assertion failed: step != 0");
        StepBy::new(self, step)
    }

    /// All but the first `n` items.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// assert_eq!((0..10).into_par_iter().skip(7).collect::<Vec<_>>(), [7, 8, 9]);
    /// ```
    fn skip(self, n: usize) -> Skip<Self> {
        Skip::new(self, n)
    }

    /// The first `n` items.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// assert_eq!((0..10).into_par_iter().take(3).collect::<Vec<_>>(), [0, 1, 2]);
    /// ```
    fn take(self, n: usize) -> Take<Self> {
        Take::new(self, n)
    }

    /// The index of some item matching `predicate` (any of them).
    ///
    /// ```
    /// use terroir::prelude::*;
    /// assert_eq!((0..100).into_par_iter().position_any(|x| x == 42), Some(42));
    /// ```
    fn position_any<P>(self, predicate: P) -> Option<usize>
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.map(predicate)
            .enumerate()
            .find_any(|&(_, b)| b)
            .map(|(i, _)| i)
    }

    /// The index of the first item matching `predicate`.
    fn position_first<P>(self, predicate: P) -> Option<usize>
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.map(predicate)
            .enumerate()
            .find_first(|&(_, b)| b)
            .map(|(i, _)| i)
    }

    /// The index of the last item matching `predicate`.
    fn position_last<P>(self, predicate: P) -> Option<usize>
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.map(predicate)
            .enumerate()
            .find_last(|&(_, b)| b)
            .map(|(i, _)| i)
    }

    /// rayon's deprecated name of [`position_any`](Self::position_any).
    #[doc(hidden)]
    #[deprecated(
        note = "parallel `position` does not search in order -- use `position_any`, \
                `position_first`, or `position_last`"
    )]
    fn position<P>(self, predicate: P) -> Option<usize>
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.position_any(predicate)
    }

    /// The indices of the items matching `predicate`, in order.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let p: Vec<usize> = [1, 4, 6, 7].par_iter().positions(|x| x % 2 == 0).collect();
    /// assert_eq!(p, [1, 2]);
    /// ```
    fn positions<P>(self, predicate: P) -> Positions<Self, P>
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        Positions::new(self, predicate)
    }

    /// The items in reverse order.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// assert_eq!((0..4).into_par_iter().rev().collect::<Vec<_>>(), [3, 2, 1, 0]);
    /// ```
    fn rev(self) -> Rev<Self> {
        Rev::new(self)
    }

    /// Never splits off a piece of fewer than `min` items (0 is taken as
    /// 1). Use it when the per-piece cost (`map_init`'s `init`, a `fold`'s
    /// identity) matters.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let pieces = (0..1000).into_par_iter().with_min_len(1000).fold(|| 0, |n, _| n + 1).count();
    /// assert_eq!(pieces, 1); // never split
    /// ```
    fn with_min_len(self, min: usize) -> MinLen<Self> {
        MinLen::new(self, min)
    }

    /// Looks for split requests at least every `max` items (0 is taken as
    /// 1): with a costly body, `with_max_len(1)` lets idle workers take
    /// work after every item.
    fn with_max_len(self, max: usize) -> MaxLen<Self> {
        MaxLen::new(self, max)
    }
}

/// Runs an indexed iterator through its piece.
pub(crate) fn drive_piece<I, C>(mut iter: I, consumer: C) -> C::Result
where
    I: IndexedParallelIterator,
    C: Consumer<I::Item>,
{
    engine::run(iter.piece(), consumer)
}

/// `unzip_into_vecs` through the pairs' [`ParallelExtend`](super::ParallelExtend).
trait ExtendPairs<A, B> {
    fn par_extend_pairs<I: IndexedParallelIterator<Item = (A, B)>>(self, iter: I);
}

impl<A: Send, B: Send> ExtendPairs<A, B> for (&mut Vec<A>, &mut Vec<B>) {
    fn par_extend_pairs<I: IndexedParallelIterator<Item = (A, B)>>(self, iter: I) {
        super::collect::unzip_into(iter, self.0, self.1)
    }
}
