//! Topology discovery through hwloc (the `hwloc` feature).
//!
//! hwloc gives the same three facts the sysfs backend reads: the CPUs of each
//! NUMA node, the L3 caches' CPU sets, and the node distance matrix. Nodes
//! without CPUs (memory-only nodes) are left out, as in the sysfs backend.

use hwlocality::object::types::ObjectType;
use hwlocality::topology::Topology as HwTopology;

use super::{CpuSet, NodeId, NumaError, Topology, TopologySource};

fn hwloc_err(what: &str, err: impl std::fmt::Display) -> NumaError {
    NumaError::Hwloc {
        detail: format!("{what}: {err}"),
    }
}

fn cpus_of(obj: &hwlocality::object::TopologyObject) -> CpuSet {
    obj.cpuset()
        .map(|set| {
            set.iter_set()
                .filter_map(|i| u32::try_from(usize::from(i)).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Converts a loaded hwloc topology. `synthetic` topologies (from a
/// synthetic description or an XML file) may lack a distance matrix; they
/// get 10 on the diagonal and 20 elsewhere, as hwloc's own synthetic
/// descriptions imply. A real machine with several nodes and no matrix is an
/// error.
fn convert(hw: &HwTopology, source: TopologySource) -> Result<Topology, NumaError> {
    let synthetic = source == TopologySource::Described;
    let mut node_cpus = Vec::new();
    for obj in hw.objects_with_type(ObjectType::NUMANode) {
        let Some(os) = obj.os_index() else {
            return Err(NumaError::Hwloc {
                detail: "a NUMA node without an OS index".into(),
            });
        };
        let id = u32::try_from(os).map_err(|_| NumaError::Hwloc {
            detail: format!("NUMA node OS index {os} does not fit in 32 bits"),
        })?;
        let cpus = cpus_of(obj);
        if !cpus.is_empty() {
            node_cpus.push((NodeId::new(id), cpus));
        }
    }
    if node_cpus.is_empty() {
        return Err(NumaError::Hwloc {
            detail: "hwloc reports no NUMA node with a CPU".into(),
        });
    }
    let n = node_cpus.len();
    let mut distances = vec![0u32; n * n];
    for i in 0..n {
        for j in 0..n {
            distances[i * n + j] = if i == j { 10 } else { 20 };
        }
    }
    let matrices = hw
        .distances_with_type(None, ObjectType::NUMANode)
        .map_err(|e| hwloc_err("reading the NUMA distance matrix", e))?;
    if let Some(matrix) = matrices.first() {
        let ids: Vec<Option<u32>> = matrix
            .objects()
            .map(|o| {
                o.and_then(|o| o.os_index())
                    .and_then(|i| u32::try_from(i).ok())
            })
            .collect();
        let m = ids.len();
        let values = matrix.distances();
        let index_of = |id: NodeId| ids.iter().position(|&x| x == Some(id.os_index()));
        for i in 0..n {
            for j in 0..n {
                let (Some(a), Some(b)) = (index_of(node_cpus[i].0), index_of(node_cpus[j].0))
                else {
                    return Err(NumaError::Hwloc {
                        detail: format!(
                            "the NUMA distance matrix does not cover {} and {}",
                            node_cpus[i].0, node_cpus[j].0
                        ),
                    });
                };
                let v = values[a * m + b];
                distances[i * n + j] = u32::try_from(v).map_err(|_| NumaError::Hwloc {
                    detail: format!("distance {v} does not fit in 32 bits"),
                })?;
            }
        }
    } else if n > 1 && !synthetic {
        return Err(NumaError::Hwloc {
            detail: format!("hwloc reports {n} NUMA nodes but no distance matrix"),
        });
    }
    let l3: Vec<CpuSet> = hw
        .objects_with_type(ObjectType::L3Cache)
        .map(cpus_of)
        .filter(|s| !s.is_empty())
        .collect();
    Topology::assemble(node_cpus, l3, distances, source)
}

/// This machine, through hwloc.
pub(crate) fn from_hwloc() -> Result<Topology, NumaError> {
    let hw = HwTopology::new().map_err(|e| hwloc_err("loading this machine's topology", e))?;
    convert(&hw, TopologySource::Hwloc)
}

/// A topology from an hwloc synthetic description.
pub(crate) fn from_synthetic(description: &str) -> Result<Topology, NumaError> {
    let hw = HwTopology::builder()
        .from_synthetic(description)
        .map_err(|e| hwloc_err(&format!("synthetic description {description:?}"), e))?
        .build()
        .map_err(|e| hwloc_err(&format!("building synthetic topology {description:?}"), e))?;
    convert(&hw, TopologySource::Described)
}

/// A topology from an hwloc XML export. The file is read here rather than by
/// hwloc: hwlocality 1.0.0-alpha.13 panics when `hwloc_topology_set_xml`
/// fails with an I/O errno, and a missing file must be an error, not a panic.
pub(crate) fn from_xml_file(path: &std::path::Path) -> Result<Topology, NumaError> {
    let xml = std::fs::read_to_string(path).map_err(|source| NumaError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let hw = HwTopology::builder()
        .from_xml(&xml)
        .map_err(|e| hwloc_err(&format!("XML file {}", path.display()), e))?
        .build()
        .map_err(|e| hwloc_err(&format!("building topology from {}", path.display()), e))?;
    convert(&hw, TopologySource::Described)
}
