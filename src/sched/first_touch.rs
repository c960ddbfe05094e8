//! Parallel first touch: filling a [`NodeVec`] with each part written by a
//! worker of the node its pages are bound to.

use std::mem;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::numa::{MemPolicy, NodeId, NumaError};
use crate::pool::{NodeVec, Placement};

use super::ThreadPool;

/// Pointer to the vector's buffer, shared by the chunk tasks; each task
/// writes a disjoint range.
struct Buf<T>(*mut T);
impl<T> Clone for Buf<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Buf<T> {}
// SAFETY: tasks write disjoint element ranges of one buffer, and T: Send
// is required by the caller, so moving the pointer between threads is sound.
unsafe impl<T: Send> Send for Buf<T> {}
// SAFETY: as above; the pointer is only used for disjoint writes.
unsafe impl<T: Send> Sync for Buf<T> {}

/// Drops the elements `start..written` of a chunk whose initialiser
/// panicked.
struct ChunkGuard<T> {
    buf: Buf<T>,
    start: usize,
    written: usize,
}

impl<T> Drop for ChunkGuard<T> {
    fn drop(&mut self) {
        // SAFETY: elements start..written were initialised by this chunk and
        // are not owned by anything else (the vector's length is still 0).
        unsafe {
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(
                self.buf.0.add(self.start),
                self.written - self.start,
            ))
        };
    }
}

/// Elements per chunk: about 64 KiB, and at least four chunks per worker
/// when the vector is large enough.
fn chunk_len<T>(len: usize, workers: usize) -> usize {
    let size = mem::size_of::<T>().max(1);
    let by_bytes = (64 << 10) / size;
    let by_workers = len / (workers * 4).max(1);
    by_bytes.max(by_workers.min(by_bytes * 16)).max(1)
}

impl ThreadPool {
    /// A [`NodeVec`] of `len` elements placed by `placement`, element `i`
    /// being `f(i)`, filled in parallel: each part is written by a worker of
    /// the node its pages are bound to (the first touch happens where the
    /// data lives, so the writes are local). Parts of an interleaved vector,
    /// or on a node the pool has no worker for, go to any worker.
    ///
    /// ```
    /// use terroir::pool::Placement;
    /// let pool = terroir::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let node = pool.topology().nodes()[0].id();
    /// let v = pool.node_vec(1 << 20, Placement::Node(node), |i| i as u32 * 2).unwrap();
    /// assert_eq!(v[1000], 2000);
    /// assert_eq!(v.home(), Some(node));
    /// ```
    ///
    /// # Errors
    /// As [`NodeVec::with_capacity_on`].
    ///
    /// # Panics
    /// Propagates a panic of `f` after every part has finished; the
    /// elements written so far are dropped.
    pub fn node_vec<T, F>(
        &self,
        len: usize,
        placement: impl Into<Placement>,
        f: F,
    ) -> Result<NodeVec<T>, NumaError>
    where
        T: Send,
        F: Fn(usize) -> T + Sync,
    {
        let mut v = NodeVec::with_capacity_on(len, placement)?;
        if len == 0 {
            return Ok(v);
        }
        let topo = self.topology();
        let chunk = chunk_len::<T>(len, self.current_num_threads());
        let chunks = len.div_ceil(chunk);
        let node_index = |i: usize| -> Option<usize> {
            let node: NodeId = match v.placement() {
                Placement::Node(n) => *n,
                Placement::Blocked(_) => blocked_node(&v, i)?,
                Placement::Interleave(_) => return None,
            };
            topo.node_index(node)
        };
        let targets: Vec<Option<usize>> = (0..chunks).map(|c| node_index(c * chunk)).collect();
        let done: Vec<AtomicBool> = (0..chunks).map(|_| AtomicBool::new(false)).collect();
        let buf = Buf(v.as_mut_ptr());
        let f = &f;
        let done_ref = &done;
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            self.scope(|s| {
                for (c, &target) in targets.iter().enumerate() {
                    s.spawn_to(target, move |_| {
                        let buf = buf;
                        let start = c * chunk;
                        let end = (start + chunk).min(len);
                        let mut guard = ChunkGuard {
                            buf,
                            start,
                            written: start,
                        };
                        for i in start..end {
                            // SAFETY: i < len <= capacity; this chunk alone
                            // writes start..end.
                            unsafe { buf.0.add(i).write(f(i)) };
                            guard.written = i + 1;
                        }
                        mem::forget(guard);
                        done_ref[c].store(true, Ordering::Release);
                    });
                }
            })
        }));
        match result {
            Ok(()) => {
                // SAFETY: every chunk finished, so all `len` elements are
                // initialised, and len <= capacity.
                unsafe { v.set_len(len) };
                Ok(v)
            }
            Err(payload) => {
                for (c, d) in done.iter().enumerate() {
                    if d.load(Ordering::Acquire) {
                        let start = c * chunk;
                        let end = (start + chunk).min(len);
                        // SAFETY: chunk c completed, so start..end are
                        // initialised and owned by nobody else (len is 0).
                        unsafe {
                            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(
                                buf.0.add(start),
                                end - start,
                            ))
                        };
                    }
                }
                drop(v);
                panic::resume_unwind(payload)
            }
        }
    }
}

/// The node element `i` of a blocked vector (whose length is still 0) is
/// bound to, read back from the mapping's policy.
fn blocked_node<T>(v: &NodeVec<T>, i: usize) -> Option<NodeId> {
    let addr = v.as_ptr() as usize + i * mem::size_of::<T>();
    match crate::numa::policy_at(addr).ok()? {
        MemPolicy::Bind(s) => s.iter().next().map(NodeId::new),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numa::{NodeSet, Sample};
    use crate::ThreadPoolBuilder;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn chunks_are_large_and_numerous_enough() {
        assert_eq!(chunk_len::<u8>(10, 4), 64 << 10);
        assert_eq!(chunk_len::<u64>(1 << 30, 4), (64 << 10) / 8 * 16);
        assert_eq!(chunk_len::<[u8; 1 << 20]>(3, 2), 1);
    }

    #[test]
    fn fills_every_element_on_the_node() {
        let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let node = pool.topology().nodes()[0].id();
        let v = pool
            .node_vec(3_000_001, Placement::Node(node), |i| i as u64)
            .unwrap();
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
        assert_eq!(
            v.locate(Sample::All).unwrap().on_node(node),
            v.locate(Sample::All).unwrap().pages()
        );
        let set: NodeSet = [node.os_index()].into_iter().collect();
        let b = pool
            .node_vec(100_000, Placement::Blocked(set.clone()), |i| i as u8)
            .unwrap();
        assert_eq!(b[99_999], (99_999 % 256) as u8);
        let il = pool
            .node_vec(100_000, Placement::Interleave(set), |i| i as u16)
            .unwrap();
        assert_eq!(il[65_537], 1);
        let empty = pool.node_vec(0, Placement::Node(node), |i| i).unwrap();
        assert!(empty.is_empty());
    }

    #[test]
    fn a_panicking_initialiser_drops_what_was_written() {
        static LIVE: AtomicUsize = AtomicUsize::new(0);
        struct Counted;
        impl Drop for Counted {
            fn drop(&mut self) {
                LIVE.fetch_sub(1, Ordering::Relaxed);
            }
        }
        let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let node = pool.topology().nodes()[0].id();
        let r = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.node_vec(1 << 16, Placement::Node(node), |i| {
                assert!(i != 40_000, "expected: initialiser panics");
                LIVE.fetch_add(1, Ordering::Relaxed);
                Counted
            })
        }));
        assert!(r.is_err());
        assert_eq!(LIVE.load(Ordering::Relaxed), 0);
    }
}
