//! Issue 17's guest targets for the parallel loops: a STREAM triad over
//! blocked `NodeVec`s under `Policy::Locality` keeps its data local, and a
//! static-schedule loop places the pages of a `Vec<f64>` it first touches
//! on the nodes of the workers that touched them.
//!
//! Both run the loop on a pool of their own, on a helper thread with a
//! deadline, and print the ratios they measured (`--nocapture` shows them;
//! `tests/vm/run.sh` shows stderr on the console).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use terroir::iter::Schedule;
use terroir::numa::{current_cpu_and_node, locate, page_size, NodeId, Sample};
use terroir::pool::{NodeVec, Placement};
use terroir::prelude::*;
use terroir::{Policy, ThreadPoolBuilder};

use super::{all_nodes, guest, MIB};

/// At least this share of the bytes (triad) or pages (first touch) must be
/// local: issue 17's target.
const TARGET: f64 = 0.99;

/// Runs `f` on a helper thread and returns its result, failing the test
/// (instead of hanging the whole guest run) after `secs` seconds.
fn with_deadline<R: Send + 'static>(
    what: &str,
    secs: u64,
    f: impl FnOnce() -> R + Send + 'static,
) -> R {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .unwrap_or_else(|e| panic!("{what}: did not finish within {secs} s: {e}"))
}

/// The node the calling thread runs on, as an index (node ids are
/// `0..n` in the guest).
fn here() -> usize {
    current_cpu_and_node()
        .expect("current_cpu_and_node")
        .1
        .os_index() as usize
}

/// The node each page of `data` is on (`None`: not present), `data`
/// starting on a page boundary.
fn page_nodes<T>(data: &[T]) -> Vec<Option<NodeId>> {
    let ps = page_size();
    assert_eq!(
        data.as_ptr() as usize % ps,
        0,
        "page_nodes: expected the data to start on a page boundary"
    );
    let bytes = std::mem::size_of_val(data);
    // SAFETY: the bytes of `data`, borrowed for this function only.
    let raw = unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), bytes) };
    raw.chunks(ps)
        .map(|page| locate(page, Sample::All).expect("locate").majority())
        .collect()
}

#[test]
fn triad_over_blocked_node_vecs_under_locality_keeps_its_data_local() {
    // Under `Locality` a node's share is a hint that another node may take
    // before its node starts it; once started, the pieces it splits off
    // stay on its node. Before that rule (when those pieces were hints
    // too) this measured 0.908-0.964 in guest runs on a loaded host.
    triad_keeps_locality(Policy::Locality, TARGET);
}

#[test]
fn triad_over_blocked_node_vecs_under_strict_locality_keeps_locality_99() {
    triad_keeps_locality(Policy::StrictLocality, TARGET);
}

fn triad_keeps_locality(policy: Policy, floor: f64) {
    let Some(layout) = guest() else { return };
    let n = layout.nodes();
    let (ratio, checked, total) = with_deadline("triad over blocked NodeVecs", 240, move || {
        let pool = ThreadPoolBuilder::new()
            .policy(policy)
            .build()
            .expect("pool");
        let len = 4 * MIB / 8;
        let blocked = || Placement::Blocked(all_nodes(n));
        let mut a = NodeVec::from_elem_on(0.0f64, len, blocked()).expect("a");
        let b = NodeVec::from_fn_on(len, blocked(), |i| i as f64).expect("b");
        let c = NodeVec::from_fn_on(len, blocked(), |i| (len - i) as f64).expect("c");
        // Where the pages of `a` really are (the kernel's answer), to check
        // each element against the node of the worker that computed it.
        let nodes_of_a = page_nodes(&a);
        let placed: Vec<usize> = nodes_of_a
            .iter()
            .map(|p| p.map_or(usize::MAX, |id| id.os_index() as usize))
            .collect();
        let base = a.as_ptr() as usize;
        let s = 3.0f64;
        // One round: elements computed on the node of their page.
        let mut triad = || {
            pool.install(|| {
                a.par_iter_mut()
                    .zip(&b)
                    .zip(&c)
                    .map_init(here, |node, ((x, y), z)| {
                        *x = y + s * z;
                        let page = (x as *mut f64 as usize - base) / page_size();
                        u64::from(placed[page] == *node)
                    })
                    .sum::<u64>()
            })
        };
        // A first round apart, as STREAM discards its first iteration
        // (workers still starting up); its ratio is printed, not checked.
        pool.reset_stats();
        let warm = triad();
        let warm_stats = pool.stats();
        eprintln!(
            "triad, first round: locality ratio {:.4}, {warm} of {len} elements local",
            warm_stats.locality_ratio().unwrap_or(f64::NAN)
        );
        pool.reset_stats();
        let rounds = 4;
        let local: u64 = (0..rounds).map(|_| triad()).sum();
        let stats = pool.stats();
        eprintln!("triad, {n} nodes, 3 x {len} f64, {rounds} rounds: {stats}");
        if let Some(i) = (0..len).find(|&i| a[i] != b[i] + s * c[i]) {
            panic!("triad: expected a[{i}] = {}, got {}", b[i] + s * c[i], a[i]);
        }
        let ratio = stats
            .locality_ratio()
            .expect("a loop over NodeVecs declares its data to the pool's statistics");
        (ratio, local, (rounds * len) as u64)
    });
    let measured = checked as f64 / total as f64;
    eprintln!(
        "triad locality ({policy:?}): PoolStats::locality_ratio {ratio:.4}; elements computed on the node \
         of a's page (getcpu vs locate) {checked} of {total} = {measured:.4}"
    );
    assert!(
        ratio >= floor,
        "triad under {policy:?}: expected a locality ratio >= {floor}, got {ratio:.4}"
    );
    assert!(
        measured >= floor,
        "triad under {policy:?}: expected >= {floor} of the elements computed on the node of \
         their page, got {checked} of {total} = {measured:.4}"
    );
}

#[test]
fn static_schedule_first_touch_puts_pages_on_the_touching_worker_node() {
    let Some(layout) = guest() else { return };
    let n = layout.nodes();
    let (matched, pages, later, len) = with_deadline("static first touch", 240, move || {
        // Keep large blocks out of malloc's reused heap: fresh `mmap`ed
        // pages, placed by whoever writes them first (checked below).
        // SAFETY: mallopt only changes the allocator's threshold.
        unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024) };
        let pool = ThreadPoolBuilder::new()
            .policy(Policy::Locality)
            .build()
            .expect("Locality pool");
        let ps = page_size();
        let len = 4 * MIB / 8;
        let mut v: Vec<f64> = Vec::with_capacity(len);
        let base = v.as_ptr() as usize;
        // The whole pages inside the buffer (malloc's header shares the
        // first one).
        let first = base.div_ceil(ps) * ps;
        let pages = (base + len * 8 - first) / ps;
        // SAFETY: `first .. first + pages * ps` lies inside `v`'s
        // allocation; MADV_NOHUGEPAGE only stops the kernel from backing it
        // with 2 MiB pages (the guest has transparent huge pages always on,
        // and a huge page goes whole to the node of its first toucher).
        let rc = unsafe {
            libc::madvise(
                first as *mut libc::c_void,
                pages * ps,
                libc::MADV_NOHUGEPAGE,
            )
        };
        assert_eq!(
            rc,
            0,
            "madvise(MADV_NOHUGEPAGE): {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: inside `v`'s allocation; locate only reads page tables.
        let inner = unsafe { std::slice::from_raw_parts(first as *const u8, pages * ps) };
        let before = locate(inner, Sample::All).expect("locate before");
        // (Linux 6.1 answers -EFAULT, `other`, for anonymous pages never
        // touched; later kernels -ENOENT, `not_present`.)
        assert!(
            before.per_node().is_empty(),
            "expected none of the {pages} pages of a fresh Vec on a node before the first \
             touch, got {before:?}: the test would prove nothing"
        );
        // The nodes (bit per node) of the workers that wrote into each page.
        let writers: Vec<AtomicU32> = (0..pages).map(|_| AtomicU32::new(0)).collect();
        let page_of = |i: usize| (base + i * 8).checked_sub(first).map(|o| o / ps);
        pool.install(|| {
            (0..len)
                .into_par_iter()
                .schedule(Schedule::Static)
                .map_init(
                    || (here(), usize::MAX),
                    |(node, last), i| {
                        // Every (page, node) pair once per batch: the
                        // pages at a share's ends have two writers.
                        if let Some(p) = page_of(i).filter(|&p| p < pages && p != *last) {
                            writers[p].fetch_or(1 << *node, Ordering::Relaxed);
                            *last = p;
                        }
                        i as f64
                    },
                )
                .collect_into_vec(&mut v)
        });
        assert_eq!(
            v.as_ptr() as usize,
            base,
            "collect_into_vec reallocated the Vec"
        );
        assert!(
            v.iter().enumerate().all(|(i, &x)| x == i as f64),
            "values of v"
        );
        let nodes = page_nodes(inner);
        let matched = nodes
            .iter()
            .zip(&writers)
            .filter(|(got, w)| {
                got.is_some_and(|id| w.load(Ordering::Relaxed) & (1 << id.os_index()) != 0)
            })
            .count();
        let mut per_node = vec![0usize; n];
        for id in nodes.iter().flatten() {
            per_node[id.os_index() as usize] += 1;
        }
        eprintln!("static first touch: pages per node {per_node:?}");
        // A later static loop over the same length: each worker gets the
        // same share, so its elements are on its node.
        let later: u64 = pool.install(|| {
            v.par_iter_mut()
                .schedule(Schedule::Static)
                .map_init(here, |node, x| {
                    *x *= 2.0;
                    let at = x as *mut f64 as usize;
                    let p = at.checked_sub(first).map(|o| o / ps).filter(|&p| p < pages);
                    u64::from(p.is_some_and(|p| {
                        nodes[p].is_some_and(|id| id.os_index() as usize == *node)
                    }))
                })
                .sum()
        });
        (matched, pages, later, len)
    });
    let ratio = matched as f64 / pages as f64;
    let later_ratio = later as f64 / len as f64;
    eprintln!(
        "static first touch: {matched} of {pages} pages on the node of a worker that wrote \
         them = {ratio:.4}; a later static loop ran {later} of {len} elements on their \
         page's node = {later_ratio:.4}"
    );
    assert!(
        ratio >= TARGET,
        "static first touch: expected >= {TARGET} of the pages on their writer's node, got \
         {matched} of {pages} = {ratio:.4}"
    );
    assert!(
        later_ratio >= TARGET,
        "a later static loop: expected >= {TARGET} of the elements on their page's node, got \
         {later} of {len} = {later_ratio:.4}"
    );
}
