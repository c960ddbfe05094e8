//! The executor: workers, deques, per-node queues, sleep, and the
//! rayon-compatible `join` / `scope` / `spawn` API. The protocols are
//! described in `README.md` beside this file.

mod counters;
mod first_touch;
mod job;
mod join;
mod latch;
mod place;
mod policy;
mod pool;
mod record;
mod registry;
mod scope;
mod sleep;
mod stats;

pub use counters::{Counter, Unavailable};
pub use join::join;
pub(crate) use join::{join_context, join_context_in};
pub(crate) use latch::{CoreLatch, Latch};
pub use place::{Access, Place, PlaceError};
pub use policy::{ParsePolicyError, Policy};
pub use pool::{
    current_num_threads, current_thread_index, spawn, ThreadPool, ThreadPoolBuildError,
    ThreadPoolBuilder, DEFAULT_PUSH_THRESHOLD,
};
pub use record::{label, Label, RecordError, RecordOptions, Recording, TaskRecord, WorkerTimes};
pub(crate) use registry::WorkerThread;
pub use registry::{DequeOrder, Distribution};
pub use scope::{in_place_scope, scope, Scope};
pub use stats::{NodeStats, PoolStats};
