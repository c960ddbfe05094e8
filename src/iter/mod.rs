//! Parallel iterators with rayon's names: `use rayon::prelude::*` becomes
//! `use terroir::prelude::*`, and `par_iter()`, `into_par_iter()`,
//! `par_chunks()`, `map`, `filter`, `sum`, `collect`, `zip`, … keep
//! rayon's traits, method names, bounds and results.
//!
//! ```
//! use terroir::prelude::*;
//!
//! let v: Vec<u64> = (0..100_000u64).into_par_iter().map(|i| i * i).collect();
//! let sum: u64 = v.par_iter().filter(|&&x| x % 3 == 0).sum();
//! assert_eq!(sum, v.iter().filter(|&&x| x % 3 == 0).sum::<u64>());
//! let mut w = vec![0u64; v.len()];
//! w.par_iter_mut().zip(&v).for_each(|(w, v)| *w = v + 1);
//! assert_eq!(w[10], 101);
//! ```
//!
//! Loops run on the pool of the calling thread (inside
//! [`ThreadPool::install`](crate::ThreadPool::install), or in a task) or
//! on the global pool; from outside every pool, as in rayon, a loop too
//! short to split (fewer than two `with_min_len`s of items, no
//! `with_max_len`) runs on the calling thread. A closure that panics makes the loop panic on the
//! calling thread once the other pieces have stopped; the pool stays
//! usable.
//!
//! # How a loop is split
//!
//! rayon splits a loop into about as many pieces as there are threads up
//! front and each piece pushes its halves on the deque as it recurses. A
//! terroir loop is not split unless someone needs work:
//!
//! 1. The worker that starts the loop runs its units in order, in
//!    *batches*: a batch is a plain sequential loop (the adaptors become
//!    `std` iterator adaptors over the batch). Batch sizes adapt so that a
//!    batch takes about 10 µs (never fewer units than
//!    [`with_min_len`](IndexedParallelIterator::with_min_len), never more
//!    than [`with_max_len`](IndexedParallelIterator::with_max_len)).
//! 2. Between batches it *polls*: one Relaxed load of its `request` flag.
//!    An idle worker that found nothing to steal sets that flag on the
//!    nearest busy worker (the same steal request `join` serves, see
//!    `src/sched/README.md` §1 and §9). A loop that has run for 50 µs also
//!    looks whether workers sleep while none searches.
//! 3. Asked, it *splits*: it cuts what is left in two (never a half
//!    shorter than `with_min_len`), publishes the second half on its deque
//!    (where the thief takes it; if nobody does, the owner runs it itself
//!    afterwards) and goes on with the first. The results of the two
//!    halves are combined left before right, so `collect` keeps the order
//!    and `reduce` sees neighbours in order.
//!
//! A join continuation older than the loop (the loop runs inside a `join`)
//! is handed out first: it is the larger piece of work. A loop that has
//! run for 50 µs keeps half of what is left published (once a half it
//! published is taken, it publishes half of the rest), so that a worker
//! descheduled by the operating system cannot hold the rest of a long loop
//! back; a half nobody takes goes back to its owner without further
//! splits.
//!
//! # Placed data
//!
//! Iterating a [`NodeVec`](crate::pool::NodeVec) (`par_iter()`,
//! `par_iter_mut()`, `par_chunks()`, …), or zipping iterators of which the
//! first placed one is, cuts the loop at the vector's node boundaries first
//! ([`NodeVec::node_shares`](crate::pool::NodeVec::node_shares)) and sends
//! each node's share to that node: a hint under
//! [`Policy::Locality`](crate::Policy::Locality), strict under
//! [`Policy::StrictLocality`](crate::Policy::StrictLocality) or after
//! [`strict()`](ParallelIterator::strict). Inside its node a share runs as
//! above, and splits only when a worker of the same node is idle; under
//! `Locality` another node may take a share its node has not started,
//! but the pieces a started share splits off stay on its node. Every
//! batch adds its bytes, local or not, to the pool's
//! [locality ratio](crate::PoolStats::locality_ratio). On a machine (or
//! pool) with one node this costs nothing.
//!
//! # Static schedule
//!
//! [`schedule(Schedule::Static)`](ParallelIterator::schedule) is OpenMP's
//! `schedule(static)`: one contiguous share per worker, worker `k` always
//! running share `k` (workers ordered by node), so that a loop that first
//! touches a buffer and later loops over it touch the same pages from the
//! same workers.
//!
//! ```
//! use terroir::prelude::*;
//! use terroir::iter::Schedule;
//!
//! let mut a = Vec::<f64>::with_capacity(1 << 20);
//! // First touch: each worker writes (and so places) its own share.
//! (0..1 << 20).into_par_iter().schedule(Schedule::Static).map(|i| i as f64).collect_into_vec(&mut a);
//! // Later loops over the same length give each worker the same share.
//! a.par_iter_mut().schedule(Schedule::Static).for_each(|x| *x *= 2.0);
//! assert_eq!(a[3], 6.0);
//! ```
//!
//! # Differences from rayon
//!
//! - The engine is terroir's own: `Producer`, `Consumer` and
//!   `ProducerCallback` are not public, so types outside this crate cannot
//!   implement [`ParallelIterator`] (wrap one of ours instead, or
//!   implement [`IntoParallelIterator`]).
//! - `par_split`, `par_lines`, `par_split_whitespace` and the other
//!   string splitters cut their text only when a worker asks, at a
//!   separator near the middle of what is left (rayon cuts up front).
//! - A loop nested in another loop's item (`flat_map` to a parallel
//!   iterator, a `par_iter` inside a `for_each`) spreads as rayon's does,
//!   but on demand: while a batch of the outer loop runs, the rest of the
//!   outer loop is on offer, and an idle worker's request is served with
//!   the *oldest* offer (the outer loop's rest) rather than with half of
//!   the innermost loop. rayon splits every level up front. Loops over
//!   `map_init`/`map_with` make no offers (a split would copy their
//!   per-run state), so their inner loops give away halves of themselves.
//! - `find_last` runs back to front through per-item adaptors and
//!   `flat_map`/`flatten`; after a `fold`, `chain` or `flat_map_iter` it
//!   runs front to back, skipping what lies before a match already found.
//! - Not provided: `par_bridge` over iterators that are not `Send`.

mod blocks;
mod collect;
mod consume;
mod either;
pub(crate) mod engine;
mod flat;
mod fold;
mod fold_chunks;
mod indexed;
mod indexed_adaptors;
mod interleave;
mod intersperse;
mod map;
mod map_state;
mod multizip;
mod names;
mod par;
mod placed;
mod regroup;
mod sources;
mod splitter;
mod unindexed;
mod walk_tree;

pub mod collections;
pub mod option;
pub mod range;
pub mod range_inclusive {
    //! rayon's `range_inclusive` module: the iterator of `RangeInclusive`.
    pub use super::range::InclusiveIter as Iter;
}
pub mod slice;
pub mod string;
pub mod vec;

pub use blocks::{ExponentialBlocks, UniformBlocks};
pub use consume::Try;
pub use either::Either;
#[doc(hidden)]
pub use engine::set_split_stress;
pub use engine::Schedule;
pub use fold_chunks::{FoldChunks, FoldChunksWith};
pub use indexed::IndexedParallelIterator;
pub use indexed_adaptors::{Enumerate, MaxLen, MinLen, Positions, Rev, Zip, ZipEq};
pub use interleave::{Interleave, InterleaveShortest};
pub use intersperse::Intersperse;
pub use map::{Cloned, Copied, Inspect, Map, Update};
pub use map_state::{MapInit, MapWith};
pub use multizip::MultiZip;
pub use names::{array, result, str};
pub use par::ParallelIterator;
pub use placed::{parallel_for, ForOptions};
pub use regroup::{Chunks, Skip, StepBy, Take};
#[allow(deprecated)]
pub use sources::{
    empty, once, repeat, repeat_n, repeatn, Empty, IterBridge, Once, ParallelBridge, Repeat,
    RepeatN,
};
pub use splitter::{split, Split};
pub use unindexed::{
    Chain, Filter, FilterMap, FlatMap, FlatMapIter, Flatten, FlattenIter, Fold, FoldWith,
    PanicFuse, Scheduled, SkipAny, SkipAnyWhile, TakeAny, TakeAnyWhile, TryFold, TryFoldWith,
    WhileSome,
};
pub use walk_tree::{
    walk_tree, walk_tree_postfix, walk_tree_prefix, WalkTree, WalkTreePostfix, WalkTreePrefix,
};

/// A value that can be turned into a parallel iterator: rayon's
/// `IntoParallelIterator`. Implemented for every [`ParallelIterator`],
/// integer ranges, slices, `Vec`, arrays, `Option`, `Result`, the standard
/// collections, [`NodeVec`](crate::pool::NodeVec) and references to them.
///
/// ```
/// use terroir::prelude::*;
/// fn total<I: IntoParallelIterator<Item = u32>>(items: I) -> u32 {
///     items.into_par_iter().sum()
/// }
/// assert_eq!(total(vec![1, 2, 3]), 6);
/// assert_eq!(total(1..4), 6);
/// ```
pub trait IntoParallelIterator {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// Its items.
    type Item: Send;
    /// Converts `self` into a parallel iterator.
    fn into_par_iter(self) -> Self::Iter;
}

impl<T: ParallelIterator> IntoParallelIterator for T {
    type Iter = T;
    type Item = T::Item;
    fn into_par_iter(self) -> T {
        self
    }
}

/// `par_iter()`: a parallel iterator over references to the elements
/// (rayon's `IntoParallelRefIterator`), for every `C` where `&C` is
/// [`IntoParallelIterator`].
///
/// ```
/// use terroir::prelude::*;
/// let v = vec![1, 2, 3];
/// assert_eq!(v.par_iter().map(|x| x * 2).sum::<i32>(), 12);
/// ```
pub trait IntoParallelRefIterator<'data> {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// Its items (usually `&'data T`).
    type Item: Send + 'data;
    /// A parallel iterator over `&self`'s elements.
    fn par_iter(&'data self) -> Self::Iter;
}

impl<'data, I: 'data + ?Sized> IntoParallelRefIterator<'data> for I
where
    &'data I: IntoParallelIterator,
{
    type Iter = <&'data I as IntoParallelIterator>::Iter;
    type Item = <&'data I as IntoParallelIterator>::Item;
    fn par_iter(&'data self) -> Self::Iter {
        self.into_par_iter()
    }
}

/// `par_iter_mut()`: a parallel iterator over mutable references to the
/// elements (rayon's `IntoParallelRefMutIterator`).
///
/// ```
/// use terroir::prelude::*;
/// let mut v = vec![1, 2, 3];
/// v.par_iter_mut().for_each(|x| *x *= 10);
/// assert_eq!(v, [10, 20, 30]);
/// ```
pub trait IntoParallelRefMutIterator<'data> {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// Its items (usually `&'data mut T`).
    type Item: Send + 'data;
    /// A parallel iterator over `&mut self`'s elements.
    fn par_iter_mut(&'data mut self) -> Self::Iter;
}

impl<'data, I: 'data + ?Sized> IntoParallelRefMutIterator<'data> for I
where
    &'data mut I: IntoParallelIterator,
{
    type Iter = <&'data mut I as IntoParallelIterator>::Iter;
    type Item = <&'data mut I as IntoParallelIterator>::Item;
    fn par_iter_mut(&'data mut self) -> Self::Iter {
        self.into_par_iter()
    }
}

/// Building a collection from a parallel iterator
/// ([`ParallelIterator::collect`]): rayon's `FromParallelIterator`.
/// Implemented for `Vec` (in order), `VecDeque`, `LinkedList`,
/// `BinaryHeap`, `HashMap`, `HashSet`, `BTreeMap`, `BTreeSet`, `String`,
/// `OsString`, `Box<[T]>`, `Rc<[T]>`, `Arc<[T]>`, `Cow`, `()`, pairs of collections
/// (unzipping), and `Result<C, E>` / `Option<C>` (which stop at an error
/// or `None`).
///
/// ```
/// use std::collections::HashMap;
/// use terroir::prelude::*;
/// let squares: HashMap<u32, u32> = (0..100u32).into_par_iter().map(|i| (i, i * i)).collect();
/// assert_eq!(squares[&7], 49);
/// let parsed: Result<Vec<u32>, _> = ["1", "2", "x"].par_iter().map(|s| s.parse::<u32>()).collect();
/// assert!(parsed.is_err());
/// ```
pub trait FromParallelIterator<T>
where
    T: Send,
{
    /// Builds `Self` from the items of `par_iter`.
    fn from_par_iter<I>(par_iter: I) -> Self
    where
        I: IntoParallelIterator<Item = T>;
}

/// Extending a collection with a parallel iterator's items: rayon's
/// `ParallelExtend`.
///
/// ```
/// use terroir::prelude::*;
/// let mut v = vec![0, 1];
/// v.par_extend((2..5).into_par_iter());
/// assert_eq!(v, [0, 1, 2, 3, 4]);
/// ```
pub trait ParallelExtend<T>
where
    T: Send,
{
    /// Adds the items of `par_iter` to `self` (in order, for ordered
    /// collections).
    fn par_extend<I>(&mut self, par_iter: I)
    where
        I: IntoParallelIterator<Item = T>;
}

/// Draining a whole collection in parallel (`par_drain()`): rayon's
/// `ParallelDrainFull`.
///
/// ```
/// use std::collections::HashSet;
/// use terroir::prelude::*;
/// let mut s: HashSet<u32> = (0..10).collect();
/// let sum: u32 = s.par_drain().sum();
/// assert_eq!((sum, s.len()), (45, 0));
/// ```
pub trait ParallelDrainFull {
    /// The draining iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// Its items.
    type Item: Send;
    /// Removes every element, yielding it by value.
    fn par_drain(self) -> Self::Iter;
}

/// Draining a range of a collection in parallel (`par_drain(range)`):
/// rayon's `ParallelDrainRange`.
///
/// ```
/// use terroir::prelude::*;
/// let mut v: Vec<u32> = (0..10).collect();
/// let drained: Vec<u32> = v.par_drain(2..5).collect();
/// assert_eq!(drained, [2, 3, 4]);
/// assert_eq!(v, [0, 1, 5, 6, 7, 8, 9]);
/// ```
pub trait ParallelDrainRange<Idx = usize> {
    /// The draining iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// Its items.
    type Item: Send;
    /// Removes the elements of `range`, yielding them by value; the
    /// elements after it move down.
    ///
    /// # Panics
    /// When the range is out of bounds or its start is after its end.
    fn par_drain<R: std::ops::RangeBounds<Idx>>(self, range: R) -> Self::Iter;
}
