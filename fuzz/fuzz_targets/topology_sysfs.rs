//! The sysfs topology parser on mutated sysfs trees: it must never panic,
//! only return a `NumaError`, and a topology it returns must hold
//! together.
//!
//! An input is a tree in text: records `@PATH` on a line of their own,
//! PATH below `devices/system/` (`@node/node0/cpulist`), followed by the
//! file's contents up to the next record (`fuzz/seeds.py` writes the
//! fixtures of `tests/fixtures/` so, as the seeds).

#![no_main]

use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use terroir::numa::{CpuSet, NodeId};

fn files(data: &[u8]) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some(start) = rest.strip_prefix(b"@") {
        let line_end = start
            .iter()
            .position(|&b| b == b'\n')
            .unwrap_or(start.len());
        let path = String::from_utf8_lossy(&start[..line_end]).into_owned();
        let body = start.get(line_end + 1..).unwrap_or(&[]);
        let body_end = body
            .windows(2)
            .position(|w| w == b"\n@")
            .map_or(body.len(), |i| i + 1);
        out.push((
            PathBuf::from("devices/system").join(path),
            body[..body_end].to_vec(),
        ));
        rest = &body[body_end..];
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let topo = match terroir::numa::topology_from_files(files(data)) {
        Ok(topo) => topo,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let _ = topo.to_string();
    let nodes = topo.nodes();
    assert!(!nodes.is_empty());
    let mut all = CpuSet::new();
    for (i, node) in nodes.iter().enumerate() {
        assert_eq!(topo.node_index(node.id()), Some(i));
        assert_ne!(topo.distance_by_index(i, i), 0, "{topo}");
        assert!(!node.cpus().is_empty());
        for cpu in node.cpus().iter() {
            assert!(!all.contains(cpu), "CPU {cpu} in two nodes: {topo}");
            all.insert(cpu);
        }
        for &g in node.l3_groups() {
            let group = &topo.l3_groups()[g];
            assert_eq!(group.node_index(), i);
            assert!(group.cpus().iter().all(|c| node.cpus().contains(c)));
        }
    }
    for pu in topo.pus() {
        let node = &nodes[pu.node_index()];
        assert!(node.cpus().contains(pu.os_index()), "{topo}");
        let group = &topo.l3_groups()[pu.l3_group_index()];
        assert!(group.cpus().contains(pu.os_index()), "{topo}");
    }
    assert_eq!(topo.pus().len(), all.len());
    // Restricting to the even CPUs keeps the same kind of promises.
    let even: CpuSet = all.iter().filter(|c| c % 2 == 0).collect();
    if let Ok(r) = topo.restrict(&even) {
        assert!(r.pus().iter().all(|p| p.os_index() % 2 == 0));
        assert!(r.nodes().iter().all(|n| topo.node(n.id()).is_some()));
    }
    let _ = topo.distance(NodeId::new(0), NodeId::new(u32::MAX));
});
