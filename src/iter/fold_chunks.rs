//! [`fold_chunks`](super::IndexedParallelIterator::fold_chunks) and
//! [`fold_chunks_with`](super::IndexedParallelIterator::fold_chunks_with):
//! each chunk of consecutive items folded into one value. Indexed (a
//! unit is a chunk, as for [`chunks`](super::IndexedParallelIterator::chunks)),
//! so the values come in order and the result zips, reverses, …

use std::fmt;

use super::engine::{Consumer, Extent, Hints, Piece};
use super::indexed_adaptors::indexed_parallel_iterator;
use super::regroup::{ChunkSeq, ChunksPiece, RevChunkSeq};
use super::{IndexedParallelIterator, ParallelIterator};

/// How a chunk is folded.
pub trait ChunkFold<X>: Clone + Send {
    /// The value of a chunk.
    type Out;
    /// Folds `chunk` (its items in order).
    fn fold_chunk(&self, chunk: Vec<X>) -> Self::Out;
}

/// `fold_chunks`' folding: from `identity()`.
pub struct ByIdentity<'f, ID, F> {
    identity: &'f ID,
    fold_op: &'f F,
}

impl<ID, F> Clone for ByIdentity<'_, ID, F> {
    fn clone(&self) -> Self {
        ByIdentity { ..*self }
    }
}

impl<X, T, ID, F> ChunkFold<X> for ByIdentity<'_, ID, F>
where
    ID: Fn() -> T + Sync,
    F: Fn(T, X) -> T + Sync,
{
    type Out = T;
    fn fold_chunk(&self, chunk: Vec<X>) -> T {
        chunk.into_iter().fold((self.identity)(), self.fold_op)
    }
}

/// `fold_chunks_with`'s folding: from a clone of `init`.
pub struct ByClone<'f, U, F> {
    init: U,
    fold_op: &'f F,
}

impl<U: Clone, F> Clone for ByClone<'_, U, F> {
    fn clone(&self) -> Self {
        ByClone {
            init: self.init.clone(),
            fold_op: self.fold_op,
        }
    }
}

impl<X, U, F> ChunkFold<X> for ByClone<'_, U, F>
where
    U: Clone + Send,
    F: Fn(U, X) -> U + Sync,
{
    type Out = U;
    fn fold_chunk(&self, chunk: Vec<X>) -> U {
        chunk.into_iter().fold(self.init.clone(), self.fold_op)
    }
}

/// [`IndexedParallelIterator::fold_chunks`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let f: terroir::iter::FoldChunks<_, _, _> = (1..=6).into_par_iter().fold_chunks(4, || 0, |a, x| a + x);
/// assert_eq!(f.collect::<Vec<_>>(), [10, 11]);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone)]
pub struct FoldChunks<I, ID, F> {
    base: I,
    chunk_size: usize,
    identity: ID,
    fold_op: F,
}

impl<I, ID, F> FoldChunks<I, ID, F> {
    pub(crate) fn new(base: I, chunk_size: usize, identity: ID, fold_op: F) -> Self {
        FoldChunks {
            base,
            chunk_size,
            identity,
            fold_op,
        }
    }
}

/// Shows the base and the chunk size (the closures have no `Debug`).
impl<I: fmt::Debug, ID, F> fmt::Debug for FoldChunks<I, ID, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FoldChunks")
            .field("base", &self.base)
            .field("chunk_size", &self.chunk_size)
            .finish_non_exhaustive()
    }
}

indexed_parallel_iterator! {
    impl<I, ID, F, T> FoldChunks<I, ID, F> where [
        I: IndexedParallelIterator,
        ID: Fn() -> T + Send + Sync,
        F: Fn(T, I::Item) -> T + Send + Sync,
        T: Send,
    ] { type Item = T; }
}

impl<I, ID, F, T> IndexedParallelIterator for FoldChunks<I, ID, F>
where
    I: IndexedParallelIterator,
    ID: Fn() -> T + Send + Sync,
    F: Fn(T, I::Item) -> T + Send + Sync,
    T: Send,
{
    type Piece<'a>
        = FoldChunksPiece<I::Piece<'a>, ByIdentity<'a, ID, F>>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        FoldChunksPiece {
            chunks: ChunksPiece::new(self.base.piece(), self.chunk_size),
            op: ByIdentity {
                identity: &self.identity,
                fold_op: &self.fold_op,
            },
        }
    }
    fn len(&self) -> usize {
        self.base.len().div_ceil(self.chunk_size)
    }
}

/// [`IndexedParallelIterator::fold_chunks_with`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let f: terroir::iter::FoldChunksWith<_, _, _> = (1..=6).into_par_iter().fold_chunks_with(4, 100, |a, x| a + x);
/// assert_eq!(f.collect::<Vec<_>>(), [110, 111]);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone)]
pub struct FoldChunksWith<I, U, F> {
    base: I,
    chunk_size: usize,
    item: U,
    fold_op: F,
}

impl<I, U, F> FoldChunksWith<I, U, F> {
    pub(crate) fn new(base: I, chunk_size: usize, item: U, fold_op: F) -> Self {
        FoldChunksWith {
            base,
            chunk_size,
            item,
            fold_op,
        }
    }
}

/// Shows the base, the chunk size and the initial value.
impl<I: fmt::Debug, U: fmt::Debug, F> fmt::Debug for FoldChunksWith<I, U, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FoldChunksWith")
            .field("base", &self.base)
            .field("chunk_size", &self.chunk_size)
            .field("item", &self.item)
            .finish_non_exhaustive()
    }
}

indexed_parallel_iterator! {
    impl<I, U, F> FoldChunksWith<I, U, F> where [
        I: IndexedParallelIterator,
        U: Send + Clone,
        F: Fn(U, I::Item) -> U + Send + Sync,
    ] { type Item = U; }
}

impl<I, U, F> IndexedParallelIterator for FoldChunksWith<I, U, F>
where
    I: IndexedParallelIterator,
    U: Send + Clone,
    F: Fn(U, I::Item) -> U + Send + Sync,
{
    type Piece<'a>
        = FoldChunksPiece<I::Piece<'a>, ByClone<'a, U, F>>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        FoldChunksPiece {
            chunks: ChunksPiece::new(self.base.piece(), self.chunk_size),
            op: ByClone {
                init: self.item.clone(),
                fold_op: &self.fold_op,
            },
        }
    }
    fn len(&self) -> usize {
        self.base.len().div_ceil(self.chunk_size)
    }
}

/// The piece of [`FoldChunks`] and [`FoldChunksWith`]: chunks, each
/// folded by `op`.
pub struct FoldChunksPiece<P, O> {
    chunks: ChunksPiece<P>,
    op: O,
}

impl<P, O> Piece for FoldChunksPiece<P, O>
where
    P: Piece,
    O: ChunkFold<P::Item>,
{
    type Item = O::Out;
    type Seq<'s>
        = Folded<'s, ChunkSeq<P::Seq<'s>>, O>
    where
        Self: 's;
    type RevSeq<'s>
        = Folded<'s, RevChunkSeq<P::RevSeq<'s>>, O>
    where
        Self: 's;
    fn pure(&self) -> bool {
        false // the fold runs the user's closures
    }
    fn units(&self) -> usize {
        self.chunks.units()
    }
    fn hints(&self) -> Hints {
        self.chunks.hints()
    }
    fn layout(&self, out: &mut Vec<Extent>) {
        self.chunks.layout(out)
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (a, b) = self.chunks.split_at(mid);
        (
            FoldChunksPiece {
                chunks: a,
                op: self.op.clone(),
            },
            FoldChunksPiece {
                chunks: b,
                op: self.op,
            },
        )
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        Folded {
            chunks: self.chunks.front(n),
            op: &self.op,
        }
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        Folded {
            chunks: self.chunks.back_rev(n),
            op: &self.op,
        }
    }
}

/// A batch of folded chunks.
pub struct Folded<'s, S, O> {
    chunks: S,
    op: &'s O,
}

impl<X, S: Iterator<Item = Vec<X>>, O: ChunkFold<X>> Iterator for Folded<'_, S, O> {
    type Item = O::Out;
    fn next(&mut self) -> Option<O::Out> {
        self.chunks.next().map(|c| self.op.fold_chunk(c))
    }
}
