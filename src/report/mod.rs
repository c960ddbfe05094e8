//! Work-time inflation reports (Olivier et al., SC12): the same workload
//! recorded on a one-worker pool (the sequential-equivalent) and on a
//! parallel pool, compared task label by task label, with the parallel
//! run's thread time split into
//!
//! ```text
//! p × wall = sequential-equivalent work + inflation + scheduler overhead + idle (+ unaccounted)
//! ```
//!
//! where *work* is the time workers spent in tasks (their own time, see
//! [`Recording`]), *inflation* is the parallel work minus the baseline's,
//! *overhead* the time spent looking for work, *idle* the time with nothing
//! to do, and *unaccounted* the rest (the worker loop between those, and
//! the recording itself). A speedup of `p` needs no inflation, overhead or
//! idle time; work inflated by a factor `r` alone bounds it by `p / r`.
//!
//! ```
//! use terroir::report::InflationReport;
//! use terroir::ThreadPoolBuilder;
//!
//! fn fib(n: u64) -> u64 {
//!     if n < 20 {
//!         return terroir::label("fib-leaf", || fib_seq(n));
//!     }
//!     let (a, b) = terroir::join(|| fib(n - 1), || fib(n - 2));
//!     a + b
//! }
//! fn fib_seq(n: u64) -> u64 { if n < 2 { n } else { fib_seq(n - 1) + fib_seq(n - 2) } }
//!
//! let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
//! let (v, report) = InflationReport::measure(&pool, || fib(26)).unwrap();
//! assert_eq!(v, 121_393);
//! println!("{report}");
//! let leaf = report.label("fib-leaf").unwrap();
//! assert_eq!(leaf.baseline.count, leaf.parallel.count);
//! ```

mod output;

use std::collections::BTreeMap;
use std::fmt;

#[cfg(feature = "report")]
use serde::Serialize;

use crate::numa::NodeId;
pub use crate::sched::{
    Counter, Label, RecordError, RecordOptions, Recording, TaskRecord, Unavailable, WorkerTimes,
};
use crate::sched::{ThreadPool, ThreadPoolBuildError, ThreadPoolBuilder};

/// Count and time of one label's tasks in one run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "report", derive(Serialize))]
pub struct RunStats {
    /// Tasks.
    pub count: u64,
    /// Sum of their own times, ns.
    pub total_ns: u64,
    /// Mean own time per task, ns (0 without tasks).
    pub mean_ns: f64,
}

/// A counter's mean per task in each run (`None`: not counted).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "report", derive(Serialize))]
pub struct CounterRow {
    /// The counter's name.
    pub counter: String,
    /// Mean per task in the baseline.
    pub baseline: Option<f64>,
    /// Mean per task in the parallel run.
    pub parallel: Option<f64>,
}

/// One label's line of the report.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "report", derive(Serialize))]
pub struct LabelRow {
    /// The label.
    pub label: String,
    /// In the one-worker run.
    pub baseline: RunStats,
    /// In the parallel run.
    pub parallel: RunStats,
    /// Mean time per task in the parallel run ÷ in the baseline (`None`
    /// when either run has no task of this label, and for unlabelled jobs,
    /// which the parallel run cuts into more, smaller pieces).
    pub inflation: Option<f64>,
    /// Counters per task.
    pub counters: Vec<CounterRow>,
    /// Of the parallel run's tasks with a declared data node, the share
    /// that ran on a worker of that node (`None`: none declared data).
    pub locality: Option<f64>,
}

/// The parallel run's thread time, split (Olivier et al.'s breakdown).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "report", derive(Serialize))]
pub struct Breakdown {
    /// Workers × wall time of the parallel run, ns.
    pub total_ns: u64,
    /// The baseline's work: what the tasks cost on one worker.
    pub sequential_work_ns: u64,
    /// Parallel work minus the baseline's (negative: the tasks ran faster).
    pub inflation_ns: i64,
    /// Looking for work.
    pub overhead_ns: u64,
    /// Nothing to do.
    pub idle_ns: u64,
    /// `total − (work + overhead + idle)`: the worker loop between them and
    /// the recording's own cost (negative if the parts overlap).
    pub unaccounted_ns: i64,
}

impl Breakdown {
    /// Parallel work ÷ sequential work (`r`); an inflation of 25 % of the
    /// sequential work gives 1.25.
    ///
    /// ```
    /// use terroir::report::Breakdown;
    /// let b = Breakdown {
    ///     total_ns: 2_000,
    ///     sequential_work_ns: 800,
    ///     inflation_ns: 200,
    ///     overhead_ns: 100,
    ///     idle_ns: 850,
    ///     unaccounted_ns: 50,
    /// };
    /// assert_eq!(b.work_ratio(), 1.25);
    /// ```
    pub fn work_ratio(&self) -> f64 {
        let par = self.sequential_work_ns as i64 + self.inflation_ns;
        par as f64 / self.sequential_work_ns.max(1) as f64
    }

    /// Share of `total` that each part takes: (work, inflation, overhead,
    /// idle, unaccounted), summing to 1.
    pub fn shares(&self) -> [f64; 5] {
        let t = self.total_ns.max(1) as f64;
        [
            self.sequential_work_ns as f64 / t,
            self.inflation_ns as f64 / t,
            self.overhead_ns as f64 / t,
            self.idle_ns as f64 / t,
            self.unaccounted_ns as f64 / t,
        ]
    }
}

/// A span of the parallel run's timeline (for the trace and the picture).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Span {
    label: String,
    worker: usize,
    node: NodeId,
    data_node: Option<NodeId>,
    start_ns: u64,
    end_ns: u64,
    counters: Vec<(String, u64)>,
}

/// A baseline and a parallel run compared; see the [module docs](self).
#[derive(Clone, Debug)]
#[cfg_attr(feature = "report", derive(Serialize))]
pub struct InflationReport {
    /// Workers of the parallel pool (`p`).
    pub threads: usize,
    /// Its policy.
    pub policy: String,
    /// Wall time of the one-worker run, ns.
    pub baseline_wall_ns: u64,
    /// Wall time of the parallel run, ns.
    pub wall_ns: u64,
    /// Per label, sorted by parallel total time, largest first.
    pub labels: Vec<LabelRow>,
    /// The parallel run's breakdown.
    pub breakdown: Breakdown,
    /// Counters that counted (in both runs).
    pub counters: Vec<String>,
    /// Counters that could not be opened, with the reason.
    pub unavailable: Vec<String>,
    #[cfg_attr(feature = "report", serde(skip))]
    timeline: Vec<Span>,
    #[cfg_attr(feature = "report", serde(skip))]
    baseline_breakdown: (u64, u64, u64, u64),
}

/// One label's tasks in one run: count, own time, counter sums, local.
#[derive(Default)]
struct Acc {
    count: u64,
    total: u64,
    counters: Vec<u64>,
    /// Tasks whose counters were read (unlabelled jobs' are not).
    counted: u64,
    declared: u64,
    local: u64,
}

fn accumulate(rec: &Recording) -> BTreeMap<String, Acc> {
    let mut out: BTreeMap<String, Acc> = BTreeMap::new();
    for t in &rec.tasks {
        let a = out.entry(t.label.as_str().to_string()).or_default();
        a.count += 1;
        a.total += t.own_ns;
        if !t.counters.is_empty() {
            a.counted += 1;
        }
        if a.counters.len() < t.counters.len() {
            a.counters.resize(t.counters.len(), 0);
        }
        for (s, v) in a.counters.iter_mut().zip(&t.counters) {
            *s += v;
        }
        if let Some(d) = t.data_node {
            a.declared += 1;
            if rec.nodes.get(t.node) == Some(&d) {
                a.local += 1;
            }
        }
    }
    out
}

fn stats(a: Option<&Acc>) -> RunStats {
    match a {
        Some(a) if a.count > 0 => RunStats {
            count: a.count,
            total_ns: a.total,
            mean_ns: a.total as f64 / a.count as f64,
        },
        _ => RunStats::default(),
    }
}

fn sums(rec: &Recording) -> (u64, u64, u64) {
    rec.workers.iter().fold((0, 0, 0), |(w, o, i), t| {
        (w + t.work_ns, o + t.overhead_ns, i + t.idle_ns)
    })
}

impl InflationReport {
    /// Compares `baseline` (the workload on one worker) with `parallel`
    /// (the same workload on the pool under study).
    pub fn new(baseline: &Recording, parallel: &Recording) -> InflationReport {
        let b = accumulate(baseline);
        let p = accumulate(parallel);
        let mut names: Vec<&String> = b.keys().chain(p.keys()).collect();
        names.sort();
        names.dedup();
        let mut labels: Vec<LabelRow> = names
            .into_iter()
            .map(|name| {
                let (ab, ap) = (b.get(name), p.get(name));
                let (sb, sp) = (stats(ab), stats(ap));
                // Unlabelled jobs are not comparable task by task: the
                // parallel run cuts the same work into more, smaller
                // stolen pieces.
                let comparable = name != Label::Unlabelled.as_str();
                let inflation = (comparable && sb.count > 0 && sp.count > 0 && sb.mean_ns > 0.0)
                    .then(|| sp.mean_ns / sb.mean_ns);
                let per_task = |a: Option<&Acc>, rec: &Recording, c: Counter| -> Option<f64> {
                    let a = a.filter(|a| a.counted > 0)?;
                    let i = rec.counters.iter().position(|&x| x == c)?;
                    Some(*a.counters.get(i)? as f64 / a.counted as f64)
                };
                let mut all: Vec<Counter> = baseline.counters.clone();
                all.extend(parallel.counters.iter().copied());
                all.sort();
                all.dedup();
                LabelRow {
                    label: name.clone(),
                    baseline: sb,
                    parallel: sp,
                    inflation,
                    counters: all
                        .into_iter()
                        .map(|c| CounterRow {
                            counter: c.name().to_string(),
                            baseline: per_task(ab, baseline, c),
                            parallel: per_task(ap, parallel, c),
                        })
                        .collect(),
                    locality: ap
                        .filter(|a| a.declared > 0)
                        .map(|a| a.local as f64 / a.declared as f64),
                }
            })
            .collect();
        labels.sort_by_key(|r| std::cmp::Reverse(r.parallel.total_ns));

        let (work_b, over_b, idle_b) = sums(baseline);
        let (work_p, over_p, idle_p) = sums(parallel);
        let total = parallel.threads as u64 * parallel.wall_ns;
        let breakdown = Breakdown {
            total_ns: total,
            sequential_work_ns: work_b,
            inflation_ns: work_p as i64 - work_b as i64,
            overhead_ns: over_p,
            idle_ns: idle_p,
            unaccounted_ns: total as i64 - (work_p + over_p + idle_p) as i64,
        };
        let mut counters: Vec<String> = parallel
            .counters
            .iter()
            .filter(|c| baseline.counters.contains(c))
            .map(|c| c.name().to_string())
            .collect();
        counters.dedup();
        let mut unavailable: Vec<String> = baseline
            .unavailable
            .iter()
            .chain(&parallel.unavailable)
            .map(Unavailable::to_string)
            .collect();
        unavailable.sort();
        unavailable.dedup();
        let timeline = parallel
            .tasks
            .iter()
            .map(|t: &TaskRecord| Span {
                label: t.label.as_str().to_string(),
                worker: t.worker,
                node: parallel
                    .nodes
                    .get(t.node)
                    .copied()
                    .unwrap_or(NodeId::new(0)),
                data_node: t.data_node,
                start_ns: t.start_ns,
                end_ns: t.end_ns,
                counters: parallel
                    .counters
                    .iter()
                    .zip(&t.counters)
                    .map(|(c, v)| (c.name().to_string(), *v))
                    .collect(),
            })
            .collect();
        InflationReport {
            threads: parallel.threads,
            policy: parallel.policy.to_string(),
            baseline_wall_ns: baseline.wall_ns,
            wall_ns: parallel.wall_ns,
            labels,
            breakdown,
            counters,
            unavailable,
            timeline,
            baseline_breakdown: (baseline.wall_ns, work_b, over_b, idle_b),
        }
    }

    /// Records `work` on a one-worker pool with `pool`'s topology and
    /// policy (the baseline), then on `pool`, and compares them. `work`
    /// runs twice; its first result is checked against the second by the
    /// caller if it cares (the parallel one is returned).
    ///
    /// For work that cannot be passed as a closure, record the two runs
    /// with [`ThreadPool::start_recording`] and
    /// [`ThreadPool::stop_recording`] (the baseline on
    /// [`baseline_pool`](Self::baseline_pool)) and compare them with
    /// [`new`](Self::new).
    ///
    /// # Errors
    /// When the one-worker pool cannot be built.
    ///
    /// # Panics
    /// When `pool` records already (see [`ThreadPool::record`]).
    pub fn measure<F, R>(
        pool: &ThreadPool,
        work: F,
    ) -> Result<(R, InflationReport), ThreadPoolBuildError>
    where
        F: Fn() -> R + Send + Sync,
        R: Send,
    {
        let one = Self::baseline_pool(pool)?;
        let (_, baseline) = one.record(&work);
        drop(one);
        let (r, parallel) = pool.record(&work);
        Ok((r, InflationReport::new(&baseline, &parallel)))
    }

    /// The pool [`measure`](Self::measure) records its baseline on: one
    /// worker, with `pool`'s topology, policy and pinning.
    ///
    /// ```
    /// use terroir::report::InflationReport;
    /// use terroir::report::RecordOptions;
    /// use terroir::ThreadPoolBuilder;
    ///
    /// let work = || terroir::join(|| terroir::label("a", || 1), || terroir::label("b", || 2));
    /// let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let one = InflationReport::baseline_pool(&pool).unwrap();
    /// assert_eq!(one.current_num_threads(), 1);
    /// let options = RecordOptions::timestamps_only();
    /// one.start_recording(&options).unwrap();
    /// one.install(work);
    /// let baseline = one.stop_recording().unwrap();
    /// pool.start_recording(&options).unwrap();
    /// pool.install(work);
    /// let parallel = pool.stop_recording().unwrap();
    /// let report = InflationReport::new(&baseline, &parallel);
    /// assert_eq!(report.label("a").unwrap().parallel.count, 1);
    /// ```
    ///
    /// # Errors
    /// When the pool cannot be built.
    pub fn baseline_pool(pool: &ThreadPool) -> Result<ThreadPool, ThreadPoolBuildError> {
        ThreadPoolBuilder::new()
            .topology(pool.topology().clone())
            .policy(pool.policy())
            .pin(pool.is_pinned())
            .num_threads(1)
            .build()
    }

    /// The row of `label`, if either run had such tasks.
    pub fn label(&self, label: &str) -> Option<&LabelRow> {
        self.labels.iter().find(|r| r.label == label)
    }

    /// Measured speedup: baseline wall time ÷ parallel wall time.
    pub fn speedup(&self) -> f64 {
        self.baseline_wall_ns as f64 / self.wall_ns.max(1) as f64
    }

    /// The speedup bound that work inflation alone implies: `p / r`.
    pub fn speedup_bound(&self) -> f64 {
        self.threads as f64 / self.breakdown.work_ratio().max(f64::MIN_POSITIVE)
    }
}

fn ms(ns: impl Into<f64>) -> f64 {
    ns.into() / 1e6
}

impl fmt::Display for InflationReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.breakdown;
        writeln!(
            f,
            "work-time inflation: {} workers ({}), wall {:.3} ms vs {:.3} ms on one worker: \
             speedup {:.2}, bound from inflation p/r = {:.2}",
            self.threads,
            self.policy,
            ms(self.wall_ns as f64),
            ms(self.baseline_wall_ns as f64),
            self.speedup(),
            self.speedup_bound(),
        )?;
        writeln!(
            f,
            "{:<24} {:>9} {:>12} {:>12} {:>9} {:>9}",
            "label", "tasks", "mean 1 (µs)", "mean p (µs)", "inflation", "locality"
        )?;
        for r in &self.labels {
            let opt = |x: Option<f64>, p: usize| x.map_or("-".to_string(), |v| format!("{v:.p$}"));
            writeln!(
                f,
                "{:<24} {:>9} {:>12.2} {:>12.2} {:>9} {:>9}",
                r.label,
                r.parallel.count,
                r.baseline.mean_ns / 1e3,
                r.parallel.mean_ns / 1e3,
                opt(r.inflation, 3),
                opt(r.locality, 3),
            )?;
            for c in &r.counters {
                writeln!(
                    f,
                    "    {:<20} per task {:>14} -> {:>14}",
                    c.counter,
                    opt(c.baseline, 1),
                    opt(c.parallel, 1)
                )?;
            }
        }
        let [w, i, o, id, u] = b.shares();
        writeln!(
            f,
            "p x wall = {:.3} ms = sequential work {:.3} ms ({:.1} %) + inflation {:.3} ms ({:.1} %) \
             + overhead {:.3} ms ({:.1} %) + idle {:.3} ms ({:.1} %) + unaccounted {:.3} ms ({:.1} %)",
            ms(b.total_ns as f64),
            ms(b.sequential_work_ns as f64),
            w * 100.0,
            ms(b.inflation_ns as f64),
            i * 100.0,
            ms(b.overhead_ns as f64),
            o * 100.0,
            ms(b.idle_ns as f64),
            id * 100.0,
            ms(b.unaccounted_ns as f64),
            u * 100.0,
        )?;
        if !self.unavailable.is_empty() {
            writeln!(f, "not counted:")?;
            for u in &self.unavailable {
                writeln!(f, "    {u}")?;
            }
        }
        Ok(())
    }
}
