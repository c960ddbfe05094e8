//! Chunks and windows of slices: `par_chunks`, `par_chunks_exact`,
//! `par_rchunks`, `par_rchunks_exact` (and their `_mut` forms), and
//! `par_windows`. Unit `u` of a piece is the `u`-th chunk (or window); a
//! batch is the matching `std` iterator over the batch's part of the
//! slice.

use std::mem;

use super::Shares;
use crate::iter::engine::{Consumer, Extent, Piece};
use crate::iter::indexed::drive_piece;
use crate::iter::{IndexedParallelIterator, ParallelIterator};
use crate::numa::NodeId;

/// Elements covered by the first `units` chunks of `size` of `len`.
fn elems(units: usize, size: usize, len: usize) -> usize {
    units.saturating_mul(size).min(len)
}

/// Splits a shared slice (`take` is a no-op for shared references).
fn split<'a, T>(s: &mut &'a [T], at: usize) -> (&'a [T], &'a [T]) {
    s.split_at(at)
}

/// Splits a mutable slice, leaving it empty.
fn split_mut<'a, T>(s: &mut &'a mut [T], at: usize) -> (&'a mut [T], &'a mut [T]) {
    mem::take(s).split_at_mut(at)
}

macro_rules! chunks {
    (
        $(#[$doc:meta])*
        $name:ident, $piece:ident, $slice:ty, $bound:ident, $item:ty, $std:ident, $method:ident,
        $split:ident, from_end: $from_end:expr, exact: $exact:expr
    ) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name<'a, T> {
            slice: $slice,
            /// The elements left over (exact forms).
            #[allow(dead_code)]
            rem: $slice,
            size: usize,
            shares: Shares,
        }

        impl<'a, T> $name<'a, T> {
            pub(crate) fn new(slice: $slice, size: usize, shares: Shares) -> Self {
                let mut slice = slice;
                let len = slice.len();
                let keep = if $exact { len - len % size } else { len };
                // The exact forms leave the remainder at the end (from the
                // start when chunking from the end).
                let (main, rem) = if $from_end {
                    let (rem, main) = $split(&mut slice, len - keep);
                    (main, rem)
                } else {
                    $split(&mut slice, keep)
                };
                $name { slice: main, rem, size, shares }
            }
        }

        impl<'a, T: $bound> ParallelIterator for $name<'a, T> {
            type Item = $item;
            fn drive_engine<C: Consumer<$item>>(self, consumer: C) -> C::Result {
                drive_piece(self, consumer)
            }
            fn opt_len(&self) -> Option<usize> {
                Some(IndexedParallelIterator::len(self))
            }
        }

        impl<'a, T: $bound> IndexedParallelIterator for $name<'a, T> {
            type Piece<'p>
                = $piece<'a, 'p, T>
            where
                Self: 'p;
            fn piece(&mut self) -> Self::Piece<'_> {
                $piece {
                    slice: mem::take(&mut self.slice),
                    size: self.size,
                    base: 0,
                    shares: &self.shares,
                }
            }
            fn len(&self) -> usize {
                self.slice.len().div_ceil(self.size)
            }
        }

        #[doc = concat!("[`", stringify!($name), "`]'s piece.")]
        pub struct $piece<'a, 'p, T> {
            slice: $slice,
            size: usize,
            /// Element index of `slice[0]` in the placed container.
            base: usize,
            shares: &'p [(NodeId, std::ops::Range<usize>)],
        }

        impl<'a, T: $bound> Piece for $piece<'a, '_, T> {
            type Item = $item;
            type Seq<'s> = std::slice::$std<'a, T> where Self: 's;
            type RevSeq<'s> = std::iter::Rev<std::slice::$std<'a, T>> where Self: 's;
            fn split_cheap(&self) -> bool {
                true
            }
            fn units(&self) -> usize {
                self.slice.len().div_ceil(self.size)
            }
            fn layout(&self, out: &mut Vec<Extent>) {
                if $from_end || self.shares.is_empty() {
                    return;
                }
                let mut elems = Vec::new();
                Extent::clip(self.shares, self.base, self.slice.len(), mem::size_of::<T>(), &mut elems);
                let size = self.size;
                out.extend(elems.into_iter().filter_map(|e| {
                    let (s, t) = (e.start.div_ceil(size), e.end.div_ceil(size));
                    (s < t).then_some(Extent { start: s, end: t, unit_bytes: e.unit_bytes * size, ..e })
                }));
            }
            fn split_at(self, mid: usize) -> (Self, Self) {
                let $piece { mut slice, size, base, shares } = self;
                let len = slice.len();
                let n = elems(mid, size, len);
                if $from_end {
                    let (rest, first) = $split(&mut slice, len - n);
                    ($piece { slice: first, size, base: base + len - n, shares },
                     $piece { slice: rest, size, base, shares })
                } else {
                    let (first, rest) = $split(&mut slice, n);
                    ($piece { slice: first, size, base, shares },
                     $piece { slice: rest, size, base: base + n, shares })
                }
            }
            fn front(&mut self, n: usize) -> Self::Seq<'_> {
                let len = self.slice.len();
                let k = elems(n, self.size, len);
                if $from_end {
                    let (rest, batch) = $split(&mut self.slice, len - k);
                    self.slice = rest;
                    batch.$method(self.size)
                } else {
                    let (batch, rest) = $split(&mut self.slice, k);
                    self.slice = rest;
                    self.base += k;
                    batch.$method(self.size)
                }
            }
            fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
                let len = self.slice.len();
                let keep = elems(self.units() - n, self.size, len);
                if $from_end {
                    let (batch, rest) = $split(&mut self.slice, len - keep);
                    self.slice = rest;
                    self.base += len - keep;
                    batch.$method(self.size).rev()
                } else {
                    let (rest, batch) = $split(&mut self.slice, keep);
                    self.slice = rest;
                    batch.$method(self.size).rev()
                }
            }
        }
    };
}

chunks! {
    /// [`ParallelSlice::par_chunks`](super::ParallelSlice::par_chunks)'s iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let c: terroir::iter::slice::Chunks<'_, i32> = [1, 2, 3].par_chunks(2);
    /// assert_eq!(c.collect::<Vec<_>>(), [&[1, 2][..], &[3]]);
    /// ```
    Chunks, ChunksPiece, &'a [T], Sync, &'a [T], Chunks, chunks, split,
    from_end: false, exact: false
}

chunks! {
    /// [`ParallelSlice::par_chunks_exact`](super::ParallelSlice::par_chunks_exact)'s iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let c: terroir::iter::slice::ChunksExact<'_, i32> = [1, 2, 3].par_chunks_exact(2);
    /// assert_eq!(c.collect::<Vec<_>>(), [&[1, 2][..]]);
    /// ```
    ChunksExact, ChunksExactPiece, &'a [T], Sync, &'a [T], ChunksExact, chunks_exact, split,
    from_end: false, exact: true
}

chunks! {
    /// [`ParallelSlice::par_rchunks`](super::ParallelSlice::par_rchunks)'s iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let c: terroir::iter::slice::RChunks<'_, i32> = [1, 2, 3].par_rchunks(2);
    /// assert_eq!(c.collect::<Vec<_>>(), [&[2, 3][..], &[1]]);
    /// ```
    RChunks, RChunksPiece, &'a [T], Sync, &'a [T], RChunks, rchunks, split,
    from_end: true, exact: false
}

chunks! {
    /// [`ParallelSlice::par_rchunks_exact`](super::ParallelSlice::par_rchunks_exact)'s iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let c: terroir::iter::slice::RChunksExact<'_, i32> = [1, 2, 3].par_rchunks_exact(2);
    /// assert_eq!(c.collect::<Vec<_>>(), [&[2, 3][..]]);
    /// ```
    RChunksExact, RChunksExactPiece, &'a [T], Sync, &'a [T], RChunksExact, rchunks_exact, split,
    from_end: true, exact: true
}

chunks! {
    /// [`ParallelSliceMut::par_chunks_mut`](super::ParallelSliceMut::par_chunks_mut)'s iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let mut v = [1, 2, 3];
    /// let c: terroir::iter::slice::ChunksMut<'_, i32> = v.par_chunks_mut(2);
    /// c.for_each(|c| c.reverse());
    /// assert_eq!(v, [2, 1, 3]);
    /// ```
    ChunksMut, ChunksMutPiece, &'a mut [T], Send, &'a mut [T], ChunksMut, chunks_mut, split_mut,
    from_end: false, exact: false
}

chunks! {
    /// [`ParallelSliceMut::par_chunks_exact_mut`](super::ParallelSliceMut::par_chunks_exact_mut)'s iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let mut v = [1, 2, 3];
    /// let c: terroir::iter::slice::ChunksExactMut<'_, i32> = v.par_chunks_exact_mut(2);
    /// c.for_each(|c| c.reverse());
    /// assert_eq!(v, [2, 1, 3]);
    /// ```
    ChunksExactMut, ChunksExactMutPiece, &'a mut [T], Send, &'a mut [T], ChunksExactMut,
    chunks_exact_mut, split_mut, from_end: false, exact: true
}

chunks! {
    /// [`ParallelSliceMut::par_rchunks_mut`](super::ParallelSliceMut::par_rchunks_mut)'s iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let mut v = [1, 2, 3];
    /// let c: terroir::iter::slice::RChunksMut<'_, i32> = v.par_rchunks_mut(2);
    /// c.for_each(|c| c.reverse());
    /// assert_eq!(v, [1, 3, 2]);
    /// ```
    RChunksMut, RChunksMutPiece, &'a mut [T], Send, &'a mut [T], RChunksMut, rchunks_mut,
    split_mut, from_end: true, exact: false
}

chunks! {
    /// [`ParallelSliceMut::par_rchunks_exact_mut`](super::ParallelSliceMut::par_rchunks_exact_mut)'s iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let mut v = [1, 2, 3];
    /// let c: terroir::iter::slice::RChunksExactMut<'_, i32> = v.par_rchunks_exact_mut(2);
    /// c.for_each(|c| c.reverse());
    /// assert_eq!(v, [1, 3, 2]);
    /// ```
    RChunksExactMut, RChunksExactMutPiece, &'a mut [T], Send, &'a mut [T], RChunksExactMut,
    rchunks_exact_mut, split_mut, from_end: true, exact: true
}

/// `Clone` for the iterators over shared slices, whatever `T` is (a clone
/// shares the slice).
macro_rules! clone_shared {
    ($($name:ident),*) => {$(
        impl<T> Clone for $name<'_, T> {
            fn clone(&self) -> Self {
                $name {
                    slice: self.slice,
                    rem: self.rem,
                    size: self.size,
                    shares: self.shares.clone(),
                }
            }
        }
    )*};
}
clone_shared!(Chunks, ChunksExact, RChunks, RChunksExact);

impl<'a, T> ChunksExact<'a, T> {
    /// The elements left over (fewer than a chunk).
    pub fn remainder(&self) -> &'a [T] {
        self.rem
    }
}

impl<'a, T> RChunksExact<'a, T> {
    /// The elements left over at the start (fewer than a chunk).
    pub fn remainder(&self) -> &'a [T] {
        self.rem
    }
}

/// The remainder accessors of the exact `_mut` forms (`$at`: where the
/// remainder is).
macro_rules! remainder_mut {
    ($name:ident, $at:literal, $method:ident) => {
        impl<'a, T> $name<'a, T> {
            #[doc = concat!("The elements left over ", $at, " (fewer than a chunk).")]
            pub fn remainder(&mut self) -> &mut [T] {
                self.rem
            }

            #[doc = concat!("The elements left over ", $at, ", for the slice's whole lifetime")]
            /// (consumes the iterator).
            ///
            /// ```
            /// use terroir::prelude::*;
            /// let mut v = [1, 2, 3, 4, 5];
            #[doc = concat!("let c = v.", stringify!($method), "(2);")]
            /// let rem = c.into_remainder();
            /// rem[0] = 0;
            /// assert!(v.contains(&0));
            /// ```
            pub fn into_remainder(self) -> &'a mut [T] {
                self.rem
            }

            #[doc = concat!("Takes the elements left over ", $at, ", for the slice's whole")]
            /// lifetime; the iterator keeps an empty remainder.
            pub fn take_remainder(&mut self) -> &'a mut [T] {
                mem::take(&mut self.rem)
            }
        }
    };
}
remainder_mut!(ChunksExactMut, "at the end", par_chunks_exact_mut);
remainder_mut!(RChunksExactMut, "at the start", par_rchunks_exact_mut);

/// [`ParallelSlice::par_windows`](super::ParallelSlice::par_windows)'s
/// iterator.
///
/// ```
/// use terroir::prelude::*;
/// let w: terroir::iter::slice::Windows<'_, i32> = [1, 2, 3].par_windows(2);
/// assert_eq!(w.collect::<Vec<_>>(), [&[1, 2][..], &[2, 3]]);
/// ```
#[derive(Clone, Debug)]
pub struct Windows<'a, T> {
    slice: &'a [T],
    size: usize,
}

impl<'a, T> Windows<'a, T> {
    pub(crate) fn new(slice: &'a [T], size: usize) -> Self {
        Windows { slice, size }
    }
}

impl<'a, T: Sync> ParallelIterator for Windows<'a, T> {
    type Item = &'a [T];
    fn drive_engine<C: Consumer<&'a [T]>>(self, consumer: C) -> C::Result {
        drive_piece(self, consumer)
    }
    fn opt_len(&self) -> Option<usize> {
        Some(IndexedParallelIterator::len(self))
    }
}

impl<'a, T: Sync> IndexedParallelIterator for Windows<'a, T> {
    type Piece<'p>
        = WindowsPiece<'a, T>
    where
        Self: 'p;
    fn piece(&mut self) -> WindowsPiece<'a, T> {
        WindowsPiece {
            slice: self.slice,
            size: self.size,
        }
    }
    fn len(&self) -> usize {
        (self.slice.len() + 1).saturating_sub(self.size)
    }
}

/// [`Windows`]' piece: the windows starting in the first `units` elements
/// of `slice` (which holds `size - 1` more, for the last window).
pub struct WindowsPiece<'a, T> {
    slice: &'a [T],
    size: usize,
}

impl<'a, T: Sync> Piece for WindowsPiece<'a, T> {
    type Item = &'a [T];
    type Seq<'s>
        = std::slice::Windows<'a, T>
    where
        Self: 's;
    type RevSeq<'s>
        = std::iter::Rev<std::slice::Windows<'a, T>>
    where
        Self: 's;
    fn split_cheap(&self) -> bool {
        true
    }
    fn units(&self) -> usize {
        (self.slice.len() + 1).saturating_sub(self.size)
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let size = self.size;
        if mid == 0 {
            return (
                WindowsPiece {
                    slice: &self.slice[..0],
                    size,
                },
                self,
            );
        }
        (
            WindowsPiece {
                slice: &self.slice[..mid + size - 1],
                size,
            },
            WindowsPiece {
                slice: &self.slice[mid..],
                size,
            },
        )
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        let size = self.size;
        let batch = if n == 0 {
            &self.slice[..0]
        } else {
            &self.slice[..n + size - 1]
        };
        self.slice = &self.slice[n..];
        batch.windows(size)
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        let size = self.size;
        let keep = self.units() - n;
        let batch = &self.slice[keep..];
        self.slice = if keep == 0 {
            &self.slice[..0]
        } else {
            &self.slice[..keep + size - 1]
        };
        batch.windows(size).rev()
    }
}
