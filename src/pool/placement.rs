//! Where a placed container's pages go ([`Placement`]) and the mapping
//! that holds them: anonymous pages, mapped with `mmap` and bound part by
//! part with `mbind` before anything touches them, unmapped on drop.

use std::fmt;
use std::mem;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// Mappings of at least this many bytes are coloured (see [`Mapping`]).
pub(super) const COLOURED: usize = 1 << 20;

/// The page offsets a coloured mapping's data may start at (0 to
/// `COLOURS - 1` pages in), and the pages it maps beyond its data.
pub(super) const COLOURS: usize = 8;

/// The colour of the next coloured mapping.
static NEXT_COLOUR: AtomicUsize = AtomicUsize::new(0);

/// A page-aligned anonymous mapping bound by a placement (or nothing, for
/// zero bytes).
///
/// **Colouring.** The kernel places one mapping right below the previous
/// one, so vectors of equal power-of-two sizes made one after the other
/// would start exactly a power of two apart, and a loop that streams
/// through several of them at the same index (a STREAM triad) then runs
/// 1.5× slower on the EPYC guest (three 128 MiB vectors: 103–107 ms per
/// 5 triads at exact distances, 66–73 ms with any gap of a page or more).
/// A mapping of [`COLOURED`] bytes or more therefore maps [`COLOURS`]
/// pages more than its data and starts the data a rotating number of
/// pages in. The extra pages are never touched and never bound: they cost
/// address space, not memory.
pub(super) struct Mapping {
    /// The first byte of the data (page-aligned).
    pub(super) ptr: NonNull<u8>,
    /// The bytes of data (whole pages), from `ptr`.
    pub(super) bytes: usize,
    /// The untouched pages mapped before `ptr`, in bytes.
    head: usize,
    /// The untouched pages mapped after the data, in bytes.
    tail: usize,
}

impl Mapping {
    pub(super) const EMPTY: Mapping = Mapping {
        ptr: NonNull::dangling(),
        bytes: 0,
        head: 0,
        tail: 0,
    };

    /// Maps at least `bytes` bytes (rounded up to pages), coloured when
    /// large, and binds each part before anything touches it.
    pub(super) fn new(bytes: usize, placement: &Placement) -> Result<Mapping, NumaError> {
        placement.check()?;
        if bytes == 0 {
            return Ok(Mapping::EMPTY);
        }
        let ps = page_size();
        let bytes = bytes.checked_add(ps - 1).ok_or_else(|| too_big(bytes))? & !(ps - 1);
        let (head, tail) = if bytes >= COLOURED {
            let colour = NEXT_COLOUR.fetch_add(1, Ordering::Relaxed) % COLOURS;
            (colour * ps, (COLOURS - colour) * ps)
        } else {
            (0, 0)
        };
        let total = bytes
            .checked_add(head + tail)
            .ok_or_else(|| too_big(bytes))?;
        let raw = map_anonymous(total).map_err(|e| match e.raw_os_error() {
            Some(libc::ENOMEM) => too_big(bytes),
            _ => NumaError::Syscall {
                call: format!("mmap({total} bytes)"),
                source: e,
            },
        })?;
        // SAFETY: head < total: the data start is inside the fresh mapping.
        let ptr = unsafe { raw.add(head) };
        let mapping = Mapping {
            ptr,
            bytes,
            head,
            tail,
        };
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
            // SAFETY: `ptr - head` for `head + bytes + tail` bytes is exactly
            // the mapping made in `new` (so the subtraction stays inside
            // it), and its owner (the container) is being dropped, so
            // nothing uses it.
            unsafe {
                let raw = self.ptr.sub(self.head);
                unmap(raw, self.head + self.bytes + self.tail);
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Large mappings start their data at rotating page offsets inside
    /// the mapping, which still holds all of it; small ones are exact.
    /// (Under Miri too: the data's first and last bytes are written, and
    /// each mapping is unmapped whole on drop.)
    #[test]
    fn large_mappings_are_coloured() {
        let node = NodeId::new(crate::numa::mems_allowed().unwrap().iter().next().unwrap());
        let ps = page_size();
        let maps: Vec<Mapping> = (0..=COLOURS)
            .map(|_| Mapping::new(COLOURED, &Placement::Node(node)).unwrap())
            .collect();
        let mut heads = Vec::new();
        for m in &maps {
            assert_eq!(m.bytes, COLOURED);
            assert_eq!(m.addr() % ps, 0, "the data starts on a page");
            assert_eq!(m.head + m.tail, COLOURS * ps, "COLOURS extra pages");
            assert!(m.head < COLOURS * ps);
            // SAFETY: the first and the last byte of the mapping's data.
            unsafe {
                m.ptr.as_ptr().write(1);
                m.ptr.as_ptr().add(m.bytes - 1).write(2);
            }
            heads.push(m.head);
        }
        heads.sort_unstable();
        heads.dedup();
        assert!(heads.len() > 1, "every large mapping had the same colour");
        let small = Mapping::new(COLOURED - ps, &Placement::Node(node)).unwrap();
        assert_eq!((small.head, small.tail), (0, 0), "small mappings are exact");
    }
}
