//! [`IndexedParallelIterator::interleave`] and
//! [`interleave_shortest`](IndexedParallelIterator::interleave_shortest):
//! the items of two indexed iterators taken in turns. Indexed: unit `u`
//! of the piece is the `u`-th item of the alternation, so it splits
//! anywhere.

use super::engine::{Consumer, Hints, Piece};
use super::indexed_adaptors::indexed_parallel_iterator;
use super::regroup::Take;
use super::{IndexedParallelIterator, ParallelIterator};

/// [`IndexedParallelIterator::interleave`]'s iterator: one item of each in
/// turn, then the rest of the longer one.
///
/// ```
/// use terroir::prelude::*;
/// let i: terroir::iter::Interleave<_, _> = (0..5).into_par_iter().interleave(10..12);
/// assert_eq!(i.collect::<Vec<_>>(), [0, 10, 1, 11, 2, 3, 4]);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct Interleave<I, J> {
    i: I,
    j: J,
}

impl<I, J> Interleave<I, J> {
    pub(crate) fn new(i: I, j: J) -> Self {
        Interleave { i, j }
    }
}

indexed_parallel_iterator! {
    impl<I, J> Interleave<I, J> where [I: IndexedParallelIterator, J: IndexedParallelIterator<Item = I::Item>] {
        type Item = I::Item;
    }
}

impl<I, J> IndexedParallelIterator for Interleave<I, J>
where
    I: IndexedParallelIterator,
    J: IndexedParallelIterator<Item = I::Item>,
{
    type Piece<'a>
        = InterleavePiece<I::Piece<'a>, J::Piece<'a>>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        InterleavePiece {
            a: self.i.piece(),
            b: self.j.piece(),
            a_first: true,
        }
    }
    fn len(&self) -> usize {
        self.i.len().checked_add(self.j.len()).expect("overflow")
    }
}

/// [`IndexedParallelIterator::interleave_shortest`]'s iterator: one item
/// of each in turn, ending when the one whose turn it is has none left.
///
/// ```
/// use terroir::prelude::*;
/// let i: terroir::iter::InterleaveShortest<_, _> = (0..5).into_par_iter().interleave_shortest(10..12);
/// assert_eq!(i.collect::<Vec<_>>(), [0, 10, 1, 11, 2]);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct InterleaveShortest<I, J> {
    interleave: Interleave<Take<I>, Take<J>>,
}

impl<I: IndexedParallelIterator, J: IndexedParallelIterator> InterleaveShortest<I, J> {
    pub(crate) fn new(i: I, j: J) -> Self {
        let (li, lj) = (i.len(), j.len());
        // `i` goes first: it may have one item more than `j`.
        let (ti, tj) = if li <= lj { (li, li) } else { (lj + 1, lj) };
        InterleaveShortest {
            interleave: Interleave::new(i.take(ti), j.take(tj)),
        }
    }
}

indexed_parallel_iterator! {
    impl<I, J> InterleaveShortest<I, J> where [I: IndexedParallelIterator, J: IndexedParallelIterator<Item = I::Item>] {
        type Item = I::Item;
    }
}

impl<I, J> IndexedParallelIterator for InterleaveShortest<I, J>
where
    I: IndexedParallelIterator,
    J: IndexedParallelIterator<Item = I::Item>,
{
    type Piece<'a>
        = InterleavePiece<
        <Take<I> as IndexedParallelIterator>::Piece<'a>,
        <Take<J> as IndexedParallelIterator>::Piece<'a>,
    >
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        self.interleave.piece()
    }
    fn len(&self) -> usize {
        self.interleave.len()
    }
}

/// Whether item `k` of an alternation of `ca` items of `a` and `cb` of
/// `b`, starting with `a` when `a_first`, is one of `a`'s.
fn from_a(k: usize, ca: usize, cb: usize, a_first: bool) -> bool {
    let (cx, cy) = if a_first { (ca, cb) } else { (cb, ca) };
    let x = if k < 2 * cx.min(cy) {
        k % 2 == 0
    } else {
        cx > cy
    };
    x == a_first
}

/// How many of the first `n` items of an alternation of `ca` and `cb`
/// items are `a`'s.
fn count_a(n: usize, ca: usize, cb: usize, a_first: bool) -> usize {
    let (cx, cy) = if a_first { (ca, cb) } else { (cb, ca) };
    let nx = cx.min(n.div_ceil(2).max(n.saturating_sub(cy)));
    if a_first {
        nx
    } else {
        n - nx
    }
}

/// [`Interleave`]'s piece: what is left of both, and whose turn it is.
pub struct InterleavePiece<A, B> {
    a: A,
    b: B,
    a_first: bool,
}

impl<A: Piece, B: Piece<Item = A::Item>> InterleavePiece<A, B> {
    /// Takes the first `n` items' units: `(a's, b's, whose turn after)`.
    fn cut(&self, n: usize) -> (usize, usize, bool) {
        let (ca, cb) = (self.a.units(), self.b.units());
        let na = count_a(n, ca, cb, self.a_first);
        let nb = n - na;
        // The turn after: unchanged after as many of each, else the other.
        let a_next = if na == nb { self.a_first } else { na < nb };
        (na, nb, a_next)
    }
}

impl<A: Piece, B: Piece<Item = A::Item>> Piece for InterleavePiece<A, B> {
    type Item = A::Item;
    type Seq<'s>
        = Alternate<A::Seq<'s>, B::Seq<'s>>
    where
        Self: 's;
    type RevSeq<'s>
        = Alternate<A::RevSeq<'s>, B::RevSeq<'s>>
    where
        Self: 's;
    fn pure(&self) -> bool {
        self.a.pure() && self.b.pure()
    }
    fn units(&self) -> usize {
        self.a.units() + self.b.units()
    }
    fn hints(&self) -> Hints {
        self.a.hints().and(self.b.hints())
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (na, nb, a_next) = self.cut(mid);
        let (a1, a2) = self.a.split_at(na);
        let (b1, b2) = self.b.split_at(nb);
        (
            InterleavePiece {
                a: a1,
                b: b1,
                a_first: self.a_first,
            },
            InterleavePiece {
                a: a2,
                b: b2,
                a_first: a_next,
            },
        )
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        let (na, nb, a_next) = self.cut(n);
        let a_first = std::mem::replace(&mut self.a_first, a_next);
        Alternate {
            a: self.a.front(na),
            b: self.b.front(nb),
            ca: na,
            cb: nb,
            a_first,
            k: 0,
            n,
            rev: false,
        }
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        let keep = self.units() - n;
        let (ka, kb, a_next) = self.cut(keep);
        let (na, nb) = (self.a.units() - ka, self.b.units() - kb);
        Alternate {
            a: self.a.back_rev(na),
            b: self.b.back_rev(nb),
            ca: na,
            cb: nb,
            a_first: a_next,
            k: n,
            n,
            rev: true,
        }
    }
}

/// A batch of an alternation of `ca` items of `a` and `cb` of `b`: item
/// `k` comes from the side [`from_a`] says (`rev`: last first, from the
/// sides' reversed batches).
pub struct Alternate<SA, SB> {
    a: SA,
    b: SB,
    ca: usize,
    cb: usize,
    a_first: bool,
    k: usize,
    n: usize,
    rev: bool,
}

impl<T, SA: Iterator<Item = T>, SB: Iterator<Item = T>> Iterator for Alternate<SA, SB> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        let k = if self.rev {
            self.k = self.k.checked_sub(1)?;
            self.k
        } else {
            if self.k == self.n {
                return None;
            }
            self.k += 1;
            self.k - 1
        };
        if from_a(k, self.ca, self.cb, self.a_first) {
            self.a.next()
        } else {
            self.b.next()
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = if self.rev { self.k } else { self.n - self.k };
        (left, Some(left))
    }
}
