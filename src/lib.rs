//! # terroir
//!
//! A work-stealing runtime for task-parallel programs on NUMA machines, with
//! the API of `rayon-core` 1.13: [`join`], [`join_context`], [`scope`],
//! [`scope_fifo`], [`spawn`], [`spawn_fifo`], [`broadcast`],
//! [`spawn_broadcast`], [`yield_now`], [`ThreadPool`] and
//! [`ThreadPoolBuilder`] (with its start, exit and spawn handlers) have
//! rayon-core's names and semantics, so switching is an import change (the
//! README lists the differences).
//!
//! What terroir adds:
//!
//! - **Topology** ([`numa::Topology`]): NUMA nodes, last-level-cache groups,
//!   processing units and the node distance matrix, from Linux sysfs (or
//!   hwloc with the `hwloc` feature), restricted to the CPUs the process may
//!   use. Described topologies (builder, sysfs trees) make the scheduling
//!   logic testable on any machine.
//! - **Pinned workers, grouped by node**, each with its own deque, and one
//!   shared queue per NUMA node.
//! - **Hierarchical stealing** ([`Policy::Hierarchical`]): an idle worker
//!   looks in its own node's queue, then at workers sharing its L3 cache,
//!   then its node, then other nodes nearest first. [`Policy::Flat`] is the
//!   locality-oblivious baseline, for comparison.
//! - **Cheap `join`**: the continuation stays private until an idle worker
//!   asks for work, so a fork-join program pays no deque operation per join
//!   (see `src/sched/README.md`).
//! - **Placed memory** ([`pool::NodeVec`], [`pool::NodeBox`],
//!   [`pool::SlabPool`], [`pool::NodeLocalAlloc`]) bound to a node before
//!   first touch, and the memory-policy system calls behind them
//!   ([`numa::bind_memory`], [`numa::locate`], [`numa::migrate`]).
//! - **Data affinity** ([`Scope::spawn_on`], [`ThreadPool::spawn_on`] with
//!   a [`Place`]): run a task on a node, a worker, the node of its data, the
//!   worker that last ran its key, or the node its declared accesses are
//!   cheapest from; as a hint ([`Policy::Locality`], the default) or
//!   strictly ([`Policy::StrictLocality`], [`Place::strict`]); [`PoolStats`] counts
//!   steals by level and the locality ratio of declared data.
//! - **Task groups** ([`TaskGroup`]): `'static` tasks spawned from
//!   anywhere (each at a [`Place`]) and waited for together; a waiting
//!   worker runs other work instead of blocking, and a wait that could
//!   never end returns [`WouldDeadlock`]. The engine of the C API's
//!   `terroir_group_*`.
//! - **Work-time inflation report** ([`report::InflationReport`]): record a
//!   workload ([`ThreadPool::record`], [`label`]) on one worker and on the
//!   pool, and see per task label how much slower tasks ran in parallel,
//!   with perf_event counters (feature `counters`), and where the thread
//!   time went (work, inflation, scheduler overhead, idle), as a table, CSV,
//!   an SVG picture, or JSON and a Chrome trace (feature `report`).
//!
//! # Features
//!
//! The default build is lean (no serialisation, no perf_event, no hwloc):
//!
//! - `report`: `InflationReport::to_json` and `to_chrome_trace`, and the
//!   JSON files of [`write_all`](report::InflationReport::write_all)
//!   (serde, serde_json);
//! - `counters`: hardware and software counters in recordings (perf_event,
//!   through perf-event2); without it a recording has timestamps only and
//!   names every counter it was asked for as unavailable, "built without
//!   the `counters` feature";
//! - `hwloc`: topology discovery through hwloc.
//!
//! ```
//! use terroir::{Policy, ThreadPoolBuilder};
//!
//! fn sum(v: &[u64]) -> u64 {
//!     if v.len() <= 1024 {
//!         return v.iter().sum();
//!     }
//!     let (l, r) = v.split_at(v.len() / 2);
//!     let (a, b) = terroir::join(|| sum(l), || sum(r));
//!     a + b
//! }
//!
//! let pool = ThreadPoolBuilder::new()
//!     .policy(Policy::Hierarchical)
//!     .build()
//!     .expect("topology discovery or worker start failed");
//! let data: Vec<u64> = (0..1_000_000).collect();
//! assert_eq!(pool.install(|| sum(&data)), 499_999_500_000);
//! println!("{}", pool.topology());
//! ```
//!
//! terroir runs on Linux (it reads sysfs and calls `sched_setaffinity`).
#![warn(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]
// docs.rs (every feature, nightly): each feature-gated item says so.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[doc(hidden)]
#[path = "capi_support.rs"]
pub mod __capi;
pub mod iter;
pub mod numa;
pub mod pool;
pub mod prelude;
pub mod report;
mod sched;

/// rayon's module paths for the parallel iterators (`rayon::slice`,
/// `rayon::range`, …), so that code naming them needs only the crate name
/// changed; the items live in [`iter`].
pub use iter::{
    array, collections, option, range, range_inclusive, result, slice, str, string, vec,
};

pub use sched::{
    broadcast, current_num_threads, current_thread_has_pending_tasks, current_thread_index,
    in_place_scope, in_place_scope_fifo, join, join_context, label, max_num_threads, scope,
    scope_fifo, spawn, spawn_broadcast, spawn_fifo, yield_local, yield_now, Access,
    BroadcastContext, DequeOrder, Distribution, FnContext, NodeStats, ParsePolicyError, Pinning,
    Place, PlaceError, Policy, PoolStats, Scope, ScopeFifo, TaskGroup, ThreadBuilder, ThreadPool,
    ThreadPoolBuildError, ThreadPoolBuilder, WouldDeadlock, Yield, DEFAULT_PUSH_THRESHOLD,
};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
