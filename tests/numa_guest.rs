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

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use terroir::numa::{
    allowed_cpus, bind_current_thread, current_cpu_and_node, CpuSet, NodeId, Topology,
};
use terroir::ThreadPoolBuilder;

#[path = "guest/memory.rs"]
mod memory;

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
    let pool = ThreadPoolBuilder::new().build().expect("default pool");
    let n = pool.current_num_threads();
    assert_eq!(n, layout.all_cpus().count(), "one worker per PU");
    assert!(
        pool.is_pinned(),
        "a pool on the detected topology is pinned"
    );

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
