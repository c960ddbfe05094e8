//! The adaptors that need an indexed iterator and keep its units one for
//! one: `enumerate`, `zip`, `zip_eq`, `rev`, `with_min_len`,
//! `with_max_len` (and `positions`); those that regroup units (`skip`,
//! `take`, `step_by`, `chunks`) are in `regroup.rs`. Each runs through
//! its [`Piece`].

use std::iter;
use std::ops::Range;

use super::engine::{forward_piece, Consumer, Extent, Hints, Piece};
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
            fn drive_engine<C: Consumer<$item>>(self, consumer: C) -> C::Result {
                $crate::iter::indexed::drive_piece(self, consumer)
            }
            fn opt_len(&self) -> Option<usize> {
                Some(IndexedParallelIterator::len(self))
            }
        }
    };
}
pub(super) use indexed_parallel_iterator;

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
    forward_piece!(cheap);
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
    fn split_cheap(&self) -> bool {
        self.a.split_cheap() && self.b.split_cheap()
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
    fn split_cheap(&self) -> bool {
        self.base.split_cheap()
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
    fn split_cheap(&self) -> bool {
        self.base.split_cheap()
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
    fn drive_engine<C: Consumer<usize>>(self, consumer: C) -> C::Result {
        let Positions { base, predicate } = self;
        base.enumerate()
            .filter_map(|(i, x)| predicate(x).then_some(i))
            .drive_engine(consumer)
    }
}
