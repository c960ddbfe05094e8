//! The default topology backend: Linux sysfs, no system library needed.
//!
//! Files read, below the root (`/sys` on a real machine):
//! - `devices/system/node/nodeN/cpulist` and `.../distance` for each node;
//! - `devices/system/cpu/online` (when present) to drop offline CPUs;
//! - `devices/system/cpu/cpuN/cache/indexK/{level,type,shared_cpu_list}` for
//!   the L3 groups. A CPU without a `cache` directory (some VMs and
//!   architectures) simply reports no L3; its node's uncached CPUs then form
//!   one group. A `level` file that exists but cannot be parsed is an error.
//!
//! Nodes without CPUs (memory-only nodes) are left out: no worker can run
//! there. Their distances are still read to keep the rows aligned.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::topology::{NodeId, Topology, TopologySource};
use super::{CpuSet, NumaError};

fn read_text(path: &Path) -> Result<String, NumaError> {
    fs::read_to_string(path).map_err(|source| NumaError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn read_list(path: &Path) -> Result<CpuSet, NumaError> {
    let text = read_text(path)?;
    CpuSet::parse_named(&text, &path.display().to_string())
}

/// Numbered entries `prefixN` of a directory, sorted by N.
fn numbered_entries(dir: &Path, prefix: &str) -> Result<Vec<(u32, PathBuf)>, NumaError> {
    let io_err = |source: io::Error| NumaError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_err)? {
        let entry = entry.map_err(io_err)?;
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
            continue;
        };
        if let Ok(n) = rest.parse::<u32>() {
            out.push((n, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

pub(crate) fn read(root: &Path, source: TopologySource) -> Result<Topology, NumaError> {
    let node_dir = root.join("devices/system/node");
    if !node_dir.is_dir() {
        return Err(NumaError::NoNumaInfo { path: node_dir });
    }
    let nodes = numbered_entries(&node_dir, "node")?;
    if nodes.is_empty() {
        return Err(NumaError::NoNumaInfo { path: node_dir });
    }
    let online_path = root.join("devices/system/cpu/online");
    let online = if online_path.exists() {
        Some(read_list(&online_path)?)
    } else {
        None
    };

    let count = nodes.len();
    let mut keep = Vec::new();
    let mut node_cpus = Vec::new();
    let mut rows = Vec::new();
    for (i, (id, dir)) in nodes.iter().enumerate() {
        let mut cpus = read_list(&dir.join("cpulist"))?;
        if let Some(online) = &online {
            cpus = cpus.intersection(online);
        }
        let dpath = dir.join("distance");
        let text = read_text(&dpath)?;
        let row: Result<Vec<u32>, _> = text.split_whitespace().map(str::parse).collect();
        let row = match row {
            Ok(row) if row.len() == count => row,
            _ => {
                return Err(NumaError::Parse {
                    what: dpath.display().to_string(),
                    text,
                    expected: "one whole number per node",
                })
            }
        };
        rows.push(row);
        if !cpus.is_empty() {
            keep.push(i);
            node_cpus.push((NodeId::new(*id), cpus));
        }
    }
    if keep.is_empty() {
        return Err(NumaError::Inconsistent {
            detail: format!("no node under {} has a CPU", node_dir.display()),
        });
    }
    let distances = keep
        .iter()
        .flat_map(|&i| keep.iter().map(|&j| rows[i][j]).collect::<Vec<_>>())
        .collect();

    let mut l3: Vec<CpuSet> = Vec::new();
    let cpu_dir = root.join("devices/system/cpu");
    for (_, cpus) in &node_cpus {
        for cpu in cpus.iter() {
            let cache = cpu_dir.join(format!("cpu{cpu}/cache"));
            if !cache.is_dir() {
                continue;
            }
            for (_, index) in numbered_entries(&cache, "index")? {
                let level_path = index.join("level");
                let level = read_text(&level_path)?;
                let level: u32 = level.trim().parse().map_err(|_| NumaError::Parse {
                    what: level_path.display().to_string(),
                    text: level.clone(),
                    expected: "a cache level number",
                })?;
                if level != 3 {
                    continue;
                }
                let type_path = index.join("type");
                if type_path.exists() && read_text(&type_path)?.trim() == "Instruction" {
                    continue;
                }
                let shared = read_list(&index.join("shared_cpu_list"))?;
                if !l3.contains(&shared) {
                    l3.push(shared);
                }
            }
        }
    }
    Topology::assemble(node_cpus, l3, distances, source)
}
