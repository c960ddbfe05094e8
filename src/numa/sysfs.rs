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
//!
//! The files are read through [`Tree`]: the file system, or (for the unit
//! tests and the `topology_sysfs` fuzz target) files held in memory.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::topology::{NodeId, Topology, TopologySource};
use super::{CpuSet, NumaError};

/// What the parser asks of a sysfs-shaped tree.
pub(crate) trait Tree {
    /// The text of a file.
    fn read(&self, path: &Path) -> io::Result<String>;
    /// The names of a directory's entries.
    fn entries(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Whether `path` is a directory.
    fn is_dir(&self, path: &Path) -> bool;
    /// Whether `path` exists.
    fn exists(&self, path: &Path) -> bool;
}

/// The file system.
pub(crate) struct Disk;

impl Tree for Disk {
    fn read(&self, path: &Path) -> io::Result<String> {
        fs::read_to_string(path)
    }

    fn entries(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)? {
            // A name that is not UTF-8 is not one the parser looks for.
            if let Ok(name) = entry?.file_name().into_string() {
                names.push(name);
            }
        }
        Ok(names)
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
}

/// Files in memory, by path (relative paths: below the root `""`);
/// directories are the paths' ancestors.
#[cfg(any(test, fuzzing))]
pub(crate) struct Memory(pub(crate) std::collections::BTreeMap<PathBuf, Vec<u8>>);

#[cfg(any(test, fuzzing))]
impl Tree for Memory {
    fn read(&self, path: &Path) -> io::Result<String> {
        match self.0.get(path) {
            Some(bytes) => String::from_utf8(bytes.clone())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
            None if self.is_dir(path) => Err(io::Error::from_raw_os_error(libc::EISDIR)),
            None => Err(io::Error::from_raw_os_error(libc::ENOENT)),
        }
    }

    fn entries(&self, dir: &Path) -> io::Result<Vec<String>> {
        if !self.is_dir(dir) {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        let mut names: Vec<String> = self
            .0
            .keys()
            .filter_map(|p| p.strip_prefix(dir).ok()?.iter().next())
            .filter_map(|n| n.to_str().map(str::to_string))
            .collect();
        names.dedup();
        Ok(names)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.0.keys().any(|p| p != path && p.starts_with(path))
    }

    fn exists(&self, path: &Path) -> bool {
        self.0.contains_key(path) || self.is_dir(path)
    }
}

fn read_text(tree: &impl Tree, path: &Path) -> Result<String, NumaError> {
    tree.read(path).map_err(|source| NumaError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn read_list(tree: &impl Tree, path: &Path) -> Result<CpuSet, NumaError> {
    let text = read_text(tree, path)?;
    CpuSet::parse_named(&text, &path.display().to_string())
}

/// Numbered entries `prefixN` of a directory, sorted by N.
fn numbered_entries(
    tree: &impl Tree,
    dir: &Path,
    prefix: &str,
) -> Result<Vec<(u32, PathBuf)>, NumaError> {
    let names = tree.entries(dir).map_err(|source| NumaError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut out = Vec::new();
    for name in names {
        let Some(rest) = name.strip_prefix(prefix) else {
            continue;
        };
        if let Ok(n) = rest.parse::<u32>() {
            out.push((n, dir.join(&name)));
        }
    }
    out.sort();
    Ok(out)
}

pub(crate) fn read(
    tree: &impl Tree,
    root: &Path,
    source: TopologySource,
) -> Result<Topology, NumaError> {
    let node_dir = root.join("devices/system/node");
    if !tree.is_dir(&node_dir) {
        return Err(NumaError::NoNumaInfo { path: node_dir });
    }
    let nodes = numbered_entries(tree, &node_dir, "node")?;
    if nodes.is_empty() {
        return Err(NumaError::NoNumaInfo { path: node_dir });
    }
    let online_path = root.join("devices/system/cpu/online");
    let online = if tree.exists(&online_path) {
        Some(read_list(tree, &online_path)?)
    } else {
        None
    };

    let count = nodes.len();
    let mut keep = Vec::new();
    let mut node_cpus = Vec::new();
    let mut rows = Vec::new();
    for (i, (id, dir)) in nodes.iter().enumerate() {
        let mut cpus = read_list(tree, &dir.join("cpulist"))?;
        if let Some(online) = &online {
            cpus = cpus.intersection(online);
        }
        let dpath = dir.join("distance");
        let text = read_text(tree, &dpath)?;
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
            if !tree.is_dir(&cache) {
                continue;
            }
            for (_, index) in numbered_entries(tree, &cache, "index")? {
                let level_path = index.join("level");
                let level = read_text(tree, &level_path)?;
                let level: u32 = level.trim().parse().map_err(|_| NumaError::Parse {
                    what: level_path.display().to_string(),
                    text: level.clone(),
                    expected: "a cache level number",
                })?;
                if level != 3 {
                    continue;
                }
                let type_path = index.join("type");
                if tree.exists(&type_path) && read_text(tree, &type_path)?.trim() == "Instruction" {
                    continue;
                }
                let shared = read_list(tree, &index.join("shared_cpu_list"))?;
                if !l3.contains(&shared) {
                    l3.push(shared);
                }
            }
        }
    }
    Topology::assemble(node_cpus, l3, distances, source)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file below `dir`, by path relative to it.
    fn load(dir: &Path, rel: &Path, into: &mut Memory) {
        for entry in fs::read_dir(dir.join(rel)).unwrap() {
            let entry = entry.unwrap();
            let rel = rel.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                load(dir, &rel, into);
            } else {
                into.0.insert(rel, fs::read(entry.path()).unwrap());
            }
        }
    }

    /// The tree in memory (what the fuzz target reads) gives what the same
    /// files on disk give, for every fixture: the same topology, or the
    /// same error naming the same file.
    #[test]
    fn files_in_memory_read_as_the_same_files_on_disk() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut seen = 0;
        for entry in fs::read_dir(&fixtures).unwrap() {
            let dir = entry.unwrap().path();
            if !dir.is_dir() {
                continue;
            }
            let mut memory = Memory(Default::default());
            load(&dir, Path::new(""), &mut memory);
            let source = TopologySource::SysfsTree(PathBuf::new());
            let from_memory = read(&memory, Path::new(""), source.clone());
            let from_disk = read(&Disk, &dir, source);
            match (from_memory, from_disk) {
                (Ok(m), Ok(d)) => assert_eq!(m, d, "{}", dir.display()),
                (Err(m), Err(d)) => assert_eq!(
                    m.to_string(),
                    d.to_string().replace(&format!("{}/", dir.display()), ""),
                    "{}",
                    dir.display()
                ),
                (m, d) => panic!("{}: {m:?} from memory, {d:?} from disk", dir.display()),
            }
            seen += 1;
        }
        assert!(seen >= 10, "{seen} fixtures");
    }

    /// Found by the topology_sysfs fuzz target: a cpulist naming CPUs up
    /// to 943,946 was read as a machine of 943,939 CPUs (half a second
    /// natively, over 5 s under the fuzzer's sanitizers, and a timeout).
    /// No kernel has that many CPUs: it is garbage, named in the error.
    #[test]
    fn a_cpulist_beyond_any_kernels_cpus_is_a_parse_error() {
        let mut tree = Memory(Default::default());
        let file = |p: &str, t: &str| (PathBuf::from(p), t.as_bytes().to_vec());
        tree.0.extend([
            file("devices/system/node/node0/cpulist", "0-7,16-943946\n"),
            file("devices/system/node/node0/distance", "10\n"),
        ]);
        let source = TopologySource::SysfsTree(PathBuf::new());
        match read(&tree, Path::new(""), source) {
            Err(NumaError::Parse { what, text, .. }) => {
                assert!(what.ends_with("node0/cpulist"), "{what}");
                assert!(text.contains("943946"), "{text}");
            }
            Err(other) => panic!("expected a parse error, got {other}"),
            Ok(topo) => panic!("expected a parse error, got {} CPUs", topo.pus().len()),
        }
    }
}
