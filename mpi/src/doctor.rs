//! The binding doctor: what each rank may run on and what its pool made of
//! it, gathered on rank 0 into one table, with warnings that name the
//! launch options to use.
//!
//! The classic silent failure of hybrid MPI + threads: Open MPI binds each
//! rank to one core by default (for 2 ranks or fewer; to a socket beyond),
//! so every thread of a rank shares one core. The doctor shows it.

use std::collections::BTreeMap;
use std::fmt;

use terroir::numa::{CpuSet, NodeSet};

use crate::Rank;

/// The launch lines that give each rank one NUMA node (see the README).
pub const LAUNCH_HINT: &str = "launch one rank per NUMA node: `mpirun --map-by ppr:1:numa \
                               --bind-to numa`, or Slurm `srun --cpu-bind=ldoms`";

/// What one rank reports about its binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankBinding {
    /// The rank.
    pub rank: usize,
    /// Its host (`MPI_Get_processor_name`): ranks on the same host may
    /// share CPUs, ranks on different hosts never do.
    pub host: String,
    /// The CPUs online on its host.
    pub host_cpus: usize,
    /// The CPUs it may run on (its affinity mask).
    pub cpus: CpuSet,
    /// The CPUs its pool was built over: its mask, or its share of it
    /// when ranks on its host have the same mask
    /// ([`Builder::spread`](crate::Builder::spread)).
    pub pool_cpus: CpuSet,
    /// The NUMA nodes those CPUs belong to.
    pub nodes: NodeSet,
    /// Its pool's workers.
    pub threads: usize,
    /// The NUMA nodes its pool's workers are on.
    pub pool_nodes: NodeSet,
}

impl RankBinding {
    /// This rank's binding (a local call, no communication).
    pub fn of(rank: &Rank) -> RankBinding {
        let pool = rank.pool();
        let topology = pool.topology();
        let nodes = topology
            .nodes()
            .iter()
            .filter(|n| !n.cpus().intersection(rank.cpus()).is_empty())
            .map(|n| n.id().os_index())
            .collect();
        let pool_nodes = (0..pool.current_num_threads())
            .filter_map(|w| pool.worker_node_index(w))
            .filter_map(|i| topology.nodes().get(i))
            .map(|n| n.id().os_index())
            .collect();
        RankBinding {
            rank: rank.rank(),
            host: host_name(),
            host_cpus: online_cpus(),
            cpus: rank.cpus().clone(),
            pool_cpus: rank.pool_cpus().clone(),
            nodes,
            threads: pool.current_num_threads(),
            pool_nodes,
        }
    }

    /// One line of text (fields separated by `|`), what ranks send to rank 0.
    fn encode(&self) -> String {
        format!(
            "{}|{}|{}|{}|{}|{}|{}|{}",
            self.rank,
            self.host.replace('|', "/"),
            self.host_cpus,
            self.cpus,
            self.pool_cpus,
            self.nodes,
            self.threads,
            self.pool_nodes
        )
    }

    fn decode(line: &str) -> Option<RankBinding> {
        let f: Vec<&str> = line.split('|').collect();
        let [rank, host, host_cpus, cpus, pool_cpus, nodes, threads, pool_nodes] = f[..] else {
            return None;
        };
        Some(RankBinding {
            rank: rank.parse().ok()?,
            host: host.to_owned(),
            host_cpus: host_cpus.parse().ok()?,
            cpus: parse_set(cpus)?,
            pool_cpus: parse_set(pool_cpus)?,
            nodes: parse_set(nodes)?,
            threads: threads.parse().ok()?,
            pool_nodes: parse_set(pool_nodes)?,
        })
    }
}

/// Parses a list ("0-3,8"; empty: the empty set).
fn parse_set<S: std::str::FromStr + Default>(text: &str) -> Option<S> {
    if text.is_empty() {
        Some(S::default())
    } else {
        text.parse().ok()
    }
}

/// A binding problem the doctor found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Warning {
    /// The rank's pool has fewer CPUs than threads, or than the rank's
    /// share of its host (the host's CPUs over the ranks on it): its
    /// threads share CPUs, or CPUs of the host sit idle. Typically Open
    /// MPI's default binding to one core.
    Narrow {
        /// The rank.
        rank: usize,
        /// The CPUs its pool has.
        cpus: usize,
        /// Its pool's threads.
        threads: usize,
        /// Its share of its host's CPUs.
        share: usize,
    },
    /// The pools of two ranks on the same host have CPUs in common (more
    /// ranks than CPUs, masks that overlap without being the same, or
    /// [`Builder::spread`](crate::Builder::spread) turned off): their
    /// pinned workers compete for them.
    Shared {
        /// The host.
        host: String,
        /// The two ranks.
        ranks: (usize, usize),
        /// The CPUs both pools have.
        cpus: CpuSet,
    },
    /// The rank's CPUs span several NUMA nodes: fine if its data is placed
    /// on each of them (terroir's pools and `NodeVec`s do that), but one
    /// rank per node keeps every rank's memory local without it.
    SpansNodes {
        /// The rank.
        rank: usize,
        /// Its nodes.
        nodes: NodeSet,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::Narrow {
                rank,
                cpus,
                threads,
                share,
            } => write!(
                f,
                "rank {rank} may run on {cpus} CPU(s) for {threads} thread(s) (its share of the \
                 host: {share}): its mask is too narrow (Open MPI binds each rank to one core \
                 by default for 2 ranks or fewer); {LAUNCH_HINT}, or `--bind-to none` with \
                 TERROIR_NUM_THREADS=<CPUs per rank>"
            ),
            Warning::Shared {
                host,
                ranks: (a, b),
                cpus,
            } => write!(
                f,
                "ranks {a} and {b} on {host} both have CPUs {cpus} in their pools: their pinned \
                 workers compete; give each rank CPUs of its own: {LAUNCH_HINT} (or \
                 `--map-by ppr:<ranks per node>:node:pe=<CPUs per rank> --bind-to core`)"
            ),
            Warning::SpansNodes { rank, nodes } => write!(
                f,
                "rank {rank} spans NUMA nodes {nodes}: its memory is local only where it is \
                 placed per node; {LAUNCH_HINT}"
            ),
        }
    }
}

/// The job's bindings, gathered on rank 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// One per rank, by rank.
    pub ranks: Vec<RankBinding>,
}

impl Report {
    /// Gathers every rank's [`RankBinding`] on rank 0: `Some` there, `None`
    /// on the other ranks. Collective: every rank calls it, from its MPI
    /// thread (outside [`Rank::run`]).
    pub fn gather(rank: &Rank) -> Option<Report> {
        let line = RankBinding::of(rank).encode();
        let lines = gather_text(rank, &line)?;
        let ranks = lines
            .iter()
            .map(|l| {
                RankBinding::decode(l)
                    .unwrap_or_else(|| unreachable!("a binding line of ours: {l:?}"))
            })
            .collect();
        Some(Report { ranks })
    }

    /// The problems of the bindings, rank by rank.
    pub fn warnings(&self) -> Vec<Warning> {
        let mut per_host: BTreeMap<&str, Vec<&RankBinding>> = BTreeMap::new();
        for r in &self.ranks {
            per_host.entry(&r.host).or_default().push(r);
        }
        let mut out = Vec::new();
        for r in &self.ranks {
            let on_host = per_host.get(r.host.as_str()).map_or(1, Vec::len);
            let share = (r.host_cpus / on_host).max(1);
            let cpus = r.pool_cpus.len();
            if cpus < r.threads || cpus < share {
                out.push(Warning::Narrow {
                    rank: r.rank,
                    cpus,
                    threads: r.threads,
                    share,
                });
            }
            if r.nodes.len() > 1 {
                out.push(Warning::SpansNodes {
                    rank: r.rank,
                    nodes: r.nodes.clone(),
                });
            }
        }
        for (host, ranks) in &per_host {
            for (i, a) in ranks.iter().enumerate() {
                for b in &ranks[i + 1..] {
                    let both = a.pool_cpus.intersection(&b.pool_cpus);
                    if !both.is_empty() {
                        out.push(Warning::Shared {
                            host: (*host).to_owned(),
                            ranks: (a.rank, b.rank),
                            cpus: both,
                        });
                    }
                }
            }
        }
        out
    }
}

impl fmt::Display for Report {
    /// The table, then the warnings (or "bindings: ok").
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host_w = self
            .ranks
            .iter()
            .map(|r| r.host.len())
            .max()
            .unwrap_or(0)
            .max(4);
        writeln!(
            f,
            "{:>4}  {:<host_w$}  {:>9}  {:<12}  {:<9}  {:<6}  {:>7}  pool nodes",
            "rank", "host", "host CPUs", "CPUs", "pool CPUs", "nodes", "threads"
        )?;
        for r in &self.ranks {
            writeln!(
                f,
                "{:>4}  {:<host_w$}  {:>9}  {:<12}  {:<9}  {:<6}  {:>7}  {}",
                r.rank,
                r.host,
                r.host_cpus,
                r.cpus.to_string(),
                r.pool_cpus.to_string(),
                r.nodes.to_string(),
                r.threads,
                r.pool_nodes
            )?;
        }
        let warnings = self.warnings();
        if warnings.is_empty() {
            writeln!(f, "bindings: ok")?;
        }
        for w in warnings {
            writeln!(f, "warning: {w}")?;
        }
        Ok(())
    }
}

/// Gathers one string per rank on rank 0 (by rank).
fn gather_text(rank: &Rank, text: &str) -> Option<Vec<String>> {
    let all = crate::gather::gather_bytes(rank.world(), text.as_bytes())?;
    Some(
        all.iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect(),
    )
}

/// The host's name as MPI knows it.
fn host_name() -> String {
    mpi::environment::processor_name().unwrap_or_else(|_| "?".to_owned())
}

/// The CPUs online on this host (`/sys/devices/system/cpu/online`),
/// whatever the rank's mask; the rank's own CPUs if that cannot be read.
fn online_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|t| CpuSet::parse(t.trim()).ok())
        .map(|s| s.len())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(rank: usize, host: &str, cpus: &str, nodes: &str, threads: usize) -> RankBinding {
        RankBinding {
            rank,
            host: host.to_owned(),
            host_cpus: 8,
            cpus: cpus.parse().unwrap(),
            pool_cpus: cpus.parse().unwrap(),
            nodes: nodes.parse().unwrap(),
            threads,
            pool_nodes: nodes.parse().unwrap(),
        }
    }

    #[test]
    fn one_rank_per_node_is_ok() {
        let report = Report {
            ranks: vec![
                binding(0, "a", "0-3", "0", 4),
                binding(1, "a", "4-7", "1", 4),
            ],
        };
        assert_eq!(report.warnings(), vec![]);
        assert!(report.to_string().contains("bindings: ok"));
    }

    #[test]
    fn one_core_per_rank_with_threads_is_narrow() {
        // Open MPI's default: bound to one core, a pool of 4 (TERROIR_NUM_THREADS).
        let report = Report {
            ranks: vec![binding(0, "a", "0", "0", 4), binding(1, "a", "1", "0", 4)],
        };
        let w = report.warnings();
        assert_eq!(
            w[0],
            Warning::Narrow {
                rank: 0,
                cpus: 1,
                threads: 4,
                share: 4
            }
        );
        assert_eq!(w.len(), 2);
        let text = report.to_string();
        assert!(
            text.contains("--map-by ppr:1:numa --bind-to numa"),
            "{text}"
        );
        assert!(text.contains("--cpu-bind=ldoms"), "{text}");
    }

    #[test]
    fn one_core_per_rank_is_narrow_even_with_one_thread() {
        // Bound to a core, the pool sized by the mask (1 thread): 3 CPUs
        // of the rank's share of the host idle.
        let report = Report {
            ranks: vec![binding(0, "a", "0", "0", 1), binding(1, "a", "1", "0", 1)],
        };
        assert!(matches!(
            report.warnings()[..],
            [
                Warning::Narrow { share: 4, .. },
                Warning::Narrow { share: 4, .. }
            ]
        ));
    }

    #[test]
    fn shared_cpus_only_on_the_same_host() {
        let same = Report {
            ranks: vec![
                binding(0, "a", "0-7", "0", 8),
                binding(1, "a", "0-7", "0", 8),
            ],
        };
        let w = same.warnings();
        assert!(w.contains(&Warning::Shared {
            host: "a".into(),
            ranks: (0, 1),
            cpus: "0-7".parse().unwrap()
        }));
        let apart = Report {
            ranks: vec![
                binding(0, "a", "0-7", "0", 8),
                binding(1, "b", "0-7", "0", 8),
            ],
        };
        assert_eq!(apart.warnings(), vec![]);
    }

    #[test]
    fn ranks_that_split_a_shared_mask_do_not_compete() {
        // `--bind-to none`: both masks 0-7; spread, each pool has its half.
        let mut a = binding(0, "a", "0-7", "0", 4);
        let mut b = binding(1, "a", "0-7", "0", 4);
        a.pool_cpus = "0-3".parse().unwrap();
        b.pool_cpus = "4-7".parse().unwrap();
        let report = Report {
            ranks: vec![a.clone(), b.clone()],
        };
        assert_eq!(report.warnings(), vec![]);
        assert!(report.to_string().contains("0-3"), "{report}");
        // Three ranks on 2 CPUs: ranks 0 and 2 get CPU 0.
        let one = |rank, cpu: &str| {
            let mut r = binding(rank, "a", "0-1", "0", 1);
            r.host_cpus = 2;
            r.pool_cpus = cpu.parse().unwrap();
            r
        };
        let report = Report {
            ranks: vec![one(0, "0"), one(1, "1"), one(2, "0")],
        };
        assert_eq!(
            report.warnings(),
            vec![Warning::Shared {
                host: "a".into(),
                ranks: (0, 2),
                cpus: "0".parse().unwrap()
            }]
        );
    }

    #[test]
    fn spanning_nodes_is_named() {
        let report = Report {
            ranks: vec![binding(0, "a", "0-7", "0-1", 8)],
        };
        assert_eq!(
            report.warnings(),
            vec![Warning::SpansNodes {
                rank: 0,
                nodes: "0-1".parse().unwrap()
            }]
        );
    }

    #[test]
    fn a_binding_survives_its_line() {
        let mut b = binding(3, "host-1", "0-3,8", "0,2", 5);
        b.pool_cpus = "8".parse().unwrap();
        assert_eq!(RankBinding::decode(&b.encode()), Some(b));
        let mut empty = binding(0, "h", "0", "0", 1);
        empty.pool_nodes = NodeSet::new();
        assert_eq!(RankBinding::decode(&empty.encode()), Some(empty));
        assert_eq!(RankBinding::decode("1|2"), None);
    }
}
