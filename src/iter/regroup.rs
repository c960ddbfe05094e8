//! The indexed adaptors that regroup units: `skip`, `take` (fewer
//! units), `step_by` (every `step`-th unit) and `chunks` (a unit per
//! `size` base units). Each runs through its [`Piece`].

use std::iter;

use super::engine::{Consumer, Extent, Hints, Piece};
use super::indexed_adaptors::indexed_parallel_iterator;
use super::{IndexedParallelIterator, ParallelIterator};

/// [`IndexedParallelIterator::skip`]'s iterator. The skipped items are
/// produced (sequentially) and dropped, as in rayon, so that side effects
/// of the adaptors before `skip` happen for them too.
///
/// ```
/// use terroir::prelude::*;
/// let s: terroir::iter::Skip<_> = (0..5).into_par_iter().skip(3);
/// assert_eq!(s.collect::<Vec<_>>(), [3, 4]);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct Skip<I> {
    base: I,
    n: usize,
}

impl<I> Skip<I> {
    pub(crate) fn new(base: I, n: usize) -> Self {
        Skip { base, n }
    }
}

indexed_parallel_iterator! {
    impl<I> Skip<I> where [I: IndexedParallelIterator] { type Item = I::Item; }
}

impl<I: IndexedParallelIterator> IndexedParallelIterator for Skip<I> {
    type Piece<'a>
        = I::Piece<'a>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        let p = self.base.piece();
        let n = self.n.min(p.units());
        let pure = p.pure();
        let (mut skipped, rest) = p.split_at(n);
        // As in rayon, the skipped items are still produced (sequentially,
        // here), for their side effects: a `map` before `skip` sees them.
        // Items that run no user code are just dropped (`Piece::pure`).
        let k = skipped.units();
        let batch = skipped.front(k);
        if pure {
            drop(batch);
        } else {
            batch.for_each(drop);
        }
        rest
    }
    fn len(&self) -> usize {
        self.base.len().saturating_sub(self.n)
    }
}

/// [`IndexedParallelIterator::take`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let t: terroir::iter::Take<_> = (0..5).into_par_iter().take(2);
/// assert_eq!(t.collect::<Vec<_>>(), [0, 1]);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct Take<I> {
    base: I,
    n: usize,
}

impl<I> Take<I> {
    pub(crate) fn new(base: I, n: usize) -> Self {
        Take { base, n }
    }
}

indexed_parallel_iterator! {
    impl<I> Take<I> where [I: IndexedParallelIterator] { type Item = I::Item; }
}

impl<I: IndexedParallelIterator> IndexedParallelIterator for Take<I> {
    type Piece<'a>
        = I::Piece<'a>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        let p = self.base.piece();
        let n = self.n.min(p.units());
        p.split_at(n).0
    }
    fn len(&self) -> usize {
        self.base.len().min(self.n)
    }
}

/// [`IndexedParallelIterator::step_by`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let s: terroir::iter::StepBy<_> = (0..7).into_par_iter().step_by(3);
/// assert_eq!(s.collect::<Vec<_>>(), [0, 3, 6]);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct StepBy<I> {
    base: I,
    step: usize,
}

impl<I> StepBy<I> {
    pub(crate) fn new(base: I, step: usize) -> Self {
        StepBy { base, step }
    }
}

indexed_parallel_iterator! {
    impl<I> StepBy<I> where [I: IndexedParallelIterator] { type Item = I::Item; }
}

impl<I: IndexedParallelIterator> IndexedParallelIterator for StepBy<I> {
    type Piece<'a>
        = StepByPiece<I::Piece<'a>>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        StepByPiece {
            base: self.base.piece(),
            step: self.step,
        }
    }
    fn len(&self) -> usize {
        self.base.len().div_ceil(self.step)
    }
}

/// [`StepBy`]'s piece: unit `u` is the base's unit `u * step`.
pub struct StepByPiece<P> {
    base: P,
    step: usize,
}

/// The base units from unit `u` of a piece whose units cover `per` base
/// units each (the last one maybe fewer).
fn base_units(u: usize, per: usize, total: usize) -> usize {
    u.saturating_mul(per).min(total)
}

/// Extents of a base piece seen by a piece whose unit `u` starts at base
/// unit `u * per`.
fn scaled_layout<P: Piece>(base: &P, per: usize, bytes_per: usize, out: &mut Vec<Extent>) {
    let mut mine = Vec::new();
    base.layout(&mut mine);
    out.extend(mine.into_iter().filter_map(|e| {
        let (s, t) = (e.start.div_ceil(per), e.end.div_ceil(per));
        (s < t).then_some(Extent {
            start: s,
            end: t,
            unit_bytes: e.unit_bytes * bytes_per,
            ..e
        })
    }));
}

impl<P: Piece> Piece for StepByPiece<P> {
    fn pure(&self) -> bool {
        self.base.pure()
    }
    fn split_cheap(&self) -> bool {
        self.base.split_cheap()
    }
    type Item = P::Item;
    type Seq<'s>
        = iter::StepBy<P::Seq<'s>>
    where
        Self: 's;
    type RevSeq<'s>
        = iter::StepBy<iter::Skip<P::RevSeq<'s>>>
    where
        Self: 's;
    fn units(&self) -> usize {
        self.base.units().div_ceil(self.step)
    }
    fn hints(&self) -> Hints {
        self.base.hints()
    }
    fn layout(&self, out: &mut Vec<Extent>) {
        scaled_layout(&self.base, self.step, 1, out)
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let cut = base_units(mid, self.step, self.base.units());
        let (a, b) = self.base.split_at(cut);
        let step = self.step;
        (StepByPiece { base: a, step }, StepByPiece { base: b, step })
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        let take = base_units(n, self.step, self.base.units());
        self.base.front(take).step_by(self.step)
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        let total = self.base.units();
        let units = self.units();
        let first = base_units(units - n, self.step, total);
        // The last base unit that is an item, counted from the back.
        let skip = if n == 0 {
            0
        } else {
            (total - 1) - (units - 1) * self.step
        };
        self.base
            .back_rev(total - first)
            .skip(skip)
            .step_by(self.step)
    }
}

/// [`IndexedParallelIterator::chunks`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let c: terroir::iter::Chunks<_> = (0..3).into_par_iter().chunks(2);
/// assert_eq!(c.collect::<Vec<_>>(), [vec![0, 1], vec![2]]);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct Chunks<I> {
    base: I,
    size: usize,
}

impl<I> Chunks<I> {
    pub(crate) fn new(base: I, size: usize) -> Self {
        Chunks { base, size }
    }
}

indexed_parallel_iterator! {
    impl<I> Chunks<I> where [I: IndexedParallelIterator] { type Item = Vec<I::Item>; }
}

impl<I: IndexedParallelIterator> IndexedParallelIterator for Chunks<I> {
    type Piece<'a>
        = ChunksPiece<I::Piece<'a>>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        ChunksPiece {
            base: self.base.piece(),
            size: self.size,
        }
    }
    fn len(&self) -> usize {
        self.base.len().div_ceil(self.size)
    }
}

/// [`Chunks`]'s piece: unit `u` is base units `u * size ..`.
pub struct ChunksPiece<P> {
    base: P,
    size: usize,
}

impl<P> ChunksPiece<P> {
    /// `base` in chunks of `size` (not 0).
    pub(crate) fn new(base: P, size: usize) -> Self {
        ChunksPiece { base, size }
    }
}

/// A batch of chunks, from the front.
pub struct ChunkSeq<S> {
    items: S,
    size: usize,
}

impl<S: Iterator> Iterator for ChunkSeq<S> {
    type Item = Vec<S::Item>;
    fn next(&mut self) -> Option<Vec<S::Item>> {
        let chunk: Vec<S::Item> = self.items.by_ref().take(self.size).collect();
        (!chunk.is_empty()).then_some(chunk)
    }
}

/// A batch of chunks, from the back: the first one yielded has `first`
/// items (the last chunk may be short), each chunk in forward order.
pub struct RevChunkSeq<S> {
    items: S,
    next_len: usize,
    size: usize,
}

impl<S: Iterator> Iterator for RevChunkSeq<S> {
    type Item = Vec<S::Item>;
    fn next(&mut self) -> Option<Vec<S::Item>> {
        let mut chunk: Vec<S::Item> = self.items.by_ref().take(self.next_len).collect();
        self.next_len = self.size;
        chunk.reverse();
        (!chunk.is_empty()).then_some(chunk)
    }
}

impl<P: Piece> Piece for ChunksPiece<P> {
    fn pure(&self) -> bool {
        self.base.pure()
    }
    fn split_cheap(&self) -> bool {
        self.base.split_cheap()
    }
    type Item = Vec<P::Item>;
    type Seq<'s>
        = ChunkSeq<P::Seq<'s>>
    where
        Self: 's;
    type RevSeq<'s>
        = RevChunkSeq<P::RevSeq<'s>>
    where
        Self: 's;
    fn units(&self) -> usize {
        self.base.units().div_ceil(self.size)
    }
    fn hints(&self) -> Hints {
        self.base.hints()
    }
    fn layout(&self, out: &mut Vec<Extent>) {
        scaled_layout(&self.base, self.size, self.size, out)
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let cut = base_units(mid, self.size, self.base.units());
        let (a, b) = self.base.split_at(cut);
        let size = self.size;
        (ChunksPiece { base: a, size }, ChunksPiece { base: b, size })
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        let take = base_units(n, self.size, self.base.units());
        ChunkSeq {
            items: self.base.front(take),
            size: self.size,
        }
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        let total = self.base.units();
        let units = self.units();
        let first = base_units(units - n, self.size, total);
        let last_len = total - (units.max(1) - 1) * self.size;
        RevChunkSeq {
            items: self.base.back_rev(total - first),
            next_len: last_len,
            size: self.size,
        }
    }
}
