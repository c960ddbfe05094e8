//! What the slab pool asks of the kernel: memory, bindings, the allowed
//! nodes.

use super::*;

/// The nodes this process may allocate on, as a raw mask; `None` when the
/// kernel cannot tell (no NUMA support, or the call is filtered).
fn allowed_mask() -> Option<NodeMask> {
    sys::get_mempolicy(0, sys::MPOL_F_MEMS_ALLOWED)
        .ok()
        .map(|(_, mask)| mask)
}

fn mask_has(mask: &NodeMask, node: u32) -> bool {
    (node as usize) < MAX_NODES && mask[node as usize / 64] >> (node % 64) & 1 == 1
}

/// Whether this process may allocate on `node`. Without an answer from the
/// kernel only node 0 is allowed.
pub(super) fn node_allowed(node: u32) -> bool {
    match allowed_mask() {
        Some(mask) => mask_has(&mask, node),
        None => node == 0,
    }
}

/// The lowest node this process may allocate on (0 if the kernel cannot
/// tell), computed once.
pub(super) fn default_node() -> u32 {
    const UNSET: u32 = u32::MAX;
    static DEFAULT: AtomicU32 = AtomicU32::new(UNSET);
    let n = DEFAULT.load(Ordering::Relaxed);
    if n != UNSET {
        return n;
    }
    let n = allowed_mask()
        .and_then(|mask| (0..MAX_NODES as u32).find(|&i| mask_has(&mask, i)))
        .unwrap_or(0);
    DEFAULT.store(n, Ordering::Relaxed);
    n
}

/// Binds the untouched range to `node` with the raw `mbind` (the safe
/// `bind_raw` allocates). `Ok(false)`: the kernel refuses memory policies
/// altogether, the range stays unbound.
pub(super) fn bind_fresh(addr: usize, len: usize, node: u32) -> Result<bool, SlabError> {
    let mut mask: NodeMask = [0; MASK_WORDS];
    mask[node as usize / 64] |= 1 << (node % 64);
    match sys::mbind(addr, len, libc::MPOL_BIND, Some(&mask), 0) {
        Ok(()) => Ok(true),
        Err(e) => match e.raw_os_error() {
            Some(libc::ENOSYS) | Some(libc::EPERM) => Ok(false),
            errno => Err(SlabError::Bind {
                node: NodeId::new(node),
                errno: errno.unwrap_or(0),
            }),
        },
    }
}

pub(super) fn map(bytes: usize) -> Result<usize, SlabError> {
    map_anonymous(bytes)
        .map(|p| p.as_ptr() as usize)
        .map_err(|e| SlabError::OutOfMemory {
            bytes,
            errno: e.raw_os_error().unwrap_or(0),
        })
}

/// Unmaps `[addr, addr + len)`; nothing for `len == 0`.
///
/// # Safety
/// The range is page-aligned, part of a mapping of [`map`], and unused.
pub(super) unsafe fn unmap_range(addr: usize, len: usize) {
    if len == 0 {
        return;
    }
    if let Some(p) = NonNull::new(addr as *mut u8) {
        // SAFETY: the caller's contract is unmap's.
        unsafe { unmap(p, len) };
    }
}
