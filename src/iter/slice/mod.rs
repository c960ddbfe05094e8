//! Parallel iterators over slices (`par_iter`, `par_iter_mut`, `par_chunks`,
//! `par_windows`, …), the [`ParallelSlice`] and [`ParallelSliceMut`]
//! traits (rayon's), and parallel sorts.
//!
//! A slice of a [`NodeVec`] (its `par_iter()`,
//! `par_chunks()`, … called on the vector itself) carries the vector's node
//! shares, so that loops over it run each share on its node (see
//! [`crate::iter`]).

mod chunks;
mod merge;
mod sort;

use std::mem;
use std::ops::Range;

pub use chunks::{
    Chunks, ChunksExact, ChunksExactMut, ChunksMut, RChunks, RChunksExact, RChunksExactMut,
    RChunksMut, Windows,
};

use super::engine::{Consumer, Extent, Piece};
use super::indexed::drive_piece;
use super::names::vec_newtype;
use super::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};
use crate::numa::NodeId;
use crate::pool::NodeVec;

/// Element ranges of a placed container and their nodes (empty for plain
/// memory).
pub(crate) type Shares = Vec<(NodeId, Range<usize>)>;

/// The parallel iterator of `&[T]` (`par_iter()`), rayon's `slice::Iter`.
///
/// ```
/// use terroir::prelude::*;
/// let v = [1, 2, 3];
/// let it: terroir::iter::slice::Iter<'_, i32> = v.par_iter();
/// assert_eq!(it.sum::<i32>(), 6);
/// ```
#[derive(Clone, Debug)]
pub struct Iter<'a, T> {
    slice: &'a [T],
    shares: Shares,
}

impl<'a, T> Iter<'a, T> {
    pub(crate) fn new(slice: &'a [T], shares: Shares) -> Self {
        Iter { slice, shares }
    }
}

/// The parallel iterator of `&mut [T]` (`par_iter_mut()`), rayon's
/// `slice::IterMut`.
///
/// ```
/// use terroir::prelude::*;
/// let mut v = [1, 2, 3];
/// let it: terroir::iter::slice::IterMut<'_, i32> = v.par_iter_mut();
/// it.for_each(|x| *x = -*x);
/// assert_eq!(v, [-1, -2, -3]);
/// ```
#[derive(Debug)]
pub struct IterMut<'a, T> {
    slice: &'a mut [T],
    shares: Shares,
}

impl<'a, T> IterMut<'a, T> {
    pub(crate) fn new(slice: &'a mut [T], shares: Shares) -> Self {
        IterMut { slice, shares }
    }
}

vec_newtype! {
    /// rayon's `slice::Split`: [`ParallelSlice::par_split`]'s iterator, the
    /// pieces between separators (`P`: the separator test).
    Split ['data, T, P] ['data, T, P] &'data [T], P
}
vec_newtype! {
    /// rayon's `slice::SplitInclusive`:
    /// [`ParallelSlice::par_split_inclusive`]'s iterator.
    SplitInclusive ['data, T, P] ['data, T, P] &'data [T], P
}
vec_newtype! {
    /// rayon's `slice::ChunkBy`: [`ParallelSlice::par_chunk_by`]'s iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// fn runs<F>(v: &[u8], same: F) -> terroir::slice::ChunkBy<'_, u8, F>
    /// where
    ///     F: Fn(&u8, &u8) -> bool + Send + Sync,
    /// {
    ///     v.par_chunk_by(same)
    /// }
    /// assert_eq!(runs(&[1, 1, 2, 3, 3], |a, b| a == b).count(), 3);
    /// ```
    ChunkBy ['data, T, P] ['data, T, P] &'data [T], P
}
vec_newtype! {
    /// rayon's `slice::SplitMut`: [`ParallelSliceMut::par_split_mut`]'s
    /// iterator.
    SplitMut ['data, T, P] ['data, T, P] &'data mut [T], P
}
vec_newtype! {
    /// rayon's `slice::SplitInclusiveMut`:
    /// [`ParallelSliceMut::par_split_inclusive_mut`]'s iterator.
    SplitInclusiveMut ['data, T, P] ['data, T, P] &'data mut [T], P
}
vec_newtype! {
    /// rayon's `slice::ChunkByMut`: [`ParallelSliceMut::par_chunk_by_mut`]'s
    /// iterator.
    ChunkByMut ['data, T, P] ['data, T, P] &'data mut [T], P
}

impl<'a, T: Sync> IntoParallelIterator for &'a [T] {
    type Iter = Iter<'a, T>;
    type Item = &'a T;
    fn into_par_iter(self) -> Iter<'a, T> {
        Iter::new(self, Shares::new())
    }
}

impl<'a, T: Sync> IntoParallelIterator for &'a Vec<T> {
    type Iter = Iter<'a, T>;
    type Item = &'a T;
    fn into_par_iter(self) -> Iter<'a, T> {
        Iter::new(self, Shares::new())
    }
}

impl<'a, T: Sync, const N: usize> IntoParallelIterator for &'a [T; N] {
    type Iter = Iter<'a, T>;
    type Item = &'a T;
    fn into_par_iter(self) -> Iter<'a, T> {
        Iter::new(self, Shares::new())
    }
}

impl<'a, T: Sync> IntoParallelIterator for &'a NodeVec<T> {
    type Iter = Iter<'a, T>;
    type Item = &'a T;
    fn into_par_iter(self) -> Iter<'a, T> {
        Iter::new(self, self.share_ranges())
    }
}

impl<'a, T: Send> IntoParallelIterator for &'a mut [T] {
    type Iter = IterMut<'a, T>;
    type Item = &'a mut T;
    fn into_par_iter(self) -> IterMut<'a, T> {
        IterMut::new(self, Shares::new())
    }
}

impl<'a, T: Send> IntoParallelIterator for &'a mut Vec<T> {
    type Iter = IterMut<'a, T>;
    type Item = &'a mut T;
    fn into_par_iter(self) -> IterMut<'a, T> {
        IterMut::new(self, Shares::new())
    }
}

impl<'a, T: Send, const N: usize> IntoParallelIterator for &'a mut [T; N] {
    type Iter = IterMut<'a, T>;
    type Item = &'a mut T;
    fn into_par_iter(self) -> IterMut<'a, T> {
        IterMut::new(self, Shares::new())
    }
}

impl<'a, T: Send> IntoParallelIterator for &'a mut NodeVec<T> {
    type Iter = IterMut<'a, T>;
    type Item = &'a mut T;
    fn into_par_iter(self) -> IterMut<'a, T> {
        let shares = self.share_ranges();
        IterMut::new(self, shares)
    }
}

impl<'a, T: Sync> ParallelIterator for Iter<'a, T> {
    type Item = &'a T;
    fn drive_engine<C: Consumer<&'a T>>(self, consumer: C) -> C::Result {
        drive_piece(self, consumer)
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.slice.len())
    }
}

impl<'a, T: Sync> IndexedParallelIterator for Iter<'a, T> {
    type Piece<'p>
        = SlicePiece<'a, 'p, T>
    where
        Self: 'p;
    fn piece(&mut self) -> Self::Piece<'_> {
        SlicePiece {
            slice: self.slice,
            base: 0,
            shares: &self.shares,
        }
    }
    fn len(&self) -> usize {
        self.slice.len()
    }
}

impl<'a, T: Send> ParallelIterator for IterMut<'a, T> {
    type Item = &'a mut T;
    fn drive_engine<C: Consumer<&'a mut T>>(self, consumer: C) -> C::Result {
        drive_piece(self, consumer)
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.slice.len())
    }
}

impl<'a, T: Send> IndexedParallelIterator for IterMut<'a, T> {
    type Piece<'p>
        = SliceMutPiece<'a, 'p, T>
    where
        Self: 'p;
    fn piece(&mut self) -> Self::Piece<'_> {
        SliceMutPiece {
            slice: mem::take(&mut self.slice),
            base: 0,
            shares: &self.shares,
        }
    }
    fn len(&self) -> usize {
        self.slice.len()
    }
}

/// A slice's piece: its elements from element `base` of the placed
/// container (if any) whose node shares are `shares`.
pub struct SlicePiece<'a, 'p, T> {
    slice: &'a [T],
    base: usize,
    shares: &'p [(NodeId, Range<usize>)],
}

impl<'a, T: Sync> Piece for SlicePiece<'a, '_, T> {
    fn pure(&self) -> bool {
        true
    }
    fn split_cheap(&self) -> bool {
        true
    }
    type Item = &'a T;
    type Seq<'s>
        = std::slice::Iter<'a, T>
    where
        Self: 's;
    type RevSeq<'s>
        = std::iter::Rev<std::slice::Iter<'a, T>>
    where
        Self: 's;
    fn units(&self) -> usize {
        self.slice.len()
    }
    fn layout(&self, out: &mut Vec<Extent>) {
        Extent::clip(
            self.shares,
            self.base,
            self.slice.len(),
            mem::size_of::<T>(),
            out,
        );
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (a, b) = self.slice.split_at(mid);
        (
            SlicePiece {
                slice: a,
                base: self.base,
                shares: self.shares,
            },
            SlicePiece {
                slice: b,
                base: self.base + mid,
                shares: self.shares,
            },
        )
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        let (a, b) = self.slice.split_at(n);
        self.slice = b;
        self.base += n;
        a.iter()
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        let (a, b) = self.slice.split_at(self.slice.len() - n);
        self.slice = a;
        b.iter().rev()
    }
}

/// A mutable slice's piece (see [`SlicePiece`]).
pub struct SliceMutPiece<'a, 'p, T> {
    slice: &'a mut [T],
    base: usize,
    shares: &'p [(NodeId, Range<usize>)],
}

impl<'a, T: Send> Piece for SliceMutPiece<'a, '_, T> {
    fn pure(&self) -> bool {
        true
    }
    fn split_cheap(&self) -> bool {
        true
    }
    type Item = &'a mut T;
    type Seq<'s>
        = std::slice::IterMut<'a, T>
    where
        Self: 's;
    type RevSeq<'s>
        = std::iter::Rev<std::slice::IterMut<'a, T>>
    where
        Self: 's;
    fn units(&self) -> usize {
        self.slice.len()
    }
    fn layout(&self, out: &mut Vec<Extent>) {
        Extent::clip(
            self.shares,
            self.base,
            self.slice.len(),
            mem::size_of::<T>(),
            out,
        );
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (a, b) = self.slice.split_at_mut(mid);
        (
            SliceMutPiece {
                slice: a,
                base: self.base,
                shares: self.shares,
            },
            SliceMutPiece {
                slice: b,
                base: self.base + mid,
                shares: self.shares,
            },
        )
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        let (a, b) = mem::take(&mut self.slice).split_at_mut(n);
        self.slice = b;
        self.base += n;
        a.iter_mut()
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        let len = self.slice.len();
        let (a, b) = mem::take(&mut self.slice).split_at_mut(len - n);
        self.slice = a;
        b.iter_mut().rev()
    }
}

/// Parallel iteration over parts of a slice: rayon's `ParallelSlice`,
/// implemented for `[T]` (so for `Vec<T>` and arrays through deref) and
/// for [`NodeVec`] (whose loops are placed).
///
/// ```
/// use terroir::prelude::*;
/// let v: Vec<u32> = (1..=10).collect();
/// let sums: Vec<u32> = v.par_chunks(4).map(|c| c.iter().sum()).collect();
/// assert_eq!(sums, [10, 26, 19]);
/// ```
pub trait ParallelSlice<T: Sync> {
    /// The slice itself.
    fn as_parallel_slice(&self) -> &[T];

    /// The node shares of a placed container (empty for plain memory).
    #[doc(hidden)]
    fn par_node_shares(&self) -> Vec<(NodeId, Range<usize>)> {
        Vec::new()
    }

    /// The sub-slices between elements matching `separator` (which are
    /// left out), like `slice::split`. Found sequentially first.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let parts: Vec<&[i32]> = [1, 0, 2, 3, 0, 4].par_split(|&x| x == 0).collect();
    /// assert_eq!(parts, [&[1][..], &[2, 3], &[4]]);
    /// ```
    fn par_split<P>(&self, separator: P) -> Split<'_, T, P>
    where
        P: Fn(&T) -> bool + Sync + Send,
    {
        let parts: Vec<&[T]> = self.as_parallel_slice().split(separator).collect();
        Split::new(parts)
    }

    /// [`par_split`](Self::par_split), each separator ending its part.
    fn par_split_inclusive<P>(&self, separator: P) -> SplitInclusive<'_, T, P>
    where
        P: Fn(&T) -> bool + Sync + Send,
    {
        let parts: Vec<&[T]> = self
            .as_parallel_slice()
            .split_inclusive(separator)
            .collect();
        SplitInclusive::new(parts)
    }

    /// Overlapping windows of `window_size` elements.
    ///
    /// # Panics
    /// When `window_size` is 0.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let w: Vec<i32> = [1, 2, 3, 4].par_windows(2).map(|w| w[0] * w[1]).collect();
    /// assert_eq!(w, [2, 6, 12]);
    /// ```
    #[track_caller]
    fn par_windows(&self, window_size: usize) -> Windows<'_, T> {
        assert!(window_size >= 1, "window_size must not be zero");
        Windows::new(self.as_parallel_slice(), window_size)
    }

    /// Chunks of `chunk_size` elements (the last one shorter).
    ///
    /// # Panics
    /// When `chunk_size` is 0 (`"chunk_size must not be zero"`).
    #[track_caller]
    fn par_chunks(&self, chunk_size: usize) -> Chunks<'_, T> {
        assert!(chunk_size != 0, "chunk_size must not be zero");
        Chunks::new(self.as_parallel_slice(), chunk_size, self.par_node_shares())
    }

    /// Chunks of exactly `chunk_size` elements; the rest is
    /// [`remainder`](ChunksExact::remainder).
    ///
    /// # Panics
    /// When `chunk_size` is 0.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v = [1, 2, 3, 4, 5];
    /// let c = v.par_chunks_exact(2);
    /// assert_eq!(c.remainder(), &[5]);
    /// assert_eq!(c.map(|c| c[0] + c[1]).collect::<Vec<_>>(), [3, 7]);
    /// ```
    #[track_caller]
    fn par_chunks_exact(&self, chunk_size: usize) -> ChunksExact<'_, T> {
        assert!(chunk_size != 0, "chunk_size must not be zero");
        ChunksExact::new(self.as_parallel_slice(), chunk_size, self.par_node_shares())
    }

    /// Chunks of `chunk_size` elements from the end (the last one, at the
    /// start of the slice, shorter).
    ///
    /// # Panics
    /// When `chunk_size` is 0.
    #[track_caller]
    fn par_rchunks(&self, chunk_size: usize) -> RChunks<'_, T> {
        assert!(chunk_size != 0, "chunk_size must not be zero");
        RChunks::new(self.as_parallel_slice(), chunk_size, Shares::new())
    }

    /// Chunks of exactly `chunk_size` elements from the end.
    ///
    /// # Panics
    /// When `chunk_size` is 0.
    #[track_caller]
    fn par_rchunks_exact(&self, chunk_size: usize) -> RChunksExact<'_, T> {
        assert!(chunk_size != 0, "chunk_size must not be zero");
        RChunksExact::new(self.as_parallel_slice(), chunk_size, Shares::new())
    }

    /// Runs of consecutive elements for which `pred` holds pairwise, like
    /// `slice::chunk_by`. Found sequentially first.
    fn par_chunk_by<F>(&self, pred: F) -> ChunkBy<'_, T, F>
    where
        F: Fn(&T, &T) -> bool + Send + Sync,
    {
        let parts: Vec<&[T]> = self.as_parallel_slice().chunk_by(pred).collect();
        ChunkBy::new(parts)
    }
}

impl<T: Sync> ParallelSlice<T> for [T] {
    fn as_parallel_slice(&self) -> &[T] {
        self
    }
}

impl<T: Sync> ParallelSlice<T> for NodeVec<T> {
    fn as_parallel_slice(&self) -> &[T] {
        self
    }
    fn par_node_shares(&self) -> Vec<(NodeId, Range<usize>)> {
        self.share_ranges()
    }
}

/// Parallel iteration over mutable parts of a slice, and parallel sorts:
/// rayon's `ParallelSliceMut`, implemented for `[T]` and [`NodeVec`].
///
/// ```
/// use terroir::prelude::*;
/// let mut v = vec![0u32; 10];
/// v.par_chunks_mut(3).enumerate().for_each(|(i, c)| c.fill(i as u32));
/// assert_eq!(v, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]);
/// let mut w = vec![5, 3, 9, 1];
/// w.par_sort();
/// assert_eq!(w, [1, 3, 5, 9]);
/// ```
pub trait ParallelSliceMut<T: Send> {
    /// The slice itself.
    fn as_parallel_slice_mut(&mut self) -> &mut [T];

    /// The node shares of a placed container (empty for plain memory).
    #[doc(hidden)]
    fn par_node_shares_mut(&mut self) -> Vec<(NodeId, Range<usize>)> {
        Vec::new()
    }

    /// Mutable sub-slices between elements matching `separator`. Found
    /// sequentially first.
    fn par_split_mut<P>(&mut self, separator: P) -> SplitMut<'_, T, P>
    where
        P: Fn(&T) -> bool + Sync + Send,
    {
        let parts: Vec<&mut [T]> = self.as_parallel_slice_mut().split_mut(separator).collect();
        SplitMut::new(parts)
    }

    /// [`par_split_mut`](Self::par_split_mut), each separator ending its
    /// part.
    fn par_split_inclusive_mut<P>(&mut self, separator: P) -> SplitInclusiveMut<'_, T, P>
    where
        P: Fn(&T) -> bool + Sync + Send,
    {
        let parts: Vec<&mut [T]> = self
            .as_parallel_slice_mut()
            .split_inclusive_mut(separator)
            .collect();
        SplitInclusiveMut::new(parts)
    }

    /// Mutable chunks of `chunk_size` elements (the last one shorter).
    ///
    /// # Panics
    /// When `chunk_size` is 0 (`"chunk_size must not be zero"`).
    #[track_caller]
    fn par_chunks_mut(&mut self, chunk_size: usize) -> ChunksMut<'_, T> {
        assert!(chunk_size != 0, "chunk_size must not be zero");
        let shares = self.par_node_shares_mut();
        ChunksMut::new(self.as_parallel_slice_mut(), chunk_size, shares)
    }

    /// Mutable chunks of exactly `chunk_size` elements.
    ///
    /// # Panics
    /// When `chunk_size` is 0.
    #[track_caller]
    fn par_chunks_exact_mut(&mut self, chunk_size: usize) -> ChunksExactMut<'_, T> {
        assert!(chunk_size != 0, "chunk_size must not be zero");
        let shares = self.par_node_shares_mut();
        ChunksExactMut::new(self.as_parallel_slice_mut(), chunk_size, shares)
    }

    /// Mutable chunks from the end.
    ///
    /// # Panics
    /// When `chunk_size` is 0.
    #[track_caller]
    fn par_rchunks_mut(&mut self, chunk_size: usize) -> RChunksMut<'_, T> {
        assert!(chunk_size != 0, "chunk_size must not be zero");
        RChunksMut::new(self.as_parallel_slice_mut(), chunk_size, Shares::new())
    }

    /// Mutable chunks of exactly `chunk_size` elements from the end.
    ///
    /// # Panics
    /// When `chunk_size` is 0.
    #[track_caller]
    fn par_rchunks_exact_mut(&mut self, chunk_size: usize) -> RChunksExactMut<'_, T> {
        assert!(chunk_size != 0, "chunk_size must not be zero");
        RChunksExactMut::new(self.as_parallel_slice_mut(), chunk_size, Shares::new())
    }

    /// Mutable runs of consecutive elements for which `pred` holds
    /// pairwise. Found sequentially first.
    fn par_chunk_by_mut<F>(&mut self, pred: F) -> ChunkByMut<'_, T, F>
    where
        F: Fn(&T, &T) -> bool + Send + Sync,
    {
        let parts: Vec<&mut [T]> = self.as_parallel_slice_mut().chunk_by_mut(pred).collect();
        ChunkByMut::new(parts)
    }

    /// Sorts the slice, stably (halves sorted in parallel, then merged).
    fn par_sort(&mut self)
    where
        T: Ord,
    {
        merge::stable(self.as_parallel_slice_mut(), &T::cmp);
    }

    /// Sorts the slice with `compare`, stably.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let mut v = [(2, 'a'), (1, 'b'), (2, 'c'), (1, 'd')];
    /// v.par_sort_by(|x, y| x.0.cmp(&y.0));
    /// assert_eq!(v, [(1, 'b'), (1, 'd'), (2, 'a'), (2, 'c')]);
    /// ```
    fn par_sort_by<F>(&mut self, compare: F)
    where
        F: Fn(&T, &T) -> std::cmp::Ordering + Sync,
    {
        merge::stable(self.as_parallel_slice_mut(), &compare);
    }

    /// Sorts the slice by the key `f` gives, stably.
    fn par_sort_by_key<K, F>(&mut self, f: F)
    where
        K: Ord,
        F: Fn(&T) -> K + Sync,
    {
        merge::stable(self.as_parallel_slice_mut(), &|a, b| f(a).cmp(&f(b)));
    }

    /// Sorts the slice by the key `f` gives, computing each key once (in
    /// parallel), stably.
    fn par_sort_by_cached_key<K, F>(&mut self, f: F)
    where
        F: Fn(&T) -> K + Sync,
        K: Ord + Send,
    {
        sort::by_cached_key(self.as_parallel_slice_mut(), f);
    }

    /// Sorts the slice, not stably (parts split at their median in
    /// parallel).
    fn par_sort_unstable(&mut self)
    where
        T: Ord,
    {
        sort::unstable(self.as_parallel_slice_mut(), &T::cmp);
    }

    /// Sorts the slice with `compare`, not stably.
    fn par_sort_unstable_by<F>(&mut self, compare: F)
    where
        F: Fn(&T, &T) -> std::cmp::Ordering + Sync,
    {
        sort::unstable(self.as_parallel_slice_mut(), &compare);
    }

    /// Sorts the slice by the key `f` gives, not stably.
    fn par_sort_unstable_by_key<K, F>(&mut self, f: F)
    where
        K: Ord,
        F: Fn(&T) -> K + Sync,
    {
        sort::unstable(self.as_parallel_slice_mut(), &|a, b| f(a).cmp(&f(b)));
    }
}

impl<T: Send> ParallelSliceMut<T> for [T] {
    fn as_parallel_slice_mut(&mut self) -> &mut [T] {
        self
    }
}

impl<T: Send> ParallelSliceMut<T> for NodeVec<T> {
    fn as_parallel_slice_mut(&mut self) -> &mut [T] {
        self
    }
    fn par_node_shares_mut(&mut self) -> Vec<(NodeId, Range<usize>)> {
        self.share_ranges()
    }
}
