//! Multi-node NUMA tests, meant to run inside the QEMU guest that
//! `tests/vm/run.sh` boots (see `tests/vm/README.md`).
//!
//! The guest's `/init` exports `TERROIR_VM_NODES` (the node count QEMU was
//! given). Without it, as on the host under a plain `cargo test`, every test
//! returns early after printing `skipped: not in the NUMA guest`, so this
//! file always compiles and passes on the host.
//!
//! The layout each test expects (which CPUs are on which node, the distance
//! matrix) is [`expected_layout`]; it must match the `-smp`/`-numa` options
//! that `tests/vm/run.sh` gives QEMU.
//!
//! To add a test: start it with
//! `let Some(layout) = guest() else { return };` (or `guest_nodes()` when
//! only the node count matters) and assert against the layout.

use std::alloc::Layout as AllocLayout;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use terroir::numa::{
    allowed_cpus, bind_current_thread, bind_memory, current_cpu_and_node, locate, memory_policy,
    mems_allowed, migrate, page_size, set_thread_policy, thread_policy, BindFlags, CpuSet,
    MemPolicy, NodeId, NodeSet, NumaError, PageLocation, Sample, Topology,
};
use terroir::pool::{thread_node, NodeVec, Placement, SlabPool};
use terroir::{Place, Policy, ThreadPoolBuilder};

// Parallel loops (issue 17): the placed triad and static first touch.
#[path = "numa_guest/loops.rs"]
mod loops;

/// The number of NUMA nodes the guest was booted with, or `None` outside the
/// guest (then the caller should skip; see [`guest`]).
///
/// # Panics
/// If `TERROIR_VM_NODES` is set but is not a positive number.
fn guest_nodes() -> Option<usize> {
    let value = std::env::var("TERROIR_VM_NODES").ok()?;
    match value.trim().parse::<usize>() {
        Ok(n) if n > 0 => Some(n),
        _ => panic!("TERROIR_VM_NODES={value:?} is not a node count"),
    }
}

/// The guest's expected layout, or `None` (after printing why) outside the
/// guest. Every test starts with `let Some(layout) = guest() else { return };`.
fn guest() -> Option<Layout> {
    match guest_nodes() {
        Some(n) => Some(expected_layout(n)),
        None => {
            eprintln!("skipped: not in the NUMA guest");
            None
        }
    }
}

/// What QEMU was told to emulate: node `i` has OS number `i`, CPUs
/// `cpus[i]`, and `distances[i][j]` to node `j`.
#[derive(Debug)]
struct Layout {
    cpus: Vec<Vec<u32>>,
    distances: Vec<Vec<u32>>,
}

impl Layout {
    fn nodes(&self) -> usize {
        self.cpus.len()
    }

    fn all_cpus(&self) -> impl Iterator<Item = (u32, usize)> + '_ {
        self.cpus
            .iter()
            .enumerate()
            .flat_map(|(node, cpus)| cpus.iter().map(move |&cpu| (cpu, node)))
    }

    fn node_of(&self, cpu: u32) -> Option<usize> {
        self.all_cpus().find(|&(c, _)| c == cpu).map(|(_, n)| n)
    }
}

/// The layout `tests/vm/run.sh --nodes N` boots. Keep in step with the
/// `-smp`, `-numa node` and `-numa dist` options there.
fn expected_layout(nodes: usize) -> Layout {
    match nodes {
        // -smp 4,sockets=2,cores=2: node 0 = CPUs 0-1, node 1 = CPUs 2-3.
        // No `-numa dist`: QEMU builds no SLIT and Linux falls back to
        // 10 local / 20 remote.
        2 => Layout {
            cpus: vec![vec![0, 1], vec![2, 3]],
            distances: vec![vec![10, 20], vec![20, 10]],
        },
        // -smp 8,sockets=4,cores=2: node n = CPUs 2n, 2n+1. Two pairs of
        // nodes (0-1 and 2-3) at 16, 32 across the pairs.
        4 => Layout {
            cpus: vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]],
            distances: vec![
                vec![10, 16, 32, 32],
                vec![16, 10, 32, 32],
                vec![32, 32, 10, 16],
                vec![32, 32, 16, 10],
            ],
        },
        n => panic!(
            "no expected layout for {n} nodes: add one to expected_layout() \
             in tests/numa_guest.rs and to tests/vm/run.sh"
        ),
    }
}

fn cpu_set(cpus: &[u32]) -> CpuSet {
    cpus.iter().copied().collect()
}

#[test]
fn topology_matches_the_emulated_machine() {
    let Some(layout) = guest() else { return };
    let topo = Topology::detect().expect("Topology::detect in the guest");
    eprintln!("{topo}");

    assert_eq!(topo.nodes().len(), layout.nodes(), "{topo}");
    assert!(topo.is_this_machine());
    for (i, node) in topo.nodes().iter().enumerate() {
        assert_eq!(node.id(), NodeId::new(i as u32), "{topo}");
        assert_eq!(*node.cpus(), cpu_set(&layout.cpus[i]), "node {i}: {topo}");
    }
    let pus: Vec<(u32, usize)> = topo
        .pus()
        .iter()
        .map(|pu| (pu.os_index(), pu.node_index()))
        .collect();
    let mut expected: Vec<(u32, usize)> = layout.all_cpus().collect();
    let mut got = pus.clone();
    got.sort_unstable();
    expected.sort_unstable();
    assert_eq!(got, expected, "PUs (cpu, node index): {topo}");
    for group in topo.l3_groups() {
        let node = &topo.nodes()[group.node_index()];
        assert_eq!(
            group.cpus().intersection(node.cpus()),
            *group.cpus(),
            "L3 group {} crosses node {}",
            group.cpus(),
            node.id()
        );
    }

    for a in 0..layout.nodes() {
        for b in 0..layout.nodes() {
            let want = layout.distances[a][b];
            assert_eq!(topo.distance_by_index(a, b), want, "distance {a}->{b}");
            assert_eq!(
                topo.distance(NodeId::new(a as u32), NodeId::new(b as u32)),
                Some(want),
                "distance node{a}->node{b}"
            );
        }
    }
}

#[test]
fn binding_to_each_pu_puts_the_thread_on_that_cpu_and_node() {
    let Some(layout) = guest() else { return };
    assert_eq!(
        allowed_cpus().unwrap(),
        layout.all_cpus().map(|(cpu, _)| cpu).collect::<CpuSet>()
    );
    // A thread of its own, so that the test harness's threads stay unbound.
    thread::spawn(move || {
        for (cpu, node) in layout.all_cpus() {
            bind_current_thread(&cpu_set(&[cpu]))
                .unwrap_or_else(|e| panic!("binding to CPU {cpu}: {e}"));
            assert_eq!(allowed_cpus().unwrap(), cpu_set(&[cpu]));
            let (now_cpu, now_node) = current_cpu_and_node().unwrap();
            assert_eq!(
                (now_cpu, now_node),
                (cpu, NodeId::new(node as u32)),
                "bound to CPU {cpu} (node {node})"
            );
        }
    })
    .join()
    .unwrap();
}

/// What one job saw on the worker that ran it.
#[derive(Debug)]
struct Sighting {
    index: usize,
    cpu: u32,
    node: NodeId,
    allowed: CpuSet,
}

#[test]
fn pool_workers_run_pinned_on_their_pu_and_node() {
    let Some(layout) = guest() else { return };
    let default = ThreadPoolBuilder::new().build().expect("default pool");
    assert_eq!(
        default.pinning(),
        Some(terroir::Pinning::Cache),
        "a pool on the detected topology is pinned, by cache group"
    );
    // By default each worker may run on its PU's cache group, which lies
    // within its node.
    let seen = default.broadcast(|ctx| {
        (
            ctx.index(),
            allowed_cpus().unwrap(),
            current_cpu_and_node().unwrap(),
        )
    });
    for (i, allowed, (cpu, node)) in seen {
        let node_index = default.worker_node_index(i).unwrap();
        let home = &default.topology().nodes()[node_index];
        assert_eq!(
            default.worker_cpus(i).as_ref(),
            Some(&allowed),
            "worker {i} affinity"
        );
        assert!(
            allowed.iter().all(|c| home.cpus().contains(c)),
            "worker {i}: {allowed} leaves {}",
            home.id()
        );
        assert!(
            allowed.contains(cpu) && node == home.id(),
            "worker {i} ran on cpu {cpu}, {node}"
        );
    }
    drop(default);
    // Pinned to their PUs: each worker runs there and nowhere else.
    let pool = ThreadPoolBuilder::new()
        .pinning(terroir::Pinning::Pu)
        .build()
        .expect("pool pinned to PUs");
    let n = pool.current_num_threads();
    assert_eq!(n, layout.all_cpus().count(), "one worker per PU");
    assert!(pool.is_pinned());

    // Each worker's reported CPU and node: every PU once, each on its node.
    let mut cpus = Vec::new();
    for i in 0..n {
        let cpu = pool.worker_cpu(i).unwrap();
        let node_index = pool.worker_node_index(i).unwrap();
        let node = &pool.topology().nodes()[node_index];
        assert_eq!(
            layout.node_of(cpu),
            Some(node_index),
            "worker {i} (cpu {cpu})"
        );
        assert!(
            node.cpus().contains(cpu),
            "worker {i}: cpu {cpu} not on {}",
            node.id()
        );
        cpus.push(cpu);
    }
    cpus.sort_unstable();
    cpus.dedup();
    assert_eq!(cpus.len(), n, "two workers share a PU");
    assert_eq!(pool.worker_cpu(n), None);
    assert_eq!(pool.worker_node_index(n), None);

    // A broadcast: n jobs that each wait until all n have started, so every
    // worker runs exactly one (a worker waiting here cannot take another).
    let started = AtomicUsize::new(0);
    let sightings = Mutex::new(Vec::new());
    let deadline = Instant::now() + Duration::from_secs(60);
    pool.scope(|s| {
        for _ in 0..n {
            s.spawn(|_| {
                let index = terroir::current_thread_index().expect("a job runs on a worker");
                assert_eq!(pool.current_thread_index(), Some(index));
                started.fetch_add(1, Ordering::SeqCst);
                while started.load(Ordering::SeqCst) < n && Instant::now() < deadline {
                    thread::sleep(Duration::from_millis(1));
                }
                let (cpu, node) = current_cpu_and_node().unwrap();
                sightings.lock().unwrap().push(Sighting {
                    index,
                    cpu,
                    node,
                    allowed: allowed_cpus().unwrap(),
                });
            });
        }
    });
    let mut sightings = sightings.into_inner().unwrap();
    sightings.sort_by_key(|s| s.index);
    let indices: Vec<usize> = sightings.iter().map(|s| s.index).collect();
    assert_eq!(
        indices,
        (0..n).collect::<Vec<_>>(),
        "not every worker ran one of the {n} jobs within 60 s: {sightings:?}"
    );
    for s in &sightings {
        let cpu = pool.worker_cpu(s.index).unwrap();
        let node_index = pool.worker_node_index(s.index).unwrap();
        let node = pool.topology().nodes()[node_index].id();
        assert_eq!(s.allowed, cpu_set(&[cpu]), "worker {} affinity", s.index);
        assert_eq!(
            (s.cpu, s.node),
            (cpu, node),
            "worker {} ran elsewhere",
            s.index
        );
    }

    // And plain install/join reach workers pinned the same way.
    let (a, b) = pool.join(
        || (pool.current_thread_index(), current_cpu_and_node().unwrap()),
        || (pool.current_thread_index(), current_cpu_and_node().unwrap()),
    );
    for (index, (cpu, node)) in [a, b] {
        let index = index.expect("join runs on a worker");
        assert_eq!(pool.worker_cpu(index), Some(cpu));
        let node_index = pool.worker_node_index(index).unwrap();
        assert_eq!(pool.topology().nodes()[node_index].id(), node);
    }
}

// ------------------------------------------------------------------ memory
//
// Multi-node memory: where `NodeVec`s, migrations, thread policies, the slab
// pool and placed tasks really put pages and tasks on the guest's nodes.
// Sizes stay at a few MiB: the guest is emulated (TCG) and slow.

const MIB: usize = 1 << 20;

fn node(i: usize) -> NodeId {
    NodeId::new(i as u32)
}

fn all_nodes(n: usize) -> NodeSet {
    (0..n as u32).collect()
}

/// Elements of `T` per page.
fn per_page<T>() -> usize {
    page_size() / std::mem::size_of::<T>()
}

/// `what` must be `NumaError::NodeNotAllowed` naming `missing` and the
/// allowed nodes `allowed`, with `missing` in its message.
fn assert_node_not_allowed<T: std::fmt::Debug>(
    what: &str,
    got: Result<T, NumaError>,
    missing: NodeId,
    allowed: &NodeSet,
) {
    match got {
        Err(NumaError::NodeNotAllowed { node, allowed: a }) => {
            assert_eq!(
                (node, &a),
                (missing, allowed),
                "{what}: expected NodeNotAllowed {{ node: {missing}, allowed: {allowed} }}, \
                 got NodeNotAllowed {{ node: {node}, allowed: {a} }}"
            );
            let text = NumaError::NodeNotAllowed { node, allowed: a }.to_string();
            assert!(
                text.contains(&missing.to_string()),
                "{what}: expected the message to name {missing}, got {text:?}"
            );
        }
        other => panic!("{what}: expected Err(NodeNotAllowed naming {missing}), got {other:?}"),
    }
}

/// Asserts that every page of `data` is on `want`: none elsewhere, none
/// missing.
fn assert_all_on<T>(what: &str, data: &[T], want: NodeId) -> PageLocation {
    let loc = locate(data, Sample::All).unwrap_or_else(|e| panic!("{what}: locate: {e}"));
    assert!(
        loc.pages() > 0,
        "{what}: expected pages, got an empty region"
    );
    assert_eq!(
        (loc.per_node(), loc.not_present(), loc.other()),
        (&[(want, loc.pages())][..], 0, 0),
        "{what}: expected all {} pages on {want} (per node, not present, other)",
        loc.pages()
    );
    assert_eq!(loc.majority(), Some(want), "{what}: majority");
    loc
}

/// Fresh anonymous memory straight from `mmap`, untouched, unmapped on drop.
/// Unlike a `Vec`, whose allocator may hand back pages that already exist on
/// some node, its pages are placed by whoever touches them first.
///
/// It sits between two `PROT_NONE` guard pages, so that the kernel never
/// merges it with a neighbouring anonymous mapping: the guest has
/// transparent huge pages always on, and khugepaged collapses any 2 MiB
/// window inside one mapping into a huge page on the node holding most of
/// the window's pages, whatever the thread policy that placed them. A
/// window straddling this memory and an older neighbour would move some of
/// these pages to the neighbour's node.
struct Fresh {
    base: *mut u8,
    len: usize,
}

impl Fresh {
    fn new(len: usize) -> Fresh {
        let ps = page_size();
        assert_eq!(len % ps, 0, "Fresh::new({len}): expected whole pages");
        // SAFETY: a private anonymous mapping at an address of the kernel's
        // choosing; no existing memory is affected.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len + 2 * ps,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(
            base,
            libc::MAP_FAILED,
            "mmap({} bytes): expected a mapping, got {}",
            len + 2 * ps,
            std::io::Error::last_os_error()
        );
        let base = base.cast::<u8>();
        // SAFETY: `base + ps .. base + ps + len` lies inside the mapping
        // made above, which nothing else uses.
        let rc =
            unsafe { libc::mprotect(base.add(ps).cast(), len, libc::PROT_READ | libc::PROT_WRITE) };
        assert_eq!(
            rc,
            0,
            "mprotect({len} bytes read-write): expected success, got {}",
            std::io::Error::last_os_error()
        );
        Fresh { base, len }
    }

    /// Writes every byte (the first touch) and returns the memory.
    fn touch(&mut self, byte: u8) -> &[u8] {
        // SAFETY: the `len` bytes after the first guard page are our
        // read-write mapping; no other reference to them exists while
        // `self` is borrowed mutably.
        unsafe {
            let ptr = self.base.add(page_size());
            std::ptr::write_bytes(ptr, byte, self.len);
            std::slice::from_raw_parts(ptr, self.len)
        }
    }
}

impl Drop for Fresh {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping made in `new`, no longer borrowed.
        unsafe { libc::munmap(self.base.cast(), self.len + 2 * page_size()) };
    }
}

#[test]
fn node_vec_on_each_node_has_every_page_there_and_a_bind_policy() {
    let Some(layout) = guest() else { return };
    let len = 4 * MIB / 8;
    for k in 0..layout.nodes() {
        let what = format!("NodeVec of {len} u64 on node {k}");
        let v = NodeVec::from_elem_on(k as u64 + 1, len, node(k))
            .unwrap_or_else(|e| panic!("{what}: expected a vector, got {e}"));
        assert_eq!(v.home(), Some(node(k)), "{what}: home");
        let loc = assert_all_on(&what, &v, node(k));
        assert_eq!(
            (loc.pages(), loc.queried()),
            (4 * MIB / page_size(), 4 * MIB / page_size()),
            "{what}: expected a full query of 4 MiB of pages (pages, queried)"
        );
        let located = v.locate(Sample::All).unwrap();
        assert_eq!(
            (located.on_node(node(k)), located.majority()),
            (located.pages(), Some(node(k))),
            "{what}: NodeVec::locate (on node {k}, majority), per node {:?}",
            located.per_node()
        );
        assert_eq!(
            memory_policy(&v).unwrap(),
            MemPolicy::bind_to(node(k)),
            "{what}: policy of its first page"
        );
        assert_eq!(
            memory_policy(&v[len - 1..]).unwrap(),
            MemPolicy::bind_to(node(k)),
            "{what}: policy of its last page"
        );
        if let Some(i) = v.iter().position(|&x| x != k as u64 + 1) {
            panic!(
                "{what}: expected every element {}, got {} at {i}",
                k + 1,
                v[i]
            );
        }
    }
}

#[test]
fn migrate_to_moves_every_page_then_finds_them_already_there() {
    let Some(layout) = guest() else { return };
    let len = 4 * MIB / 8;
    let mut v = NodeVec::from_fn_on(len, node(0), |i| i as u64).unwrap();
    let pages = assert_all_on("before migrating", &v, node(0)).pages();

    let m = v.migrate_to(node(1)).unwrap();
    assert_eq!(
        (
            m.pages(),
            m.moved(),
            m.already_there(),
            m.failed(),
            m.still_elsewhere(),
            m.complete()
        ),
        (pages, pages, 0, &[][..], 0, true),
        "migrate_to(node 1) of {pages} pages on node 0: expected all moved \
         (pages, moved, already there, failed, still elsewhere, complete)"
    );
    assert_all_on("after migrate_to(node 1)", &v, node(1));
    assert_eq!(
        (v.placement(), v.home()),
        (&Placement::Node(node(1)), Some(node(1))),
        "placement after migrate_to(node 1)"
    );
    assert_eq!(
        memory_policy(&v).unwrap(),
        MemPolicy::bind_to(node(1)),
        "policy after migrate_to(node 1)"
    );
    if let Some(i) = v.iter().enumerate().position(|(i, &x)| x != i as u64) {
        panic!(
            "after migrating: expected element {i} to be {i}, got {}",
            v[i]
        );
    }
    let again = v.migrate_to(node(1)).unwrap();
    assert_eq!(
        (
            again.pages(),
            again.moved(),
            again.already_there(),
            again.complete()
        ),
        (pages, 0, pages, true),
        "migrating to node 1 again: expected every page already there \
         (pages, moved, already there, complete)"
    );

    // The free function on memory the library did not place (a plain
    // mapping, see `Fresh`): first gathered on node 0, wherever this thread
    // touched it, then moved to the last node. It moves the pages but
    // leaves the region's policy (the default) alone.
    let mut fresh = Fresh::new(2 * MIB);
    let plain = fresh.touch(0x5a);
    let last = node(layout.nodes() - 1);
    assert_eq!(
        memory_policy(plain).unwrap(),
        MemPolicy::Default,
        "policy of a plain mapping"
    );
    let to0 = migrate(plain, node(0)).unwrap();
    assert!(
        to0.complete() && to0.moved() + to0.already_there() == to0.pages(),
        "gathering a plain slice on node 0: expected every page moved or already there, \
         got {to0:?}"
    );
    let pages = assert_all_on("plain slice after migrate(node 0)", plain, node(0)).pages();
    let m = migrate(plain, last).unwrap();
    assert_eq!(
        (m.pages(), m.moved(), m.already_there(), m.complete()),
        (pages, pages, 0, true),
        "migrate(plain slice, {last}): expected all {pages} pages moved \
         (pages, moved, already there, complete), got {m:?}"
    );
    assert_all_on("plain slice after migrate(last node)", plain, last);
    assert_eq!(
        memory_policy(plain).unwrap(),
        MemPolicy::Default,
        "migrate must not change the policy of a plain slice"
    );
    if let Some(i) = plain.iter().position(|&b| b != 0x5a) {
        panic!(
            "plain slice after migrating: expected 0x5a at {i}, got {:#x}",
            plain[i]
        );
    }
}

/// The node each page of `data` is on, page by page (`None`: no memory).
fn node_per_page(data: &[u8]) -> Vec<Option<NodeId>> {
    data.chunks(page_size())
        .map(|page| locate(page, Sample::All).unwrap().majority())
        .collect()
}

/// A page the kernel cannot move: spliced into a pipe (`vmsplice` without
/// `SPLICE_F_GIFT`), the pipe holds a reference to it until it is read or
/// closed, and migration gives up on a page with a reference it cannot
/// account for. `move_pages` then returns the count of pages not moved and
/// leaves the statuses of that batch unwritten. Before the statuses started
/// at a sentinel, the unwritten entries read as 0, "on node 0": migrating
/// to node 0 reported the stuck page as moved. Another page is `mlock`ed:
/// locking keeps a page in memory but does not stop the kernel moving it,
/// so it must move and be reported moved.
#[test]
fn a_page_that_cannot_move_is_reported_as_failed_not_as_moved_to_node_0() {
    let Some(_layout) = guest() else { return };
    let ps = page_size();
    let pages = 16;
    let (locked, stuck) = (3, 9);
    let mut fresh = Fresh::new(pages * ps);
    let data = fresh.touch(0x33);
    let gathered = migrate(data, node(1)).unwrap();
    assert!(gathered.complete(), "gathering on node 1: {gathered:?}");
    assert_eq!(node_per_page(data), vec![Some(node(1)); pages]);

    // SAFETY: `locked`'s page is part of our mapping; mlock only pins it in
    // memory.
    let rc = unsafe { libc::mlock(data[locked * ps..].as_ptr().cast(), ps) };
    assert_eq!(rc, 0, "mlock: {}", std::io::Error::last_os_error());
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let iov = libc::iovec {
        iov_base: data[stuck * ps..].as_ptr() as *mut libc::c_void,
        iov_len: ps,
    };
    // SAFETY: the iovec describes one page of our mapping, which stays
    // mapped until after the pipe is closed; the pipe only reads it.
    let spliced = unsafe { libc::vmsplice(fds[1], &iov, 1, 0) };
    assert_eq!(
        spliced,
        ps as isize,
        "vmsplice: {}",
        std::io::Error::last_os_error()
    );

    let m = migrate(data, node(0)).unwrap();
    let now = node_per_page(data);
    eprintln!("migrate to node 0 with page {stuck} in a pipe: {m:?}, pages now on {now:?}");
    assert_eq!(
        now[stuck],
        Some(node(1)),
        "the page in the pipe did not move (else this test proves nothing)"
    );
    assert_eq!(
        (
            m.moved(),
            m.already_there(),
            m.failed(),
            m.still_elsewhere()
        ),
        (
            pages - 1,
            0,
            &[(stuck, terroir::numa::PageStatus::Busy)][..],
            0
        ),
        "migrate to node 0 of {pages} pages on node 1, page {stuck} held by a pipe: \
         expected {} moved and page {stuck} failed as busy (moved, already there, failed, \
         still elsewhere)",
        pages - 1
    );
    for (i, n) in now.iter().enumerate() {
        if i != stuck {
            assert_eq!(*n, Some(node(0)), "page {i} was reported moved");
        }
    }
    assert_eq!(now[locked], Some(node(0)), "the mlocked page moved");
    if let Some(i) = data.iter().position(|&b| b != 0x33) {
        panic!("after migrating: expected 0x33 at {i}, got {:#x}", data[i]);
    }

    // Once the pipe lets go, the page moves.
    // SAFETY: our descriptors, closed once.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
        libc::munlock(data[locked * ps..].as_ptr().cast(), ps);
    }
    let m = migrate(data, node(0)).unwrap();
    assert_eq!(
        (m.moved(), m.already_there(), m.complete()),
        (1, pages - 1, true),
        "after closing the pipe: {m:?}"
    );
    assert_eq!(node_per_page(data), vec![Some(node(0)); pages]);
}

#[test]
fn binding_to_a_nonexistent_node_is_node_not_allowed_and_changes_nothing() {
    let Some(layout) = guest() else { return };
    let n = layout.nodes();
    let missing = node(n);
    let allowed = mems_allowed().unwrap();
    assert_eq!(allowed, all_nodes(n), "mems_allowed in the guest");

    let v = NodeVec::from_elem_on(5u64, MIB / 8, node(0)).unwrap();
    let with_missing: NodeSet = [0, n as u32].into_iter().collect();
    for policy in [
        MemPolicy::bind_to(missing),
        MemPolicy::Interleave(with_missing.clone()),
        MemPolicy::Preferred(missing),
    ] {
        for flags in [BindFlags::NONE, BindFlags::MOVE, BindFlags::STRICT] {
            let what = format!("bind_memory(NodeVec on node 0, {policy}, {flags:?})");
            assert_node_not_allowed(&what, bind_memory(&v, &policy, flags), missing, &allowed);
            assert_eq!(
                memory_policy(&v).unwrap(),
                MemPolicy::bind_to(node(0)),
                "after the refused {what}: expected the policy unchanged"
            );
        }
    }
    assert_all_on("NodeVec after the refused bindings", &v, node(0));

    // A plain Vec keeps its default policy.
    let plain = vec![9u64; MIB / 8];
    let before = memory_policy(&plain).unwrap();
    assert_node_not_allowed(
        "bind_memory(plain Vec, bind to the missing node)",
        bind_memory(&plain, &MemPolicy::bind_to(missing), BindFlags::MOVE),
        missing,
        &allowed,
    );
    assert_eq!(
        memory_policy(&plain).unwrap(),
        before,
        "plain Vec after the refused binding: expected its policy unchanged"
    );
    assert_node_not_allowed(
        "migrate(plain Vec, missing node)",
        migrate(&plain, missing),
        missing,
        &allowed,
    );

    // The containers refuse the node too, and a refused migration changes
    // nothing.
    let mut w = NodeVec::from_elem_on(6u64, MIB / 8, node(n - 1)).unwrap();
    assert_node_not_allowed(
        "NodeVec::migrate_to(missing node)",
        w.migrate_to(missing),
        missing,
        &allowed,
    );
    assert_eq!(
        (w.placement(), memory_policy(&w).unwrap()),
        (
            &Placement::Node(node(n - 1)),
            MemPolicy::bind_to(node(n - 1))
        ),
        "NodeVec after a refused migrate_to: expected placement and policy unchanged"
    );
    assert_all_on("NodeVec after a refused migrate_to", &w, node(n - 1));
    assert_node_not_allowed(
        "NodeVec::with_capacity_on(missing node)",
        NodeVec::<u64>::with_capacity_on(16, missing),
        missing,
        &allowed,
    );
    assert_node_not_allowed(
        "NodeVec blocked over every node and a missing one",
        NodeVec::from_elem_on(0u64, MIB / 8, Placement::Blocked(all_nodes(n + 1))),
        missing,
        &allowed,
    );
}

#[test]
fn interleave_spreads_pages_evenly_and_blocked_puts_share_i_on_node_i() {
    let Some(layout) = guest() else { return };
    let n = layout.nodes();
    let ps = page_size();

    // Interleaved regions under 2 MiB: the guest kernel has transparent
    // huge pages always on, and a huge page is interleaved whole, but a
    // mapping under 2 MiB cannot hold one, so pages go round-robin one by
    // one and every node gets pages/n ± 1.
    for pages in [2 * MIB / ps - 1, MIB / ps + 3] {
        let what = format!("interleaved NodeVec of {pages} pages over {n} nodes");
        let v = NodeVec::from_elem_on(1u64, pages * ps / 8, Placement::Interleave(all_nodes(n)))
            .unwrap();
        assert_eq!(v.home(), None, "{what}: home");
        assert_eq!(v.node_of(0), None, "{what}: node_of(0)");
        let loc = v.locate(Sample::All).unwrap();
        assert_eq!(
            (loc.pages(), loc.not_present(), loc.other()),
            (pages, 0, 0),
            "{what}: (pages, not present, other)"
        );
        let per_node = loc.per_node();
        assert_eq!(
            per_node.iter().map(|&(_, c)| c).sum::<usize>(),
            pages,
            "{what}: pages per node {per_node:?}"
        );
        for k in 0..n {
            let got = loc.on_node(node(k));
            assert!(
                got.abs_diff(pages / n) <= 1,
                "{what}: expected {} ± 1 pages on node {k}, got {got} (per node {per_node:?})",
                pages / n
            );
        }
    }

    // Blocked: share i (whole pages; the last takes the rounding) on node
    // i, and node_of agrees with where each element's page really is.
    let bytes = 4 * MIB + 2 * ps + 8;
    let len = bytes / 8;
    let b = NodeVec::from_fn_on(len, Placement::Blocked(all_nodes(n)), |i| i as u64).unwrap();
    let pages = bytes.div_ceil(ps);
    let share = pages / n;
    let expected_node = |page: usize| (page / share).min(n - 1);
    for page in 0..pages {
        let first = page * per_page::<u64>();
        let last = (first + per_page::<u64>()).min(len) - 1;
        let want = node(expected_node(page));
        for i in [first, last] {
            assert_eq!(
                b.node_of(i),
                Some(want),
                "blocked over {n} nodes, {pages} pages: node_of({i}) on page {page}"
            );
        }
        let at = locate(&b[first..=last], Sample::All).unwrap();
        assert_eq!(
            at.per_node(),
            &[(want, 1)][..],
            "blocked over {n} nodes: expected page {page} (elements {first}..={last}) on \
             {want}, as node_of says"
        );
    }
    assert_eq!(b.node_of(len), None, "node_of(len) of the blocked vector");
    let loc = b.locate(Sample::All).unwrap();
    for k in 0..n {
        let want = if k + 1 == n {
            pages - share * (n - 1)
        } else {
            share
        };
        assert_eq!(
            loc.on_node(node(k)),
            want,
            "blocked over {n} nodes, {pages} pages: pages on node {k} (per node {:?})",
            loc.per_node()
        );
    }
}

#[test]
fn sampled_and_full_location_agree_on_the_majority() {
    let Some(layout) = guest() else { return };
    let n = layout.nodes();
    let every16 = Sample::Every(NonZeroUsize::new(16).unwrap());
    assert_eq!(Sample::default(), every16, "the default sample");
    let sixteenth = |pages: usize| pages.div_ceil(16);

    // Single-node vectors.
    for k in 0..n {
        let v = NodeVec::from_elem_on(2u64, 2 * MIB / 8, node(k)).unwrap();
        let full = v.locate(Sample::All).unwrap();
        let sampled = v.locate(every16).unwrap();
        assert_eq!(
            (full.majority(), sampled.majority()),
            (Some(node(k)), Some(node(k))),
            "NodeVec on node {k}: majority (full, every 16th page); per node {:?} and {:?}",
            full.per_node(),
            sampled.per_node()
        );
        assert_eq!(
            (sampled.pages(), sampled.queried(), sampled.on_node(node(k))),
            (
                full.pages(),
                sixteenth(full.pages()),
                sixteenth(full.pages())
            ),
            "NodeVec on node {k}, every 16th page: (pages, queried, on node {k})"
        );
    }

    // Blocked vectors skewed towards node k: the second half of every other
    // share moved to k, so k holds (n + 1) / 2n of the pages and every
    // other node 1 / 2n. For k > 0 the first pages are *not* on k, so a
    // sample that looked only at the start would get it wrong.
    let pages = 2 * MIB / page_size();
    let share = pages / n;
    for k in 0..n {
        let v = NodeVec::from_elem_on(
            3u64,
            pages * per_page::<u64>(),
            Placement::Blocked(all_nodes(n)),
        )
        .unwrap();
        for j in (0..n).filter(|&j| j != k) {
            let start = (j * share + share / 2) * per_page::<u64>();
            let end = (j + 1) * share * per_page::<u64>();
            let m = migrate(&v[start..end], node(k)).unwrap();
            assert!(
                m.complete() && m.moved() == share - share / 2,
                "moving the second half of share {j} to node {k}: expected {} pages moved, \
                 got {m:?}",
                share - share / 2
            );
        }
        let full = v.locate(Sample::All).unwrap();
        let on_k = share + (n - 1) * (share - share / 2);
        assert_eq!(
            (full.on_node(node(k)), full.majority()),
            (on_k, Some(node(k))),
            "blocked vector skewed to node {k}: (pages on node {k}, majority); per node {:?}",
            full.per_node()
        );
        let sampled = v.locate(every16).unwrap();
        assert_eq!(
            sampled.queried(),
            sixteenth(pages),
            "every 16th page of {pages}: pages queried"
        );
        assert_eq!(
            sampled.majority(),
            full.majority(),
            "blocked vector skewed to node {k}: majority of every 16th page vs of all pages; \
             per node {:?} vs {:?}",
            sampled.per_node(),
            full.per_node()
        );
    }
}

#[test]
fn a_thread_policy_bind_places_new_pages_and_reads_back() {
    let Some(layout) = guest() else { return };
    let allowed = mems_allowed().unwrap();
    let missing = node(layout.nodes());
    // On a thread of its own, pinned to node 0: without the policy its new
    // pages would land on node 0, not node 1.
    thread::spawn(move || {
        bind_current_thread(&cpu_set(&layout.cpus[0])).unwrap();
        assert_eq!(
            thread_policy().unwrap(),
            MemPolicy::Default,
            "a fresh thread's policy"
        );
        let mut local = Fresh::new(2 * MIB);
        assert_all_on(
            "memory first touched on node 0 under the default policy",
            local.touch(1),
            node(0),
        );

        set_thread_policy(&MemPolicy::bind_to(node(1))).unwrap();
        assert_eq!(
            thread_policy().unwrap(),
            MemPolicy::bind_to(node(1)),
            "the thread's policy after set_thread_policy(bind to node 1)"
        );
        let mut bound = Fresh::new(4 * MIB);
        assert_all_on(
            "memory first touched on node 0 under a thread policy bound to node 1",
            bound.touch(2),
            node(1),
        );
        assert_node_not_allowed(
            "set_thread_policy(bind to the missing node)",
            set_thread_policy(&MemPolicy::bind_to(missing)),
            missing,
            &allowed,
        );
        assert_eq!(
            thread_policy().unwrap(),
            MemPolicy::bind_to(node(1)),
            "after a refused set_thread_policy: expected the policy unchanged"
        );

        set_thread_policy(&MemPolicy::Default).unwrap();
        assert_eq!(
            thread_policy().unwrap(),
            MemPolicy::Default,
            "the thread's policy after the reset"
        );
        let mut after = Fresh::new(2 * MIB);
        assert_all_on(
            "memory first touched on node 0 after resetting the policy",
            after.touch(3),
            node(0),
        );
    })
    .join()
    .unwrap();
}

/// What a pool worker saw of its node and of slab blocks it allocated.
#[derive(Debug)]
struct SlabSighting {
    worker: usize,
    node: NodeId,
    running_on: NodeId,
    thread_node: NodeId,
    blocks: Vec<BlockSighting>,
}

/// A slab block a worker allocated, and where it is.
#[derive(Debug)]
struct BlockSighting {
    size: usize,
    /// `SlabPool::node_of`.
    home: Option<NodeId>,
    /// Pages per node after touching it.
    per_node: Vec<(NodeId, usize)>,
}

#[test]
fn pool_workers_slab_blocks_are_on_the_worker_node() {
    let Some(layout) = guest() else { return };
    let pool = ThreadPoolBuilder::new().build().expect("default pool");
    let n = pool.current_num_threads();
    assert_eq!(n, layout.all_cpus().count(), "one worker per PU");

    // The broadcast of `pool_workers_run_pinned_on_their_pu_and_node`: every
    // worker runs exactly one of n jobs.
    let started = AtomicUsize::new(0);
    let sightings = Mutex::new(Vec::new());
    let deadline = Instant::now() + Duration::from_secs(60);
    pool.scope(|s| {
        for _ in 0..n {
            s.spawn(|_| {
                started.fetch_add(1, Ordering::SeqCst);
                while started.load(Ordering::SeqCst) < n && Instant::now() < deadline {
                    thread::sleep(Duration::from_millis(1));
                }
                let worker = terroir::current_thread_index().expect("a job runs on a worker");
                let node = pool.topology().nodes()[pool.worker_node_index(worker).unwrap()].id();
                let mut blocks = Vec::new();
                for (size, align) in [(64, 8), (4096, 4096), (64 << 10, 64)] {
                    let l = AllocLayout::from_size_align(size, align).unwrap();
                    let p = SlabPool::global().alloc(l).unwrap();
                    // SAFETY: a fresh block of `size` bytes that we own.
                    let block = unsafe {
                        p.as_ptr().write_bytes(0xa5, size);
                        std::slice::from_raw_parts(p.as_ptr(), size)
                    };
                    let home = SlabPool::global().node_of(p.as_ptr());
                    let per_node = locate(block, Sample::All).unwrap().per_node().to_vec();
                    // SAFETY: allocated above with this layout, not used after.
                    unsafe { SlabPool::global().dealloc(p, l) };
                    blocks.push(BlockSighting {
                        size,
                        home,
                        per_node,
                    });
                }
                sightings.lock().unwrap().push(SlabSighting {
                    worker,
                    node,
                    running_on: current_cpu_and_node().unwrap().1,
                    thread_node: thread_node(),
                    blocks,
                });
            });
        }
    });
    let mut sightings = sightings.into_inner().unwrap();
    sightings.sort_by_key(|s| s.worker);
    assert_eq!(
        sightings.iter().map(|s| s.worker).collect::<Vec<_>>(),
        (0..n).collect::<Vec<_>>(),
        "expected every worker to run one of the {n} jobs within 60 s, got {sightings:?}"
    );
    for s in &sightings {
        assert_eq!(
            (s.running_on, s.thread_node),
            (s.node, s.node),
            "worker {} of {}: (node it runs on, thread_node())",
            s.worker,
            s.node
        );
        for BlockSighting {
            size,
            home,
            per_node,
        } in &s.blocks
        {
            let pages = size.div_ceil(page_size());
            assert_eq!(
                (*home, &per_node[..]),
                (Some(s.node), &[(s.node, pages)][..]),
                "worker {} of {}: {size}-byte slab block (node_of, pages per node after \
                 touching it)",
                s.worker,
                s.node
            );
        }
    }
}

#[test]
fn parallel_node_vec_blocked_fills_values_and_places_each_share() {
    let Some(layout) = guest() else { return };
    let n = layout.nodes();
    let pool = ThreadPoolBuilder::new().build().expect("default pool");
    let ps = page_size();
    let bytes = 4 * MIB + 2 * ps + 8;
    let len = bytes / 8;
    let pages = bytes.div_ceil(ps);
    // The worker that wrote the first element of each page.
    let writers: Vec<AtomicUsize> = (0..pages).map(|_| AtomicUsize::new(usize::MAX)).collect();
    let v = pool
        .node_vec(len, Placement::Blocked(all_nodes(n)), |i| {
            if i % per_page::<u64>() == 0 {
                let w = terroir::current_thread_index().unwrap_or(usize::MAX - 1);
                writers[i / per_page::<u64>()].store(w, Ordering::Relaxed);
            }
            (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        })
        .unwrap();
    assert_eq!(v.len(), len, "length of the parallel NodeVec");
    if let Some(i) = (0..len).find(|&i| v[i] != (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)) {
        panic!(
            "parallel NodeVec: expected element {i} = {}, got {}",
            (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            v[i]
        );
    }
    let not_by_worker: Vec<(usize, usize)> = writers
        .iter()
        .enumerate()
        .map(|(p, w)| (p, w.load(Ordering::Relaxed)))
        .filter(|&(_, w)| w >= pool.current_num_threads())
        .collect();
    assert!(
        not_by_worker.is_empty(),
        "expected every page written by a worker of the pool, got (page, writer) \
         {not_by_worker:?}"
    );

    let share = pages / n;
    let mut local = 0;
    for k in 0..n {
        let first_page = k * share;
        let end_page = if k + 1 == n {
            pages
        } else {
            first_page + share
        };
        let start = first_page * per_page::<u64>();
        let end = (end_page * per_page::<u64>()).min(len);
        assert_eq!(
            (v.node_of(start), v.node_of(end - 1)),
            (Some(node(k)), Some(node(k))),
            "node_of the first and last element of share {k} (elements {start}..{end})"
        );
        assert_all_on(
            &format!("share {k} (pages {first_page}..{end_page}) of a parallel blocked NodeVec"),
            &v[start..end],
            node(k),
        );
        local += (first_page..end_page)
            .filter(|&p| {
                let w = writers[p].load(Ordering::Relaxed);
                pool.worker_node_index(w) == Some(k)
            })
            .count();
    }
    eprintln!("{local} of {pages} pages first written by a worker of their node");
}

#[test]
fn placed_tasks_run_on_the_node_asked_for() {
    let Some(layout) = guest() else { return };
    let n = layout.nodes();
    let strict = Arc::new(
        ThreadPoolBuilder::new()
            .policy(Policy::StrictLocality)
            .build()
            .expect("StrictLocality pool"),
    );
    // Pool spawns, one at a time.
    for k in 0..n {
        let place = strict.node(k).unwrap();
        for round in 0..10 {
            let (tx, rx) = mpsc::channel();
            strict.spawn_on(&place, move || {
                tx.send(current_cpu_and_node().unwrap()).unwrap()
            });
            let (cpu, got) = rx
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|e| panic!("task {round} for node {k} did not run in 30 s: {e}"));
            assert!(
                got == node(k) && layout.cpus[k].contains(&cpu),
                "StrictLocality, spawn_on(node {k}), task {round}: expected a CPU of node {k} \
                 {:?}, ran on CPU {cpu} of {got}",
                layout.cpus[k]
            );
        }
    }
    // Scope spawns, all at once, on a helper thread so that a task that
    // never runs fails this test at its deadline instead of hanging.
    let (tx, rx) = mpsc::channel();
    let pool = Arc::clone(&strict);
    thread::spawn(move || {
        let ran = Mutex::new(Vec::new());
        pool.scope(|s| {
            for k in 0..n {
                let place = pool.node(k).unwrap();
                for _ in 0..5 {
                    let ran = &ran;
                    s.spawn_on(&place, move |_| {
                        ran.lock()
                            .unwrap()
                            .push((k, current_cpu_and_node().unwrap()))
                    });
                }
            }
        });
        let _ = tx.send(ran.into_inner().unwrap());
    });
    let ran = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the scope of strict placed tasks finished within 60 s");
    assert_eq!(
        ran.len(),
        5 * n,
        "scope tasks run: expected 5 per node, got (node asked, (cpu, node)) {ran:?}"
    );
    for (k, (cpu, got)) in ran {
        assert!(
            got == node(k) && layout.cpus[k].contains(&cpu),
            "StrictLocality, scope.spawn_on(node {k}): expected a CPU of node {k} {:?}, \
             ran on CPU {cpu} of {got}",
            layout.cpus[k]
        );
    }

    // Locality hints with a data place, one task at a time (the data's
    // node is free each time): at least 90 of 100 run there.
    let hints = ThreadPoolBuilder::new()
        .policy(Policy::Locality)
        .build()
        .expect("Locality pool");
    for k in 0..n {
        let data = NodeVec::from_elem_on(1u64, MIB / 8, node(k)).unwrap();
        let place = Place::data(&data);
        assert_eq!(
            place.node(),
            Some(node(k)),
            "Place::data of a NodeVec on node {k}"
        );
        let mut seen = Vec::new();
        for round in 0..100 {
            let (tx, rx) = mpsc::channel();
            hints.spawn_on(&place, move || {
                tx.send(current_cpu_and_node().unwrap().1).unwrap()
            });
            seen.push(
                rx.recv_timeout(Duration::from_secs(30))
                    .unwrap_or_else(|e| {
                        panic!("data-placed task {round} for node {k} did not run in 30 s: {e}")
                    }),
            );
        }
        let on_node = seen.iter().filter(|&&got| got == node(k)).count();
        assert!(
            on_node >= 90,
            "Locality, Place::data(NodeVec on node {k}): expected at least 90 of 100 tasks on \
             node {k}, got {on_node}; nodes seen: {seen:?}"
        );
    }
}
