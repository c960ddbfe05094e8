//! Memory placement: policies, binding a region to nodes and asking where a
//! region's pages are. Safe wrappers over `mbind`, `set_mempolicy`,
//! `get_mempolicy` and `move_pages` (`sys.rs`); moving pages is in
//! `migrate.rs`.
//!
//! See [regions](crate::numa#regions) for how slices map to pages.

use std::fmt;
use std::io;
use std::num::NonZeroUsize;

use super::sys::{self, NodeMask, MASK_WORDS};
use super::{NodeId, NodeSet, NumaError};

/// A Linux memory policy: where the pages of a region (or of a thread's
/// future allocations) are placed when first touched.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MemPolicy {
    /// The thread's policy (for a region) or the system default, which is
    /// `Local` (for a thread).
    Default,
    /// The node of the CPU that first touches the page.
    Local,
    /// Only these nodes; the kernel fails the allocation (or the process is
    /// killed on a fault) when they are full.
    Bind(NodeSet),
    /// This node when it has memory free, else any other.
    Preferred(NodeId),
    /// Page by page round-robin over these nodes.
    Interleave(NodeSet),
}

impl MemPolicy {
    /// `Bind` to a single node.
    pub fn bind_to(node: NodeId) -> MemPolicy {
        MemPolicy::Bind([node.os_index()].into_iter().collect())
    }

    /// The kernel's `MPOL_*` mode and node mask, after checking every node
    /// against `allowed`.
    fn to_raw(&self, allowed: &NodeSet) -> Result<(libc::c_int, Option<NodeMask>), NumaError> {
        let check = |set: &NodeSet, policy: &'static str| -> Result<NodeMask, NumaError> {
            if set.is_empty() {
                return Err(NumaError::EmptyNodeSet { policy });
            }
            if let Some(bad) = set.iter().find(|&n| !allowed.contains(n)) {
                return Err(NumaError::NodeNotAllowed {
                    node: NodeId::new(bad),
                    allowed: allowed.clone(),
                });
            }
            Ok(to_mask(set))
        };
        Ok(match self {
            MemPolicy::Default => (libc::MPOL_DEFAULT, None),
            MemPolicy::Local => (libc::MPOL_LOCAL, None),
            MemPolicy::Bind(set) => (libc::MPOL_BIND, Some(check(set, "bind")?)),
            MemPolicy::Interleave(set) => (libc::MPOL_INTERLEAVE, Some(check(set, "interleave")?)),
            MemPolicy::Preferred(node) => {
                let set: NodeSet = [node.os_index()].into_iter().collect();
                (libc::MPOL_PREFERRED, Some(check(&set, "preferred")?))
            }
        })
    }
}

impl fmt::Display for MemPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemPolicy::Default => f.write_str("default"),
            MemPolicy::Local => f.write_str("local"),
            MemPolicy::Bind(s) => write!(f, "bind({s})"),
            MemPolicy::Preferred(n) => write!(f, "preferred({n})"),
            MemPolicy::Interleave(s) => write!(f, "interleave({s})"),
        }
    }
}

fn to_mask(set: &NodeSet) -> NodeMask {
    let mut mask: NodeMask = [0; MASK_WORDS];
    for (dst, src) in mask.iter_mut().zip(set.as_words()) {
        *dst = *src;
    }
    mask
}

fn from_mask(mask: &NodeMask) -> NodeSet {
    (0..MASK_WORDS * 64)
        .filter(|&i| mask[i / 64] >> (i % 64) & 1 == 1)
        .map(|i| i as u32)
        .collect()
}

/// What [`bind_memory`] does with pages that already exist.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BindFlags {
    move_existing: bool,
    strict: bool,
}

impl BindFlags {
    /// Set the policy for pages not yet touched; leave existing pages where
    /// they are.
    pub const NONE: BindFlags = BindFlags {
        move_existing: false,
        strict: false,
    };
    /// Also migrate existing pages to the policy's nodes (`MPOL_MF_MOVE`;
    /// pages shared with other processes stay).
    pub const MOVE: BindFlags = BindFlags {
        move_existing: true,
        strict: false,
    };
    /// Fail with [`NumaError::StrictViolation`] if existing pages do not
    /// follow the policy (after moving them, with [`BindFlags::MOVE`])
    /// (`MPOL_MF_STRICT`).
    pub const STRICT: BindFlags = BindFlags {
        move_existing: false,
        strict: true,
    };

    fn raw(self) -> libc::c_uint {
        let mut f = 0;
        if self.move_existing {
            f |= sys::MPOL_MF_MOVE;
        }
        if self.strict {
            f |= sys::MPOL_MF_STRICT;
        }
        f
    }
}

impl std::ops::BitOr for BindFlags {
    type Output = BindFlags;
    fn bitor(self, rhs: BindFlags) -> BindFlags {
        BindFlags {
            move_existing: self.move_existing || rhs.move_existing,
            strict: self.strict || rhs.strict,
        }
    }
}

/// The base page size of this machine, in bytes.
pub fn page_size() -> usize {
    sys::page_size()
}

/// The page-aligned span covering `[addr, addr + len)`: `(start, bytes)`.
fn page_span(addr: usize, len: usize) -> (usize, usize) {
    let ps = page_size();
    let start = addr & !(ps - 1);
    let end = addr.saturating_add(len).saturating_add(ps - 1) & !(ps - 1);
    (start, end - start)
}

pub(super) fn region<T>(data: &[T]) -> (usize, usize) {
    (data.as_ptr() as usize, std::mem::size_of_val(data))
}

/// The nodes this process may allocate memory on (`get_mempolicy` with
/// `MPOL_F_MEMS_ALLOWED`): the online nodes with memory, restricted by the
/// cgroup cpuset.
///
/// # Errors
/// [`NumaError::NotSupported`] on a kernel without NUMA support.
///
/// ```
/// let nodes = terroir::numa::mems_allowed().unwrap();
/// assert!(!nodes.is_empty());
/// ```
pub fn mems_allowed() -> Result<NodeSet, NumaError> {
    sys::get_mempolicy(0, sys::MPOL_F_MEMS_ALLOWED)
        .map(|(_, mask)| from_mask(&mask))
        .map_err(|e| {
            syscall_error(
                "get_mempolicy",
                "get_mempolicy(MPOL_F_MEMS_ALLOWED)".into(),
                e,
            )
        })
}

/// Maps an errno of a memory-policy call to the typed error.
pub(super) fn syscall_error(name: &'static str, call: String, e: io::Error) -> NumaError {
    match e.raw_os_error() {
        Some(libc::ENOSYS) => NumaError::NotSupported { call: name },
        Some(libc::EPERM) => NumaError::NotPermitted { call },
        Some(libc::ENOMEM) => NumaError::OutOfMemory { call },
        _ => NumaError::Syscall { call, source: e },
    }
}

/// Applies `policy` to the pages of `data` (`mbind`), widened to whole
/// pages (see [regions](crate::numa#regions)). With [`BindFlags::NONE`] only pages
/// not yet touched follow it; [`BindFlags::MOVE`] migrates existing ones.
///
/// ```
/// use terroir::numa::{bind_memory, locate, BindFlags, MemPolicy, Sample};
/// let node = terroir::numa::mems_allowed().unwrap().iter().next().unwrap();
/// let data = vec![1u8; 1 << 20];
/// let node = terroir::numa::NodeId::new(node);
/// bind_memory(&data, &MemPolicy::bind_to(node), BindFlags::MOVE).unwrap();
/// assert_eq!(locate(&data, Sample::All).unwrap().majority(), Some(node));
/// ```
///
/// # Errors
/// [`NumaError::NodeNotAllowed`] (naming the node and the allowed ones) or
/// [`NumaError::EmptyNodeSet`] before any system call;
/// [`NumaError::EmptyRegion`]; [`NumaError::NotMapped`] when part of the
/// region is not mapped; [`NumaError::StrictViolation`] with
/// [`BindFlags::STRICT`]; [`NumaError::NotSupported`] without kernel NUMA
/// support. On error the policy of the region is unchanged, except that the
/// kernel may have applied it to a prefix of a region with an unmapped hole.
pub fn bind_memory<T>(data: &[T], policy: &MemPolicy, flags: BindFlags) -> Result<(), NumaError> {
    let (addr, len) = region(data);
    bind_raw(addr, len, policy, flags)
}

/// [`bind_memory`] on a raw address range, for the pool layer.
pub(crate) fn bind_raw(
    addr: usize,
    len: usize,
    policy: &MemPolicy,
    flags: BindFlags,
) -> Result<(), NumaError> {
    if len == 0 {
        return Err(NumaError::EmptyRegion { call: "mbind" });
    }
    let allowed = mems_allowed()?;
    let (mode, mask) = policy.to_raw(&allowed)?;
    let (start, bytes) = page_span(addr, len);
    sys::mbind(start, bytes, mode, mask.as_ref(), flags.raw()).map_err(|e| {
        match e.raw_os_error() {
            Some(libc::EFAULT) => NumaError::NotMapped {
                call: "mbind",
                addr,
                len,
            },
            // mbind reports an unmapped hole in the range as ENOMEM.
            Some(libc::ENOMEM) => NumaError::NotMapped {
                call: "mbind",
                addr,
                len,
            },
            Some(libc::EIO) => NumaError::StrictViolation { addr, len },
            _ => syscall_error(
                "mbind",
                format!("mbind({addr:#x}, {len} bytes, {policy})"),
                e,
            ),
        }
    })
}

/// Sets the memory policy of the calling thread's future allocations
/// (`set_mempolicy`).
///
/// ```
/// use terroir::numa::{set_thread_policy, thread_policy, MemPolicy};
/// std::thread::spawn(|| {
///     set_thread_policy(&MemPolicy::Local).unwrap();
///     assert_eq!(thread_policy().unwrap(), MemPolicy::Local);
/// }).join().unwrap();
/// ```
///
/// # Errors
/// As [`bind_memory`] for the nodes of the policy.
pub fn set_thread_policy(policy: &MemPolicy) -> Result<(), NumaError> {
    let allowed = mems_allowed()?;
    let (mode, mask) = policy.to_raw(&allowed)?;
    sys::set_mempolicy(mode, mask.as_ref())
        .map_err(|e| syscall_error("set_mempolicy", format!("set_mempolicy({policy})"), e))
}

/// The calling thread's memory policy (`get_mempolicy`).
///
/// # Errors
/// [`NumaError::NotSupported`] on a kernel without NUMA support.
pub fn thread_policy() -> Result<MemPolicy, NumaError> {
    let (mode, mask) = sys::get_mempolicy(0, 0)
        .map_err(|e| syscall_error("get_mempolicy", "get_mempolicy()".into(), e))?;
    decode_policy(mode, &mask)
}

/// The memory policy of the mapping holding the first byte of `data`
/// (`get_mempolicy` with `MPOL_F_ADDR`): what [`bind_memory`] set, or
/// [`MemPolicy::Default`] when nothing was.
///
/// ```
/// use terroir::numa::{memory_policy, MemPolicy};
/// let data = vec![0u8; 100];
/// assert_eq!(memory_policy(&data).unwrap(), MemPolicy::Default);
/// ```
///
/// # Errors
/// [`NumaError::EmptyRegion`] for an empty slice; [`NumaError::NotMapped`].
pub fn memory_policy<T>(data: &[T]) -> Result<MemPolicy, NumaError> {
    let (addr, len) = region(data);
    if len == 0 {
        return Err(NumaError::EmptyRegion {
            call: "get_mempolicy",
        });
    }
    policy_at(addr)
}

/// The policy of the mapping holding `addr` (`get_mempolicy` with
/// `MPOL_F_ADDR`).
pub(crate) fn policy_at(addr: usize) -> Result<MemPolicy, NumaError> {
    let (mode, mask) =
        sys::get_mempolicy(addr, sys::MPOL_F_ADDR).map_err(|e| match e.raw_os_error() {
            Some(libc::EFAULT) => NumaError::NotMapped {
                call: "get_mempolicy",
                addr,
                len: 1,
            },
            _ => syscall_error("get_mempolicy", format!("get_mempolicy(addr {addr:#x})"), e),
        })?;
    decode_policy(mode, &mask)
}

fn decode_policy(mode: libc::c_int, mask: &NodeMask) -> Result<MemPolicy, NumaError> {
    // Strip the mode flags (MPOL_F_STATIC_NODES and friends).
    let flags =
        libc::MPOL_F_STATIC_NODES | libc::MPOL_F_RELATIVE_NODES | libc::MPOL_F_NUMA_BALANCING;
    let nodes = from_mask(mask);
    Ok(match mode & !flags {
        libc::MPOL_DEFAULT => MemPolicy::Default,
        libc::MPOL_LOCAL => MemPolicy::Local,
        libc::MPOL_BIND => MemPolicy::Bind(nodes),
        libc::MPOL_INTERLEAVE => MemPolicy::Interleave(nodes),
        // An empty preferred mask is the kernel's spelling of "local".
        libc::MPOL_PREFERRED => match nodes.iter().next() {
            Some(n) => MemPolicy::Preferred(NodeId::new(n)),
            None => MemPolicy::Local,
        },
        other => {
            return Err(NumaError::Syscall {
                call: format!("get_mempolicy returned mode {other}, which terroir does not know"),
                source: io::Error::from_raw_os_error(libc::EINVAL),
            })
        }
    })
}

/// Which pages [`locate`] asks about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sample {
    /// Every page of the region.
    All,
    /// Every k-th page, starting with the first (Drebes, §4.4: a full query
    /// of 512 KiB costs 10–20 kcycles; a majority vote over a sample costs
    /// a fraction and answers the same question for bound data).
    Every(NonZeroUsize),
}

impl Default for Sample {
    /// Every 16th page.
    fn default() -> Self {
        Sample::Every(NonZeroUsize::new(16).expect("16 is not zero"))
    }
}

/// Where the pages of a region are: the answer of [`locate`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageLocation {
    pages: usize,
    queried: usize,
    per_node: Vec<(NodeId, usize)>,
    not_present: usize,
    other: usize,
}

impl PageLocation {
    /// Pages in the region (after widening to whole pages).
    pub fn pages(&self) -> usize {
        self.pages
    }

    /// Pages asked about (all of them, or the sample).
    pub fn queried(&self) -> usize {
        self.queried
    }

    /// For each node holding queried pages, how many; by node number.
    pub fn per_node(&self) -> &[(NodeId, usize)] {
        &self.per_node
    }

    /// Queried pages on `node`.
    pub fn on_node(&self, node: NodeId) -> usize {
        self.per_node
            .iter()
            .find(|(n, _)| *n == node)
            .map_or(0, |&(_, c)| c)
    }

    /// Queried pages not backed by memory yet (never touched, `-ENOENT`).
    pub fn not_present(&self) -> usize {
        self.not_present
    }

    /// Queried pages the kernel could not place for another reason (the
    /// shared zero page, a special mapping: `-EFAULT` and friends), or did
    /// not answer for.
    pub fn other(&self) -> usize {
        self.other
    }

    /// The node holding most queried pages (ties go to the lower node
    /// number), or `None` when no queried page is backed by memory.
    pub fn majority(&self) -> Option<NodeId> {
        let mut best: Option<(NodeId, usize)> = None;
        for &(n, c) in &self.per_node {
            if best.is_none_or(|(_, bc)| c > bc) {
                best = Some((n, c));
            }
        }
        best.map(|(n, _)| n)
    }
}

/// The page addresses of `[addr, addr + len)`, every `step`-th page.
pub(super) fn page_addrs(addr: usize, len: usize, step: usize) -> (usize, Vec<usize>) {
    let ps = page_size();
    let (start, bytes) = page_span(addr, len);
    let pages = bytes / ps;
    (
        pages,
        (0..pages).step_by(step).map(|i| start + i * ps).collect(),
    )
}

/// Where the pages of `data` are (`move_pages` without target nodes),
/// counting every page or a sample.
///
/// ```
/// use terroir::numa::{locate, Sample};
/// let data = vec![7u64; 1 << 16]; // 512 KiB, touched
/// let full = locate(&data, Sample::All).unwrap();
/// let sampled = locate(&data, Sample::default()).unwrap();
/// assert!(sampled.queried() < full.queried());
/// assert_eq!(full.majority(), sampled.majority());
/// assert_eq!(full.not_present(), 0);
/// ```
///
/// # Errors
/// [`NumaError::NotSupported`] without kernel NUMA support;
/// [`NumaError::Syscall`] for anything else the kernel refuses.
pub fn locate<T>(data: &[T], sample: Sample) -> Result<PageLocation, NumaError> {
    let (addr, len) = region(data);
    locate_raw(addr, len, sample)
}

/// [`locate`] on a raw address range.
pub(crate) fn locate_raw(
    addr: usize,
    len: usize,
    sample: Sample,
) -> Result<PageLocation, NumaError> {
    if len == 0 {
        return Ok(PageLocation::default());
    }
    let step = match sample {
        Sample::All => 1,
        Sample::Every(k) => k.get(),
    };
    let (pages, addrs) = page_addrs(addr, len, step);
    let mut status = vec![sys::STATUS_UNWRITTEN; addrs.len()];
    sys::move_pages(&addrs, None, &mut status, 0).map_err(|e| {
        syscall_error(
            "move_pages",
            format!("move_pages(query {} pages at {addr:#x})", addrs.len()),
            e,
        )
    })?;
    let mut loc = PageLocation {
        pages,
        queried: addrs.len(),
        ..PageLocation::default()
    };
    let mut counts: std::collections::BTreeMap<u32, usize> = Default::default();
    for s in status {
        match u32::try_from(s) {
            Ok(node) => *counts.entry(node).or_default() += 1,
            Err(_) if s == -libc::ENOENT => loc.not_present += 1,
            Err(_) => loc.other += 1,
        }
    }
    loc.per_node = counts
        .into_iter()
        .map(|(n, c)| (NodeId::new(n), c))
        .collect();
    Ok(loc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numa::{migrate, migrate_raw};

    fn first_node() -> NodeId {
        NodeId::new(mems_allowed().unwrap().iter().next().unwrap())
    }

    #[test]
    fn page_span_widens_to_whole_pages() {
        let ps = page_size();
        assert_eq!(page_span(ps, 1), (ps, ps));
        assert_eq!(page_span(ps + 1, ps), (ps, 2 * ps));
        assert_eq!(page_span(0, 0), (0, 0));
        assert_eq!(page_span(3 * ps - 1, 2), (2 * ps, 2 * ps));
    }

    #[test]
    fn masks_round_trip() {
        let set: NodeSet = [0, 3, 63, 64, 1023].into_iter().collect();
        assert_eq!(from_mask(&to_mask(&set)), set);
    }

    #[test]
    fn node_outside_mems_allowed_is_rejected_before_the_kernel() {
        let data = vec![0u8; 4096];
        let err = bind_memory(
            &data,
            &MemPolicy::bind_to(NodeId::new(1000)),
            BindFlags::NONE,
        )
        .unwrap_err();
        match &err {
            NumaError::NodeNotAllowed { node, allowed } => {
                assert_eq!(node.os_index(), 1000);
                assert_eq!(*allowed, mems_allowed().unwrap());
            }
            other => panic!("{other:?}"),
        }
        assert!(err.to_string().contains("node1000"), "{err}");
        let err = bind_memory(
            &data,
            &MemPolicy::Interleave(NodeSet::new()),
            BindFlags::NONE,
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                NumaError::EmptyNodeSet {
                    policy: "interleave"
                }
            ),
            "{err:?}"
        );
        let err = migrate(&data, NodeId::new(999)).unwrap_err();
        assert!(matches!(err, NumaError::NodeNotAllowed { .. }), "{err:?}");
    }

    #[test]
    fn empty_regions() {
        let empty: [u64; 0] = [];
        let err = bind_memory(&empty, &MemPolicy::Local, BindFlags::NONE).unwrap_err();
        assert!(
            matches!(err, NumaError::EmptyRegion { call: "mbind" }),
            "{err:?}"
        );
        assert!(matches!(
            migrate(&empty, first_node()),
            Err(NumaError::EmptyRegion { .. })
        ));
        let loc = locate(&empty, Sample::All).unwrap();
        assert_eq!((loc.pages(), loc.queried(), loc.majority()), (0, 0, None));
    }

    #[test]
    fn unmapped_region_is_typed() {
        // The second page of the address space: below vm.mmap_min_addr
        // (65536 by default), so nothing can be mapped there, whatever other
        // threads map meanwhile.
        let ps = page_size();
        let addr = ps;
        let err = bind_raw(
            addr,
            4 * ps,
            &MemPolicy::bind_to(first_node()),
            BindFlags::NONE,
        )
        .unwrap_err();
        assert!(
            matches!(err, NumaError::NotMapped { call: "mbind", .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("0x1000"), "{err}");
        let loc = locate_raw(addr, 4 * ps, Sample::All).unwrap();
        assert_eq!(loc.per_node(), &[]);
        assert_eq!(loc.other() + loc.not_present(), 4);
        assert!(matches!(policy_at(addr), Err(NumaError::NotMapped { .. })));
    }

    #[test]
    fn untouched_pages_are_not_present_then_follow_the_binding() {
        let ps = page_size();
        let n = 64;
        let p = sys::map_anonymous(n * ps).unwrap();
        let addr = p.as_ptr() as usize;
        let node = first_node();
        bind_raw(addr, n * ps, &MemPolicy::bind_to(node), BindFlags::STRICT).unwrap();
        assert_eq!(policy_at(addr).unwrap(), MemPolicy::bind_to(node));
        let loc = locate_raw(addr, n * ps, Sample::All).unwrap();
        assert_eq!(loc.not_present(), n);
        assert_eq!(loc.majority(), None);
        // SAFETY: the mapping is n pages of fresh, writable memory we own.
        unsafe { std::ptr::write_bytes(p.as_ptr(), 1, n * ps) };
        let loc = locate_raw(addr, n * ps, Sample::All).unwrap();
        assert_eq!(loc.on_node(node), n);
        let sampled = locate_raw(addr, n * ps, Sample::default()).unwrap();
        assert_eq!(sampled.queried(), n / 16);
        assert_eq!(sampled.majority(), Some(node));
        let m = migrate_raw(addr, n * ps, node).unwrap();
        assert_eq!((m.already_there(), m.moved()), (n, 0));
        // SAFETY: as above; nothing uses the memory after this.
        unsafe { sys::unmap(p, n * ps) };
    }

    #[test]
    fn thread_policy_round_trip() {
        let node = first_node();
        std::thread::spawn(move || {
            assert_eq!(thread_policy().unwrap(), MemPolicy::Default);
            for p in [
                MemPolicy::bind_to(node),
                MemPolicy::Preferred(node),
                MemPolicy::Interleave([node.os_index()].into_iter().collect()),
                MemPolicy::Local,
                MemPolicy::Default,
            ] {
                set_thread_policy(&p).unwrap();
                assert_eq!(thread_policy().unwrap(), p);
            }
        })
        .join()
        .unwrap();
    }
}
