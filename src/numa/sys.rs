//! Raw system calls. Every `unsafe` block of the `numa` layer lives here;
//! the rest of the crate calls the safe functions of this file or of the
//! modules above it.
//!
//! Under Miri, which cannot make these calls, the memory functions (mapping
//! memory, memory policies, `move_pages`, `getcpu`) are those of
//! `sys/heap.rs`, a stand-in that serves mappings from the Rust allocator
//! and plays a one-node kernel: the containers and the slab pool above run
//! unchanged, and Miri checks them.

use std::io;
use std::mem;
#[cfg(not(miri))]
use std::ptr::NonNull;

use super::{CpuSet, NumaError};

/// The CPUs the calling thread may run on (`sched_getaffinity(0)`); cgroup
/// cpusets and `taskset` restrictions show up here.
pub(crate) fn allowed_cpus() -> Result<CpuSet, NumaError> {
    // SAFETY: cpu_set_t is plain old data; all-zero is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed; pid 0
    // means the calling thread.
    let rc = unsafe { libc::sched_getaffinity(0, mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(NumaError::Syscall {
            call: "sched_getaffinity(0)".into(),
            source: io::Error::last_os_error(),
        });
    }
    let mut cpus = CpuSet::new();
    for cpu in 0..libc::CPU_SETSIZE as usize {
        // SAFETY: `cpu` < CPU_SETSIZE, the capacity of `set`.
        if unsafe { libc::CPU_ISSET(cpu, &set) } {
            cpus.insert(cpu as u32);
        }
    }
    Ok(cpus)
}

/// Restricts the calling thread to `cpus` (`sched_setaffinity(0)`).
pub(crate) fn bind_current_thread(cpus: &CpuSet) -> Result<(), NumaError> {
    let call = || format!("sched_setaffinity(cpus {cpus})");
    // SAFETY: cpu_set_t is plain old data; all-zero is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    for cpu in cpus.iter() {
        if cpu as usize >= libc::CPU_SETSIZE as usize {
            return Err(NumaError::Syscall {
                call: call(),
                source: io::Error::from_raw_os_error(libc::EINVAL),
            });
        }
        // SAFETY: `cpu` < CPU_SETSIZE was checked just above.
        unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 means the
    // calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(NumaError::Syscall {
            call: call(),
            source: io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// The CPU and NUMA node the calling thread is running on right now
/// (`getcpu(2)`). The answer may be stale as soon as it returns unless the
/// thread is bound to one CPU.
#[cfg(not(miri))]
pub(crate) fn getcpu() -> Result<(u32, u32), NumaError> {
    let mut cpu: libc::c_uint = 0;
    let mut node: libc::c_uint = 0;
    // SAFETY: both pointers are valid for a write of c_uint; the third
    // argument (tcache) is unused by Linux since 2.6.24 and may be null.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_getcpu,
            &mut cpu as *mut libc::c_uint,
            &mut node as *mut libc::c_uint,
            std::ptr::null_mut::<libc::c_void>(),
        )
    };
    if rc != 0 {
        return Err(NumaError::Syscall {
            call: "getcpu".into(),
            source: io::Error::last_os_error(),
        });
    }
    Ok((cpu, node))
}

/// The CPU the calling thread runs on, through the vDSO (`sched_getcpu`,
/// no system call); `None` if the C library cannot tell.
#[inline]
pub(crate) fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu has no preconditions; it returns -1 on failure.
    let cpu = unsafe { libc::sched_getcpu() };
    u32::try_from(cpu).ok()
}

// ------------------------------------------------------------ process-wide barriers

/// `membarrier(2)` commands (`linux/membarrier.h`, a stable ABI).
#[cfg_attr(loom, allow(dead_code))]
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

/// Registers this process for [`membarrier`]
/// (`MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`, Linux 4.14). Fails where
/// the kernel lacks the call or a sandbox forbids it; then the callers do
/// without (and Miri, which cannot make the call, always fails it).
pub(crate) fn membarrier_register() -> io::Result<()> {
    membarrier_cmd(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)
}

/// A memory barrier on every thread of this process that is running
/// (`MEMBARRIER_CMD_PRIVATE_EXPEDITED`): when it returns, each of them
/// has passed a point where its memory accesses are in program order,
/// as if it had run a full fence there (threads not running are so
/// already). With a compiler fence on the other threads' side, this
/// orders a store before a load on both sides (the asymmetric Dekker
/// pattern: the frequent side pays no fence). Needs
/// [`membarrier_register`] first.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) fn membarrier() -> io::Result<()> {
    membarrier_cmd(MEMBARRIER_CMD_PRIVATE_EXPEDITED)
}

fn membarrier_cmd(cmd: libc::c_int) -> io::Result<()> {
    #[cfg(miri)]
    {
        let _ = cmd;
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
    #[cfg(not(miri))]
    {
        // SAFETY: membarrier takes two integers (command, flags) and, for
        // these commands, touches no user memory.
        let rc = unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0 as libc::c_uint) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

// ------------------------------------------------------------ memory policy

/// `get_mempolicy` flag: look up the policy of the VMA containing `addr`.
pub(crate) const MPOL_F_ADDR: libc::c_ulong = 1 << 1;
/// `get_mempolicy` flag: return the nodes the calling thread may use.
pub(crate) const MPOL_F_MEMS_ALLOWED: libc::c_ulong = 1 << 2;
/// `mbind` flag: fail with `EIO` if existing pages do not follow the policy.
pub(crate) const MPOL_MF_STRICT: libc::c_uint = 1 << 0;
/// `mbind`/`move_pages` flag: move pages used only by this process.
pub(crate) const MPOL_MF_MOVE: libc::c_uint = 1 << 1;

/// Words in a node mask: 1024 nodes, Linux's largest `MAX_NUMNODES`
/// (`CONFIG_NODES_SHIFT` is at most 10), so any node the kernel reports fits.
pub(crate) const MASK_WORDS: usize = 16;
/// A node mask as the memory-policy calls take it.
pub(crate) type NodeMask = [u64; MASK_WORDS];
/// The `maxnode` argument for a [`NodeMask`]: the kernel's `get_nodes`
/// decrements it before use (the historical off-by-one libnuma also
/// compensates for), so pass the bit count plus one.
const MASK_MAXNODE: libc::c_ulong = (MASK_WORDS * 64 + 1) as libc::c_ulong;

fn last_err() -> io::Error {
    io::Error::last_os_error()
}

/// `mbind(addr, len, mode, mask, flags)`. The kernel only changes the policy
/// of (and with `MPOL_MF_MOVE` migrates, contents intact) the pages of the
/// range; it never reads or writes the memory on our behalf, so no Rust
/// invariant depends on the range, which need not even be mapped (the kernel
/// then fails with `EFAULT`).
#[cfg(not(miri))]
pub(crate) fn mbind(
    addr: usize,
    len: usize,
    mode: libc::c_int,
    mask: Option<&NodeMask>,
    flags: libc::c_uint,
) -> io::Result<()> {
    let (mask_ptr, maxnode) = match mask {
        Some(m) => (m.as_ptr(), MASK_MAXNODE),
        None => (std::ptr::null(), 0),
    };
    // SAFETY: `mask_ptr` is null (with maxnode 0) or points to a live
    // NodeMask of MASK_WORDS words, which is what MASK_MAXNODE describes;
    // the kernel validates `addr`/`len` itself and does not access user
    // memory in the range (see the function doc).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            addr as *mut libc::c_void,
            len as libc::c_ulong,
            mode as libc::c_ulong,
            mask_ptr,
            maxnode,
            flags as libc::c_ulong,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(last_err())
    }
}

/// `set_mempolicy(mode, mask)` for the calling thread.
pub(crate) fn set_mempolicy(mode: libc::c_int, mask: Option<&NodeMask>) -> io::Result<()> {
    let (mask_ptr, maxnode) = match mask {
        Some(m) => (m.as_ptr(), MASK_MAXNODE),
        None => (std::ptr::null(), 0),
    };
    // SAFETY: `mask_ptr` is null (with maxnode 0) or a live NodeMask of the
    // size MASK_MAXNODE describes; the call only affects this thread's
    // future allocations.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_set_mempolicy,
            mode as libc::c_ulong,
            mask_ptr,
            maxnode,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(last_err())
    }
}

/// `get_mempolicy(&mode, mask, maxnode, addr, flags)`: returns the mode (or,
/// with `MPOL_F_NODE`, a node number) and the mask. With `MPOL_F_ADDR`, the
/// kernel looks `addr` up in this process's mappings (and with
/// `MPOL_F_NODE` may fault the page in, which allocates but never changes
/// contents); it fails with `EFAULT` for an unmapped address.
#[cfg(not(miri))]
pub(crate) fn get_mempolicy(
    addr: usize,
    flags: libc::c_ulong,
) -> io::Result<(libc::c_int, NodeMask)> {
    let mut mode: libc::c_int = 0;
    let mut mask: NodeMask = [0; MASK_WORDS];
    // SAFETY: `mode` and `mask` are live and writable; `mask` holds
    // MASK_WORDS words as MASK_MAXNODE says (the kernel writes at most
    // that many bits and requires maxnode >= its nr_node_ids, which 1024
    // bits always satisfy).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut libc::c_int,
            mask.as_mut_ptr(),
            MASK_MAXNODE,
            addr as *mut libc::c_void,
            flags,
        )
    };
    if rc == 0 {
        Ok((mode, mask))
    } else {
        Err(last_err())
    }
}

/// A `move_pages` status no kernel writes (node numbers are >= 0, errnos
/// small negatives): the value to start a status array at, so that an entry
/// the kernel left alone is not read as "node 0".
pub(crate) const STATUS_UNWRITTEN: libc::c_int = libc::c_int::MIN;

/// `move_pages(0, pages.len(), pages, nodes, status, flags)` on this
/// process: with `nodes` it migrates each page to its node (contents
/// intact), without it only reports where each page is. `status[i]` gets a
/// node number or a negative errno. Returns the number of pages the kernel
/// reports as not migrated for non-fatal reasons; when that number is
/// positive, the kernel stopped at the batch that failed and did not write
/// the status of that batch's pages nor of any later page (Linux 4.17 and
/// later), so callers start `status` at [`STATUS_UNWRITTEN`].
#[cfg(not(miri))]
pub(crate) fn move_pages(
    pages: &[usize],
    nodes: Option<&[libc::c_int]>,
    status: &mut [libc::c_int],
    flags: libc::c_int,
) -> io::Result<usize> {
    assert_eq!(pages.len(), status.len(), "one status per page");
    if let Some(n) = nodes {
        assert_eq!(n.len(), pages.len(), "one target node per page");
    }
    let nodes_ptr = nodes.map_or(std::ptr::null(), <[libc::c_int]>::as_ptr);
    // SAFETY: `pages` (as pointer-sized addresses), `nodes` (if any) and
    // `status` all hold `pages.len()` elements (asserted above), live for the
    // call; pid 0 is this process; the kernel migrates pages without
    // changing their contents and never dereferences the addresses for us.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0 as libc::c_int,
            pages.len() as libc::c_ulong,
            pages.as_ptr() as *const *mut libc::c_void,
            nodes_ptr,
            status.as_mut_ptr(),
            flags,
        )
    };
    if rc < 0 {
        Err(last_err())
    } else {
        Ok(rc as usize)
    }
}

/// The base page size.
pub(crate) fn page_size() -> usize {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(v)
            .ok()
            .filter(|&p| p.is_power_of_two())
            .unwrap_or(4096)
    })
}

/// Maps `len` bytes of private anonymous memory, reserved but not touched
/// (`MAP_NORESERVE`): no page exists until first touch, so a policy set with
/// [`mbind`] before then decides where every page goes.
#[cfg(not(miri))]
pub(crate) fn map_anonymous(len: usize) -> io::Result<NonNull<u8>> {
    // SAFETY: a fresh anonymous private mapping at an address of the
    // kernel's choosing aliases no existing Rust object.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(last_err());
    }
    NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOMEM))
}

/// Maps `len` bytes (whole pages) aligned to `align` (a power of two),
/// like [`map_anonymous`]: a larger mapping with its unaligned head and
/// its tail unmapped.
#[cfg(not(miri))]
pub(crate) fn map_aligned(len: usize, align: usize) -> io::Result<NonNull<u8>> {
    let ps = page_size();
    let align = align.max(ps);
    if align == ps {
        return map_anonymous(len);
    }
    let total = len
        .checked_add(align - ps)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOMEM))?;
    let raw = map_anonymous(total)?;
    let head = raw.as_ptr().align_offset(align);
    // SAFETY: head < align <= total - len, so `start` and `start + len` are
    // inside the mapping (or at its end).
    let start = unsafe { raw.add(head) };
    // SAFETY: the head and the tail are page-aligned parts of the fresh
    // mapping (its ends, `start` and `len` are page-aligned), unused.
    unsafe {
        if head > 0 {
            unmap(raw, head);
        }
        if total - head > len {
            unmap(start.add(len), total - head - len);
        }
    }
    Ok(start)
}

/// [`map_aligned`], for memory that is never unmapped but when making it
/// failed half-way (the bookkeeping of the slab pool, its reservations).
/// The same call outside Miri; the stand-in keeps such memory reachable,
/// so that Miri does not report it as leaked.
#[cfg(not(miri))]
pub(crate) fn map_permanent(len: usize, align: usize) -> io::Result<NonNull<u8>> {
    map_aligned(len, align)
}

/// Unmaps a mapping made by [`map_anonymous`], [`map_aligned`] or
/// [`map_permanent`].
///
/// # Safety
/// `ptr`/`len` must be exactly a live mapping returned by one of them
/// (outside Miri, a page-aligned part of one is fine too), and nothing may
/// use that memory afterwards.
#[cfg(not(miri))]
pub(crate) unsafe fn unmap(ptr: NonNull<u8>, len: usize) {
    // SAFETY: the caller guarantees the range is ours and no longer used.
    let rc = unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
    debug_assert_eq!(rc, 0, "munmap: {}", io::Error::last_os_error());
}

/// Gives the pages of `[ptr + new_len, ptr + old_len)` back, keeping the
/// start of the mapping; `false` when it cannot (under Miri), and the
/// mapping is unchanged.
///
/// # Safety
/// `ptr`/`old_len` is a live mapping of [`map_aligned`], `new_len <=
/// old_len`, both whole pages, and nothing uses the tail afterwards.
#[cfg(not(miri))]
pub(crate) unsafe fn shrink_mapping(ptr: NonNull<u8>, old_len: usize, new_len: usize) -> bool {
    if new_len < old_len {
        // SAFETY: the tail is a page-aligned part of the mapping, unused
        // from now on (contract).
        unsafe { unmap(ptr.add(new_len), old_len - new_len) };
    }
    true
}

#[cfg(any(miri, test))]
mod heap;
#[cfg(miri)]
pub(crate) use heap::{
    get_mempolicy, getcpu, map_aligned, map_anonymous, map_permanent, mbind, move_pages,
    shrink_mapping, unmap,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affinity_round_trip() {
        let allowed = allowed_cpus().unwrap();
        assert!(!allowed.is_empty());
        let first = allowed.iter().next().unwrap();
        let one: CpuSet = [first].into_iter().collect();
        // Bind in a scratch thread so the test runner's threads keep their mask.
        std::thread::spawn(move || {
            bind_current_thread(&one).unwrap();
            assert_eq!(allowed_cpus().unwrap(), one);
            assert_eq!(getcpu().unwrap().0, first);
        })
        .join()
        .unwrap();
    }

    /// The barrier works once registered. Fails on a machine without it
    /// (there the task groups' owner bias is off, `sched::group::bias`):
    /// CI's machines have it, and the fast path must not go missing
    /// unnoticed.
    #[test]
    fn membarrier_runs_after_registration() {
        membarrier_register().expect("membarrier(REGISTER_PRIVATE_EXPEDITED)");
        membarrier().expect("membarrier(PRIVATE_EXPEDITED)");
    }

    #[test]
    fn binding_to_a_cpu_that_does_not_exist_names_it() {
        let bogus: CpuSet = [100_000].into_iter().collect();
        let err = std::thread::spawn(move || bind_current_thread(&bogus).unwrap_err())
            .join()
            .unwrap();
        assert!(err.to_string().contains("100000"), "{err}");
    }
}
