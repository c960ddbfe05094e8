//! The adaptors that need an indexed iterator: `enumerate`, `zip`,
//! `zip_eq`, `rev`, `skip`, `take`, `step_by`, `chunks`, `with_min_len`,
//! `with_max_len` (and `positions`). Each runs through its [`Piece`].

use std::iter;
use std::ops::Range;

use super::indexed::drive_piece;
use super::plumbing::{forward_piece, Consumer, Extent, Hints, Piece};
use super::{IndexedParallelIterator, ParallelIterator};

/// Implements `ParallelIterator` (through the piece) for an indexed
/// adaptor whose `IndexedParallelIterator` impl has the same bounds.
macro_rules! indexed_parallel_iterator {
    (impl<$($p:ident),*> $ty:ty where [$($bounds:tt)*] { type Item = $item:ty; }) => {
        impl<$($p),*> ParallelIterator for $ty
        where
            $($bounds)*
        {
            type Item = $item;
            fn drive<C: Consumer<$item>>(self, consumer: C) -> C::Result {
                drive_piece(self, consumer)
            }
            fn opt_len(&self) -> Option<usize> {
                Some(IndexedParallelIterator::len(self))
            }
        }
    };
}

/// [`IndexedParallelIterator::enumerate`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let e: terroir::iter::Enumerate<_> = (10..13).into_par_iter().enumerate();
/// assert_eq!(e.collect::<Vec<_>>(), [(0, 10), (1, 11), (2, 12)]);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct Enumerate<I> {
    base: I,
}

impl<I> Enumerate<I> {
    pub(crate) fn new(base: I) -> Self {
        Enumerate { base }
    }
}

indexed_parallel_iterator! {
    impl<I> Enumerate<I> where [I: IndexedParallelIterator] { type Item = (usize, I::Item); }
}

impl<I: IndexedParallelIterator> IndexedParallelIterator for Enumerate<I> {
    type Piece<'a>
        = EnumeratePiece<I::Piece<'a>>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        EnumeratePiece {
            base: self.base.piece(),
            offset: 0,
        }
    }
    fn len(&self) -> usize {
        self.base.len()
    }
}

/// [`Enumerate`]'s piece: the index of its first unit.
pub struct EnumeratePiece<P> {
    base: P,
    offset: usize,
}

impl<P: Piece> Piece for EnumeratePiece<P> {
    fn pure(&self) -> bool {
        self.base.pure()
    }
    type Item = (usize, P::Item);
    type Seq<'s>
        = iter::Zip<Range<usize>, P::Seq<'s>>
    where
        Self: 's;
    type RevSeq<'s>
        = iter::Zip<iter::Rev<Range<usize>>, P::RevSeq<'s>>
    where
        Self: 's;
    forward_piece!();
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (a, b) = self.base.split_at(mid);
        (
            EnumeratePiece {
                base: a,
                offset: self.offset,
            },
            EnumeratePiece {
                base: b,
                offset: self.offset + mid,
            },
        )
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        let first = self.offset;
        self.offset += n;
        (first..first + n).zip(self.base.front(n))
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        let end = self.offset + self.base.units();
        (end - n..end).rev().zip(self.base.back_rev(n))
    }
}

/// [`IndexedParallelIterator::zip`]'s iterator: the shorter iterator sets
/// the length (the longer one's extra items are dropped unused).
///
/// ```
/// use terroir::prelude::*;
/// let z: terroir::iter::Zip<_, _> = (0..3).into_par_iter().zip(vec![1, 2, 3, 4]);
/// assert_eq!(z.map(|(a, b)| a * b).sum::<i32>(), 8);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct Zip<A, B> {
    a: A,
    b: B,
}

impl<A, B> Zip<A, B> {
    pub(crate) fn new(a: A, b: B) -> Self {
        Zip { a, b }
    }
}

indexed_parallel_iterator! {
    impl<A, B> Zip<A, B> where [A: IndexedParallelIterator, B: IndexedParallelIterator] {
        type Item = (A::Item, B::Item);
    }
}

impl<A, B> IndexedParallelIterator for Zip<A, B>
where
    A: IndexedParallelIterator,
    B: IndexedParallelIterator,
{
    type Piece<'a>
        = ZipPiece<A::Piece<'a>, B::Piece<'a>>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        let n = self.len();
        let a = self.a.piece();
        let b = self.b.piece();
        ZipPiece {
            a: a.split_at(n).0,
            b: b.split_at(n).0,
        }
    }
    fn len(&self) -> usize {
        self.a.len().min(self.b.len())
    }
}

/// [`Zip`]'s piece: two pieces of the same length in lockstep.
pub struct ZipPiece<A, B> {
    a: A,
    b: B,
}

impl<A: Piece, B: Piece> Piece for ZipPiece<A, B> {
    fn pure(&self) -> bool {
        self.a.pure() && self.b.pure()
    }
    type Item = (A::Item, B::Item);
    type Seq<'s>
        = iter::Zip<A::Seq<'s>, B::Seq<'s>>
    where
        Self: 's;
    type RevSeq<'s>
        = iter::Zip<A::RevSeq<'s>, B::RevSeq<'s>>
    where
        Self: 's;
    fn units(&self) -> usize {
        self.a.units()
    }
    fn hints(&self) -> Hints {
        self.a.hints().and(self.b.hints())
    }
    fn layout(&self, out: &mut Vec<Extent>) {
        self.a.layout(out);
        self.b.layout(out);
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (a1, a2) = self.a.split_at(mid);
        let (b1, b2) = self.b.split_at(mid);
        (ZipPiece { a: a1, b: b1 }, ZipPiece { a: a2, b: b2 })
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        self.a.front(n).zip(self.b.front(n))
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        self.a.back_rev(n).zip(self.b.back_rev(n))
    }
}

/// [`IndexedParallelIterator::zip_eq`]'s iterator (the lengths were
/// checked to be equal).
///
/// ```
/// use terroir::prelude::*;
/// let v: Vec<(i32, i32)> = (0..2).into_par_iter().zip_eq(vec![5, 6]).collect();
/// assert_eq!(v, [(0, 5), (1, 6)]);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct ZipEq<A, B> {
    zip: Zip<A, B>,
}

impl<A, B> ZipEq<A, B> {
    pub(crate) fn new(a: A, b: B) -> Self {
        ZipEq {
            zip: Zip::new(a, b),
        }
    }
}

indexed_parallel_iterator! {
    impl<A, B> ZipEq<A, B> where [A: IndexedParallelIterator, B: IndexedParallelIterator] {
        type Item = (A::Item, B::Item);
    }
}

impl<A, B> IndexedParallelIterator for ZipEq<A, B>
where
    A: IndexedParallelIterator,
    B: IndexedParallelIterator,
{
    type Piece<'a>
        = ZipPiece<A::Piece<'a>, B::Piece<'a>>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        self.zip.piece()
    }
    fn len(&self) -> usize {
        self.zip.len()
    }
}

/// [`IndexedParallelIterator::rev`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let r: terroir::iter::Rev<_> = [1, 2, 3].par_iter().rev();
/// assert_eq!(r.copied().collect::<Vec<_>>(), [3, 2, 1]);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct Rev<I> {
    base: I,
}

impl<I> Rev<I> {
    pub(crate) fn new(base: I) -> Self {
        Rev { base }
    }
}

indexed_parallel_iterator! {
    impl<I> Rev<I> where [I: IndexedParallelIterator] { type Item = I::Item; }
}

impl<I: IndexedParallelIterator> IndexedParallelIterator for Rev<I> {
    type Piece<'a>
        = RevPiece<I::Piece<'a>>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        RevPiece {
            base: self.base.piece(),
        }
    }
    fn len(&self) -> usize {
        self.base.len()
    }
}

/// [`Rev`]'s piece: the base taken from the back.
pub struct RevPiece<P> {
    base: P,
}

impl<P> RevPiece<P> {
    /// `base` taken from the back (also how the driver runs a loop back
    /// to front for `find_last`).
    pub(crate) fn new(base: P) -> Self {
        RevPiece { base }
    }
}

impl<P: Piece> Piece for RevPiece<P> {
    fn pure(&self) -> bool {
        self.base.pure()
    }
    type Item = P::Item;
    type Seq<'s>
        = P::RevSeq<'s>
    where
        Self: 's;
    type RevSeq<'s>
        = P::Seq<'s>
    where
        Self: 's;
    fn units(&self) -> usize {
        self.base.units()
    }
    fn hints(&self) -> Hints {
        self.base.hints()
    }
    fn layout(&self, out: &mut Vec<Extent>) {
        let units = self.base.units();
        let mut mine = Vec::new();
        self.base.layout(&mut mine);
        out.extend(mine.iter().rev().map(|e| Extent {
            start: units - e.end,
            end: units - e.start,
            ..*e
        }));
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let units = self.base.units();
        let (a, b) = self.base.split_at(units - mid);
        (RevPiece { base: b }, RevPiece { base: a })
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        self.base.back_rev(n)
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        self.base.front(n)
    }
}

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

/// [`IndexedParallelIterator::with_min_len`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let m: terroir::iter::MinLen<_> = (0..100).into_par_iter().with_min_len(10);
/// assert_eq!(m.sum::<i32>(), 4950);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct MinLen<I> {
    base: I,
    min: usize,
}

impl<I> MinLen<I> {
    pub(crate) fn new(base: I, min: usize) -> Self {
        MinLen { base, min }
    }
}

/// [`IndexedParallelIterator::with_max_len`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let m: terroir::iter::MaxLen<_> = (0..100).into_par_iter().with_max_len(1);
/// assert_eq!(m.count(), 100);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct MaxLen<I> {
    base: I,
    max: usize,
}

impl<I> MaxLen<I> {
    pub(crate) fn new(base: I, max: usize) -> Self {
        MaxLen { base, max }
    }
}

indexed_parallel_iterator! {
    impl<I> MinLen<I> where [I: IndexedParallelIterator] { type Item = I::Item; }
}

indexed_parallel_iterator! {
    impl<I> MaxLen<I> where [I: IndexedParallelIterator] { type Item = I::Item; }
}

impl<I: IndexedParallelIterator> IndexedParallelIterator for MinLen<I> {
    type Piece<'a>
        = HintPiece<I::Piece<'a>>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        HintPiece {
            base: self.base.piece(),
            hints: Hints {
                min_len: self.min.max(1),
                ..Hints::NONE
            },
        }
    }
    fn len(&self) -> usize {
        self.base.len()
    }
}

impl<I: IndexedParallelIterator> IndexedParallelIterator for MaxLen<I> {
    type Piece<'a>
        = HintPiece<I::Piece<'a>>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        HintPiece {
            base: self.base.piece(),
            hints: Hints {
                max_len: self.max.max(1),
                ..Hints::NONE
            },
        }
    }
    fn len(&self) -> usize {
        self.base.len()
    }
}

/// The piece of [`MinLen`], [`MaxLen`] and
/// [`Scheduled`](super::Scheduled): the base with bounds or options added.
pub struct HintPiece<P> {
    pub(crate) base: P,
    pub(crate) hints: Hints,
}

impl<P: Piece> Piece for HintPiece<P> {
    fn pure(&self) -> bool {
        self.base.pure()
    }
    type Item = P::Item;
    type Seq<'s>
        = P::Seq<'s>
    where
        Self: 's;
    type RevSeq<'s>
        = P::RevSeq<'s>
    where
        Self: 's;
    fn units(&self) -> usize {
        self.base.units()
    }
    fn hints(&self) -> Hints {
        self.base.hints().and(self.hints)
    }
    fn layout(&self, out: &mut Vec<Extent>) {
        self.base.layout(out)
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (a, b) = self.base.split_at(mid);
        let hints = self.hints;
        (HintPiece { base: a, hints }, HintPiece { base: b, hints })
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        self.base.front(n)
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        self.base.back_rev(n)
    }
}

/// [`IndexedParallelIterator::positions`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let p: terroir::iter::Positions<_, _> = (0..10).into_par_iter().positions(|x| x % 4 == 0);
/// assert_eq!(p.collect::<Vec<_>>(), [0, 4, 8]);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone)]
pub struct Positions<I, P> {
    base: I,
    predicate: P,
}

impl<I, P> std::fmt::Debug for Positions<I, P>
where
    I: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Positions")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl<I, P> Positions<I, P> {
    pub(crate) fn new(base: I, predicate: P) -> Self {
        Positions { base, predicate }
    }
}

impl<I, P> ParallelIterator for Positions<I, P>
where
    I: IndexedParallelIterator,
    P: Fn(I::Item) -> bool + Sync + Send,
{
    type Item = usize;
    fn drive<C: Consumer<usize>>(self, consumer: C) -> C::Result {
        let Positions { base, predicate } = self;
        base.enumerate()
            .filter_map(|(i, x)| predicate(x).then_some(i))
            .drive(consumer)
    }
}
