//! Pool statistics: [`ThreadPool::stats`](terroir::ThreadPool::stats) and
//! [`ThreadPool::reset_stats`](terroir::ThreadPool::reset_stats) for C,
//! as structs that can grow (`sized.rs`): the totals of the pool
//! (`terroir_pool_stats` fills a `terroir_stats`: C has one namespace for
//! functions and typedefs, and the header's types have no `_t`), one node's share (`terroir_node_stats`), and
//! the steals from other nodes by distance.

use std::ffi::c_int;
use std::mem::{offset_of, size_of};

use super::error::{call, Error, TerroirError};
use super::pool::{with_pool, write, TerroirPool};
use super::sized::{write_sized, SizedStruct};

/// A pool's scheduling statistics since it was built or its statistics
/// were reset (what `terroir_pool_stats` fills): what ran, where it came
/// from, and the locality of the data that placed tasks declared. Counters are
/// read without stopping the pool: a snapshot of a running pool is not
/// exact across fields.
///
/// The struct can grow, as `terroir_pool_config` does: set `size` to
/// `sizeof(terroir_stats)` (or start from `TERROIR_STATS_INIT`);
/// the library fills the fields that fit, zeros the fields of a newer
/// header that it does not know, and sets `size` to the bytes it filled.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TerroirPoolStats {
    /// In: `sizeof(terroir_stats)` as the caller's header declares it. Out: the bytes the library filled.
    pub size: usize,
    /// Jobs the workers took from a queue or stole, and ran (the halves of
    /// a `terroir_join` run by the joining worker itself are not jobs).
    pub jobs: u64,
    /// Tasks spawned with a place (a node, worker, data, after or pushed
    /// place) that ran.
    pub placed: u64,
    /// Jobs a worker took from its own inboxes or its node's queues.
    pub from_own_queues: u64,
    /// Jobs stolen from a worker sharing the thief's L3 cache.
    pub steals_same_l3: u64,
    /// Jobs stolen from another worker of the thief's node.
    pub steals_same_node: u64,
    /// Jobs taken from other nodes (`terroir_pool_remote_steals` splits
    /// them by distance).
    pub steals_remote: u64,
    /// Placed tasks sent to a node other than the spawner's.
    pub pushed: u64,
    /// Bytes of data declared by the placed tasks that ran (data and
    /// pushed places).
    pub declared_bytes: u64,
    /// Of those, the bytes on the node of the worker that ran the task.
    pub local_bytes: u64,
    /// Placed tasks whose place the pool could not honour (a node or worker
    /// of another pool): they ran as unplaced tasks.
    pub unroutable: u64,
    /// `local_bytes / declared_bytes` (the locality ratio), or -1 when no
    /// task declared data.
    pub locality_ratio: f64,
}

// SAFETY: `#[repr(C)]`, `size: usize` first, integer and `f64` fields
// only (every bit pattern is a valid value); zero is the default of each.
unsafe impl SizedStruct for TerroirPoolStats {
    const C_NAME: &'static str = "terroir_stats";
    const ARG: &'static str = "out";
    // The first version ends with `locality_ratio`: this must not change
    // when fields are added.
    const MIN_SIZE: usize = offset_of!(TerroirPoolStats, locality_ratio) + size_of::<f64>();
    fn zeroed() -> Self {
        TerroirPoolStats::default()
    }
}

/// One node's share of a pool's statistics (`terroir_pool_node_stats`).
/// It grows as `terroir_stats` does (set `size`, or start from
/// `TERROIR_NODE_STATS_INIT`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TerroirNodeStats {
    /// In: `sizeof(terroir_node_stats)` as the caller's header declares
    /// it. Out: the bytes the library filled.
    pub size: usize,
    /// The node's OS number.
    pub node: u32,
    /// Zero.
    pub reserved: u32,
    /// Jobs its workers took from a queue or stole, and ran.
    pub jobs: u64,
    /// Placed tasks its workers ran.
    pub placed: u64,
}

// SAFETY: `#[repr(C)]`, `size: usize` first, integer fields only; zero is
// the default of each.
unsafe impl SizedStruct for TerroirNodeStats {
    const C_NAME: &'static str = "terroir_node_stats";
    const ARG: &'static str = "out";
    // The first version ends with `placed`: this must not change when
    // fields are added.
    const MIN_SIZE: usize = offset_of!(TerroirNodeStats, placed) + size_of::<u64>();
    fn zeroed() -> Self {
        TerroirNodeStats::default()
    }
}

/// Jobs stolen from nodes at one distance (`terroir_pool_remote_steals`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TerroirRemoteSteals {
    /// The NUMA distance between the thief's node and the node the jobs
    /// came from (as in `numactl --hardware`: 10 is local).
    pub distance: u32,
    /// Zero.
    pub reserved: u32,
    /// Jobs taken at that distance.
    pub steals: u64,
}

/// `*out` = the statistics of `pool` (NULL: the current pool): its totals.
///
/// Errors: `TERROIR_ERROR_NULL_POINTER` (`out`),
/// `TERROIR_ERROR_INVALID_ARGUMENT` (`out->size` not set, below the first
/// version of the struct, or absurd; nothing is written),
/// `TERROIR_ERROR_INVALID_HANDLE` (`pool`).
///
/// # Safety
/// `out` is NULL or points to a writable `terroir_stats` of
/// `out->size` bytes.
#[no_mangle]
pub unsafe extern "C" fn terroir_pool_stats(
    pool: *mut TerroirPool,
    out: *mut TerroirPoolStats,
) -> c_int {
    call("terroir_pool_stats", || {
        if out.is_null() {
            return Err(Error::null("out"));
        }
        let s = with_pool(pool, |p| Ok(p.stats()))?;
        let totals = TerroirPoolStats {
            size: 0,
            jobs: s.jobs(),
            placed: s.nodes.iter().map(|n| n.placed).sum(),
            from_own_queues: s.from_own_queues,
            steals_same_l3: s.steals_same_l3,
            steals_same_node: s.steals_same_node,
            steals_remote: s.remote_steals(),
            pushed: s.pushed,
            declared_bytes: s.declared_bytes,
            local_bytes: s.local_bytes,
            unroutable: s.unroutable,
            locality_ratio: s.locality_ratio().unwrap_or(-1.0),
        };
        // SAFETY: non-null, and a writable struct of `out->size` bytes
        // (the caller's promise).
        unsafe { write_sized(out, totals) }
    })
}

/// `*out` = the share of node `index` (0 to `num_nodes - 1`, as for
/// `terroir_pool_node_id`) of `pool`'s statistics (NULL: the current pool).
///
/// Errors: `TERROIR_ERROR_NULL_POINTER` (`out`),
/// `TERROIR_ERROR_INVALID_ARGUMENT` (`out->size`, as for
/// `terroir_pool_stats`), `TERROIR_ERROR_INVALID_NODE` (an index out of
/// range), `TERROIR_ERROR_INVALID_HANDLE` (`pool`).
///
/// # Safety
/// `out` is NULL or points to a writable `terroir_node_stats` of
/// `out->size` bytes.
#[no_mangle]
pub unsafe extern "C" fn terroir_pool_node_stats(
    pool: *mut TerroirPool,
    index: usize,
    out: *mut TerroirNodeStats,
) -> c_int {
    call("terroir_pool_node_stats", || {
        if out.is_null() {
            return Err(Error::null("out"));
        }
        let s = with_pool(pool, |p| Ok(p.stats()))?;
        let n = s.nodes.get(index).ok_or_else(|| {
            Error::new(
                TerroirError::InvalidNode,
                format!(
                    "node index {index} is out of range: the pool's topology has {} node(s)",
                    s.nodes.len()
                ),
            )
        })?;
        let node = TerroirNodeStats {
            size: 0,
            node: n.node.os_index(),
            reserved: 0,
            jobs: n.jobs,
            placed: n.placed,
        };
        // SAFETY: non-null, and a writable struct of `out->size` bytes
        // (the caller's promise).
        unsafe { write_sized(out, node) }
    })
}

/// The jobs `pool` (NULL: the current pool) took from other nodes, by
/// distance, nearest first: writes the first `capacity` distances into
/// `out[0 .. capacity)` and sets `*count` to the number of distances there
/// are (call with `capacity` 0 and `out` NULL to learn it). Distances at
/// which nothing was stolen are not listed; on one node, none is.
///
/// Errors: `TERROIR_ERROR_NULL_POINTER` (`count`; `out` with a nonzero
/// `capacity`), `TERROIR_ERROR_INVALID_HANDLE` (`pool`).
///
/// # Safety
/// `out` is NULL or points to `capacity` writable `terroir_remote_steals`;
/// `count` is NULL or points to a writable `size_t`.
#[no_mangle]
pub unsafe extern "C" fn terroir_pool_remote_steals(
    pool: *mut TerroirPool,
    out: *mut TerroirRemoteSteals,
    capacity: usize,
    count: *mut usize,
) -> c_int {
    call("terroir_pool_remote_steals", || {
        if count.is_null() {
            return Err(Error::null("count"));
        }
        if out.is_null() && capacity > 0 {
            return Err(Error::null("out"));
        }
        let s = with_pool(pool, |p| Ok(p.stats()))?;
        for (i, &(distance, steals)) in s.steals_remote.iter().take(capacity).enumerate() {
            // SAFETY: `out` has `capacity` writable entries (the caller's
            // promise) and `i < capacity`.
            unsafe {
                out.add(i).write(TerroirRemoteSteals {
                    distance,
                    reserved: 0,
                    steals,
                })
            };
        }
        write(count, "count", s.steals_remote.len())
    })
}

/// Zeroes the statistics of `pool` (NULL: the current pool).
///
/// Errors: `TERROIR_ERROR_INVALID_HANDLE` (`pool`).
///
/// # Safety
/// Any pointer value is accepted: handles are never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn terroir_pool_reset_stats(pool: *mut TerroirPool) -> c_int {
    call("terroir_pool_reset_stats", || {
        with_pool(pool, |p| {
            p.reset_stats();
            Ok(())
        })
    })
}
