//! [`Topology`]: NUMA nodes, their processing units, last-level (L3) cache
//! groups and the node distance matrix.

use std::fmt;
use std::path::Path;

use super::{CpuSet, NumaError};

/// A NUMA node as the operating system numbers it (the `N` of
/// `/sys/devices/system/node/nodeN`, the bit of a `mbind` node mask).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(u32);

impl NodeId {
    /// The node with OS number `os_index`. Whether such a node exists is a
    /// question for a [`Topology`]: see [`Topology::node`].
    pub const fn new(os_index: u32) -> Self {
        NodeId(os_index)
    }

    /// The OS number of the node.
    pub const fn os_index(self) -> u32 {
        self.0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node{}", self.0)
    }
}

/// Where a [`Topology`] came from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TopologySource {
    /// Read from this machine's sysfs (`/sys`).
    Sysfs,
    /// Read from hwloc on this machine (the `hwloc` feature).
    Hwloc,
    /// Read from a sysfs-shaped directory tree that is not this machine's.
    SysfsTree(std::path::PathBuf),
    /// Built by [`TopologyBuilder`] or [`Topology::single_node`] from a
    /// description.
    Described,
    /// This machine's allowed CPUs as one node, because the machine has no
    /// NUMA information a topology could be read from (some containers and
    /// VMs): what a pool built with the default topology runs on there.
    /// [`Topology::detect`] itself never falls back; it returns the error.
    SingleNodeFallback {
        /// Why: the error of the detection that failed.
        reason: String,
    },
}

impl fmt::Display for TopologySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologySource::Sysfs => f.write_str("sysfs"),
            TopologySource::Hwloc => f.write_str("hwloc"),
            TopologySource::SysfsTree(root) => write!(f, "sysfs tree {}", root.display()),
            TopologySource::Described => f.write_str("described"),
            TopologySource::SingleNodeFallback { reason } => {
                write!(f, "fallback, one node assumed: {reason}")
            }
        }
    }
}

/// One NUMA node of a [`Topology`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    id: NodeId,
    cpus: CpuSet,
    groups: Vec<usize>,
}

impl Node {
    /// The OS number of this node.
    pub fn id(&self) -> NodeId {
        self.id
    }
    /// The processing units of this node (restricted to the allowed ones).
    pub fn cpus(&self) -> &CpuSet {
        &self.cpus
    }
    /// Indices into [`Topology::l3_groups`] of the cache groups of this node.
    pub fn l3_groups(&self) -> &[usize] {
        &self.groups
    }
}

/// A set of processing units of one node that share a last-level cache.
///
/// When an L3 cache spans several nodes (sub-NUMA clustering), each node's
/// share of it is a group of its own: groups never cross nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheGroup {
    node: usize,
    cpus: CpuSet,
}

impl CacheGroup {
    /// Index into [`Topology::nodes`] of the node this group belongs to.
    pub fn node_index(&self) -> usize {
        self.node
    }
    /// The processing units of this group.
    pub fn cpus(&self) -> &CpuSet {
        &self.cpus
    }
}

/// One processing unit (hardware thread) of a [`Topology`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pu {
    os_index: u32,
    node: usize,
    group: usize,
}

impl Pu {
    /// The OS CPU number (what `sched_setaffinity` takes).
    pub fn os_index(&self) -> u32 {
        self.os_index
    }
    /// Index into [`Topology::nodes`] of this PU's node.
    pub fn node_index(&self) -> usize {
        self.node
    }
    /// Index into [`Topology::l3_groups`] of this PU's cache group.
    pub fn l3_group_index(&self) -> usize {
        self.group
    }
}

/// The shape of a machine as the scheduler sees it: NUMA nodes, the
/// processing units (PUs) of each, the L3 cache groups inside each node, and
/// the node distance matrix (ACPI SLIT numbers: 10 is local).
///
/// Nodes, groups and PUs are kept in a fixed order (nodes by OS number, the
/// groups of a node by their lowest CPU, PUs by group then CPU number), and
/// the `*_index` accessors index into those lists.
///
/// Get one from this machine with [`Topology::detect`], from a sysfs-shaped
/// directory with [`Topology::from_sysfs`], or describe one with
/// [`Topology::builder`]:
///
/// ```
/// use terroir::numa::{NodeId, Topology};
/// // Two sockets, two L3 groups each, four PUs per group.
/// let topo = Topology::builder()
///     .nodes(2)
///     .l3_per_node(2)
///     .pus_per_l3(4)
///     .remote_distance(21)
///     .build()
///     .unwrap();
/// assert_eq!(topo.pus().len(), 16);
/// assert_eq!(topo.l3_groups().len(), 4);
/// assert_eq!(topo.distance(NodeId::new(0), NodeId::new(1)), Some(21));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    nodes: Vec<Node>,
    groups: Vec<CacheGroup>,
    pus: Vec<Pu>,
    /// Row-major `nodes.len()²` matrix, indexed by node index.
    distances: Vec<u32>,
    source: TopologySource,
}

impl Topology {
    /// This machine's topology, restricted to the CPUs this process may run
    /// on (`sched_getaffinity`, which reflects cgroup cpusets and `taskset`).
    ///
    /// Reads sysfs, or hwloc when the `hwloc` feature is enabled.
    ///
    /// # Errors
    /// [`NumaError::NoNumaInfo`] when the kernel exposes no NUMA nodes (the
    /// caller may then choose [`Topology::single_node`]); [`NumaError::Parse`]
    /// or [`NumaError::Io`] naming a sysfs file that is garbled or unreadable.
    pub fn detect() -> Result<Topology, NumaError> {
        #[cfg(feature = "hwloc")]
        let topo = super::hwloc::from_hwloc()?;
        #[cfg(not(feature = "hwloc"))]
        let topo = super::sysfs::read(
            &super::sysfs::Disk,
            Path::new("/sys"),
            TopologySource::Sysfs,
        )?;
        topo.restrict(&super::sys::allowed_cpus()?)
    }

    /// Reads a sysfs-shaped tree rooted at `root` (containing
    /// `devices/system/node` and `devices/system/cpu`, as `/sys` does), without restricting
    /// it to this process's CPUs. Used for fixtures of other machines.
    ///
    /// # Errors
    /// As [`Topology::detect`], naming files below `root`.
    pub fn from_sysfs(root: impl AsRef<Path>) -> Result<Topology, NumaError> {
        let root = root.as_ref();
        super::sysfs::read(
            &super::sysfs::Disk,
            root,
            TopologySource::SysfsTree(root.to_path_buf()),
        )
    }

    /// A described topology from an hwloc synthetic description such as
    /// `"pack:2 numa:1 l3:2 core:2 pu:2"` (the `hwloc` feature). A description
    /// without a `numa` level has one NUMA node, as hwloc inserts it. Synthetic
    /// descriptions carry no distances: nodes get 10 to themselves and 20 to
    /// each other. The result is never [`Topology::is_this_machine`]: hwloc
    /// reports binding on synthetic topologies as success while doing nothing.
    ///
    /// ```
    /// # #[cfg(feature = "hwloc")] {
    /// let topo = terroir::numa::Topology::from_hwloc_synthetic("pack:2 numa:1 l3:2 core:2 pu:1").unwrap();
    /// assert_eq!(topo.nodes().len(), 2);
    /// assert_eq!(topo.l3_groups().len(), 4);
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`NumaError::Hwloc`] naming the description hwloc rejected.
    #[cfg(feature = "hwloc")]
    pub fn from_hwloc_synthetic(description: &str) -> Result<Topology, NumaError> {
        super::hwloc::from_synthetic(description)
    }

    /// A described topology from an hwloc XML export (`lstopo foo.xml`), for
    /// reproducing another machine (the `hwloc` feature). Never
    /// [`Topology::is_this_machine`].
    ///
    /// # Errors
    /// [`NumaError::Hwloc`] naming the file hwloc could not load.
    #[cfg(feature = "hwloc")]
    pub fn from_hwloc_xml(path: impl AsRef<Path>) -> Result<Topology, NumaError> {
        super::hwloc::from_xml_file(path.as_ref())
    }

    /// Every CPU this process may run on, as one node (node 0) with one
    /// cache group: for machines without NUMA information, chosen explicitly
    /// by the caller.
    ///
    /// # Errors
    /// [`NumaError::Syscall`] when `sched_getaffinity` fails.
    pub fn single_node() -> Result<Topology, NumaError> {
        let cpus = super::sys::allowed_cpus()?;
        Topology::assemble(
            vec![(NodeId(0), cpus.clone())],
            vec![cpus],
            vec![10],
            TopologySource::Described,
        )
    }

    /// [`Topology::single_node`] as this machine's topology, with
    /// [`TopologySource::SingleNodeFallback`] and `reason`: the default
    /// topology of a pool on a machine without NUMA information.
    pub(crate) fn single_node_fallback(reason: String) -> Result<Topology, NumaError> {
        let mut topo = Topology::single_node()?;
        topo.source = TopologySource::SingleNodeFallback { reason };
        Ok(topo)
    }

    /// A builder for described (synthetic) topologies.
    pub fn builder() -> TopologyBuilder {
        TopologyBuilder::default()
    }

    /// Builds and validates a topology from its parts.
    ///
    /// `l3_sets` are the CPU sets sharing an L3 cache as the OS reports them
    /// (possibly spanning nodes, possibly empty when unknown); CPUs of a node
    /// covered by none of them form one group of that node.
    pub(crate) fn assemble(
        mut node_cpus: Vec<(NodeId, CpuSet)>,
        l3_sets: Vec<CpuSet>,
        distances: Vec<u32>,
        source: TopologySource,
    ) -> Result<Topology, NumaError> {
        let n = node_cpus.len();
        if n == 0 {
            return Err(NumaError::Inconsistent {
                detail: "no NUMA node".into(),
            });
        }
        if distances.len() != n * n {
            return Err(NumaError::Inconsistent {
                detail: format!(
                    "{} distances for {n} nodes (expected {})",
                    distances.len(),
                    n * n
                ),
            });
        }
        // Sort nodes by id, permuting the distance matrix the same way.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| node_cpus[i].0);
        let distances: Vec<u32> = (0..n * n)
            .map(|k| distances[order[k / n] * n + order[k % n]])
            .collect();
        let mut slots: Vec<Option<(NodeId, CpuSet)>> = node_cpus.drain(..).map(Some).collect();
        let sorted: Vec<(NodeId, CpuSet)> = order.iter().filter_map(|&i| slots[i].take()).collect();
        for w in sorted.windows(2) {
            if w[0].0 == w[1].0 {
                return Err(NumaError::Inconsistent {
                    detail: format!("{} listed twice", w[0].0),
                });
            }
        }
        for i in 0..n {
            if distances[i * n + i] == 0 {
                return Err(NumaError::Inconsistent {
                    detail: format!("distance from {} to itself is 0", sorted[i].0),
                });
            }
        }
        let mut nodes = Vec::with_capacity(n);
        let mut groups = Vec::new();
        let mut pus = Vec::new();
        let mut seen = CpuSet::new();
        for (ni, (id, cpus)) in sorted.into_iter().enumerate() {
            if let Some(dup) = cpus.iter().find(|&c| seen.contains(c)) {
                return Err(NumaError::Inconsistent {
                    detail: format!("CPU {dup} belongs to two nodes (the second is {id})"),
                });
            }
            cpus.iter().for_each(|c| seen.insert(c));
            let mut node_groups: Vec<CpuSet> = Vec::new();
            let mut covered = CpuSet::new();
            for set in &l3_sets {
                let part = set.intersection(&cpus);
                if !part.is_empty() && !node_groups.contains(&part) {
                    part.iter().for_each(|c| covered.insert(c));
                    node_groups.push(part);
                }
            }
            let rest: CpuSet = cpus.iter().filter(|&c| !covered.contains(c)).collect();
            if !rest.is_empty() {
                node_groups.push(rest);
            }
            node_groups.sort_by_key(|g| g.iter().next());
            let mut group_ids = Vec::new();
            let mut grouped = CpuSet::new();
            for g in node_groups {
                let gi = groups.len();
                for cpu in g.iter() {
                    if grouped.contains(cpu) {
                        return Err(NumaError::Inconsistent {
                            detail: format!("CPU {cpu} is in two L3 groups of {id}"),
                        });
                    }
                    grouped.insert(cpu);
                    pus.push(Pu {
                        os_index: cpu,
                        node: ni,
                        group: gi,
                    });
                }
                group_ids.push(gi);
                groups.push(CacheGroup { node: ni, cpus: g });
            }
            nodes.push(Node {
                id,
                cpus,
                groups: group_ids,
            });
        }
        Ok(Topology {
            nodes,
            groups,
            pus,
            distances,
            source,
        })
    }

    /// This topology without the CPUs outside `allowed`; nodes and cache
    /// groups left without CPUs are dropped (with their rows of the distance
    /// matrix).
    ///
    /// # Errors
    /// [`NumaError::NoAllowedCpus`] when no CPU is left.
    pub fn restrict(&self, allowed: &CpuSet) -> Result<Topology, NumaError> {
        let mut keep = Vec::new();
        let mut node_cpus = Vec::new();
        for (i, node) in self.nodes.iter().enumerate() {
            let cpus = node.cpus.intersection(allowed);
            if !cpus.is_empty() {
                keep.push(i);
                node_cpus.push((node.id, cpus));
            }
        }
        if keep.is_empty() {
            return Err(NumaError::NoAllowedCpus {
                allowed: allowed.clone(),
            });
        }
        let n = self.nodes.len();
        let distances = keep
            .iter()
            .flat_map(|&i| keep.iter().map(move |&j| self.distances[i * n + j]))
            .collect();
        let l3 = self.groups.iter().map(|g| g.cpus.clone()).collect();
        Topology::assemble(node_cpus, l3, distances, self.source.clone())
    }

    /// The NUMA nodes, by OS number.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The node with OS number `id`, if this topology has it.
    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.node_index(id).map(|i| &self.nodes[i])
    }

    /// Index into [`Topology::nodes`] of node `id`.
    pub fn node_index(&self, id: NodeId) -> Option<usize> {
        self.nodes.binary_search_by_key(&id, |n| n.id).ok()
    }

    /// The L3 cache groups; each lies inside one node.
    pub fn l3_groups(&self) -> &[CacheGroup] {
        &self.groups
    }

    /// The processing units, grouped by node and L3 group.
    pub fn pus(&self) -> &[Pu] {
        &self.pus
    }

    /// The distance between nodes `a` and `b` (10 = local), or `None` when
    /// either is not in this topology.
    pub fn distance(&self, a: NodeId, b: NodeId) -> Option<u32> {
        Some(self.distance_by_index(self.node_index(a)?, self.node_index(b)?))
    }

    /// The distance between the nodes at indices `a` and `b` of
    /// [`Topology::nodes`].
    ///
    /// # Panics
    /// If either index is out of range.
    pub fn distance_by_index(&self, a: usize, b: usize) -> u32 {
        self.distances[a * self.nodes.len() + b]
    }

    /// Where this topology came from.
    pub fn source(&self) -> &TopologySource {
        &self.source
    }

    /// Whether this topology describes the machine the process runs on (so
    /// its CPU numbers can be used for binding): read from sysfs or hwloc,
    /// or the [single-node fallback](TopologySource::SingleNodeFallback).
    pub fn is_this_machine(&self) -> bool {
        matches!(
            self.source,
            TopologySource::Sysfs
                | TopologySource::Hwloc
                | TopologySource::SingleNodeFallback { .. }
        )
    }
}

/// Prints nodes, their L3 groups with CPUs, and the distance matrix; for
/// the [single-node fallback](TopologySource::SingleNodeFallback), the
/// reason too.
impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} node(s), {} L3 group(s), {} PU(s)",
            self.nodes.len(),
            self.groups.len(),
            self.pus.len()
        )?;
        if let TopologySource::SingleNodeFallback { .. } = &self.source {
            write!(f, " ({})", self.source)?;
        }
        writeln!(f)?;
        for node in &self.nodes {
            write!(f, "  {}: cpus {}", node.id, node.cpus)?;
            for &g in &node.groups {
                write!(f, " [L3 {}]", self.groups[g].cpus)?;
            }
            writeln!(f)?;
        }
        write!(f, "  distances:")?;
        for i in 0..self.nodes.len() {
            write!(f, "\n   ")?;
            for j in 0..self.nodes.len() {
                write!(f, " {:>3}", self.distance_by_index(i, j))?;
            }
        }
        Ok(())
    }
}

/// Builds a described topology: `nodes` × `l3_per_node` × `pus_per_l3`, with
/// CPUs numbered consecutively node by node, and either a uniform remote
/// distance or a full matrix. See [`Topology`] for an example.
#[derive(Clone, Debug)]
pub struct TopologyBuilder {
    nodes: usize,
    l3_per_node: usize,
    pus_per_l3: usize,
    remote: u32,
    matrix: Option<Vec<u32>>,
}

impl Default for TopologyBuilder {
    fn default() -> Self {
        TopologyBuilder {
            nodes: 1,
            l3_per_node: 1,
            pus_per_l3: 1,
            remote: 20,
            matrix: None,
        }
    }
}

impl TopologyBuilder {
    /// Number of NUMA nodes (default 1).
    pub fn nodes(mut self, n: usize) -> Self {
        self.nodes = n;
        self
    }
    /// L3 groups per node (default 1).
    pub fn l3_per_node(mut self, n: usize) -> Self {
        self.l3_per_node = n;
        self
    }
    /// Processing units per L3 group (default 1).
    pub fn pus_per_l3(mut self, n: usize) -> Self {
        self.pus_per_l3 = n;
        self
    }
    /// Distance between any two different nodes (default 20; local is 10).
    pub fn remote_distance(mut self, d: u32) -> Self {
        self.remote = d;
        self.matrix = None;
        self
    }
    /// The full row-major distance matrix (`nodes²` entries).
    pub fn distances(mut self, matrix: Vec<u32>) -> Self {
        self.matrix = Some(matrix);
        self
    }

    /// Validates and builds the topology.
    ///
    /// # Errors
    /// [`NumaError::Inconsistent`] naming the bad count or matrix.
    pub fn build(self) -> Result<Topology, NumaError> {
        let counts = [
            ("nodes", self.nodes),
            ("l3_per_node", self.l3_per_node),
            ("pus_per_l3", self.pus_per_l3),
        ];
        for (name, v) in counts {
            if v == 0 || v > 1 << 16 {
                return Err(NumaError::Inconsistent {
                    detail: format!("{name} = {v} (must be 1..=65536)"),
                });
            }
        }
        let n = self.nodes;
        let per_node = self.l3_per_node * self.pus_per_l3;
        if n.saturating_mul(per_node) > 1 << 20 {
            return Err(NumaError::Inconsistent {
                detail: format!("{n} nodes × {per_node} PUs is more than 2^20 PUs"),
            });
        }
        let distances = match self.matrix {
            Some(m) => m,
            None => (0..n * n)
                .map(|k| if k / n == k % n { 10 } else { self.remote })
                .collect(),
        };
        let mut node_cpus = Vec::new();
        let mut l3 = Vec::new();
        for node in 0..n {
            let base = (node * per_node) as u32;
            node_cpus.push((
                NodeId(node as u32),
                (base..base + per_node as u32).collect(),
            ));
            for g in 0..self.l3_per_node {
                let gbase = base + (g * self.pus_per_l3) as u32;
                l3.push((gbase..gbase + self.pus_per_l3 as u32).collect());
            }
        }
        Topology::assemble(node_cpus, l3, distances, TopologySource::Described)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_shapes() {
        let t = Topology::builder()
            .nodes(3)
            .l3_per_node(2)
            .pus_per_l3(2)
            .build()
            .unwrap();
        assert_eq!(t.nodes().len(), 3);
        assert_eq!(t.l3_groups().len(), 6);
        assert_eq!(t.pus().len(), 12);
        assert_eq!(t.nodes()[1].cpus().to_string(), "4-7");
        assert_eq!(t.l3_groups()[3].cpus().to_string(), "6-7");
        assert_eq!(t.pus()[5].l3_group_index(), 2);
        assert_eq!(t.distance_by_index(0, 2), 20);
        assert!(!t.is_this_machine());
    }

    #[test]
    fn builder_rejects_bad_matrix_naming_counts() {
        let err = Topology::builder()
            .nodes(2)
            .distances(vec![10, 20, 20])
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("3 distances for 2 nodes"), "{err}");
        let err = Topology::builder().pus_per_l3(0).build().unwrap_err();
        assert!(err.to_string().contains("pus_per_l3 = 0"), "{err}");
    }

    #[test]
    fn restrict_drops_empty_nodes_and_their_distances() {
        let t = Topology::builder()
            .nodes(3)
            .pus_per_l3(2)
            .distances(vec![10, 12, 30, 12, 10, 31, 30, 31, 10])
            .build()
            .unwrap();
        let r = t.restrict(&CpuSet::parse("0,4-5").unwrap()).unwrap();
        assert_eq!(r.nodes().len(), 2);
        assert_eq!(r.nodes()[1].id(), NodeId::new(2));
        assert_eq!(r.distance(NodeId::new(0), NodeId::new(2)), Some(30));
        assert_eq!(r.distance(NodeId::new(1), NodeId::new(2)), None);
        let err = t.restrict(&CpuSet::parse("99").unwrap()).unwrap_err();
        assert!(matches!(err, NumaError::NoAllowedCpus { .. }));
    }

    #[test]
    fn l3_spanning_nodes_is_split_per_node() {
        let t = Topology::assemble(
            vec![
                (NodeId(1), CpuSet::parse("2-3").unwrap()),
                (NodeId(0), CpuSet::parse("0-1").unwrap()),
            ],
            vec![CpuSet::parse("0-3").unwrap()],
            vec![10, 11, 11, 10],
            TopologySource::Described,
        )
        .unwrap();
        assert_eq!(t.nodes()[0].id(), NodeId(0));
        assert_eq!(t.l3_groups().len(), 2);
        assert_eq!(t.l3_groups()[1].cpus().to_string(), "2-3");
    }

    #[test]
    fn cpu_in_two_nodes_is_an_error() {
        let err = Topology::assemble(
            vec![
                (NodeId(0), CpuSet::parse("0-1").unwrap()),
                (NodeId(1), CpuSet::parse("1-2").unwrap()),
            ],
            vec![],
            vec![10, 20, 20, 10],
            TopologySource::Described,
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("CPU 1 belongs to two nodes"),
            "{err}"
        );
    }
}
