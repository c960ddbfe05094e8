//! terroir: a NUMA-aware work-stealing runtime.
#![warn(missing_docs)]

pub mod numa;
