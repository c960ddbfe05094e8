//! The hwloc backend (the `hwloc` feature): synthetic descriptions, an XML
//! export with an asymmetric distance matrix (`tests/fixtures/hwloc-4node.xml`,
//! 4 packages × 1 node × 2 L3 × 2 cores × 2 PUs, distances 10/16/32), and
//! agreement with the sysfs fixture of the same shape.
#![cfg(feature = "hwloc")]

use std::path::Path;

mod common;
use common::distances;

use terroir::numa::{NumaError, Topology, TopologySource};

#[test]
fn synthetic_two_packages() {
    let t = Topology::from_hwloc_synthetic("pack:2 numa:1 l3:2 core:2 pu:2").unwrap();
    assert_eq!(t.source(), &TopologySource::Described);
    assert!(
        !t.is_this_machine(),
        "synthetic topologies must never be bound to"
    );
    assert_eq!(t.nodes().len(), 2);
    assert_eq!(t.l3_groups().len(), 4);
    assert_eq!(t.pus().len(), 16);
    assert_eq!(t.nodes()[0].cpus().to_string(), "0-7");
    assert_eq!(t.nodes()[1].cpus().to_string(), "8-15");
    let groups: Vec<String> = t.l3_groups().iter().map(|g| g.cpus().to_string()).collect();
    assert_eq!(groups, ["0-3", "4-7", "8-11", "12-15"]);
    assert_eq!(distances(&t), vec![vec![10, 20], vec![20, 10]]);
}

#[test]
fn synthetic_without_l3_makes_one_group_per_node() {
    let t = Topology::from_hwloc_synthetic("pack:3 numa:1 core:2 pu:1").unwrap();
    assert_eq!(t.nodes().len(), 3);
    assert_eq!(t.l3_groups().len(), 3);
    for (i, g) in t.l3_groups().iter().enumerate() {
        assert_eq!(g.node_index(), i);
    }
}

#[test]
fn xml_export_keeps_asymmetric_distances() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hwloc-4node.xml");
    let t = Topology::from_hwloc_xml(&path).unwrap();
    assert!(!t.is_this_machine());
    assert_eq!(t.nodes().len(), 4);
    assert_eq!(t.l3_groups().len(), 8);
    assert_eq!(t.pus().len(), 32);
    assert_eq!(
        distances(&t),
        vec![
            vec![10, 16, 32, 32],
            vec![16, 10, 32, 32],
            vec![32, 32, 10, 16],
            vec![32, 32, 16, 10],
        ]
    );
    // Restriction drops a whole node and keeps the others' distances.
    let keep: terroir::numa::CpuSet = (0..8).chain(16..32).collect();
    let r = t.restrict(&keep).unwrap();
    assert_eq!(r.nodes().len(), 3);
    assert_eq!(distances(&r)[1], vec![32, 10, 16]);
}

#[test]
fn bad_synthetic_description_names_it() {
    let err = Topology::from_hwloc_synthetic("pack:two").unwrap_err();
    assert!(matches!(err, NumaError::Hwloc { .. }), "{err:?}");
    assert!(err.to_string().contains("pack:two"), "{err}");
}

#[test]
fn missing_xml_file_names_it() {
    let err = Topology::from_hwloc_xml("/nonexistent/terroir.xml").unwrap_err();
    assert!(matches!(err, NumaError::Io { .. }), "{err:?}");
    assert!(
        err.to_string().contains("/nonexistent/terroir.xml"),
        "{err}"
    );
}

#[test]
fn garbled_xml_file_names_it() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/README.md");
    let err = Topology::from_hwloc_xml(&path).unwrap_err();
    assert!(matches!(err, NumaError::Hwloc { .. }), "{err:?}");
    assert!(err.to_string().contains("README.md"), "{err}");
}
