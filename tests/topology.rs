//! Topology discovery from the sysfs-shaped fixture trees in `tests/fixtures/`
//! (see `tests/fixtures/README.md` for the machines they describe), and from
//! this machine's `/sys`.

use std::panic;
use std::path::{Path, PathBuf};

mod common;
use common::distances;

use terroir::numa::{allowed_cpus, CpuSet, NodeId, NumaError, Topology, TopologySource};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn load(name: &str) -> Topology {
    Topology::from_sysfs(fixture(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

fn cpus(list: &str) -> CpuSet {
    CpuSet::parse(list).unwrap()
}

/// `(os id, cpulist)` of each node, in order.
fn nodes(t: &Topology) -> Vec<(u32, String)> {
    t.nodes()
        .iter()
        .map(|n| (n.id().os_index(), n.cpus().to_string()))
        .collect()
}

/// `(node index, cpulist)` of each L3 group, in order.
fn groups(t: &Topology) -> Vec<(usize, String)> {
    t.l3_groups()
        .iter()
        .map(|g| (g.node_index(), g.cpus().to_string()))
        .collect()
}

/// `(os index, node index, group index)` of each PU, in order.
fn pus(t: &Topology) -> Vec<(u32, usize, usize)> {
    t.pus()
        .iter()
        .map(|p| (p.os_index(), p.node_index(), p.l3_group_index()))
        .collect()
}

/// The PU with OS number `cpu` as `(node index, group index)`.
fn pu(t: &Topology, cpu: u32) -> (usize, usize) {
    let p = t
        .pus()
        .iter()
        .find(|p| p.os_index() == cpu)
        .unwrap_or_else(|| panic!("no PU {cpu}"));
    (p.node_index(), p.l3_group_index())
}

/// The group indices each node lists.
fn node_groups(t: &Topology) -> Vec<Vec<usize>> {
    t.nodes().iter().map(|n| n.l3_groups().to_vec()).collect()
}

/// Invariants every topology must keep, whatever the machine.
fn check_consistent(t: &Topology) {
    let mut seen = CpuSet::new();
    for (gi, g) in t.l3_groups().iter().enumerate() {
        let node = &t.nodes()[g.node_index()];
        assert!(node.l3_groups().contains(&gi), "group {gi} not in its node");
        for c in g.cpus().iter() {
            assert!(node.cpus().contains(c), "CPU {c} of group {gi} not in node");
            assert!(!seen.contains(c), "CPU {c} in two groups");
            seen.insert(c);
        }
    }
    let all: CpuSet = t.nodes().iter().flat_map(|n| n.cpus().iter()).collect();
    assert_eq!(seen, all, "groups do not cover the nodes' CPUs");
    assert_eq!(t.pus().len(), all.len());
    for p in t.pus() {
        assert!(t.l3_groups()[p.l3_group_index()]
            .cpus()
            .contains(p.os_index()));
        assert_eq!(
            t.l3_groups()[p.l3_group_index()].node_index(),
            p.node_index()
        );
    }
    for (i, n) in t.nodes().iter().enumerate() {
        assert_eq!(t.node_index(n.id()), Some(i));
        assert_eq!(t.distance_by_index(i, i), 10);
    }
}

// ---------------------------------------------------------------- vm-1node-2pu

#[test]
fn vm_1node_2pu() {
    let t = load("vm-1node-2pu");
    check_consistent(&t);
    assert_eq!(nodes(&t), vec![(0, "0-1".to_string())]);
    assert_eq!(groups(&t), vec![(0, "0-1".to_string())]);
    assert_eq!(node_groups(&t), vec![vec![0]]);
    assert_eq!(pus(&t), vec![(0, 0, 0), (1, 0, 0)]);
    assert_eq!(distances(&t), vec![vec![10]]);
    assert_eq!(t.distance(NodeId::new(0), NodeId::new(0)), Some(10));
    assert_eq!(t.distance(NodeId::new(0), NodeId::new(1)), None);
    assert_eq!(
        t.source(),
        &TopologySource::SysfsTree(fixture("vm-1node-2pu"))
    );
    assert!(!t.is_this_machine());
}

#[test]
fn vm_1node_2pu_restrict() {
    let t = load("vm-1node-2pu");
    let r = t.restrict(&cpus("1")).unwrap();
    check_consistent(&r);
    assert_eq!(nodes(&r), vec![(0, "1".to_string())]);
    assert_eq!(groups(&r), vec![(0, "1".to_string())]);
    assert_eq!(pus(&r), vec![(1, 0, 0)]);
    assert_eq!(r.source(), t.source());
    // Restricting to a superset changes nothing.
    assert_eq!(t.restrict(&cpus("0-63")).unwrap(), t);
    let err = t.restrict(&cpus("2-3")).unwrap_err();
    assert!(matches!(err, NumaError::NoAllowedCpus { .. }), "{err:?}");
}

// ---------------------------------------------------------------- intel-2s-smt

#[test]
fn intel_2s_smt() {
    let t = load("intel-2s-smt");
    check_consistent(&t);
    assert_eq!(
        nodes(&t),
        vec![(0, "0-7,16-23".to_string()), (1, "8-15,24-31".to_string())]
    );
    // One L3 per socket; the SMT-pair L1/L2 caches make no groups.
    assert_eq!(
        groups(&t),
        vec![(0, "0-7,16-23".to_string()), (1, "8-15,24-31".to_string())]
    );
    assert_eq!(node_groups(&t), vec![vec![0], vec![1]]);
    assert_eq!(t.pus().len(), 32);
    let order: Vec<u32> = t.pus().iter().map(|p| p.os_index()).collect();
    let expected: Vec<u32> = (0..8).chain(16..24).chain(8..16).chain(24..32).collect();
    assert_eq!(order, expected);
    assert_eq!(pu(&t, 0), (0, 0));
    assert_eq!(pu(&t, 16), (0, 0)); // SMT sibling of CPU 0
    assert_eq!(pu(&t, 23), (0, 0));
    assert_eq!(pu(&t, 8), (1, 1));
    assert_eq!(pu(&t, 24), (1, 1)); // SMT sibling of CPU 8
    assert_eq!(pu(&t, 31), (1, 1));
    assert_eq!(t.pus()[8].os_index(), 16);
    assert_eq!(t.pus()[16].os_index(), 8);
    assert_eq!(distances(&t), vec![vec![10, 21], vec![21, 10]]);
    assert_eq!(t.distance(NodeId::new(1), NodeId::new(0)), Some(21));
    assert_eq!(t.distance(NodeId::new(0), NodeId::new(2)), None);
    assert_eq!(t.node(NodeId::new(1)).unwrap().cpus(), &cpus("8-15,24-31"));
    assert!(t.node(NodeId::new(2)).is_none());
}

#[test]
fn intel_2s_smt_restrict() {
    let t = load("intel-2s-smt");

    // One socket only: node1 and its group go, the matrix shrinks to 1×1.
    let r = t.restrict(&cpus("0-7,16-23")).unwrap();
    check_consistent(&r);
    assert_eq!(nodes(&r), vec![(0, "0-7,16-23".to_string())]);
    assert_eq!(groups(&r), vec![(0, "0-7,16-23".to_string())]);
    assert_eq!(r.pus().len(), 16);
    assert_eq!(distances(&r), vec![vec![10]]);

    // Only node1: it becomes index 0 but keeps OS id 1.
    let r = t.restrict(&cpus("9,25")).unwrap();
    check_consistent(&r);
    assert_eq!(nodes(&r), vec![(1, "9,25".to_string())]);
    assert_eq!(groups(&r), vec![(0, "9,25".to_string())]);
    assert_eq!(pus(&r), vec![(9, 0, 0), (25, 0, 0)]);
    assert_eq!(r.node_index(NodeId::new(1)), Some(0));
    assert!(r.node(NodeId::new(0)).is_none());
    assert_eq!(r.distance(NodeId::new(1), NodeId::new(1)), Some(10));
    assert_eq!(r.distance(NodeId::new(0), NodeId::new(1)), None);

    // One CPU of each socket: both nodes stay, with their distance.
    let r = t.restrict(&cpus("3,24")).unwrap();
    check_consistent(&r);
    assert_eq!(nodes(&r), vec![(0, "3".to_string()), (1, "24".to_string())]);
    assert_eq!(
        groups(&r),
        vec![(0, "3".to_string()), (1, "24".to_string())]
    );
    assert_eq!(distances(&r), vec![vec![10, 21], vec![21, 10]]);

    let err = t.restrict(&cpus("32-40")).unwrap_err();
    assert!(matches!(err, NumaError::NoAllowedCpus { .. }), "{err:?}");
}

// ---------------------------------------------------------------- epyc-8node

/// The distance matrix of `tests/fixtures/epyc-8node` (see its README).
const EPYC: [[u32; 8]; 8] = [
    [10, 12, 22, 22, 32, 32, 32, 32],
    [12, 10, 22, 22, 32, 32, 32, 32],
    [22, 22, 10, 12, 32, 32, 32, 32],
    [22, 22, 12, 10, 32, 32, 32, 32],
    [32, 32, 32, 32, 10, 12, 22, 22],
    [32, 32, 32, 32, 12, 10, 22, 22],
    [32, 32, 32, 32, 22, 22, 10, 12],
    [32, 32, 32, 32, 22, 22, 12, 10],
];

#[test]
fn epyc_8node() {
    let t = load("epyc-8node");
    check_consistent(&t);
    let expected_nodes: Vec<(u32, String)> = (0..8u32)
        .map(|k| (k, format!("{}-{}", 8 * k, 8 * k + 7)))
        .collect();
    assert_eq!(nodes(&t), expected_nodes);
    let expected_groups: Vec<(usize, String)> = (0..16u32)
        .map(|g| (g as usize / 2, format!("{}-{}", 4 * g, 4 * g + 3)))
        .collect();
    assert_eq!(groups(&t), expected_groups);
    let expected_node_groups: Vec<Vec<usize>> = (0..8).map(|k| vec![2 * k, 2 * k + 1]).collect();
    assert_eq!(node_groups(&t), expected_node_groups);
    let expected_pus: Vec<(u32, usize, usize)> = (0..64u32)
        .map(|c| (c, c as usize / 8, c as usize / 4))
        .collect();
    assert_eq!(pus(&t), expected_pus);
    assert_eq!(pu(&t, 0), (0, 0));
    assert_eq!(pu(&t, 4), (0, 1));
    assert_eq!(pu(&t, 13), (1, 3));
    assert_eq!(pu(&t, 63), (7, 15));

    let expected: Vec<Vec<u32>> = EPYC.iter().map(|row| row.to_vec()).collect();
    assert_eq!(distances(&t), expected);
    for a in 0..8u32 {
        for b in 0..8u32 {
            assert_eq!(
                t.distance(NodeId::new(a), NodeId::new(b)),
                Some(EPYC[a as usize][b as usize]),
                "distance node{a} -> node{b}"
            );
        }
    }
}

#[test]
fn epyc_8node_restrict() {
    let t = load("epyc-8node");

    // Nodes 1, 2 and 5, one of them with a whole CCX, the others with one PU.
    let r = t.restrict(&cpus("8,20-23,44")).unwrap();
    check_consistent(&r);
    assert_eq!(
        nodes(&r),
        vec![
            (1, "8".to_string()),
            (2, "20-23".to_string()),
            (5, "44".to_string())
        ]
    );
    assert_eq!(
        groups(&r),
        vec![
            (0, "8".to_string()),
            (1, "20-23".to_string()),
            (2, "44".to_string())
        ]
    );
    assert_eq!(
        pus(&r),
        vec![
            (8, 0, 0),
            (20, 1, 1),
            (21, 1, 1),
            (22, 1, 1),
            (23, 1, 1),
            (44, 2, 2)
        ]
    );
    assert_eq!(
        distances(&r),
        vec![vec![10, 22, 32], vec![22, 10, 32], vec![32, 32, 10]]
    );
    assert_eq!(r.distance(NodeId::new(5), NodeId::new(2)), Some(32));
    assert_eq!(r.distance(NodeId::new(0), NodeId::new(1)), None);
    assert!(r.node(NodeId::new(3)).is_none());

    // Both CCXs of node 6 plus one of node 7: one node's groups both stay.
    let r = t.restrict(&cpus("49,54,60-63")).unwrap();
    check_consistent(&r);
    assert_eq!(
        nodes(&r),
        vec![(6, "49,54".to_string()), (7, "60-63".to_string())]
    );
    assert_eq!(
        groups(&r),
        vec![
            (0, "49".to_string()),
            (0, "54".to_string()),
            (1, "60-63".to_string())
        ]
    );
    assert_eq!(node_groups(&r), vec![vec![0, 1], vec![2]]);
    assert_eq!(distances(&r), vec![vec![10, 12], vec![12, 10]]);

    // Sockets: every node of socket B, none of socket A.
    let r = t.restrict(&cpus("32-63")).unwrap();
    check_consistent(&r);
    let ids: Vec<u32> = r.nodes().iter().map(|n| n.id().os_index()).collect();
    assert_eq!(ids, vec![4, 5, 6, 7]);
    assert_eq!(r.l3_groups().len(), 8);
    let lower_right: Vec<Vec<u32>> = EPYC[4..].iter().map(|row| row[4..].to_vec()).collect();
    assert_eq!(distances(&r), lower_right);
}

// ---------------------------------------------------------------- sparse-nodes

#[test]
fn sparse_nodes_memory_only_and_offline() {
    let t = load("sparse-nodes");
    check_consistent(&t);
    // node1 has memory but no CPU: left out. node2 does not exist. CPU 7 is
    // offline. CPUs 4-6 have no cache directory: one group for node3.
    assert_eq!(
        nodes(&t),
        vec![(0, "0-3".to_string()), (3, "4-6".to_string())]
    );
    assert_eq!(
        groups(&t),
        vec![
            (0, "0-1".to_string()),
            (0, "2-3".to_string()),
            (1, "4-6".to_string())
        ]
    );
    assert_eq!(node_groups(&t), vec![vec![0, 1], vec![2]]);
    assert_eq!(t.pus().len(), 7);
    assert_eq!(pu(&t, 2), (0, 1));
    assert_eq!(pu(&t, 6), (1, 2));
    assert!(t.pus().iter().all(|p| p.os_index() != 7));
    // node3's distance is the third number of node0's row, not the second
    // (which belongs to the memory-only node1).
    assert_eq!(distances(&t), vec![vec![10, 20], vec![20, 10]]);
    assert_eq!(t.distance(NodeId::new(0), NodeId::new(3)), Some(20));
    assert!(t.node(NodeId::new(1)).is_none());

    let r = t.restrict(&cpus("5-7")).unwrap();
    assert_eq!(nodes(&r), vec![(3, "5-6".to_string())]);
    assert_eq!(distances(&r), vec![vec![10]]);
}

// ---------------------------------------------------------------- errors

/// Reads the fixture, failing the test if that panics or succeeds.
fn load_err(name: &str) -> NumaError {
    let root = fixture(name);
    let result = panic::catch_unwind(|| Topology::from_sysfs(&root));
    match result {
        Err(_) => panic!("fixture {name}: from_sysfs panicked"),
        Ok(Ok(t)) => panic!("fixture {name}: read without error:\n{t}"),
        Ok(Err(e)) => e,
    }
}

/// The path of a file of fixture `name`, as errors print it.
fn file(name: &str, rel: &str) -> String {
    fixture(name).join(rel).display().to_string()
}

/// Checks a [`NumaError::Parse`] names file `rel` and the bad text.
fn assert_parse_error(name: &str, rel: &str, bad: &str) {
    let err = load_err(name);
    let path = file(name, rel);
    let NumaError::Parse { what, text, .. } = &err else {
        panic!("{name}: expected a parse error, got {err:?}");
    };
    assert_eq!(what, &path);
    assert!(text.contains(bad), "{name}: text {text:?} lacks {bad:?}");
    let shown = err.to_string();
    assert!(shown.contains(&path), "{name}: {shown}");
    assert!(shown.contains(bad), "{name}: {shown}");
}

/// Checks a [`NumaError::Io`] for a missing file names it.
fn assert_missing_file_error(name: &str, rel: &str) {
    let err = load_err(name);
    let path = file(name, rel);
    let NumaError::Io { path: p, source } = &err else {
        panic!("{name}: expected an I/O error, got {err:?}");
    };
    assert_eq!(p, &fixture(name).join(rel));
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    let shown = err.to_string();
    assert!(shown.contains(&path), "{name}: {shown}");
}

#[test]
fn garbled_distance_names_file_and_text() {
    assert_parse_error(
        "garbled-distance",
        "devices/system/node/node1/distance",
        "20 1O",
    );
}

#[test]
fn short_distance_row_names_file_and_text() {
    assert_parse_error(
        "short-distance-row",
        "devices/system/node/node0/distance",
        "10",
    );
}

#[test]
fn garbled_cpulist_names_file_and_text() {
    assert_parse_error(
        "garbled-cpulist",
        "devices/system/node/node1/cpulist",
        "2-3,x7",
    );
}

#[test]
fn garbled_online_names_file_and_text() {
    assert_parse_error("garbled-online", "devices/system/cpu/online", "0-3-");
}

#[test]
fn garbled_cache_level_names_file_and_text() {
    assert_parse_error(
        "garbled-cache-level",
        "devices/system/cpu/cpu2/cache/index3/level",
        "three",
    );
}

#[test]
fn missing_distance_names_file() {
    assert_missing_file_error("missing-distance", "devices/system/node/node1/distance");
}

#[test]
fn missing_cpulist_names_file() {
    assert_missing_file_error("missing-cpulist", "devices/system/node/node0/cpulist");
}

#[test]
fn no_numa_is_no_numa_info() {
    for name in ["no-numa", "no-node-entries", "does-not-exist"] {
        let err = load_err(name);
        let NumaError::NoNumaInfo { path } = &err else {
            panic!("{name}: expected NoNumaInfo, got {err:?}");
        };
        assert_eq!(path, &fixture(name).join("devices/system/node"));
        let shown = err.to_string();
        assert!(
            shown.contains(&file(name, "devices/system/node")),
            "{name}: {shown}"
        );
    }
}

// ---------------------------------------------------------------- this machine

/// `detect()` is `/sys` restricted to the CPUs this process may run on, on
/// any machine; with the `hwloc` feature, hwloc must agree with sysfs.
#[cfg(target_os = "linux")]
#[test]
fn detect_is_sysfs_restricted_to_affinity() {
    let allowed = allowed_cpus().unwrap();
    match Topology::from_sysfs("/sys") {
        Ok(sys) => {
            let expected = sys.restrict(&allowed).unwrap();
            let t = Topology::detect().unwrap();
            check_consistent(&t);
            let source = if cfg!(feature = "hwloc") {
                TopologySource::Hwloc
            } else {
                TopologySource::Sysfs
            };
            assert_eq!(t.source(), &source);
            assert!(t.is_this_machine());
            assert_eq!(t.nodes(), expected.nodes());
            assert_eq!(t.l3_groups(), expected.l3_groups());
            assert_eq!(t.pus(), expected.pus());
            assert_eq!(distances(&t), distances(&expected));
            let pus: CpuSet = t.pus().iter().map(|p| p.os_index()).collect();
            assert_eq!(pus.intersection(&allowed), pus);
        }
        Err(NumaError::NoNumaInfo { .. }) if cfg!(feature = "hwloc") => {
            // hwloc models a machine without NUMA information as one node.
            assert_eq!(Topology::detect().unwrap().nodes().len(), 1);
        }
        Err(NumaError::NoNumaInfo { .. }) => {
            let err = Topology::detect().unwrap_err();
            assert!(matches!(err, NumaError::NoNumaInfo { .. }), "{err:?}");
        }
        Err(e) => panic!("/sys: {e}"),
    }
}

/// The development VM this crate is tested on: 1 node, 2 PUs, one L3, as
/// captured in `tests/fixtures/vm-1node-2pu`. Machine-specific by design.
#[cfg(target_os = "linux")]
#[test]
fn detect_on_this_machine_matches_vm_fixture() {
    // Only meaningful on the project's CI/dev machine kind; .ci/run sets this.
    if std::env::var("TERROIR_TEST_MACHINE").as_deref() != Ok("vm-1node-2pu") {
        eprintln!("skipped: TERROIR_TEST_MACHINE is not vm-1node-2pu");
        return;
    }
    let t = Topology::detect().unwrap_or_else(|e| panic!("detect: {e}"));
    assert_eq!(t.nodes().len(), 1, "{t}");
    assert_eq!(t.pus().len(), 2, "{t}");
    assert!(t.is_this_machine());
    let fx = load("vm-1node-2pu");
    assert_eq!(t.nodes(), fx.nodes());
    assert_eq!(t.l3_groups(), fx.l3_groups());
    assert_eq!(t.pus(), fx.pus());
    assert_eq!(distances(&t), distances(&fx));
}
