//! Where a placed container's pages go ([`Placement`]) and the mapping
//! that holds them: anonymous pages, mapped with `mmap` and bound part by
//! part with `mbind` before anything touches them, unmapped on drop.

use std::fmt;
use std::mem;
use std::ptr::NonNull;

use crate::numa::sys::{map_anonymous, page_size, unmap};
use crate::numa::{bind_raw, BindFlags, MemPolicy, NodeId, NodeSet, NumaError};

/// Where a container's pages go.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Placement {
    /// Every page on this node (`MPOL_BIND`).
    Node(NodeId),
    /// Pages round-robin over these nodes (`MPOL_INTERLEAVE`).
    Interleave(NodeSet),
    /// The container cut into one contiguous share per node, in node order,
    /// share `i` bound to the `i`-th node of the set. Shares are whole
    /// pages; the last node's share takes the rounding. Use
    /// [`NodeVec::node_of`](super::NodeVec::node_of) to find an element's node.
    Blocked(NodeSet),
}

impl Placement {
    /// The single node holding every page, if there is one.
    pub fn home(&self) -> Option<NodeId> {
        match self {
            Placement::Node(n) => Some(*n),
            Placement::Interleave(s) | Placement::Blocked(s) if s.len() == 1 => {
                s.iter().next().map(NodeId::new)
            }
            _ => None,
        }
    }

    /// Byte ranges (relative to the start of a `bytes`-long mapping) and the
    /// policy for each; a mapping of whole pages.
    pub(super) fn parts(&self, bytes: usize) -> Vec<(usize, usize, MemPolicy)> {
        match self {
            Placement::Node(n) => vec![(0, bytes, MemPolicy::bind_to(*n))],
            Placement::Interleave(s) => vec![(0, bytes, MemPolicy::Interleave(s.clone()))],
            Placement::Blocked(s) => {
                let nodes: Vec<u32> = s.iter().collect();
                let ps = page_size();
                let pages = bytes / ps;
                let per = pages / nodes.len().max(1);
                let mut out = Vec::new();
                for (i, &n) in nodes.iter().enumerate() {
                    let start = i * per * ps;
                    let end = if i + 1 == nodes.len() {
                        bytes
                    } else {
                        (i + 1) * per * ps
                    };
                    if end > start {
                        out.push((start, end - start, MemPolicy::bind_to(NodeId::new(n))));
                    }
                }
                out
            }
        }
    }

    pub(super) fn check(&self) -> Result<(), NumaError> {
        match self {
            Placement::Interleave(s) if s.is_empty() => Err(NumaError::EmptyNodeSet {
                policy: "interleave",
            }),
            Placement::Blocked(s) if s.is_empty() => {
                Err(NumaError::EmptyNodeSet { policy: "blocked" })
            }
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Placement::Node(n) => write!(f, "{n}"),
            Placement::Interleave(s) => write!(f, "interleave({s})"),
            Placement::Blocked(s) => write!(f, "blocked({s})"),
        }
    }
}

impl From<NodeId> for Placement {
    fn from(n: NodeId) -> Self {
        Placement::Node(n)
    }
}

/// A page-aligned anonymous mapping bound by a placement (or nothing, for
/// zero bytes).
pub(super) struct Mapping {
    pub(super) ptr: NonNull<u8>,
    pub(super) bytes: usize,
}

impl Mapping {
    pub(super) const EMPTY: Mapping = Mapping {
        ptr: NonNull::dangling(),
        bytes: 0,
    };

    /// Maps at least `bytes` bytes (rounded up to pages) and binds each
    /// part before anything touches it.
    pub(super) fn new(bytes: usize, placement: &Placement) -> Result<Mapping, NumaError> {
        placement.check()?;
        if bytes == 0 {
            return Ok(Mapping::EMPTY);
        }
        let ps = page_size();
        let bytes = bytes.checked_add(ps - 1).ok_or_else(|| too_big(bytes))? & !(ps - 1);
        let ptr = map_anonymous(bytes).map_err(|e| match e.raw_os_error() {
            Some(libc::ENOMEM) => too_big(bytes),
            _ => NumaError::Syscall {
                call: format!("mmap({bytes} bytes)"),
                source: e,
            },
        })?;
        let mapping = Mapping { ptr, bytes };
        for (off, len, policy) in placement.parts(bytes) {
            // On error `mapping` is dropped, which unmaps it.
            bind_raw(ptr.as_ptr() as usize + off, len, &policy, BindFlags::STRICT)?;
        }
        Ok(mapping)
    }

    pub(super) fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if self.bytes != 0 {
            // SAFETY: `ptr`/`bytes` is exactly the mapping made in `new`, and
            // its owner (the container) is being dropped, so nothing uses it.
            unsafe { unmap(self.ptr, self.bytes) };
        }
    }
}

pub(super) fn too_big(bytes: usize) -> NumaError {
    NumaError::OutOfMemory {
        call: format!("mapping {bytes} bytes"),
    }
}

pub(super) fn bytes_for<T>(len: usize) -> Result<usize, NumaError> {
    len.checked_mul(mem::size_of::<T>())
        .ok_or_else(|| NumaError::OutOfMemory {
            call: format!("{len} elements of {} bytes", mem::size_of::<T>()),
        })
}
