//! terroir: a NUMA-aware work-stealing runtime.
#![warn(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod numa;
pub mod sched;

pub use sched::{
    current_num_threads, current_thread_index, in_place_scope, join, scope, spawn, Policy, Scope,
    ThreadPool, ThreadPoolBuildError, ThreadPoolBuilder,
};
