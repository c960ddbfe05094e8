//! The executor: workers, deques, per-node queues, sleep, and the
//! rayon-compatible `join` / `scope` / `spawn` API. The protocols are
//! described in `README.md` beside this file; each has a file (or folder)
//! of its own:
//!
//! | protocol | file |
//! |---|---|
//! | `join` and its private continuations (README §1) | `join/mod.rs`, `join/private.rs` |
//! | `join_context`, whose `b` is on the deque (README §1) | `join/context.rs` |
//! | splitting a running loop for a thief (README §9) | `join/split.rs` |
//! | where an idle worker looks (README §2) | `policy.rs`, `worker.rs` |
//! | sleeping without losing a wake-up (README §3) | `sleep/mod.rs`, `sleep/wait.rs` |
//! | hints left for later: the cost rule (README §3) | `hint.rs` |
//! | places resolved to routes, placed spawns | `place.rs`, `route.rs` |
//! | latches and jobs, FIFO stand-ins (README §4) | `latch.rs`, `job.rs` |
//! | scopes, FIFO scopes (README §4) | `scope.rs`, `scope_fifo.rs` |
//! | broadcasts (README §5) | `broadcast.rs` |
//! | task groups and the C API's frames (README §7) | `group/` |
//! | a pool's shared state, start and stop (README §6) | `registry.rs`, `thread_builder.rs` |
//! | the public pool and its builder, defaults and environment | `thread_pool.rs`, `builder.rs`, `config.rs` |
//! | where unwinding stops: caught user panics, abort guards (README §8) | `unwind.rs` |
//! | statistics | `stats.rs` |
//! | recording tasks and counters | `record/` |

mod broadcast;
mod builder;
mod config;
mod current;
mod external;
mod first_touch;
pub(crate) mod group;
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
mod scope_fifo;
mod sleep;
mod stats;
mod sync;
mod thread_builder;
mod thread_pool;
mod unwind;
mod worker;

pub use broadcast::{broadcast, spawn_broadcast, BroadcastContext};
pub use builder::{
    DequeOrder, Pinning, ThreadPoolBuildError, ThreadPoolBuilder, DEFAULT_PUSH_THRESHOLD,
};
pub use external::ExternalEvent;
pub use group::{TaskGroup, WouldDeadlock};
pub use join::{join, join_context, FnContext};
pub(crate) use join::{join_flagged, join_flagged_in, join_to, offer_during, Offered, To};
pub use place::{Access, Place, PlaceError};
pub use policy::{ParsePolicyError, Policy};
pub(crate) use record::env::{set_exit_writer, REPORT_VAR};
pub use record::{
    label, Counter, CounterMethod, CounterSampling, Label, PushRecord, QueueSample, RecordError,
    RecordOptions, Recording, StealLevel, StealRecord, TaskRecord, Unavailable, WaitRecord,
    WorkerTimes,
};
pub(crate) use record::{CloseLabel, OpenLabel};
pub(crate) use registry::global_registry;
pub use route::Distribution;
pub use scope::{in_place_scope, scope, Scope};
pub use scope_fifo::{in_place_scope_fifo, scope_fifo, ScopeFifo};
pub use stats::{NodeStats, PoolStats};
pub use thread_builder::ThreadBuilder;
pub use thread_pool::{
    current_num_threads, current_thread_has_pending_tasks, current_thread_index, max_num_threads,
    spawn, spawn_fifo, yield_local, yield_now, ThreadPool, Yield,
};
pub(crate) use worker::WorkerThread;

/// Runs the unit test `name` of module `module` (`module_path!()`) alone,
/// in a child process of this test binary with no other test, and fails
/// if it fails (or runs over two minutes); in that child (which
/// `TERROIR_TEST_ALONE` names) runs `body`. For tests of process-wide
/// state that other tests' workers share (the thread-pointer table of
/// `current.rs`).
#[cfg(test)]
pub(crate) fn alone(module: &str, name: &str, body: impl FnOnce()) {
    let module = module.split_once("::").map_or(module, |(_, rest)| rest);
    let full = format!("{module}::{name}");
    if std::env::var("TERROIR_TEST_ALONE").as_deref() == Ok(full.as_str()) {
        body();
        return;
    }
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([full.as_str(), "--exact", "--test-threads=1", "--nocapture"])
        .env("TERROIR_TEST_ALONE", &full)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the test binary runs again");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().ok();
            child.wait().ok();
            panic!("{full} alone did not finish within two minutes");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{full} alone: {}\n{text}",
        out.status
    );
}

/// An unpinned pool of `n` workers, for the scheduler's unit tests.
#[cfg(test)]
pub(crate) fn test_pool(n: usize) -> ThreadPool {
    ThreadPoolBuilder::new()
        .num_threads(n)
        .pin(false)
        .build()
        .unwrap_or_else(|e| panic!("a test pool of {n} workers: {e}"))
}
