//! OS facts and system calls: CPU and node sets, the machine [`Topology`],
//! thread binding, memory policies and page placement, and (in `sys.rs`)
//! the raw syscalls behind them.
//!
//! This is the bottom layer of terroir: it knows nothing of tasks or pools.
//!
//! # Regions
//! The memory functions ([`bind_memory`], [`locate`], [`migrate`]) take a
//! region as a slice. The kernel places memory by page, so a region is
//! widened to whole pages: from the page holding its first byte to the page
//! holding its last. Binding or migrating a slice that shares a page with
//! other data therefore affects that data too (its contents never change;
//! only where they live). A zero-length region has no pages: [`bind_memory`]
//! and [`migrate`] reject it with [`NumaError::EmptyRegion`], [`locate`]
//! reports zero pages.

mod cgroup;
mod error;
#[cfg(feature = "hwloc")]
mod hwloc;
mod memory;
mod migrate;
mod set;
pub(crate) mod sys;
mod sysfs;
mod topology;

pub use cgroup::{cpu_quota, cpu_quota_under};
pub use error::NumaError;
pub use memory::{
    bind_memory, locate, memory_policy, mems_allowed, page_size, set_thread_policy, thread_policy,
    BindFlags, MemPolicy, PageLocation, Sample,
};
pub(crate) use memory::{bind_raw, locate_raw, policy_at};
pub(crate) use migrate::migrate_raw;
pub use migrate::{migrate, Migration, PageStatus};
pub use set::{CpuSet, NodeSet};
pub use topology::{CacheGroup, Node, NodeId, Pu, Topology, TopologyBuilder, TopologySource};

/// The CPUs the calling thread may run on (`sched_getaffinity`); cgroup
/// cpusets and `taskset` show up here.
///
/// # Errors
/// [`NumaError::Syscall`] if the kernel refuses.
///
/// ```
/// let cpus = terroir::numa::allowed_cpus().unwrap();
/// assert!(!cpus.is_empty());
/// ```
pub fn allowed_cpus() -> Result<CpuSet, NumaError> {
    sys::allowed_cpus()
}

/// The CPU numbers [`bind_current_thread`] can bind to: those below this
/// (`CPU_SETSIZE`, the capacity of the kernel interface's fixed-size set).
pub const MAX_BIND_CPUS: usize = libc::CPU_SETSIZE as usize;

/// Binds the calling thread to `cpus` (`sched_setaffinity`).
///
/// # Errors
/// [`NumaError::Syscall`] naming the CPU set when the kernel refuses it
/// (e.g. a CPU that does not exist or is outside the cgroup).
///
/// ```
/// use terroir::numa::{allowed_cpus, bind_current_thread, CpuSet};
/// std::thread::spawn(|| {
///     let first = allowed_cpus().unwrap().iter().next().unwrap();
///     bind_current_thread(&CpuSet::from_iter([first])).unwrap();
/// }).join().unwrap();
/// ```
pub fn bind_current_thread(cpus: &CpuSet) -> Result<(), NumaError> {
    sys::bind_current_thread(cpus)
}

/// The CPU and NUMA node the calling thread runs on now (`getcpu`); stale as
/// soon as it returns unless the thread is bound to one CPU.
///
/// # Errors
/// [`NumaError::Syscall`] if the kernel refuses.
///
/// ```
/// let (cpu, node) = terroir::numa::current_cpu_and_node().unwrap();
/// assert!(terroir::numa::allowed_cpus().unwrap().contains(cpu));
/// # let _ = node;
/// ```
pub fn current_cpu_and_node() -> Result<(u32, NodeId), NumaError> {
    sys::getcpu().map(|(cpu, node)| (cpu, NodeId::new(node)))
}

/// For the `topology_sysfs` fuzz target (`fuzz/`, built with `--cfg
/// fuzzing`): a topology read from files held in memory, as
/// [`Topology::from_sysfs`] reads a directory; paths are relative to the
/// tree's root (`devices/system/node/node0/cpulist`, ...).
///
/// # Errors
/// As [`Topology::from_sysfs`].
#[cfg(fuzzing)]
#[doc(hidden)]
pub fn topology_from_files(
    files: impl IntoIterator<Item = (std::path::PathBuf, Vec<u8>)>,
) -> Result<Topology, NumaError> {
    let tree = sysfs::Memory(files.into_iter().collect());
    sysfs::read(
        &tree,
        std::path::Path::new(""),
        TopologySource::SysfsTree(std::path::PathBuf::new()),
    )
}
