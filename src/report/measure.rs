//! Measuring a workload: a warm-up run, then the baseline (one worker, on
//! the first node or on each node in turn) and the parallel run, repeated
//! if asked, and the report of the median run with the spread.

use super::run::Run;
use super::*;
use crate::sched::{ThreadPool, ThreadPoolBuildError, ThreadPoolBuilder};

/// Where the one-worker baseline runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum BaselinePlacement {
    /// One worker on the pool's first node (its first CPU, pinned like the
    /// pool): tasks whose data is on other nodes run remote in the baseline
    /// too, and the report says how many did.
    #[default]
    FirstNode,
    /// One worker on each node of the pool in turn (the workload runs once
    /// per node): each task's baseline is taken from the run on its data's
    /// node, so every task that declared data has a local baseline.
    EachNode,
}

/// How [`InflationReport::measure_with`] measures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeasureOptions {
    /// What to record (default: every counter, sampled; see
    /// [`RecordOptions`]).
    pub record: RecordOptions,
    /// Run the workload once on each pool, unrecorded, before measuring
    /// (default: true): first-touch page faults, cold caches and lazily
    /// started workers then do not count.
    pub warm_up: bool,
    /// Runs of each side (default 1; 0 counts as 1). With more, the report
    /// shows the run with the median speedup in full and the median and
    /// range of the speedup, the window and each label's inflation.
    pub repeat: usize,
    /// Where the baseline runs (default: the first node).
    pub baseline: BaselinePlacement,
    /// Check the machine's settings ([`Doctor`]) into the report (default:
    /// true).
    pub doctor: bool,
}

impl Default for MeasureOptions {
    fn default() -> Self {
        MeasureOptions {
            record: RecordOptions::default(),
            warm_up: true,
            repeat: 1,
            baseline: BaselinePlacement::default(),
            doctor: true,
        }
    }
}

fn spread(mut v: Vec<f64>) -> Spread {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        // No value (no run had one): zeros, which JSON can hold (NaN not).
        return Spread {
            median: 0.0,
            min: 0.0,
            max: 0.0,
        };
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Spread {
        median,
        min: v[0],
        max: v[n - 1],
    }
}

impl InflationReport {
    /// [`measure_with`](Self::measure_with) with the default options: a
    /// warm-up run, then `work` recorded once on a one-worker pool on the
    /// first node (the baseline) and once on `pool`.
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
        InflationReport::measure_with(pool, &MeasureOptions::default(), work)
    }

    /// Measures `work`: a warm-up run on each pool (if asked), then
    /// `options.repeat` times the baseline run(s) and the parallel run, in
    /// turn; returns the last parallel result and the report of the run
    /// with the median speedup (with the spread over all runs when there
    /// were several). `work` runs `(1 + repeat) × (baselines + 1)` times;
    /// checking its results against each other is the caller's business.
    ///
    /// ```
    /// use terroir::report::{BaselinePlacement, InflationReport, MeasureOptions, RecordOptions};
    /// use terroir::ThreadPoolBuilder;
    ///
    /// let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let options = MeasureOptions {
    ///     record: RecordOptions::timestamps_only(),
    ///     repeat: 3,
    ///     baseline: BaselinePlacement::EachNode,
    ///     ..MeasureOptions::default()
    /// };
    /// let work = || terroir::join(|| terroir::label("a", || 1), || terroir::label("b", || 2));
    /// let (_, report) = InflationReport::measure_with(&pool, &options, work).unwrap();
    /// assert_eq!(report.repeats.as_ref().unwrap().runs, 3);
    /// assert!(report.baseline.is_some());
    /// ```
    ///
    /// For work that cannot be passed as a closure, record the runs with
    /// [`ThreadPool::start_recording`] and [`ThreadPool::stop_recording`]
    /// (the baselines on [`baseline_pools`](Self::baseline_pools)) and
    /// compare them with [`from_runs`](Self::from_runs).
    ///
    /// # Errors
    /// When a one-worker pool cannot be built.
    ///
    /// # Panics
    /// When `pool` records already (see [`ThreadPool::record`]).
    pub fn measure_with<F, R>(
        pool: &ThreadPool,
        options: &MeasureOptions,
        work: F,
    ) -> Result<(R, InflationReport), ThreadPoolBuildError>
    where
        F: Fn() -> R + Send + Sync,
        R: Send,
    {
        let ones = InflationReport::baseline_pools(pool, options.baseline)?;
        if options.warm_up {
            for one in &ones {
                one.install(&work);
            }
            pool.install(&work);
        }
        let repeat = options.repeat.max(1);
        let mut reports = Vec::with_capacity(repeat);
        let mut result = None;
        for _ in 0..repeat {
            let baselines: Vec<Run> = ones
                .iter()
                .map(|one| Run::from_recording(&one.record_with(&options.record, &work).1))
                .collect();
            let (r, parallel) = pool.record_with(&options.record, &work);
            result = Some(r);
            reports.push(InflationReport::from_runs(
                baselines,
                Run::from_recording(&parallel),
                options.baseline,
            ));
        }
        drop(ones);
        let mut report = InflationReport::median_of(reports);
        if options.doctor {
            report.doctor = Some(Doctor::check(Some(pool.topology())));
        }
        let result = result.expect("at least one run");
        Ok((result, report))
    }

    /// The report of the run with the median speedup among `reports` (runs
    /// of one measurement), with the spread over all of them when there
    /// are several.
    fn median_of(mut reports: Vec<InflationReport>) -> InflationReport {
        if reports.len() == 1 {
            return reports.pop().expect("one report");
        }
        let speedups: Vec<f64> = reports
            .iter()
            .map(|r| r.speedup().unwrap_or(f64::NAN))
            .collect();
        let median = spread(speedups.clone()).median;
        let shown = speedups
            .iter()
            .enumerate()
            .min_by(|a, b| (a.1 - median).abs().total_cmp(&(b.1 - median).abs()))
            .map_or(0, |(i, _)| i);
        let mut names: Vec<String> = reports
            .iter()
            .flat_map(|r| r.labels.iter().filter(|l| l.inflation.is_some()))
            .map(|l| l.label.clone())
            .collect();
        names.sort();
        names.dedup();
        let repeats = Repeats {
            runs: reports.len(),
            shown,
            speedup: spread(speedups),
            window_ns: spread(reports.iter().map(|r| r.window.len_ns() as f64).collect()),
            work_ratio: spread(
                reports
                    .iter()
                    .filter_map(|r| r.breakdown.work_ratio())
                    .collect(),
            ),
            labels: names
                .into_iter()
                .map(|name| LabelSpread {
                    inflation: spread(
                        reports
                            .iter()
                            .filter_map(|r| r.label(&name).and_then(|l| l.inflation))
                            .collect(),
                    ),
                    label: name,
                })
                .collect(),
        };
        let mut report = reports.swap_remove(shown);
        report.repeats = Some(repeats);
        report
    }

    /// The pool [`measure`](Self::measure) records its baseline on: one
    /// worker, with `pool`'s topology, policy and pinning (on the first
    /// node).
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
        pinned_as(ThreadPoolBuilder::new(), pool)
            .topology(pool.topology().clone())
            .policy(pool.policy())
            .num_threads(1)
            .build()
    }

    /// The one-worker pools a baseline `placement` runs on: one for
    /// [`BaselinePlacement::FirstNode`], one per node of `pool` (its
    /// topology restricted to that node's CPUs) for
    /// [`BaselinePlacement::EachNode`].
    ///
    /// # Errors
    /// When a pool cannot be built.
    pub fn baseline_pools(
        pool: &ThreadPool,
        placement: BaselinePlacement,
    ) -> Result<Vec<ThreadPool>, ThreadPoolBuildError> {
        match placement {
            BaselinePlacement::FirstNode => Ok(vec![InflationReport::baseline_pool(pool)?]),
            BaselinePlacement::EachNode => pool
                .topology()
                .nodes()
                .iter()
                .map(|node| {
                    let topology = pool
                        .topology()
                        .restrict(node.cpus())
                        .map_err(ThreadPoolBuildError::from)?;
                    pinned_as(ThreadPoolBuilder::new(), pool)
                        .topology(topology)
                        .policy(pool.policy())
                        .num_threads(1)
                        .build()
                })
                .collect(),
        }
    }
}

/// `builder` pinning its workers as `pool` does (whether, and how).
fn pinned_as(builder: ThreadPoolBuilder, pool: &ThreadPool) -> ThreadPoolBuilder {
    match pool.pinning() {
        Some(pinning) => builder.pinning(pinning),
        None => builder.pin(false),
    }
}
