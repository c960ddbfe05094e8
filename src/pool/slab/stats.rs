//! Per-node counters of the slab pool and their snapshot, [`SlabStats`].

use super::*;

/// A snapshot of one node's counters (relaxed atomics, so a snapshot taken
/// while other threads allocate may be slightly inconsistent).
///
/// "Shared lists" are the node's locked per-class lists; blocks move between
/// them and threads in batches, so these counters do not count every
/// allocation: a block reused within a thread's cache is never counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlabStats {
    /// 2 MiB reservations mapped and bound for this node.
    pub reservations: u64,
    /// Reservations left unbound because the kernel refuses memory policies
    /// (`ENOSYS`, `EPERM`); 0 on a normal NUMA kernel.
    pub unbound: u64,
    /// 64 KiB chunks cut from the reservations.
    pub chunks: u64,
    /// Blocks cut from chunks (each block is cut once, then reused).
    pub blocks_carved: u64,
    /// Blocks handed from the shared lists to threads (cache refills) or to
    /// callers (locked allocations).
    pub blocks_handed_out: u64,
    /// Blocks given back to the shared lists by threads of this node (cache
    /// overflow, flushes, thread exit, locked frees).
    pub blocks_returned: u64,
    /// Batches of blocks freed by threads of other nodes and given back to
    /// this node's shared lists.
    pub remote_batches: u64,
    /// Blocks in those batches.
    pub remote_blocks: u64,
    /// Large requests (above 64 KiB) mapped and bound to this node.
    pub large_allocs: u64,
}

impl SlabStats {
    /// Bytes reserved for this node's slabs.
    pub fn reserved_bytes(&self) -> u64 {
        self.reservations * RESERVATION as u64
    }
}

#[derive(Default)]
pub(super) struct SlabTallies {
    pub(super) reservations: AtomicU64,
    pub(super) unbound: AtomicU64,
    pub(super) chunks: AtomicU64,
    pub(super) blocks_carved: AtomicU64,
    pub(super) blocks_handed_out: AtomicU64,
    pub(super) blocks_returned: AtomicU64,
    pub(super) remote_batches: AtomicU64,
    pub(super) remote_blocks: AtomicU64,
    pub(super) large_allocs: AtomicU64,
}

pub(super) fn bump(counter: &AtomicU64, by: usize) {
    counter.fetch_add(by as u64, Ordering::Relaxed);
}

impl SlabTallies {
    pub(super) fn snapshot(&self) -> SlabStats {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        SlabStats {
            reservations: r(&self.reservations),
            unbound: r(&self.unbound),
            chunks: r(&self.chunks),
            blocks_carved: r(&self.blocks_carved),
            blocks_handed_out: r(&self.blocks_handed_out),
            blocks_returned: r(&self.blocks_returned),
            remote_batches: r(&self.remote_batches),
            remote_blocks: r(&self.remote_blocks),
            large_allocs: r(&self.large_allocs),
        }
    }
}
