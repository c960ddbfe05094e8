//! Memory placed on NUMA nodes: containers whose pages are bound to a node
//! before first touch, and node-local slab pools.
//!
//! This layer sits on [`numa`](crate::numa) and below the executor: it knows
//! nodes and memory policies, not workers or tasks.

mod placed;
mod placement;
mod slab;

pub use placed::{NodeBox, NodeVec};
pub use placement::Placement;
pub use slab::{
    flush_thread_cache, set_thread_node, thread_node, NodeLocalAlloc, SlabError, SlabPool,
    SlabStats,
};
