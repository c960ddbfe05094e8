//! Placed containers: [`NodeVec`] and [`NodeBox`], whose memory is mapped
//! with `mmap`, bound to a node (or spread over nodes) with `mbind` before
//! any page is touched, and unmapped on drop (the mapping and
//! [`Placement`] are in `placement.rs`).
//!
//! Because the binding happens before first touch, the pages land where the
//! [`Placement`] says whichever thread writes them first; a container knows
//! its placement, so a data-affinity lookup on it is a field read, not a
//! system call.

use std::fmt;
use std::marker::PhantomData;
use std::mem::{self, MaybeUninit};
use std::ops::{Deref, DerefMut};
use std::ptr::{self, NonNull};

use super::placement::{bytes_for, Mapping, Placement};
use crate::numa::sys::page_size;
use crate::numa::{
    bind_raw, locate_raw, migrate_raw, BindFlags, MemPolicy, Migration, NodeId, NumaError,
    PageLocation, Sample,
};

/// A vector whose memory is placed on NUMA nodes before first touch.
///
/// It dereferences to a slice; it grows like a `Vec` (a larger mapping with
/// the same placement, elements moved over); it knows its [`Placement`],
/// can say where its pages really are ([`locate`](Self::locate)) and move
/// them ([`migrate_to`](Self::migrate_to)).
///
/// ```
/// use terroir::numa::{NodeId, Sample};
/// use terroir::pool::{NodeVec, Placement};
/// let node = NodeId::new(terroir::numa::mems_allowed().unwrap().iter().next().unwrap());
/// let v = NodeVec::from_fn_on(1 << 16, Placement::Node(node), |i| i as u64).unwrap();
/// assert_eq!(v[12345], 12345);
/// assert_eq!(v.home(), Some(node)); // no system call
/// assert_eq!(v.locate(Sample::All).unwrap().majority(), Some(node));
/// ```
pub struct NodeVec<T> {
    map: Mapping,
    len: usize,
    placement: Placement,
    _owns: PhantomData<T>,
}

// SAFETY: a NodeVec owns its elements like a Vec does; sending or sharing it
// is sending or sharing them.
unsafe impl<T: Send> Send for NodeVec<T> {}
// SAFETY: as above; `&NodeVec` only gives `&T`.
unsafe impl<T: Sync> Sync for NodeVec<T> {}

impl<T> NodeVec<T> {
    const ALIGN_OK: () = assert!(
        mem::align_of::<T>() <= 4096,
        "NodeVec elements must not need more than page (4096-byte) alignment"
    );

    /// An empty vector with room for `capacity` elements, its pages bound
    /// by `placement` but not yet touched.
    ///
    /// # Errors
    /// [`NumaError::NodeNotAllowed`] or [`NumaError::EmptyNodeSet`] for a
    /// placement this process cannot use; [`NumaError::OutOfMemory`] when the
    /// size overflows or `mmap` refuses.
    pub fn with_capacity_on(
        capacity: usize,
        placement: impl Into<Placement>,
    ) -> Result<NodeVec<T>, NumaError> {
        #[allow(clippy::let_unit_value)]
        let () = Self::ALIGN_OK;
        let placement = placement.into();
        let map = if mem::size_of::<T>() == 0 {
            placement.check()?;
            Mapping::EMPTY
        } else {
            Mapping::new(bytes_for::<T>(capacity)?, &placement)?
        };
        Ok(NodeVec {
            map,
            len: 0,
            placement,
            _owns: PhantomData,
        })
    }

    /// A vector of `len` elements, element `i` being `f(i)`, written by the
    /// calling thread (see `ThreadPool::node_vec` for a parallel first
    /// touch by each node's workers).
    ///
    /// # Errors
    /// As [`with_capacity_on`](Self::with_capacity_on).
    pub fn from_fn_on(
        len: usize,
        placement: impl Into<Placement>,
        mut f: impl FnMut(usize) -> T,
    ) -> Result<NodeVec<T>, NumaError> {
        let mut v = Self::with_capacity_on(len, placement)?;
        for i in 0..len {
            // SAFETY: capacity is `len`, so slot `i` < len is in bounds and
            // unused; `len` is bumped right after, so a panic in `f` leaves
            // only initialised elements counted.
            unsafe { v.as_mut_ptr().add(i).write(f(i)) };
            v.len = i + 1;
        }
        Ok(v)
    }

    /// A vector of `len` clones of `value`.
    ///
    /// # Errors
    /// As [`with_capacity_on`](Self::with_capacity_on).
    pub fn from_elem_on(
        value: T,
        len: usize,
        placement: impl Into<Placement>,
    ) -> Result<NodeVec<T>, NumaError>
    where
        T: Clone,
    {
        Self::from_fn_on(len, placement, |_| value.clone())
    }

    /// A placed copy of `data`.
    ///
    /// # Errors
    /// As [`with_capacity_on`](Self::with_capacity_on).
    pub fn from_slice_on(
        data: &[T],
        placement: impl Into<Placement>,
    ) -> Result<NodeVec<T>, NumaError>
    where
        T: Clone,
    {
        Self::from_fn_on(data.len(), placement, |i| data[i].clone())
    }

    /// Where the pages are meant to be.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// The node holding every page, when the placement has a single node.
    pub fn home(&self) -> Option<NodeId> {
        self.placement.home()
    }

    /// The node that element `index`'s page is bound to: the home node, or
    /// the share holding it for [`Placement::Blocked`]; `None` for an
    /// interleaved vector or an index out of bounds.
    pub fn node_of(&self, index: usize) -> Option<NodeId> {
        if index >= self.len {
            return None;
        }
        if let Some(home) = self.home() {
            return Some(home);
        }
        let off = index * mem::size_of::<T>();
        self.placement
            .parts(self.map.bytes)
            .into_iter()
            .find(|(start, len, _)| off >= *start && off < start + len)
            .and_then(|(_, _, p)| match p {
                MemPolicy::Bind(s) => s.iter().next().map(NodeId::new),
                _ => None,
            })
    }

    /// The vector cut into its node shares, in order: for each part of the
    /// mapping bound to one node, that node and the elements whose first
    /// byte lies in the part. One share for a vector on one node; one per
    /// node for a [`Placement::Blocked`] vector (empty shares left out);
    /// none for an interleaved vector (its pages alternate between nodes,
    /// so no contiguous part of it is on one node) or an empty one.
    ///
    /// Loops over the vector (`par_iter()` and the like, see
    /// [`crate::iter`]) run each share on its node's workers.
    ///
    /// ```
    /// use terroir::numa::{NodeId, NodeSet};
    /// use terroir::pool::{NodeVec, Placement};
    /// let node = terroir::numa::mems_allowed().unwrap().iter().next().unwrap();
    /// let blocked = Placement::Blocked(NodeSet::from_iter([node]));
    /// let v = NodeVec::from_fn_on(10_000, blocked, |i| i as u32).unwrap();
    /// let shares = v.node_shares();
    /// assert_eq!(shares.len(), 1);
    /// assert_eq!(shares[0].0, NodeId::new(node));
    /// assert_eq!(shares[0].1.len(), 10_000);
    /// ```
    pub fn node_shares(&self) -> Vec<(NodeId, &[T])> {
        self.share_ranges()
            .into_iter()
            .map(|(node, r)| (node, &self[r]))
            .collect()
    }

    /// [`node_shares`](Self::node_shares), mutably.
    ///
    /// ```
    /// use terroir::numa::NodeId;
    /// use terroir::pool::NodeVec;
    /// let node = NodeId::new(terroir::numa::mems_allowed().unwrap().iter().next().unwrap());
    /// let mut v = NodeVec::from_elem_on(0u8, 100, node).unwrap();
    /// for (n, share) in v.node_shares_mut() {
    ///     assert_eq!(n, node);
    ///     share.fill(7);
    /// }
    /// assert!(v.iter().all(|&x| x == 7));
    /// ```
    pub fn node_shares_mut(&mut self) -> Vec<(NodeId, &mut [T])> {
        let ranges = self.share_ranges();
        let mut rest: &mut [T] = self;
        let mut at = 0;
        let mut out = Vec::with_capacity(ranges.len());
        for (node, r) in ranges {
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(r.start - at);
            let (share, tail) = tail.split_at_mut(r.len());
            out.push((node, share));
            rest = tail;
            at = r.end;
        }
        out
    }

    /// The element ranges of [`node_shares`](Self::node_shares), in order.
    pub(crate) fn share_ranges(&self) -> Vec<(NodeId, std::ops::Range<usize>)> {
        let size = mem::size_of::<T>();
        if self.len == 0 {
            return Vec::new();
        }
        if let Some(home) = self.home() {
            return vec![(home, 0..self.len)];
        }
        if size == 0 || !matches!(self.placement, Placement::Blocked(_)) {
            return Vec::new();
        }
        // Element i belongs to the part holding its first byte, i * size.
        let first_at = |off: usize| off.div_ceil(size).min(self.len);
        self.placement
            .parts(self.map.bytes)
            .into_iter()
            .filter_map(|(start, len, policy)| {
                let node = match policy {
                    MemPolicy::Bind(s) => s.iter().next().map(NodeId::new)?,
                    _ => return None,
                };
                let r = first_at(start)..first_at(start + len);
                (!r.is_empty()).then_some((node, r))
            })
            .collect()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there is no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Elements it can hold without a new mapping.
    pub fn capacity(&self) -> usize {
        match mem::size_of::<T>() {
            0 => usize::MAX,
            size => self.map.bytes / size,
        }
    }

    /// Pointer to the first element (dangling, but aligned, when nothing is
    /// mapped).
    pub fn as_ptr(&self) -> *const T {
        self.base()
    }

    /// Mutable pointer to the first element.
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.base()
    }

    fn base(&self) -> *mut T {
        if self.map.bytes == 0 {
            NonNull::<T>::dangling().as_ptr()
        } else {
            self.map.ptr.as_ptr().cast()
        }
    }

    /// The unused capacity, for writing elements before
    /// [`set_len`](Self::set_len).
    pub fn spare_capacity_mut(&mut self) -> &mut [MaybeUninit<T>] {
        let cap = self
            .capacity()
            .min(isize::MAX as usize / mem::size_of::<T>().max(1));
        // SAFETY: slots len..cap are inside the mapping (or zero-sized), not
        // aliased by the initialised prefix, and MaybeUninit needs no init;
        // a zero-sized vector may be longer than `cap` (`set_len` up to
        // usize::MAX), and then has no spare slot.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.as_mut_ptr().add(self.len).cast::<MaybeUninit<T>>(),
                cap.saturating_sub(self.len),
            )
        }
    }

    /// Sets the length.
    ///
    /// # Safety
    /// `new_len <= capacity()` and elements `0..new_len` are initialised.
    pub unsafe fn set_len(&mut self, new_len: usize) {
        self.len = new_len;
    }

    /// Appends `value`, growing into a larger mapping with the same
    /// placement when full (doubling).
    ///
    /// # Errors
    /// As [`with_capacity_on`](Self::with_capacity_on); on error the vector
    /// is unchanged and `value` is dropped.
    pub fn try_push(&mut self, value: T) -> Result<(), NumaError> {
        if self.len == self.capacity() {
            // Double, fill at least a page, and hold one more element: an
            // element larger than a page makes the second term 0, and an
            // empty vector the first.
            let grown = self
                .len
                .saturating_mul(2)
                .max(page_size() / mem::size_of::<T>().max(1))
                .max(self.len.saturating_add(1));
            self.grow(grown)?;
        }
        // SAFETY: len < capacity after growing; the slot is unused.
        unsafe { self.as_mut_ptr().add(self.len).write(value) };
        self.len += 1;
        Ok(())
    }

    /// Removes and returns the last element.
    pub fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        // SAFETY: slot `len` was initialised and is no longer counted.
        Some(unsafe { self.as_ptr().add(self.len).read() })
    }

    /// Drops every element, keeping the mapping.
    pub fn clear(&mut self) {
        let len = self.len;
        self.len = 0;
        // SAFETY: the first `len` elements were initialised and are no
        // longer counted, so they are dropped exactly once.
        unsafe { ptr::drop_in_place(ptr::slice_from_raw_parts_mut(self.as_mut_ptr(), len)) };
    }

    /// Moves the elements into a new mapping with room for `new_cap`
    /// elements, which must be more than `len` (a smaller one could not hold
    /// them, and an equal one would leave a push nowhere to write).
    fn grow(&mut self, new_cap: usize) -> Result<(), NumaError> {
        if new_cap <= self.len {
            return Err(NumaError::OutOfMemory {
                call: format!(
                    "growing a NodeVec of {} elements to capacity {new_cap} \
                     (the capacity must exceed the length)",
                    self.len
                ),
            });
        }
        let map = Mapping::new(bytes_for::<T>(new_cap)?, &self.placement)?;
        // SAFETY: both regions are valid for `len` elements and distinct
        // mappings; the old slots are then forgotten (moved, not dropped).
        unsafe { ptr::copy_nonoverlapping(self.base(), map.ptr.as_ptr().cast::<T>(), self.len) };
        self.map = map;
        Ok(())
    }

    /// Where the pages really are (all of them or a sample): one
    /// `move_pages` query.
    ///
    /// # Errors
    /// As [`crate::numa::locate`].
    pub fn locate(&self, sample: Sample) -> Result<PageLocation, NumaError> {
        locate_raw(self.map.addr(), self.len * mem::size_of::<T>(), sample)
    }

    /// Rebinds the whole mapping to `node` and moves the existing pages
    /// there, reporting per page what happened. The placement becomes
    /// [`Placement::Node`]`(node)` once the rebinding succeeded, even if
    /// some pages could not move (see [`Migration::failed`]).
    ///
    /// # Errors
    /// [`NumaError::NodeNotAllowed`] naming `node` (nothing changes).
    pub fn migrate_to(&mut self, node: NodeId) -> Result<Migration, NumaError> {
        migrate_mapping(
            &self.map,
            &mut self.placement,
            node,
            self.len * mem::size_of::<T>(),
        )
    }
}

/// Rebinds `map` to `node` and moves its first `used` bytes' pages.
fn migrate_mapping(
    map: &Mapping,
    placement: &mut Placement,
    node: NodeId,
    used: usize,
) -> Result<Migration, NumaError> {
    if map.bytes == 0 {
        // Nothing mapped: only the placement changes (after validation).
        crate::numa::mems_allowed().and_then(|allowed| {
            if allowed.contains(node.os_index()) {
                Ok(())
            } else {
                Err(NumaError::NodeNotAllowed { node, allowed })
            }
        })?;
        *placement = Placement::Node(node);
        return Ok(Migration::default());
    }
    bind_raw(
        map.addr(),
        map.bytes,
        &MemPolicy::bind_to(node),
        BindFlags::NONE,
    )?;
    *placement = Placement::Node(node);
    if used == 0 {
        return Ok(Migration::default());
    }
    migrate_raw(map.addr(), used, node)
}

impl<T> Drop for NodeVec<T> {
    fn drop(&mut self) {
        self.clear();
        // The mapping unmaps itself.
    }
}

impl<T> Deref for NodeVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the first `len` elements are initialised, inside the
        // mapping (or zero-sized) and suitably aligned (page-aligned start,
        // align_of::<T>() <= 4096 checked at compile time).
        unsafe { std::slice::from_raw_parts(self.as_ptr(), self.len) }
    }
}

impl<T> DerefMut for NodeVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.as_mut_ptr(), self.len) }
    }
}

impl<T: fmt::Debug> fmt::Debug for NodeVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeVec")
            .field("placement", &self.placement)
            .field("items", &&**self)
            .finish()
    }
}

/// One value in memory bound to a node before first touch (a page of its
/// own, at least): the `Box` of [`NodeVec`].
///
/// ```
/// use terroir::numa::NodeId;
/// use terroir::pool::NodeBox;
/// let node = NodeId::new(terroir::numa::mems_allowed().unwrap().iter().next().unwrap());
/// let b = NodeBox::new_on([0u64; 512], node).unwrap();
/// assert_eq!(b.home(), node);
/// assert_eq!(b.len(), 512);
/// ```
pub struct NodeBox<T> {
    vec: NodeVec<T>,
}

impl<T> NodeBox<T> {
    /// Moves `value` into memory bound to `node`.
    ///
    /// # Errors
    /// [`NumaError::NodeNotAllowed`] naming the node and the allowed ones;
    /// [`NumaError::OutOfMemory`].
    pub fn new_on(value: T, node: NodeId) -> Result<NodeBox<T>, NumaError> {
        let mut vec = NodeVec::with_capacity_on(1, Placement::Node(node))?;
        vec.try_push(value)?;
        Ok(NodeBox { vec })
    }

    /// The node the value's memory is bound to (no system call).
    pub fn home(&self) -> NodeId {
        self.vec
            .home()
            .expect("a NodeBox is always bound to one node")
    }

    /// Where its pages really are.
    ///
    /// # Errors
    /// As [`crate::numa::locate`].
    pub fn locate(&self) -> Result<PageLocation, NumaError> {
        self.vec.locate(Sample::All)
    }

    /// Rebinds and moves the value's pages to `node`.
    ///
    /// # Errors
    /// As [`NodeVec::migrate_to`].
    pub fn migrate_to(&mut self, node: NodeId) -> Result<Migration, NumaError> {
        self.vec.migrate_to(node)
    }

    /// Moves the value out, freeing the mapping.
    pub fn into_inner(mut self) -> T {
        self.vec.pop().expect("a NodeBox holds exactly one value")
    }
}

impl<T> Deref for NodeBox<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.vec[0]
    }
}

impl<T> DerefMut for NodeBox<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.vec[0]
    }
}

impl<T: fmt::Debug> fmt::Debug for NodeBox<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeBox")
            .field("home", &self.home())
            .field("value", &**self)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numa::NodeSet;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn node0() -> NodeId {
        NodeId::new(crate::numa::mems_allowed().unwrap().iter().next().unwrap())
    }

    #[test]
    #[cfg_attr(miri, ignore = "asks the kernel where pages are")]
    fn vec_pages_are_on_the_bound_node_and_policy_is_set() {
        let n = node0();
        let v = NodeVec::from_fn_on(100_000, n, |i| i as u32).unwrap();
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32));
        let loc = v.locate(Sample::All).unwrap();
        assert_eq!(loc.on_node(n), loc.pages());
        assert_eq!(loc.not_present(), 0);
        assert_eq!(
            crate::numa::policy_at(v.as_ptr() as usize).unwrap(),
            MemPolicy::bind_to(n)
        );
    }

    #[test]
    #[cfg_attr(miri, ignore = "asks the kernel where pages are")]
    fn untouched_capacity_is_not_present() {
        let v = NodeVec::<u64>::with_capacity_on(1 << 20, node0()).unwrap();
        let ps = page_size();
        let loc = locate_raw(v.as_ptr() as usize, v.capacity() * 8, Sample::All).unwrap();
        assert_eq!(loc.pages(), (8 << 20) / ps);
        assert_eq!(loc.not_present(), loc.pages());
    }

    #[test]
    fn push_grows_and_keeps_placement() {
        let n = node0();
        let mut v = NodeVec::with_capacity_on(0, n).unwrap();
        // Miri runs about a million times slower: fewer pushes still grow
        // the mapping twice.
        let count: u64 = if cfg!(miri) { 1_200 } else { 10_000 };
        for i in 0..count {
            v.try_push(i).unwrap();
        }
        assert_eq!(v.len() as u64, count);
        assert_eq!(v.iter().sum::<u64>(), count * (count - 1) / 2);
        assert_eq!(v.pop(), Some(count - 1));
        // The stand-in kernel of Miri keeps no policies.
        #[cfg(not(miri))]
        assert_eq!(
            crate::numa::policy_at(v.as_ptr() as usize).unwrap(),
            MemPolicy::bind_to(n)
        );
    }

    #[test]
    fn drops_every_element_once() {
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        struct D;
        impl Drop for D {
            fn drop(&mut self) {
                DROPS.fetch_add(1, Ordering::Relaxed);
            }
        }
        let mut v = NodeVec::from_fn_on(1000, node0(), |_| D).unwrap();
        drop(v.pop());
        drop(v);
        assert_eq!(DROPS.load(Ordering::Relaxed), 1000);
        // A panicking initialiser drops what it wrote.
        DROPS.store(0, Ordering::Relaxed);
        let r = std::panic::catch_unwind(|| {
            NodeVec::from_fn_on(100, node0(), |i| {
                assert!(i < 10, "expected: initialiser panics");
                D
            })
        });
        assert!(r.is_err());
        assert_eq!(DROPS.load(Ordering::Relaxed), 10);
    }

    #[test]
    fn zero_sized_and_empty() {
        let v = NodeVec::from_fn_on(1000, node0(), |_| ()).unwrap();
        assert_eq!(v.len(), 1000);
        assert_eq!(v.capacity(), usize::MAX);
        assert_eq!(v.locate(Sample::All).unwrap().pages(), 0);
        let mut e = NodeVec::<u8>::with_capacity_on(0, node0()).unwrap();
        assert!(e.is_empty());
        assert_eq!(e.migrate_to(node0()).unwrap().pages(), 0);
    }

    #[test]
    fn bad_placements_are_typed() {
        let err = NodeVec::<u8>::with_capacity_on(10, NodeId::new(777)).unwrap_err();
        assert!(matches!(err, NumaError::NodeNotAllowed { .. }), "{err:?}");
        let err =
            NodeVec::<u8>::with_capacity_on(10, Placement::Interleave(NodeSet::new())).unwrap_err();
        assert!(matches!(err, NumaError::EmptyNodeSet { .. }), "{err:?}");
        let err = NodeVec::<u64>::with_capacity_on(usize::MAX / 4, node0()).unwrap_err();
        assert!(matches!(err, NumaError::OutOfMemory { .. }), "{err:?}");
        let mut v = NodeVec::from_elem_on(1u8, 10, node0()).unwrap();
        let err = v.migrate_to(NodeId::new(777)).unwrap_err();
        assert!(matches!(err, NumaError::NodeNotAllowed { .. }), "{err:?}");
        assert_eq!(
            v.home(),
            Some(node0()),
            "unchanged after a refused migration"
        );
    }

    #[test]
    fn blocked_shares_and_node_of() {
        let n = node0();
        let set: NodeSet = [n.os_index()].into_iter().collect();
        let v = NodeVec::from_elem_on(0u64, 3 * page_size() / 8, Placement::Blocked(set)).unwrap();
        assert_eq!(v.node_of(0), Some(n));
        assert_eq!(v.node_of(v.len() - 1), Some(n));
        assert_eq!(v.node_of(v.len()), None);
        let two: NodeSet = [0, 1].into_iter().collect();
        let parts = Placement::Blocked(two).parts(5 * page_size());
        let spans: Vec<(usize, usize)> = parts.iter().map(|p| (p.0, p.1)).collect();
        assert_eq!(
            spans,
            [(0, 2 * page_size()), (2 * page_size(), 3 * page_size())]
        );
    }

    /// Elements larger than a page: an empty vector must grow to hold one
    /// (it grew to capacity 0 and wrote through a dangling pointer).
    #[test]
    fn push_onto_an_empty_vector_of_elements_larger_than_a_page() {
        let mut v = NodeVec::<[u8; 8192]>::with_capacity_on(0, node0()).unwrap();
        for i in 0..5u8 {
            v.try_push([i; 8192]).unwrap();
            assert!(v.capacity() >= v.len());
        }
        assert!(v
            .iter()
            .enumerate()
            .all(|(i, e)| e[..] == [i as u8; 8192][..]));
        // Not a multiple of the page either.
        let mut w = NodeVec::<[u64; 600]>::with_capacity_on(0, node0()).unwrap();
        w.try_push([7; 600]).unwrap();
        w.try_push([8; 600]).unwrap();
        assert_eq!((w[0][599], w[1][0]), (7, 8));
    }

    #[test]
    fn a_zero_sized_vector_longer_than_isize_max_has_no_spare_capacity() {
        let mut v = NodeVec::<()>::with_capacity_on(0, node0()).unwrap();
        // SAFETY: zero-sized elements need no initialisation, and the
        // capacity of a zero-sized vector is usize::MAX.
        unsafe { v.set_len(usize::MAX) };
        assert_eq!(v.spare_capacity_mut().len(), 0);
        let err = v.try_push(()).unwrap_err();
        assert!(matches!(err, NumaError::OutOfMemory { .. }), "{err:?}");
        assert_eq!(v.len(), usize::MAX);
        // SAFETY: shrinking over zero-sized elements, which need no drop.
        unsafe { v.set_len(3) };
        assert_eq!(v.spare_capacity_mut().len(), isize::MAX as usize - 3);
    }

    #[test]
    fn grow_refuses_a_capacity_that_does_not_hold_the_elements() {
        let mut v = NodeVec::from_elem_on(3u32, 10, node0()).unwrap();
        let err = v.grow(10).unwrap_err();
        assert!(err.to_string().contains("10"), "{err}");
        v.grow(5).unwrap_err();
        let mut e = NodeVec::<u8>::with_capacity_on(0, node0()).unwrap();
        e.grow(0).unwrap_err();
        assert_eq!(e.capacity(), 0);
        assert_eq!(&v[..], &[3; 10], "unchanged after a refused grow");
        v.grow(11).unwrap();
        assert!(v.capacity() >= 11);
        assert_eq!(&v[..], &[3; 10]);
    }

    #[test]
    #[cfg_attr(miri, ignore = "asks the kernel where pages are")]
    fn node_box_round_trip() {
        let mut b = NodeBox::new_on(String::from("terroir"), node0()).unwrap();
        b.push_str(" rocks");
        assert_eq!(b.locate().unwrap().majority(), Some(node0()));
        let m = b.migrate_to(node0()).unwrap();
        assert!(m.complete());
        assert_eq!(b.into_inner(), "terroir rocks");
    }
}
