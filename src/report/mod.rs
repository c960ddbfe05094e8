//! Work-time inflation reports (Olivier et al., SC12): the same workload
//! recorded on a one-worker pool (the sequential-equivalent) and on a
//! parallel pool, compared task label by task label, with the parallel
//! run's thread time split into
//!
//! ```text
//! p × window = sequential-equivalent work + inflation + scheduler overhead + idle (+ unaccounted)
//! ```
//!
//! where *work* is the time workers spent in tasks (their own time, see
//! [`Recording`]), *inflation* is the parallel work minus the baseline's
//! (negative when the tasks ran faster in parallel), *overhead* the time
//! spent looking for work and recording, *idle* the time with nothing to
//! do, and *unaccounted* the rest (the worker loop between those). A
//! speedup of `p` needs no inflation, overhead or idle time; work inflated
//! by a factor `r` alone bounds it by `p / r`.
//!
//! # What the report measures, and what it leaves out
//!
//! - **The window** of each run goes from its first task's start to its
//!   last task's end: the time before (workers waking, the caller's setup)
//!   and after (the stop) is left out, and the report says how long it was.
//! - **The baseline** is one worker pinned on the pool's first node, or,
//!   with [`BaselinePlacement::EachNode`], one worker on each node in turn,
//!   each task's baseline taken from the run on its data's node (so that
//!   every task has a local baseline). The report states which.
//! - **Wall time and CPU time**: with the task-clock counter, each label's
//!   CPU-time inflation stands beside its wall-time inflation; when they
//!   disagree beyond noise, or a worker had the CPU for less than its busy
//!   time (preemption, more threads than CPUs), the report warns.
//! - **Repeats**: [`MeasureOptions::repeat`] runs both sides several times
//!   after a warm-up run; the report shows the median run and the spread.
//!
//! # The locality story
//!
//! Per label, the tasks whose declared data was on the node of the worker
//! that ran them (*local*) against the others (*remote*): count, mean
//! time, inflation, and the time the remote ones cost beyond the local
//! ones. Per worker and per node: work, inflation, overhead and idle time;
//! a node × data-node matrix of tasks and bytes; steals by level and
//! pushes of placed tasks; a task-duration histogram per label; and a
//! "NUMA doctor" ([`Doctor`]) on the machine's settings that bend these
//! numbers.
//!
//! # Reporting an unmodified program
//!
//! With `TERROIR_REPORT=<dir>` in its environment, a program's global pool
//! records from the moment it is built until the process exits (`atexit`,
//! default [`RecordOptions`]), and the report is written into `<dir>` as
//! [`InflationReport::write_all`] does. Pools the program builds itself
//! are not recorded; a program ended by a signal or an abort writes
//! nothing. A running program cannot be re-run on one worker from inside,
//! so the report has no baseline (no inflation, no speedup) and says so;
//! with `TERROIR_REPORT_BASELINE=1` too, the program is run once more at
//! exit as a child (same executable, arguments and environment,
//! `TERROIR_NUM_THREADS=1`, standard input from `/dev/null`, its output in
//! `<dir>/baseline/output.txt`) whose recording is the baseline: only for
//! a program that can run twice with the same result, and only with the
//! `report` feature (the child hands its recording over as JSON).
//!
//! # Outputs
//!
//! Text ([`Display`](std::fmt::Display)), CSV, an SVG picture
//! ([`InflationReport::to_svg`]) that stays small for millions of tasks,
//! and, with the `report` feature, JSON that reads back
//! (`InflationReport::from_json`) and a Chrome/Perfetto trace streamed to
//! any writer (`InflationReport::write_chrome_trace`). Two reports
//! compare with [`InflationReport::compare`].
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

mod build;
mod compare;
mod csv;
pub mod doctor;
mod env;
#[cfg(feature = "report")]
mod json;
mod measure;
mod output;
mod run;
mod svg;
mod text;
#[cfg(feature = "report")]
mod trace;

pub use self::compare::{Comparison, LabelDelta};
pub use self::doctor::{Check, Doctor, Status};
pub use self::measure::{BaselinePlacement, MeasureOptions};
pub use self::run::{Push, Queued, Run, Span, Steal, WaitSpan, WorkerTotals};
pub use crate::sched::{
    Counter, CounterMethod, CounterSampling, Label, PushRecord, QueueSample, RecordError,
    RecordOptions, Recording, StealLevel, StealRecord, TaskRecord, Unavailable, WaitRecord,
    WorkerTimes,
};

/// Derives serde's traits on a report type when the `report` feature is on.
macro_rules! serde_type {
    ($($item:item)*) => {
        $(
            #[cfg_attr(feature = "report", derive(serde::Serialize, serde::Deserialize))]
            $item
        )*
    };
}
pub(crate) use serde_type;

serde_type! {
/// Count and time of one label's tasks in one run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunStats {
    /// Tasks.
    pub count: u64,
    /// Sum of their own times, ns.
    pub total_ns: u64,
    /// Mean own time per task, ns (0 without tasks).
    pub mean_ns: f64,
    /// Mean task-clock (CPU time) per counted task, ns, when counted.
    pub cpu_mean_ns: Option<f64>,
    /// Tasks whose counters were read.
    pub counted: u64,
}

/// A counter's mean per task in each run (`None`: not counted).
#[derive(Clone, Debug, PartialEq)]
pub struct CounterRow {
    /// The counter's name.
    pub counter: String,
    /// Mean per counted task in the baseline.
    pub baseline: Option<f64>,
    /// Mean per counted task in the parallel run.
    pub parallel: Option<f64>,
}

/// A label's parallel tasks that declared data, on one side of the
/// local/remote split.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GroupStats {
    /// Tasks.
    pub count: u64,
    /// Mean own time, ns.
    pub mean_ns: f64,
    /// Mean ÷ the label's baseline mean (`None` without a baseline).
    pub inflation: Option<f64>,
    /// Declared bytes, all tasks.
    pub bytes: u64,
}

/// Task durations (own time) in power-of-two bins.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    /// Bins `b` with a task in either run: `[2^b, 2^(b+1))` ns, ascending.
    pub bins: Vec<u32>,
    /// Baseline tasks per bin.
    pub baseline: Vec<u64>,
    /// Parallel tasks per bin.
    pub parallel: Vec<u64>,
}

/// One label's line of the report.
#[derive(Clone, Debug, PartialEq)]
pub struct LabelRow {
    /// The label.
    pub label: String,
    /// In the baseline.
    pub baseline: RunStats,
    /// In the parallel run.
    pub parallel: RunStats,
    /// Mean time per task in the parallel run ÷ in the baseline (`None`
    /// when either run has no task of this label, and for unlabelled jobs,
    /// which the parallel run cuts into more, smaller pieces).
    pub inflation: Option<f64>,
    /// The same with task-clock (CPU time) instead of wall-clock own time,
    /// when both runs counted it.
    pub cpu_inflation: Option<f64>,
    /// Counters per task.
    pub counters: Vec<CounterRow>,
    /// Of the parallel run's tasks with a declared data node, the share
    /// that ran on a worker of that node (`None`: none declared data).
    pub locality: Option<f64>,
    /// Parallel tasks whose data was on their worker's node.
    pub local: GroupStats,
    /// Parallel tasks whose data was on another node.
    pub remote: GroupStats,
    /// What the remote tasks cost beyond the local ones: remote count ×
    /// (remote mean − local mean), ns (`None` unless both groups have
    /// tasks).
    pub remote_extra_ns: Option<f64>,
    /// Durations in each run.
    pub histogram: Histogram,
}

/// A run's thread time over its window, split (Olivier et al.'s
/// breakdown).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Breakdown {
    /// Workers × the window, ns.
    pub total_ns: u64,
    /// Time in tasks.
    pub work_ns: u64,
    /// The baseline's work: what the tasks cost on one worker (`None`
    /// without a baseline).
    pub sequential_work_ns: Option<u64>,
    /// Work minus the baseline's (negative: the tasks ran faster).
    pub inflation_ns: Option<i64>,
    /// Looking for work, and recording.
    pub overhead_ns: u64,
    /// Nothing to do.
    pub idle_ns: u64,
    /// `total − (work + overhead + idle)`: the worker loop between them
    /// (negative if the parts overlap).
    pub unaccounted_ns: i64,
}

/// What the window of the parallel run left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// The recording's length, ns.
    pub recorded_ns: u64,
    /// Its first task's start, ns from the recording's start: the time
    /// left out before.
    pub start_ns: u64,
    /// Its last task's end.
    pub end_ns: u64,
}

/// One worker's (or node's) share of the parallel run, over the window.
#[derive(Clone, Debug, PartialEq)]
pub struct PartRow {
    /// The worker's index (`None` for a node's row).
    pub worker: Option<usize>,
    /// The node's OS number.
    pub node: u32,
    /// The worker's CPU, when it is bound to that CPU alone.
    pub cpu: Option<u32>,
    /// Workers in it.
    pub workers: usize,
    /// Tasks (labelled and unlabelled) it ran.
    pub tasks: u64,
    /// Time in tasks, ns.
    pub work_ns: u64,
    /// What those tasks cost in the baseline (see
    /// [`InflationReport::workers`]).
    pub sequential_work_ns: Option<u64>,
    /// `work − sequential work`.
    pub inflation_ns: Option<i64>,
    /// Looking for work, and recording.
    pub overhead_ns: u64,
    /// Idle.
    pub idle_ns: u64,
    /// Thread CPU time over the recording, when read.
    pub cpu_ns: Option<u64>,
    /// Work + overhead over the recording (to compare with `cpu_ns`).
    pub busy_ns: u64,
}

/// Tasks that ran on `node` with their data on `data_node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixCell {
    /// The node (OS number) of the workers that ran them.
    pub node: u32,
    /// The node of their declared data.
    pub data_node: u32,
    /// Placed tasks.
    pub tasks: u64,
    /// Their declared bytes.
    pub bytes: u64,
}

/// Steals of one level in the parallel run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StealCount {
    /// The level ([`StealLevel::name`]).
    pub level: String,
    /// Jobs taken.
    pub count: u64,
}

/// One baseline run.
#[derive(Clone, Debug, PartialEq)]
pub struct BaselineRun {
    /// Its worker's node (OS number).
    pub node: u32,
    /// Its worker's CPU, when it is bound to that CPU alone.
    pub cpu: Option<u32>,
    /// Its window, ns.
    pub window_ns: u64,
}

/// How the baseline was run.
#[derive(Clone, Debug, PartialEq)]
pub struct Baseline {
    /// One run, or one per node.
    pub runs: Vec<BaselineRun>,
    /// Whether each task's baseline came from the run on its data's node.
    pub per_node: bool,
    /// The placement, in words.
    pub placement: String,
    /// The first run's breakdown (the one the speedup is against).
    pub breakdown: Breakdown,
}

/// The median and range of a quantity over repeated runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

/// A label's inflation over repeated runs.
#[derive(Clone, Debug, PartialEq)]
pub struct LabelSpread {
    /// The label.
    pub label: String,
    /// Its inflation.
    pub inflation: Spread,
}

/// What repeated runs measured ([`MeasureOptions::repeat`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Repeats {
    /// Runs of each side (after the warm-up).
    pub runs: usize,
    /// The run this report shows in full (the one with the median
    /// speedup), from 0.
    pub shown: usize,
    /// Speedup (baseline window ÷ parallel window).
    pub speedup: Spread,
    /// Parallel window, ns.
    pub window_ns: Spread,
    /// Work ratio `r` (parallel work ÷ baseline work).
    pub work_ratio: Spread,
    /// Per label.
    pub labels: Vec<LabelSpread>,
}

/// A baseline and a parallel run compared; see the [module docs](self).
#[derive(Clone, Debug)]
pub struct InflationReport {
    /// Workers of the parallel pool (`p`).
    pub threads: usize,
    /// Its policy.
    pub policy: String,
    /// The parallel run's window.
    pub window: Window,
    /// The baseline, if there was one.
    pub baseline: Option<Baseline>,
    /// Per label, sorted by parallel total time, largest first.
    pub labels: Vec<LabelRow>,
    /// The parallel run's breakdown.
    pub breakdown: Breakdown,
    /// Per worker of the parallel pool.
    pub workers: Vec<PartRow>,
    /// Per node of the parallel pool.
    pub nodes: Vec<PartRow>,
    /// Node × data node, for the parallel run's placed tasks.
    pub matrix: Vec<MatrixCell>,
    /// Steals by level in the parallel run.
    pub steals: Vec<StealCount>,
    /// Placed tasks pushed in the parallel run.
    pub pushes: u64,
    /// Of those, pushed to another node than their spawner's.
    pub remote_pushes: u64,
    /// Counters that counted (in both runs).
    pub counters: Vec<String>,
    /// Counters that could not be opened, with the reason.
    pub unavailable: Vec<String>,
    /// How the counters were read (per run: baseline, then parallel).
    pub counter_method: Vec<String>,
    /// What the reader should not take at face value, in words.
    pub warnings: Vec<String>,
    /// The machine's settings that bend the numbers, when checked.
    pub doctor: Option<Doctor>,
    /// Spread over repeated runs, when repeated.
    pub repeats: Option<Repeats>,
    /// The parallel run's timeline.
    pub parallel_run: Run,
    /// The baseline runs' timelines.
    pub baseline_runs: Vec<Run>,
}
}

impl Breakdown {
    /// Work ÷ sequential work (`r`); an inflation of 25 % of the
    /// sequential work gives 1.25 (`None` without a baseline).
    ///
    /// ```
    /// use terroir::report::Breakdown;
    /// let b = Breakdown {
    ///     total_ns: 2_000,
    ///     work_ns: 1_000,
    ///     sequential_work_ns: Some(800),
    ///     inflation_ns: Some(200),
    ///     overhead_ns: 100,
    ///     idle_ns: 850,
    ///     unaccounted_ns: 50,
    /// };
    /// assert_eq!(b.work_ratio(), Some(1.25));
    /// ```
    pub fn work_ratio(&self) -> Option<f64> {
        let seq = self.sequential_work_ns?;
        Some(self.work_ns as f64 / seq.max(1) as f64)
    }

    /// Share of `total` that each part takes: (sequential work, inflation,
    /// overhead, idle, unaccounted), summing to 1; without a baseline the
    /// work stands for sequential work and inflation is 0.
    pub fn shares(&self) -> [f64; 5] {
        let t = self.total_ns.max(1) as f64;
        let seq = self.sequential_work_ns.unwrap_or(self.work_ns);
        [
            seq as f64 / t,
            self.inflation_ns.unwrap_or(0) as f64 / t,
            self.overhead_ns as f64 / t,
            self.idle_ns as f64 / t,
            self.unaccounted_ns as f64 / t,
        ]
    }
}

impl Window {
    /// Its length, ns.
    pub fn len_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    /// Left out after the last task's end, ns.
    pub fn after_ns(&self) -> u64 {
        self.recorded_ns.saturating_sub(self.end_ns)
    }
}

impl InflationReport {
    /// The row of `label`, if either run had such tasks.
    pub fn label(&self, label: &str) -> Option<&LabelRow> {
        self.labels.iter().find(|r| r.label == label)
    }

    /// Measured speedup: the baseline's window ÷ the parallel window
    /// (`None` without a baseline).
    pub fn speedup(&self) -> Option<f64> {
        let b = self.baseline.as_ref()?.runs.first()?.window_ns;
        Some(b as f64 / self.window.len_ns().max(1) as f64)
    }

    /// The speedup bound that work inflation alone implies: `p / r`.
    pub fn speedup_bound(&self) -> Option<f64> {
        let r = self.breakdown.work_ratio()?;
        Some(self.threads as f64 / r.max(f64::MIN_POSITIVE))
    }
}
