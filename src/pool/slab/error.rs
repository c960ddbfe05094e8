//! [`SlabError`]: what the slab pool can refuse, without heap data.

use super::*;

/// Why the slab pool could not serve a request.
///
/// It holds no heap data, so the allocator can make one while it is the
/// global allocator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SlabError {
    /// The node does not exist, is above node 1023, or is outside the nodes
    /// this process may allocate on (`mems_allowed`).
    NodeNotAllowed {
        /// The node asked for.
        node: NodeId,
    },
    /// `mmap` refused a mapping of this many bytes.
    OutOfMemory {
        /// Bytes asked of `mmap`.
        bytes: usize,
        /// The `errno` of `mmap`.
        errno: i32,
    },
    /// `mbind` refused to bind fresh memory to the node.
    Bind {
        /// The node.
        node: NodeId,
        /// The `errno` of `mbind`.
        errno: i32,
    },
    /// The request, rounded up to whole pages and its alignment, does not
    /// fit in the address space.
    TooLarge {
        /// Bytes requested.
        size: usize,
        /// Alignment requested.
        align: usize,
    },
    /// `mmap` returned memory above the 256 TiB the pool's address table
    /// covers (only possible with 5-level page tables and an address hint).
    Unaddressable {
        /// The address of the mapping.
        addr: usize,
    },
}

impl fmt::Display for SlabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let os = |errno: i32| io::Error::from_raw_os_error(errno);
        match *self {
            SlabError::NodeNotAllowed { node } => write!(
                f,
                "{node} is not a node this process may allocate on (mems_allowed)"
            ),
            SlabError::OutOfMemory { bytes, errno } => {
                write!(f, "mmap of {bytes} bytes failed: {}", os(errno))
            }
            SlabError::Bind { node, errno } => {
                write!(f, "mbind of fresh memory to {node} failed: {}", os(errno))
            }
            SlabError::TooLarge { size, align } => write!(
                f,
                "a block of {size} bytes aligned to {align} does not fit in the address space"
            ),
            SlabError::Unaddressable { addr } => write!(
                f,
                "mmap returned {addr:#x}, above the 48-bit addresses the slab pool tracks"
            ),
        }
    }
}

impl std::error::Error for SlabError {}
