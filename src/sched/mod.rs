//! The executor: workers, deques, per-node queues, sleep, and the
//! rayon-compatible `join` / `scope` / `spawn` API. The protocols are
//! described in `README.md` beside this file; each has a file (or folder)
//! of its own:
//!
//! | protocol | file |
//! |---|---|
//! | `join` and its private continuations (README §1) | `join/mod.rs`, `join/private.rs` |
//! | splitting a running loop for a thief (README §4) | `join/split.rs` |
//! | where an idle worker looks (README §2) | `policy.rs`, `worker.rs` |
//! | sleeping without losing a wake-up (README §3) | `sleep/mod.rs`, `sleep/wait.rs` |
//! | hints left for later: the cost rule (README §3) | `hint.rs` |
//! | places resolved to routes, placed spawns | `place.rs`, `route.rs` |
//! | latches and jobs | `latch.rs`, `job.rs` |
//! | scopes | `scope.rs` |
//! | a pool's shared state, start and stop | `registry.rs` |
//! | the public pool and its builder | `thread_pool.rs`, `builder.rs` |
//! | statistics | `stats.rs` |
//! | recording tasks and counters | `record/` |

mod builder;
mod first_touch;
mod hint;
mod job;
mod join;
mod latch;
mod place;
mod policy;
mod record;
mod registry;
mod route;
mod scope;
mod sleep;
mod stats;
mod thread_pool;
mod worker;

pub use builder::{DequeOrder, ThreadPoolBuildError, ThreadPoolBuilder, DEFAULT_PUSH_THRESHOLD};
pub use join::join;
pub(crate) use join::{join_context, join_context_in, join_to, To};
pub(crate) use latch::{Latch, WorkerLatch};
pub use place::{Access, Place, PlaceError};
pub use policy::{ParsePolicyError, Policy};
pub use record::{
    label, Counter, Label, RecordError, RecordOptions, Recording, TaskRecord, Unavailable,
    WorkerTimes,
};
pub(crate) use registry::global_registry;
pub use route::Distribution;
pub use scope::{in_place_scope, scope, Scope};
pub use stats::{NodeStats, PoolStats};
pub use thread_pool::{current_num_threads, current_thread_index, spawn, ThreadPool};
pub(crate) use worker::WorkerThread;
