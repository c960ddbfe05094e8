//! Stealing policies and the victim order they give each worker.

use std::fmt;
use std::str::FromStr;

use crate::numa::Topology;

/// How an idle worker looks for work, and how places are honoured. Compare
/// them with the benchmarks.
///
/// A strict place ([`Place::strict`](crate::Place::strict)) is honoured
/// under every policy: its task runs on its node (or worker) and nowhere
/// else. The policies differ in how idle workers steal and in what they do
/// with place *hints* (places not marked strict): `Flat` and
/// `Hierarchical` ignore them (the task is an ordinary spawn),
/// `Locality` honours them as hints, `StrictLocality` makes them strict.
///
/// ```
/// use terroir::Policy;
/// assert_eq!("hierarchical".parse::<Policy>().unwrap(), Policy::Hierarchical);
/// assert!("nearest".parse::<Policy>().is_err());
/// assert_eq!(Policy::default(), Policy::Locality);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Policy {
    /// Random victim over all workers and node queues, topology ignored:
    /// the locality-oblivious baseline (what rayon does). Place hints are
    /// ignored; strict places are honoured.
    Flat,
    /// Own deque → own node's queue → workers sharing my L3 → other workers
    /// of my node → other nodes nearest first (each node's queue, then its
    /// workers), with a random start inside each level: the locality-aware
    /// stealer without data affinity. Place hints are ignored; strict
    /// places are honoured.
    Hierarchical,
    /// The default. Hierarchical stealing, and places honoured as hints: a
    /// placed task goes to its node (or worker) and another node takes it
    /// only when every worker of that node is busy and the node's queued
    /// hints would keep it busy for longer than running one away from its
    /// data costs (the task's usual length times the SLIT distance ratio):
    /// a node about to reach its last tasks keeps them, a backlog is
    /// shared. Strict places stay strict. Unplaced tasks are scheduled as
    /// under `Hierarchical`.
    #[default]
    Locality,
    /// As `Locality`, but every node or worker place is strict: the task
    /// never runs anywhere else (Olivier et al.'s strict mode).
    StrictLocality,
}

impl Policy {
    /// Every policy, for benchmarks that compare them.
    pub const ALL: &'static [Policy] = &[
        Policy::Flat,
        Policy::Hierarchical,
        Policy::Locality,
        Policy::StrictLocality,
    ];

    /// The name `FromStr` accepts (and `TERROIR_POLICY` takes).
    pub fn name(self) -> &'static str {
        match self {
            Policy::Flat => "flat",
            Policy::Hierarchical => "hierarchical",
            Policy::Locality => "locality",
            Policy::StrictLocality => "strict-locality",
        }
    }

    /// Whether place hints are honoured: whether a task spawned with a
    /// [`Place`](crate::Place) that is not strict goes there (`Locality`,
    /// `StrictLocality`). The other policies ignore hints; strict places
    /// are honoured under every policy.
    pub fn honours_places(self) -> bool {
        matches!(self, Policy::Locality | Policy::StrictLocality)
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A policy name that is not one of [`Policy::ALL`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsePolicyError {
    /// The text that was given.
    pub text: String,
}

impl fmt::Display for ParsePolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Policy::ALL.iter().map(|p| p.name()).collect();
        write!(
            f,
            "unknown policy {:?} (expected one of: {})",
            self.text,
            names.join(", ")
        )
    }
}

impl std::error::Error for ParsePolicyError {}

impl FromStr for Policy {
    type Err = ParsePolicyError;
    fn from_str(s: &str) -> Result<Policy, ParsePolicyError> {
        Policy::ALL
            .iter()
            .copied()
            .find(|p| p.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| ParsePolicyError { text: s.into() })
    }
}

/// A place a thief can look: a worker's deque or a node's shared queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Victim {
    Worker(usize),
    NodeQueue(usize),
}

/// A node queue (optional) followed by some workers; the workers' start is
/// rotated at random on each visit.
#[derive(Clone, Debug)]
struct Unit {
    queue: Option<usize>,
    workers: Vec<usize>,
}

/// Targets of equal preference; the order of the units is rotated at
/// random on each visit.
#[derive(Clone, Debug)]
struct Level {
    units: Vec<Unit>,
}

/// The victim order of one worker: levels visited in order, nearest first.
#[derive(Clone, Debug)]
pub(crate) struct StealPlan {
    levels: Vec<Level>,
}

/// What the registry knows about where workers sit.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seat {
    pub(crate) node: usize,
    pub(crate) group: usize,
}

impl StealPlan {
    /// The plan of worker `me` among `seats` under `policy`.
    pub(crate) fn new(policy: Policy, topo: &Topology, seats: &[Seat], me: usize) -> StealPlan {
        let others = |pred: &dyn Fn(&Seat) -> bool| -> Vec<usize> {
            (0..seats.len())
                .filter(|&w| w != me && pred(&seats[w]))
                .collect()
        };
        let nodes = topo.nodes().len();
        let levels = match policy {
            Policy::Flat => vec![
                Level {
                    units: (0..nodes)
                        .map(|n| Unit {
                            queue: Some(n),
                            workers: vec![],
                        })
                        .collect(),
                },
                Level {
                    units: vec![Unit {
                        queue: None,
                        workers: others(&|_| true),
                    }],
                },
            ],
            Policy::Hierarchical | Policy::Locality | Policy::StrictLocality => {
                let my = seats[me];
                let mut levels = vec![
                    Level {
                        units: vec![Unit {
                            queue: Some(my.node),
                            workers: vec![],
                        }],
                    },
                    Level {
                        units: vec![Unit {
                            queue: None,
                            workers: others(&|s| s.group == my.group),
                        }],
                    },
                    Level {
                        units: vec![Unit {
                            queue: None,
                            workers: others(&|s| s.node == my.node && s.group != my.group),
                        }],
                    },
                ];
                let mut remote: Vec<usize> = (0..nodes).filter(|&n| n != my.node).collect();
                remote.sort_by_key(|&n| (topo.distance_by_index(my.node, n), n));
                let mut i = 0;
                while i < remote.len() {
                    let d = topo.distance_by_index(my.node, remote[i]);
                    let mut units = Vec::new();
                    while i < remote.len() && topo.distance_by_index(my.node, remote[i]) == d {
                        let n = remote[i];
                        units.push(Unit {
                            queue: Some(n),
                            workers: others(&|s| s.node == n),
                        });
                        i += 1;
                    }
                    levels.push(Level { units });
                }
                levels
            }
        };
        let levels = levels
            .into_iter()
            .map(|mut l| {
                l.units
                    .retain(|u| u.queue.is_some() || !u.workers.is_empty());
                l
            })
            .filter(|l| !l.units.is_empty())
            .collect();
        StealPlan { levels }
    }

    /// Visits every target once, in plan order, rotating inside levels with
    /// `random`; stops early and returns `Some` when `visit` does.
    #[inline]
    pub(crate) fn visit<T>(
        &self,
        mut random: impl FnMut() -> usize,
        mut visit: impl FnMut(Victim) -> Option<T>,
    ) -> Option<T> {
        for level in &self.levels {
            let nu = level.units.len();
            let ustart = if nu > 1 { random() % nu } else { 0 };
            for k in 0..nu {
                let unit = &level.units[(ustart + k) % nu];
                if let Some(q) = unit.queue {
                    if let Some(t) = visit(Victim::NodeQueue(q)) {
                        return Some(t);
                    }
                }
                let nw = unit.workers.len();
                let wstart = if nw > 1 { random() % nw } else { 0 };
                for j in 0..nw {
                    if let Some(t) = visit(Victim::Worker(unit.workers[(wstart + j) % nw])) {
                        return Some(t);
                    }
                }
            }
        }
        None
    }

    /// Visits worker targets without rotation (nearest first, ties by index).
    pub(crate) fn workers_in_order(&self) -> impl Iterator<Item = usize> + '_ {
        self.levels
            .iter()
            .flat_map(|l| l.units.iter())
            .flat_map(|u| u.workers.iter().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn seats_of(topo: &Topology) -> Vec<Seat> {
        topo.pus()
            .iter()
            .map(|p| Seat {
                node: p.node_index(),
                group: p.l3_group_index(),
            })
            .collect()
    }

    fn order(plan: &StealPlan, seed: u64) -> Vec<Victim> {
        let mut s = seed | 1;
        let mut out = Vec::new();
        plan.visit(
            || {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s as usize
            },
            |t| {
                out.push(t);
                None::<()>
            },
        );
        out
    }

    fn topology() -> impl Strategy<Value = Topology> {
        (1usize..6, 1usize..4, 1usize..4, any::<u64>()).prop_map(|(n, g, p, seed)| {
            // Random symmetric distances in 11..=40 off the diagonal.
            let mut s = seed | 1;
            let mut m = vec![10u32; n * n];
            for i in 0..n {
                for j in i + 1..n {
                    s = s
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let d = 11 + ((s >> 33) % 30) as u32;
                    m[i * n + j] = d;
                    m[j * n + i] = d;
                }
            }
            Topology::builder()
                .nodes(n)
                .l3_per_node(g)
                .pus_per_l3(p)
                .distances(m)
                .build()
                .unwrap()
        })
    }

    proptest! {
        #[test]
        fn hierarchical_order_is_a_nearest_first_permutation(topo in topology(), seed in any::<u64>()) {
            let seats = seats_of(&topo);
            for me in 0..seats.len() {
                let plan = StealPlan::new(Policy::Hierarchical, &topo, &seats, me);
                let targets = order(&plan, seed);
                // Own node's queue first.
                prop_assert_eq!(targets[0], Victim::NodeQueue(seats[me].node));
                let workers: Vec<usize> = targets.iter().filter_map(|t| match t {
                    Victim::Worker(w) => Some(*w),
                    _ => None,
                }).collect();
                // Every other worker exactly once.
                let mut sorted = workers.clone();
                sorted.sort();
                let expected: Vec<usize> = (0..seats.len()).filter(|&w| w != me).collect();
                prop_assert_eq!(sorted, expected);
                // Rank: 0 same L3, 1 same node, 2 + distance for remote.
                let rank = |w: usize| -> u32 {
                    if seats[w].group == seats[me].group { 0 }
                    else if seats[w].node == seats[me].node { 1 }
                    else { 2 + topo.distance_by_index(seats[me].node, seats[w].node) }
                };
                for pair in workers.windows(2) {
                    prop_assert!(rank(pair[0]) <= rank(pair[1]),
                        "worker {} visits {} (rank {}) before {} (rank {})",
                        me, pair[0], rank(pair[0]), pair[1], rank(pair[1]));
                }
                // Each remote node's queue comes right before its first worker
                // and every node queue appears once.
                let mut queues: Vec<usize> = targets.iter().filter_map(|t| match t {
                    Victim::NodeQueue(q) => Some(*q),
                    _ => None,
                }).collect();
                for (i, t) in targets.iter().enumerate() {
                    if let Victim::NodeQueue(q) = t {
                        if *q != seats[me].node {
                            prop_assert!(matches!(targets.get(i + 1), Some(Victim::Worker(w)) if seats[*w].node == *q));
                        }
                    }
                }
                queues.sort();
                prop_assert_eq!(queues, (0..topo.nodes().len()).collect::<Vec<_>>());
            }
        }

        #[test]
        fn flat_order_covers_everything_once(topo in topology(), seed in any::<u64>()) {
            let seats = seats_of(&topo);
            let me = (seed as usize) % seats.len();
            let plan = StealPlan::new(Policy::Flat, &topo, &seats, me);
            let mut workers: Vec<usize> = order(&plan, seed).iter().filter_map(|t| match t {
                Victim::Worker(w) => Some(*w),
                _ => None,
            }).collect();
            workers.sort();
            prop_assert_eq!(workers, (0..seats.len()).filter(|&w| w != me).collect::<Vec<_>>());
        }
    }

    #[test]
    fn rotation_varies_the_start_inside_a_level() {
        let topo = Topology::builder().nodes(1).pus_per_l3(8).build().unwrap();
        let seats = seats_of(&topo);
        let plan = StealPlan::new(Policy::Hierarchical, &topo, &seats, 0);
        let firsts: std::collections::HashSet<Victim> = (1..50u64)
            .map(|seed| order(&plan, seed * 7919)[1])
            .collect();
        assert!(
            firsts.len() > 1,
            "the first victim never changes: {firsts:?}"
        );
    }
}
