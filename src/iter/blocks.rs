//! [`by_exponential_blocks`](super::IndexedParallelIterator::by_exponential_blocks)
//! and [`by_uniform_blocks`](super::IndexedParallelIterator::by_uniform_blocks):
//! a loop run as a sequence of parallel loops over consecutive blocks,
//! each one finished before the next one starts.

use super::engine::{self, Consumer, Folder, Piece};
use super::unindexed::Shift;
use super::{IndexedParallelIterator, ParallelIterator};

/// Runs `base` block after block (sizes from `size`, given the block's
/// index), each a parallel loop of its own, stopping early once the
/// result cannot change.
fn by_blocks<I, C>(mut base: I, consumer: C, size: impl Fn(usize) -> usize) -> C::Result
where
    I: IndexedParallelIterator,
    C: Consumer<I::Item>,
{
    let mut piece = base.piece();
    let mut result: Option<C::Result> = None;
    let (mut at, mut k) = (0usize, 0usize);
    while piece.units() > 0 {
        let n = size(k).clamp(1, piece.units());
        let (block, rest) = piece.split_at(n);
        piece = rest;
        let r = engine::run(
            block,
            Shift {
                base: &consumer,
                by: at,
            },
        );
        let r = match result.take() {
            Some(l) => consumer.reduce(l, r),
            None => r,
        };
        at = at.saturating_add(n);
        k += 1;
        let done = consumer.done(&r) || consumer.stop(at, at.saturating_add(piece.units()));
        result = Some(r);
        if done {
            break;
        }
    }
    // What is left (after an early end) is dropped with `piece`.
    result.unwrap_or_else(|| consumer.folder().complete())
}

/// [`IndexedParallelIterator::by_exponential_blocks`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let b: terroir::iter::ExponentialBlocks<_> = (0..1000).into_par_iter().by_exponential_blocks();
/// assert_eq!(b.find_first(|x| x % 97 == 96), Some(96));
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct ExponentialBlocks<I> {
    base: I,
}

impl<I> ExponentialBlocks<I> {
    pub(crate) fn new(base: I) -> Self {
        ExponentialBlocks { base }
    }
}

impl<I: IndexedParallelIterator> ParallelIterator for ExponentialBlocks<I> {
    type Item = I::Item;
    fn drive_engine<C: Consumer<I::Item>>(self, consumer: C) -> C::Result {
        // As rayon: the first block has a unit per worker, each next one
        // twice as many.
        let first = crate::current_num_threads().max(1);
        by_blocks(self.base, consumer, |k| {
            first.saturating_mul(1usize.checked_shl(k as u32).unwrap_or(usize::MAX))
        })
    }
}

/// [`IndexedParallelIterator::by_uniform_blocks`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let b: terroir::iter::UniformBlocks<_> = (0..10).into_par_iter().by_uniform_blocks(3);
/// assert_eq!(b.collect::<Vec<_>>(), (0..10).collect::<Vec<_>>());
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct UniformBlocks<I> {
    base: I,
    block_size: usize,
}

impl<I> UniformBlocks<I> {
    pub(crate) fn new(base: I, block_size: usize) -> Self {
        UniformBlocks { base, block_size }
    }
}

impl<I: IndexedParallelIterator> ParallelIterator for UniformBlocks<I> {
    type Item = I::Item;
    fn drive_engine<C: Consumer<I::Item>>(self, consumer: C) -> C::Result {
        let size = self.block_size;
        by_blocks(self.base, consumer, |_| size)
    }
}
