//! The kernel's part played for Miri: mappings served by the Rust
//! allocator, and a machine of one node (node 0) whose memory policies are
//! accepted and ignored. Compiled for Miri, where it replaces the memory
//! functions of `sys.rs`, and for the unit tests, which check it.
//!
//! Mappings are zeroed like fresh anonymous memory and aligned as asked
//! (at least to a page). A mapping must be unmapped whole (Miri cannot give
//! part of an allocation back: [`shrink_mapping`] declines). Mappings made
//! with [`map_permanent`] are kept in a list until unmapped, so that Miri's
//! leak check, which follows pointers from statics, sees the slab pool's
//! bookkeeping as reachable; everything else that is never unmapped is a
//! leak Miri reports.
//!
//! It allocates through the global allocator, so the pool must not be the
//! global allocator under Miri (its unit tests use the system's).

use std::alloc::{self, Layout};
use std::collections::BTreeMap;
use std::io;
use std::ptr::NonNull;
use std::sync::{Mutex, PoisonError};

use super::{page_size, NodeMask, MASK_WORDS, MPOL_F_MEMS_ALLOWED};
use crate::numa::NumaError;

/// A permanent mapping's pointer, kept for the leak check.
struct Kept(NonNull<u8>);

// SAFETY: the pointer is only compared and kept, never dereferenced.
unsafe impl Send for Kept {}

struct Maps {
    /// Live mappings by address: their layout, and whether permanent.
    live: BTreeMap<usize, (Layout, bool)>,
    permanent: Vec<Kept>,
}

static MAPS: Mutex<Maps> = Mutex::new(Maps {
    live: BTreeMap::new(),
    permanent: Vec::new(),
});

fn maps() -> std::sync::MutexGuard<'static, Maps> {
    MAPS.lock().unwrap_or_else(PoisonError::into_inner)
}

fn no_memory() -> io::Error {
    io::Error::from_raw_os_error(libc::ENOMEM)
}

/// The most the stand-in maps at once: more is `ENOMEM`, as a kernel
/// refuses a mapping larger than the address space (Miri would abort on an
/// allocation larger than its host can give).
const LARGEST: usize = 256 << 20;

fn map(len: usize, align: usize, permanent: bool) -> io::Result<NonNull<u8>> {
    if len > LARGEST || align > LARGEST {
        return Err(no_memory());
    }
    let layout =
        Layout::from_size_align(len.max(1), align.max(page_size())).map_err(|_| no_memory())?;
    // SAFETY: the layout has a non-zero size.
    let p = NonNull::new(unsafe { alloc::alloc_zeroed(layout) }).ok_or_else(no_memory)?;
    let mut m = maps();
    m.live.insert(p.as_ptr().addr(), (layout, permanent));
    if permanent {
        m.permanent.push(Kept(p));
    }
    Ok(p)
}

/// `len` zeroed bytes aligned to a page.
pub(crate) fn map_anonymous(len: usize) -> io::Result<NonNull<u8>> {
    map(len, page_size(), false)
}

/// `len` zeroed bytes aligned to `align`.
pub(crate) fn map_aligned(len: usize, align: usize) -> io::Result<NonNull<u8>> {
    map(len, align, false)
}

/// [`map_aligned`], kept reachable until unmapped.
pub(crate) fn map_permanent(len: usize, align: usize) -> io::Result<NonNull<u8>> {
    map(len, align, true)
}

/// Frees a whole mapping.
///
/// # Safety
/// `ptr`/`len` is exactly a live mapping of this file, unused afterwards.
///
/// # Panics
/// For anything else, which is a bug of the caller that Miri should see.
pub(crate) unsafe fn unmap(ptr: NonNull<u8>, len: usize) {
    let mut m = maps();
    let Some((layout, permanent)) = m.live.remove(&ptr.as_ptr().addr()) else {
        panic!("unmap({ptr:?}, {len}): not a mapping of the stand-in kernel");
    };
    assert_eq!(
        layout.size(),
        len.max(1),
        "unmap({ptr:?}, {len}): the stand-in kernel unmaps whole mappings only"
    );
    if permanent {
        m.permanent.retain(|k| k.0 != ptr);
    }
    drop(m);
    // SAFETY: allocated in `map` with `layout` (found by its address, and
    // the caller passed the pointer it was given), unused from now on.
    unsafe { alloc::dealloc(ptr.as_ptr(), layout) };
}

/// Declines: an allocation cannot shrink in place.
///
/// # Safety
/// None needed; `unsafe` as its counterpart in `sys.rs`.
pub(crate) unsafe fn shrink_mapping(_ptr: NonNull<u8>, _old_len: usize, _new_len: usize) -> bool {
    false
}

/// Every policy is accepted, and changes nothing.
pub(crate) fn mbind(
    _addr: usize,
    _len: usize,
    _mode: libc::c_int,
    _mask: Option<&NodeMask>,
    _flags: libc::c_uint,
) -> io::Result<()> {
    Ok(())
}

/// Node 0 is the only node allowed; every policy reads as the default.
pub(crate) fn get_mempolicy(
    _addr: usize,
    flags: libc::c_ulong,
) -> io::Result<(libc::c_int, NodeMask)> {
    let mut mask: NodeMask = [0; MASK_WORDS];
    if flags & MPOL_F_MEMS_ALLOWED != 0 {
        mask[0] = 1;
    }
    Ok((libc::MPOL_DEFAULT, mask))
}

/// Where pages are is not known: `ENOSYS`, as on a kernel without NUMA.
pub(crate) fn move_pages(
    _pages: &[usize],
    _nodes: Option<&[libc::c_int]>,
    _status: &mut [libc::c_int],
    _flags: libc::c_int,
) -> io::Result<usize> {
    Err(io::Error::from_raw_os_error(libc::ENOSYS))
}

/// CPU 0 of node 0.
pub(crate) fn getcpu() -> Result<(u32, u32), NumaError> {
    Ok((0, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mappings_are_zeroed_aligned_and_freed_whole() {
        let ps = page_size();
        let a = map_anonymous(3 * ps).unwrap();
        assert_eq!(a.as_ptr().addr() % ps, 0);
        // SAFETY: 3 pages of our fresh mapping.
        assert!(unsafe { std::slice::from_raw_parts(a.as_ptr(), 3 * ps) }
            .iter()
            .all(|&b| b == 0));
        let b = map_aligned(ps, 1 << 16).unwrap();
        let err = map_anonymous(isize::MAX as usize - ps).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOMEM));
        assert_eq!(b.as_ptr().addr() % (1 << 16), 0);
        let c = map_permanent(ps, ps).unwrap();
        assert!(maps().permanent.iter().any(|k| k.0 == c));
        // SAFETY: the stand-in never shrinks; each mapping is freed whole,
        // once, and not used afterwards.
        unsafe {
            assert!(!shrink_mapping(b, ps, 0));
            unmap(a, 3 * ps);
            unmap(b, ps);
            unmap(c, ps);
        }
        assert!(!maps().permanent.iter().any(|k| k.0 == c));
        assert!(!maps().live.contains_key(&a.as_ptr().addr()));
    }

    #[test]
    fn one_node_that_accepts_every_policy() {
        let (_, mask) = get_mempolicy(0, MPOL_F_MEMS_ALLOWED).unwrap();
        assert_eq!((mask[0], mask[1..].iter().sum::<u64>()), (1, 0));
        assert_eq!(get_mempolicy(0, 0).unwrap().0, libc::MPOL_DEFAULT);
        assert!(mbind(0, 4096, libc::MPOL_BIND, Some(&mask), 0).is_ok());
        let err = move_pages(&[0], None, &mut [0], 0).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOSYS));
        assert_eq!(getcpu().unwrap(), (0, 0));
    }
}
