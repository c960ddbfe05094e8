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
pub(super) fn bind_fresh(ptr: NonNull<u8>, len: usize, node: u32) -> Result<bool, SlabError> {
    let mut mask: NodeMask = [0; MASK_WORDS];
    mask[node as usize / 64] |= 1 << (node % 64);
    match sys::mbind(ptr.as_ptr().addr(), len, libc::MPOL_BIND, Some(&mask), 0) {
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

fn out_of_memory(bytes: usize) -> impl FnOnce(io::Error) -> SlabError {
    move |e| SlabError::OutOfMemory {
        bytes,
        errno: e.raw_os_error().unwrap_or(0),
    }
}

/// Page-aligned memory for the pool's bookkeeping (node states, address
/// table leaves), never unmapped but when it was never published.
pub(super) fn map(bytes: usize) -> Result<NonNull<u8>, SlabError> {
    sys::map_permanent(bytes, page_size()).map_err(out_of_memory(bytes))
}

/// A reservation: [`RESERVATION`] bytes aligned to their size, never
/// unmapped but when it could not be bound or recorded.
pub(super) fn map_reservation() -> Result<NonNull<u8>, SlabError> {
    sys::map_permanent(RESERVATION, RESERVATION).map_err(out_of_memory(RESERVATION))
}

/// A large block: `bytes` (whole pages) aligned to `align`.
pub(super) fn map_large(bytes: usize, align: usize) -> Result<NonNull<u8>, SlabError> {
    sys::map_aligned(bytes, align).map_err(out_of_memory(bytes))
}

/// Unmaps `[ptr, ptr + len)`; nothing for `len == 0`.
///
/// # Safety
/// The range is exactly a mapping of [`map`], [`map_reservation`] or
/// [`map_large`] (or the part of a large block left after
/// [`shrink_large`]), and unused.
pub(super) unsafe fn unmap_range(ptr: NonNull<u8>, len: usize) {
    if len != 0 {
        // SAFETY: the caller's contract is unmap's.
        unsafe { sys::unmap(ptr, len) };
    }
}

/// Gives the tail `[ptr + new, ptr + old)` of a large block back; `false`
/// when it cannot (under Miri) and the block is unchanged.
///
/// # Safety
/// `ptr`/`old` is a live large block (whole pages), `new <= old` whole
/// pages, and the tail is unused afterwards.
pub(super) unsafe fn shrink_large(ptr: NonNull<u8>, old: usize, new: usize) -> bool {
    // SAFETY: the caller's contract is shrink_mapping's.
    unsafe { sys::shrink_mapping(ptr, old, new) }
}
