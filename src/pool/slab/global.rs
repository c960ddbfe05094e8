//! [`NodeLocalAlloc`]: the slab pool as a [`GlobalAlloc`].

use super::*;

/// A [`GlobalAlloc`] serving each thread from its node's slab pool
/// ([`SlabPool::global`]): blocks up to 64 KiB from the thread's cache,
/// larger ones mapped and bound to the thread's node. It never panics and
/// never allocates through the global allocator, so it can be the process
/// allocator; a failure is a null pointer.
///
/// ```
/// use terroir::pool::{thread_node, NodeLocalAlloc, SlabPool};
///
/// #[global_allocator]
/// static ALLOC: NodeLocalAlloc = NodeLocalAlloc;
///
/// fn main() {
///     let v: Vec<u64> = (0..1000).collect(); // 8000 bytes: a slab block
///     assert_eq!(SlabPool::global().node_of(v.as_ptr().cast()), Some(thread_node()));
///     let words = std::thread::spawn(|| "on another thread".split(' ').count());
///     assert_eq!(words.join().unwrap(), 3);
/// }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeLocalAlloc;

// SAFETY: blocks are at least `layout.size()` bytes and aligned to
// `layout.align()` (class sizes are powers of two of at least both, and
// blocks are aligned to their class size; large blocks are aligned
// mappings); a block is handed out once until freed; nothing here unwinds.
unsafe impl GlobalAlloc for NodeLocalAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if let Some(class) = class_of(layout) {
            let p = SlabPool::pop_cached(class);
            if !p.is_null() {
                return p;
            }
            return POOL
                .alloc_small_slow(class)
                .map_or(ptr::null_mut(), NonNull::as_ptr);
        }
        POOL.alloc_large(thread_node_raw(), layout)
            .map_or(ptr::null_mut(), NonNull::as_ptr)
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if let Some(p) = NonNull::new(ptr) {
            // SAFETY: GlobalAlloc's contract: `ptr` came from `alloc` with
            // this layout.
            unsafe { POOL.dealloc(p, layout) };
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match POOL.alloc(layout) {
            Ok(p) => {
                if class_of(layout).is_some() {
                    // SAFETY: the block holds at least `layout.size()` bytes.
                    unsafe { ptr::write_bytes(p.as_ptr(), 0, layout.size()) };
                }
                // A large block is a fresh mapping: already zero.
                p.as_ptr()
            }
            Err(_) => ptr::null_mut(),
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
            return ptr::null_mut();
        };
        match (class_of(layout), class_of(new_layout)) {
            (Some(a), Some(b)) if a == b => return ptr,
            (None, None) => {
                let ps = page_size();
                let old = round_up(layout.size().max(1), ps);
                let new = round_up(new_size.max(1), ps);
                if let (Some(old), Some(new), Some(p)) = (old, new, NonNull::new(ptr)) {
                    // SAFETY: `p` is a large block of `old` bytes (the
                    // caller's contract); its tail pages past `new` are no
                    // longer part of the block. Under Miri it stays whole,
                    // and is copied below.
                    if new <= old && unsafe { shrink_large(p, old, new) } {
                        return ptr;
                    }
                }
            }
            _ => {}
        }
        // SAFETY: as in `alloc`, `new_layout` is a valid layout.
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks are live, distinct, and at least the
            // smaller size long; the old block is then freed as the
            // caller's contract allows.
            unsafe {
                ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        new
    }
}
