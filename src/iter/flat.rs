//! The adaptors that run a loop per item: `flatten_iter` (a sequential
//! iterator per item, on the consumer side), `flat_map` and `flatten`
//! (a parallel loop per item, nested in the outer one's batch: its items
//! all take the outer unit's position).
//!
//! **Back to front.** `flat_map` is reversible when its consumer is
//! (`find_last`): the outer loop then runs back to front, and so does
//! every inner loop that the driver runs (`Consumer::reverse` reaches it
//! through [`At`]). An inner iterator whose driver never reverses (a
//! loop that is not cut into units, such as `split` or `walk_tree`) still
//! meets a reversed consumer correctly: `At` sees that it was not
//! reversed and turns its runs and its reductions around itself (holding
//! a run's items until it ends: that rare case costs memory, not a wrong
//! answer).

use std::sync::atomic::{AtomicBool, Ordering};

use super::engine::{forward_consumer, Consumer, Folder, Options};
use super::unindexed::FlatMapIter;
use super::{IntoParallelIterator, ParallelIterator};

/// [`ParallelIterator::flatten_iter`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let v = vec![vec![1, 2], vec![], vec![3]];
/// let f: terroir::iter::FlattenIter<_> = v.into_par_iter().flatten_iter();
/// assert_eq!(f.collect::<Vec<_>>(), [1, 2, 3]);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct FlattenIter<I> {
    base: I,
}

impl<I> FlattenIter<I> {
    pub(crate) fn new(base: I) -> Self {
        FlattenIter { base }
    }
}

impl<I> ParallelIterator for FlattenIter<I>
where
    I: ParallelIterator,
    I::Item: IntoIterator<Item: Send>,
{
    type Item = <I::Item as IntoIterator>::Item;
    fn drive_engine<C: Consumer<Self::Item>>(self, consumer: C) -> C::Result {
        let id = |x: I::Item| x;
        FlatMapIter::new(self.base, id).drive_engine(consumer)
    }
}

/// [`ParallelIterator::flat_map`]'s iterator: every inner iterator is run
/// as a loop of its own (which may be split in turn).
///
/// ```
/// use terroir::prelude::*;
/// let f: terroir::iter::FlatMap<_, _> = (0..3).into_par_iter().flat_map(|i| vec![i; i]);
/// assert_eq!(f.collect::<Vec<usize>>(), [1, 2, 2]);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone)]
pub struct FlatMap<I, F> {
    base: I,
    map_op: F,
}

impl<I, F> std::fmt::Debug for FlatMap<I, F>
where
    I: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlatMap")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl<I, F> FlatMap<I, F> {
    pub(crate) fn new(base: I, map_op: F) -> Self {
        FlatMap { base, map_op }
    }
}

impl<I, F, PI> ParallelIterator for FlatMap<I, F>
where
    I: ParallelIterator,
    F: Fn(I::Item) -> PI + Sync + Send,
    PI: IntoParallelIterator,
{
    type Item = PI::Item;
    fn drive_engine<C: Consumer<PI::Item>>(self, consumer: C) -> C::Result {
        let FlatMap { base, map_op } = self;
        base.drive_engine(FlatMapConsumer {
            base: &consumer,
            f: &map_op,
            reversed: AtomicBool::new(false),
        })
    }
}

/// Drives each item's inner iterator into `base`, all its items at the
/// outer unit's position.
struct FlatMapConsumer<'f, C, F> {
    base: &'f C,
    f: &'f F,
    /// Whether the outer loop runs back to front (set by `reverse`, before
    /// any folder exists), and so `base` too.
    reversed: AtomicBool,
}

impl<'f, T, C, F, PI> Consumer<T> for FlatMapConsumer<'f, C, F>
where
    C: Consumer<PI::Item>,
    F: Fn(T) -> PI + Sync,
    PI: IntoParallelIterator,
{
    type Folder = FlatMapFolder<'f, C, F, C::Result>;
    type Result = C::Result;
    fn folder(&self) -> Self::Folder {
        FlatMapFolder {
            base: self.base,
            f: self.f,
            reversed: self.reversed.load(Ordering::Relaxed),
            acc: None,
        }
    }
    forward_consumer!();
    const REVERSIBLE: bool = C::REVERSIBLE;
    fn reverse(&self) {
        self.reversed.store(true, Ordering::Relaxed);
        self.base.reverse();
    }
}

struct FlatMapFolder<'f, C, F, R> {
    base: &'f C,
    f: &'f F,
    /// Whether `base` runs back to front.
    reversed: bool,
    acc: Option<R>,
}

impl<'f, T, C, F, PI> Folder<T> for FlatMapFolder<'f, C, F, C::Result>
where
    C: Consumer<PI::Item>,
    F: Fn(T) -> PI + Sync,
    PI: IntoParallelIterator,
{
    type Result = C::Result;
    fn consume<It: Iterator<Item = T>>(mut self, start: usize, items: It) -> Self {
        for x in items {
            if self.base.stop(start, start.saturating_add(1)) {
                break;
            }
            let inner = (self.f)(x).into_par_iter().drive_engine(At {
                base: self.base,
                pos: start,
                outer_reversed: self.reversed,
                inner_reversed: AtomicBool::new(false),
            });
            let acc = match self.acc.take() {
                None => inner,
                Some(a) => self.base.reduce(a, inner),
            };
            let done = self.base.done(&acc);
            self.acc = Some(acc);
            if done {
                break;
            }
        }
        self
    }
    fn full(&self) -> bool {
        self.acc.as_ref().is_some_and(|acc| self.base.done(acc))
    }
    fn complete(self) -> C::Result {
        match self.acc {
            Some(r) => r,
            None => self.base.folder().complete(),
        }
    }
}

/// A consumer passing everything to `base` with every position made `pos`
/// (an inner loop of `flat_map`; it gets the default options).
///
/// It is as reversible as `base`, but its `reverse` only notes that the
/// inner loop runs back to front: `base` was reversed (or not) with the
/// outer loop. When the two directions differ (an inner driver that never
/// reverses, under a reversed outer loop, or the other way round), it
/// holds each folder's items and gives them to `base` last first, and
/// swaps its reductions' operands, so that `base` still sees the items in
/// its own order.
struct At<'c, C> {
    base: &'c C,
    pos: usize,
    /// Whether `base` (the outer loop) runs back to front.
    outer_reversed: bool,
    /// Whether the inner loop's driver runs it back to front (set by
    /// `reverse`, before any folder exists).
    inner_reversed: AtomicBool,
}

impl<C> At<'_, C> {
    /// Whether the inner loop's order is the reverse of `base`'s.
    fn turned(&self) -> bool {
        self.outer_reversed != self.inner_reversed.load(Ordering::Relaxed)
    }
}

impl<T, C: Consumer<T>> Consumer<T> for At<'_, C> {
    type Folder = AtFolder<T, C::Folder>;
    type Result = C::Result;
    fn folder(&self) -> Self::Folder {
        AtFolder {
            base: self.base.folder(),
            pos: self.pos,
            held: self.turned().then(Vec::new),
        }
    }
    fn reduce(&self, left: C::Result, right: C::Result) -> C::Result {
        if self.turned() {
            self.base.reduce(right, left)
        } else {
            self.base.reduce(left, right)
        }
    }
    fn stop(&self, _start: usize, _end: usize) -> bool {
        self.base.stop(self.pos, self.pos.saturating_add(1))
    }
    fn options(&self) -> Options {
        Options::default()
    }
    fn eager(&self) -> bool {
        self.base.eager()
    }
    fn done(&self, result: &Self::Result) -> bool {
        self.base.done(result)
    }
    const REVERSIBLE: bool = C::REVERSIBLE;
    fn reverse(&self) {
        self.inner_reversed.store(true, Ordering::Relaxed);
    }
}

struct AtFolder<T, FO> {
    base: FO,
    pos: usize,
    /// When the items come in the reverse of `base`'s order: all of them,
    /// held until `complete` gives them to `base` last first (a folder may
    /// take several batches, and `base` needs the whole run turned, not
    /// each batch).
    held: Option<Vec<T>>,
}

impl<T, FO: Folder<T>> Folder<T> for AtFolder<T, FO> {
    type Result = FO::Result;
    fn consume<I: Iterator<Item = T>>(mut self, _start: usize, items: I) -> Self {
        match &mut self.held {
            Some(held) => held.extend(items),
            None => self.base = self.base.consume(self.pos, items),
        }
        self
    }
    fn full(&self) -> bool {
        self.base.full()
    }
    fn complete(self) -> FO::Result {
        match self.held {
            Some(held) => self
                .base
                .consume(self.pos, held.into_iter().rev())
                .complete(),
            None => self.base.complete(),
        }
    }
}

/// [`ParallelIterator::flatten`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let v = vec![vec![1, 2], vec![3]];
/// let f: terroir::iter::Flatten<_> = v.into_par_iter().flatten();
/// assert_eq!(f.collect::<Vec<_>>(), [1, 2, 3]);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct Flatten<I> {
    base: I,
}

impl<I> Flatten<I> {
    pub(crate) fn new(base: I) -> Self {
        Flatten { base }
    }
}

impl<I> ParallelIterator for Flatten<I>
where
    I: ParallelIterator,
    I::Item: IntoParallelIterator,
{
    type Item = <I::Item as IntoParallelIterator>::Item;
    fn drive_engine<C: Consumer<Self::Item>>(self, consumer: C) -> C::Result {
        FlatMap::new(self.base, |x: I::Item| x).drive_engine(consumer)
    }
}
