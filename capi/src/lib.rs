//! terroir-capi: the C API of [terroir] (`include/terroir.h`):
//! pools, fork-join, task groups with places, memory on nodes, recording
//! and the work-time inflation report, and error codes, for C programs
//! linking `libterroir.so` or `libterroir.a` (this crate's library is
//! named `terroir`; it builds no Rust library).
//!
//! This crate has no scheduling or memory logic of its own: each function
//! checks its arguments and calls terroir's Rust API ([`ThreadPool`],
//! [`join`](terroir::join), [`TaskGroup`](terroir::TaskGroup), [`Place`],
//! [`NodeVec`](terroir::pool::NodeVec), [`numa`](terroir::numa),
//! [`InflationReport`](terroir::report::InflationReport)), and, for what
//! C needs beyond it (a task group's state in a handle slot, the calling
//! worker's pool, joins that carry a task's frame), `terroir::__capi`, a
//! module kept for this crate. Rust programs depend on `terroir` and get
//! none of the `terroir_*` symbols.
//!
//! # Conventions
//!
//! - Every function that can fail returns an `int`: `TERROIR_ERROR_OK` (0)
//!   or a [`TerroirError`] code. [`terroir_strerror`] describes a code and
//!   [`terroir_last_error_message`] gives, per thread, the message of the
//!   last failure, naming the function and the input at fault. Results
//!   come back through out-pointers.
//! - Every entry point runs its body under `catch_unwind`: a panic inside
//!   terroir becomes `TERROIR_ERROR_PANIC` with its message; nothing
//!   unwinds into C. C tasks must not unwind either (no C++ exception or
//!   `longjmp` may leave a task).
//! - NULL for a required pointer is `TERROIR_ERROR_NULL_POINTER`, naming
//!   the argument. NULL for a pool means the current pool: the pool of the
//!   calling worker thread, or the global pool on a thread outside every
//!   pool (rayon's rule). NULL for a place means anywhere, and
//!   `terroir_free(NULL)` does nothing.
//! - Nodes are OS node numbers everywhere (as in `numactl` and
//!   `/sys/devices/system/node`); `terroir_pool_node_id` lists a pool's.
//!
//! # Handles
//!
//! `terroir_pool *`, `terroir_group *`, `terroir_recording *` and
//! `terroir_report *` are keys into handle tables (slot index and
//! generation), never dereferenced: destroying a handle bumps its slot's
//! generation, so a double destroy, or any use of a destroyed or garbage
//! handle, is `TERROIR_ERROR_INVALID_HANDLE` rather than a use after free.
//! A table's slots are never freed, and each has a mutex of its own, so
//! lookups of different objects do not contend. See `handle.rs`.
//!
//! # One process-wide pool
//!
//! The global pool (`terroir_pool_global`, and what NULL means outside
//! every pool) is a static of the library. All code of a process that
//! links the shared library `libterroir.so` shares it: two libraries that
//! both use terroir through `libterroir.so` run on one pool, with one
//! worker per core. A copy of the static library `libterroir.a` linked
//! into each of two shared objects carries its own statics: unless the
//! dynamic linker happens to bind both objects' calls to one copy, that is
//! two global pools, twice the threads, each oversubscribing the machine
//! (rayon issue #816). Link the shared library when more than one shared
//! object of a process uses terroir.
//!
//! The global pool of this API is built by the C API (with
//! [`ThreadPoolBuilder`](terroir::ThreadPoolBuilder), defaults or
//! `terroir_pool_global_init`); it is not the pool Rust code reaches with
//! `terroir::join` outside any pool, which a C program never uses.
//!
//! # Task groups and deadlocks
//!
//! A group is terroir's [`TaskGroup`](terroir::TaskGroup) engine (see
//! `group.rs`): a worker that waits runs the group's tasks and steals
//! instead of blocking. The engine knows which group's task is running
//! on each worker and which work waits for it (its frames, which
//! `terroir_join` and the entries into a pool carry to the threads that
//! run their work), which is how a wait from inside one of the group's own
//! tasks is refused with `TERROIR_ERROR_WOULD_DEADLOCK`.
//!
//! # Parallel loops
//!
//! `terroir_parallel_for` is [`parallel_for`](terroir::iter::parallel_for)
//! for a C function of a sub-range (`fn(begin, end, arg)`, one call per
//! batch): adaptive or static schedule (OpenMP's `schedule(static)`, for
//! first touch), and an optional data range that places the loop on the
//! nodes its data is on (see `loops.rs`).
//!
//! # Recording and reports
//!
//! `terroir_record_start` and `terroir_record_stop` are
//! [`ThreadPool::start_recording`] and [`ThreadPool::stop_recording`] (the
//! two-call form of [`ThreadPool::record`], which a C caller could not
//! wrap around its work); `terroir_report_create` is
//! [`InflationReport::new`], `terroir_report_measure` is
//! [`InflationReport::measure`] for a C function (run on each pool, so
//! that a NULL pool inside it is the pool it runs on), and
//! `terroir_report_write` / `terroir_report_write_all` write the report's
//! formats. Recordings and reports are handles like pools and groups.
//! `terroir_label` is [`label`](terroir::label); its names, `&'static str`
//! in Rust, are copied once into a process-wide table of at most 4096
//! names (see `report.rs`). `terroir_label_push` / `terroir_label_pop` are
//! the same regions opened and closed by two calls (NVTX's form), through
//! `terroir::__capi::open_label` and `close_label`.
//!
//! [`ThreadPool::start_recording`]: terroir::ThreadPool::start_recording
//! [`ThreadPool::stop_recording`]: terroir::ThreadPool::stop_recording
//! [`InflationReport::new`]: terroir::report::InflationReport::new
//! [`InflationReport::measure`]: terroir::report::InflationReport::measure
//! [`ThreadPool`]: terroir::ThreadPool
//! [`ThreadPool::record`]: terroir::ThreadPool::record
//! [`Place`]: terroir::Place
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod error;
mod group;
mod handle;
mod loops;
mod memory;
mod pool;
mod report;
mod sized;
mod stats;
mod task;
mod version;

pub use error::{terroir_last_error_message, terroir_strerror, TerroirError};
pub use group::{
    terroir_group_create, terroir_group_destroy, terroir_group_spawn, terroir_group_wait,
    TerroirAccess, TerroirGroup, TerroirPlace, TerroirPlaceKind,
};
pub use loops::{terroir_parallel_for, TerroirForOptions, TerroirRangeFn, TerroirSchedule};
pub use memory::{
    terroir_alloc_blocked, terroir_alloc_interleaved, terroir_alloc_interleaved_on,
    terroir_alloc_node_of, terroir_alloc_on_node, terroir_free, terroir_locate, terroir_migrate,
    TerroirMigration,
};
pub use pool::{
    terroir_current_worker, terroir_join, terroir_pool_create, terroir_pool_destroy,
    terroir_pool_global, terroir_pool_global_init, terroir_pool_node_id, terroir_pool_num_nodes,
    terroir_pool_num_workers, terroir_pool_worker_node, TerroirPin, TerroirPolicy, TerroirPool,
    TerroirPoolConfig, TerroirTaskFn,
};
pub use report::{
    terroir_label, terroir_label_pop, terroir_label_push, terroir_record_start,
    terroir_record_stop, terroir_recording_destroy, terroir_report_create, terroir_report_destroy,
    terroir_report_measure, terroir_report_write, terroir_report_write_all, TerroirCounters,
    TerroirRecordOptions, TerroirRecording, TerroirReport, TerroirReportFormat,
};
pub use stats::{
    terroir_pool_node_stats, terroir_pool_remote_steals, terroir_pool_reset_stats,
    terroir_pool_stats, TerroirNodeStats, TerroirPoolStats, TerroirRemoteSteals,
};
pub use version::{
    terroir_version, terroir_version_string, TERROIR_VERSION, TERROIR_VERSION_MAJOR,
    TERROIR_VERSION_MINOR, TERROIR_VERSION_PATCH,
};
