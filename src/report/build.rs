//! Building a report from runs: per-label statistics, the local/remote
//! split, the breakdowns over each run's window, per worker and per node,
//! the node × data-node matrix, and the warnings.

use std::collections::BTreeMap;

use super::run::{Run, Span, STEAL_LEVELS, UNLABELLED};
use super::*;

/// The counter whose deltas are CPU time.
const TASK_CLOCK: &str = "task-clock-ns";

/// Below this share of wall time on a CPU, tasks or workers were
/// preempted.
const CPU_SHARE_WARN: f64 = 0.90;

/// Wall-time and CPU-time inflation further apart than this (relative) are
/// reported as disagreeing.
const DISAGREE: f64 = 0.10;

/// Fewest counted tasks per run for a CPU-time comparison.
const MIN_COUNTED: u64 = 8;

/// One label's tasks in one run (or a group of them).
#[derive(Default)]
struct Acc {
    count: u64,
    total: u64,
    /// Tasks whose counters were read, and the sums per counter name.
    counted: u64,
    counters: BTreeMap<String, u64>,
    declared: u64,
    local: (u64, u64, u64),
    remote: (u64, u64, u64),
    bins: BTreeMap<u32, u64>,
}

impl Acc {
    fn add(&mut self, run: &Run, t: &Span) {
        self.count += 1;
        self.total += t.own_ns;
        if !t.counters.is_empty() {
            self.counted += 1;
            for (name, v) in run.counters.iter().zip(&t.counters) {
                *self.counters.entry(name.clone()).or_default() += v;
            }
        }
        if let Some(local) = run.is_local(t) {
            self.declared += 1;
            let g = if local {
                &mut self.local
            } else {
                &mut self.remote
            };
            g.0 += 1;
            g.1 += t.own_ns;
            g.2 += t.bytes;
        }
        *self.bins.entry(bin(t.own_ns)).or_default() += 1;
    }

    fn stats(&self) -> RunStats {
        let cpu_mean_ns = self
            .counters
            .get(TASK_CLOCK)
            .filter(|_| self.counted > 0)
            .map(|&c| c as f64 / self.counted as f64);
        RunStats {
            count: self.count,
            total_ns: self.total,
            mean_ns: if self.count > 0 {
                self.total as f64 / self.count as f64
            } else {
                0.0
            },
            cpu_mean_ns,
            counted: self.counted,
        }
    }
}

/// The histogram bin of a duration: `floor(log2(ns))`.
fn bin(ns: u64) -> u32 {
    63 - ns.max(1).leading_zeros()
}

/// Where a run's window's thread time went: (work, overhead, idle), with
/// waits clipped to the window and the recording's own cost (overhead
/// outside waits) counted in full.
fn parts_in(run: &Run, (s, e): (u64, u64), worker: Option<u32>) -> (u64, u64, u64) {
    let mine = |w: u32| worker.is_none_or(|x| x == w);
    let work: u64 = run
        .tasks
        .iter()
        .filter(|t| mine(t.worker))
        .map(|t| t.own_ns)
        .sum();
    let (mut over, mut idle, mut wait_over) = (0f64, 0f64, 0u64);
    for w in run.waits.iter().filter(|w| mine(w.worker)) {
        wait_over += w.overhead_ns;
        let len = w.end_ns.saturating_sub(w.start_ns);
        let overlap = w.end_ns.min(e).saturating_sub(w.start_ns.max(s));
        if len == 0 || overlap == 0 {
            continue;
        }
        let f = overlap as f64 / len as f64;
        let o = w.overhead_ns.min(len) as f64 * f;
        over += o;
        idle += overlap as f64 - o;
    }
    let total_over: u64 = run
        .workers
        .iter()
        .enumerate()
        .filter(|(i, _)| mine(*i as u32))
        .map(|(_, w)| w.overhead_ns)
        .sum();
    let recording_cost = total_over.saturating_sub(wait_over);
    (work, over as u64 + recording_cost, idle as u64)
}

fn breakdown(run: &Run, window: (u64, u64), seq: Option<u64>) -> Breakdown {
    let (work, overhead, idle) = parts_in(run, window, None);
    let total = run.threads as u64 * window.1.saturating_sub(window.0);
    Breakdown {
        total_ns: total,
        work_ns: work,
        sequential_work_ns: seq,
        inflation_ns: seq.map(|s| work as i64 - s as i64),
        overhead_ns: overhead,
        idle_ns: idle,
        unaccounted_ns: total as i64 - (work + overhead + idle) as i64,
    }
}

/// The tasks of `runs` that stand for one sequential execution: all of the
/// first run's, or, per node, each task from the run on its data's node
/// (tasks without data, or with data on a node no run was on, from the
/// first run).
fn reference(runs: &[Run], per_node: bool) -> Vec<(&Run, &Span)> {
    let run_node = |r: &Run| r.worker_nodes.first().copied();
    let covered: Vec<u32> = runs.iter().filter_map(run_node).collect();
    let mut out = Vec::new();
    for (k, run) in runs.iter().enumerate() {
        if !per_node && k > 0 {
            break;
        }
        let here = run_node(run);
        for t in &run.tasks {
            let take = if !per_node {
                true
            } else {
                match t.data_node {
                    Some(d) if covered.contains(&d) => Some(d) == here,
                    _ => k == 0,
                }
            };
            if take {
                out.push((run, t));
            }
        }
    }
    out
}

fn group(g: (u64, u64, u64), base_mean: Option<f64>) -> GroupStats {
    let mean = if g.0 > 0 {
        g.1 as f64 / g.0 as f64
    } else {
        0.0
    };
    GroupStats {
        count: g.0,
        mean_ns: mean,
        inflation: base_mean.filter(|&b| b > 0.0 && g.0 > 0).map(|b| mean / b),
        bytes: g.2,
    }
}

impl InflationReport {
    /// Compares `baseline` (the workload on one worker) with `parallel`
    /// (the same workload on the pool under study).
    pub fn new(baseline: &Recording, parallel: &Recording) -> InflationReport {
        InflationReport::from_runs(
            vec![Run::from_recording(baseline)],
            Run::from_recording(parallel),
            BaselinePlacement::FirstNode,
        )
    }

    /// The parallel run alone, without a baseline: work, overhead, idle,
    /// the locality story, but no inflation.
    pub fn parallel_only(parallel: &Recording) -> InflationReport {
        InflationReport::from_runs(
            Vec::new(),
            Run::from_recording(parallel),
            BaselinePlacement::FirstNode,
        )
    }

    /// Compares `baselines` (one-worker runs of the workload: one, or one
    /// per node with [`BaselinePlacement::EachNode`]) with `parallel`.
    pub fn from_runs(
        baselines: Vec<Run>,
        parallel: Run,
        placement: BaselinePlacement,
    ) -> InflationReport {
        let per_node = placement == BaselinePlacement::EachNode && baselines.len() > 1;
        let refs = reference(&baselines, per_node);
        let mut b: BTreeMap<String, Acc> = BTreeMap::new();
        for (run, t) in &refs {
            b.entry(run.label_of(t).to_string())
                .or_default()
                .add(run, t);
        }
        let mut p: BTreeMap<String, Acc> = BTreeMap::new();
        for t in &parallel.tasks {
            p.entry(parallel.label_of(t).to_string())
                .or_default()
                .add(&parallel, t);
        }
        let has_baseline = !baselines.is_empty();
        let mut names: Vec<&String> = b.keys().chain(p.keys()).collect();
        names.sort();
        names.dedup();
        let empty = Acc::default();
        let mut labels: Vec<LabelRow> = names
            .into_iter()
            .map(|name| {
                let (ab, ap) = (b.get(name).unwrap_or(&empty), p.get(name).unwrap_or(&empty));
                let (sb, sp) = (ab.stats(), ap.stats());
                // Unlabelled jobs are not comparable task by task: the
                // parallel run cuts the same work into more, smaller
                // stolen pieces.
                let comparable = name != UNLABELLED;
                let base_mean =
                    (comparable && sb.count > 0 && sb.mean_ns > 0.0).then_some(sb.mean_ns);
                let inflation = base_mean.filter(|_| sp.count > 0).map(|m| sp.mean_ns / m);
                let cpu_inflation = match (sb.cpu_mean_ns, sp.cpu_mean_ns) {
                    (Some(x), Some(y)) if comparable && x > 0.0 => Some(y / x),
                    _ => None,
                };
                let mut all: Vec<&String> = ab.counters.keys().chain(ap.counters.keys()).collect();
                all.sort();
                all.dedup();
                let per_task = |a: &Acc, c: &str| -> Option<f64> {
                    (a.counted > 0)
                        .then(|| a.counters.get(c).map(|&v| v as f64 / a.counted as f64))
                        .flatten()
                };
                let (local, remote) = (group(ap.local, base_mean), group(ap.remote, base_mean));
                let mut bins: Vec<u32> = ab.bins.keys().chain(ap.bins.keys()).copied().collect();
                bins.sort_unstable();
                bins.dedup();
                LabelRow {
                    label: name.clone(),
                    baseline: sb,
                    parallel: sp,
                    inflation,
                    cpu_inflation,
                    counters: all
                        .into_iter()
                        .map(|c| CounterRow {
                            counter: c.clone(),
                            baseline: per_task(ab, c),
                            parallel: per_task(ap, c),
                        })
                        .collect(),
                    locality: (ap.declared > 0).then(|| ap.local.0 as f64 / ap.declared as f64),
                    remote_extra_ns: (local.count > 0 && remote.count > 0)
                        .then_some(remote.count as f64 * (remote.mean_ns - local.mean_ns)),
                    local,
                    remote,
                    histogram: Histogram {
                        baseline: bins.iter().map(|k| *ab.bins.get(k).unwrap_or(&0)).collect(),
                        parallel: bins.iter().map(|k| *ap.bins.get(k).unwrap_or(&0)).collect(),
                        bins,
                    },
                }
            })
            .collect();
        labels.sort_by_key(|r| std::cmp::Reverse(r.parallel.total_ns));

        let seq: Option<u64> = has_baseline.then(|| refs.iter().map(|(_, t)| t.own_ns).sum());
        let window = parallel.window();
        let breakdown = breakdown(&parallel, window, seq);
        let baseline = baselines.first().map(|first| {
            let w = first.window();
            let runs: Vec<BaselineRun> = baselines
                .iter()
                .map(|r| {
                    let (s, e) = r.window();
                    BaselineRun {
                        node: r.worker_nodes.first().copied().unwrap_or(0),
                        cpu: r.worker_cpus.first().copied().flatten(),
                        window_ns: e - s,
                    }
                })
                .collect();
            let placement = placement_words(&runs, per_node);
            let first_seq = first.tasks.iter().map(|t| t.own_ns).sum();
            Baseline {
                breakdown: breakdown_of_baseline(first, w, first_seq),
                runs,
                per_node,
                placement,
            }
        });

        let means: BTreeMap<&str, f64> = labels
            .iter()
            .filter(|r| r.label != UNLABELLED && r.baseline.count > 0)
            .map(|r| (r.label.as_str(), r.baseline.mean_ns))
            .collect();
        let unlabelled_ratio = labels
            .iter()
            .find(|r| r.label == UNLABELLED && r.parallel.total_ns > 0 && r.baseline.count > 0)
            .map(|r| r.baseline.total_ns as f64 / r.parallel.total_ns as f64);
        let workers = worker_rows(
            &parallel,
            window,
            has_baseline.then_some((&means, unlabelled_ratio)),
        );
        let nodes = node_rows(&parallel, &workers);

        let mut cells: BTreeMap<(u32, u32), (u64, u64)> = BTreeMap::new();
        for t in parallel.tasks.iter().filter(|t| parallel.is_unlabelled(t)) {
            if let Some(d) = t.data_node {
                let c = cells.entry((parallel.node_of(t), d)).or_default();
                c.0 += 1;
                c.1 += t.bytes;
            }
        }
        let matrix = cells
            .into_iter()
            .map(|((node, data_node), (tasks, bytes))| MatrixCell {
                node,
                data_node,
                tasks,
                bytes,
            })
            .collect();
        let steals = STEAL_LEVELS
            .iter()
            .map(|l| StealCount {
                level: l.name().to_string(),
                count: parallel
                    .steals
                    .iter()
                    .filter(|s| s.level == l.name())
                    .count() as u64,
            })
            .collect();

        let mut counters: Vec<String> = parallel
            .counters
            .iter()
            .filter(|c| !has_baseline || baselines.iter().all(|b| b.counters.contains(c)))
            .cloned()
            .collect();
        counters.dedup();
        let mut unavailable: Vec<String> = baselines
            .iter()
            .chain([&parallel])
            .flat_map(|r| r.unavailable.iter().cloned())
            .collect();
        unavailable.sort();
        unavailable.dedup();
        let mut counter_method: Vec<String> = baselines
            .iter()
            .enumerate()
            .map(|(k, r)| format!("{}: {}", run_name(&baselines, k), r.counter_method))
            .collect();
        counter_method.push(format!("parallel run: {}", parallel.counter_method));

        let mut report = InflationReport {
            threads: parallel.threads,
            policy: parallel.policy.clone(),
            window: Window {
                recorded_ns: parallel.wall_ns,
                start_ns: window.0,
                end_ns: window.1,
            },
            baseline,
            labels,
            breakdown,
            workers,
            nodes,
            matrix,
            steals,
            pushes: parallel.pushes.len() as u64,
            remote_pushes: parallel.pushes.iter().filter(|p| p.remote).count() as u64,
            counters,
            unavailable,
            counter_method,
            warnings: Vec::new(),
            doctor: None,
            repeats: None,
            parallel_run: parallel,
            baseline_runs: baselines,
        };
        report.warnings = report.find_warnings();
        report
    }

    /// What the reader should not take at face value.
    fn find_warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        let runs: Vec<(String, &Run)> = self
            .baseline_runs
            .iter()
            .enumerate()
            .map(|(k, r)| (run_name(&self.baseline_runs, k), r))
            .chain([("the parallel run".to_string(), &self.parallel_run)])
            .collect();
        for (name, run) in &runs {
            // Tasks: task-clock against wall-clock own time.
            if let Some(i) = run.counter(TASK_CLOCK) {
                let (mut cpu, mut wall, mut n) = (0u64, 0u64, 0u64);
                for t in run
                    .tasks
                    .iter()
                    .filter(|t| !run.is_unlabelled(t) && !t.counters.is_empty())
                {
                    cpu += t.counters.get(i).copied().unwrap_or(0);
                    wall += t.own_ns;
                    n += 1;
                }
                let share = cpu as f64 / wall.max(1) as f64;
                if n >= MIN_COUNTED && share < CPU_SHARE_WARN {
                    out.push(format!(
                        "{name}: its labelled tasks were on a CPU for {:.0} % of their wall-clock \
                         time (task-clock, {n} tasks): the workers were preempted (another \
                         process, or more threads than CPUs), so wall-clock times overstate what \
                         the tasks cost",
                        share * 100.0
                    ));
                }
            }
            // Workers: thread CPU time against busy time.
            for (w, t) in run.workers.iter().enumerate() {
                let busy = t.work_ns + t.overhead_ns;
                let Some(cpu) = t.cpu_ns else { continue };
                if busy >= 1_000_000 && (cpu as f64) < CPU_SHARE_WARN * busy as f64 {
                    out.push(format!(
                        "{name}: worker {w}'s thread ran on a CPU for {:.1} ms of the {:.1} ms it \
                         was busy ({:.0} %): it was preempted, and its tasks' wall-clock times \
                         include the wait",
                        cpu as f64 / 1e6,
                        busy as f64 / 1e6,
                        cpu as f64 / busy as f64 * 100.0
                    ));
                }
            }
        }
        for r in &self.labels {
            if let (Some(wall), Some(cpu)) = (r.inflation, r.cpu_inflation) {
                let enough = r.baseline.counted >= MIN_COUNTED && r.parallel.counted >= MIN_COUNTED;
                if enough && (wall / cpu - 1.0).abs() > DISAGREE {
                    out.push(format!(
                        "label {:?}: wall-time inflation {wall:.3} but CPU-time (task-clock) \
                         inflation {cpu:.3}: the difference is time its tasks spent off the CPU \
                         in one run (preemption), not work",
                        r.label
                    ));
                }
            }
        }
        if let Some(b) = &self.baseline {
            if !b.per_node {
                let first = &self.baseline_runs[0];
                let remote = first
                    .tasks
                    .iter()
                    .filter(|t| !first.is_unlabelled(t) && first.is_local(t) == Some(false))
                    .count();
                if remote > 0 {
                    out.push(format!(
                        "{remote} of the baseline's labelled tasks had their data on another node \
                         than its worker's (node {}): their baseline ran remote too; measure with \
                         BaselinePlacement::EachNode to give every task a local baseline",
                        b.runs[0].node
                    ));
                }
            }
        }
        out
    }
}

/// How a baseline run is named in warnings and notes.
fn run_name(runs: &[Run], k: usize) -> String {
    let node = runs[k].worker_nodes.first().copied().unwrap_or(0);
    if runs.len() == 1 {
        format!("the baseline (node {node})")
    } else {
        format!("the baseline on node {node}")
    }
}

fn placement_words(runs: &[BaselineRun], per_node: bool) -> String {
    let one = |r: &BaselineRun| match r.cpu {
        Some(c) => format!("node {} (CPU {c}, pinned)", r.node),
        None => format!("node {} (not bound to one CPU)", r.node),
    };
    if per_node {
        let all: Vec<String> = runs.iter().map(one).collect();
        format!(
            "one worker on each node in turn: {}; each task's baseline is from the run on its \
             data's node (tasks without data: the first run); speedup against the first run",
            all.join(", ")
        )
    } else {
        format!(
            "one worker on {}; tasks whose data is on other nodes run remote in it too",
            runs.first().map(one).unwrap_or_default()
        )
    }
}

fn breakdown_of_baseline(run: &Run, window: (u64, u64), seq: u64) -> Breakdown {
    breakdown(run, window, Some(seq))
}

/// Per worker of `run`, over `window`; with a baseline, each task's
/// sequential-equivalent time is its label's baseline mean (unlabelled jobs:
/// their own time × the unlabelled work's baseline ÷ parallel ratio; labels
/// the baseline lacks: their own time).
fn worker_rows(
    run: &Run,
    window: (u64, u64),
    base: Option<(&BTreeMap<&str, f64>, Option<f64>)>,
) -> Vec<PartRow> {
    (0..run.threads)
        .map(|w| {
            let w32 = w as u32;
            let (work, overhead, idle) = parts_in(run, window, Some(w32));
            let tasks = run.tasks.iter().filter(|t| t.worker == w32);
            let seq = base.map(|(means, ratio)| {
                tasks
                    .clone()
                    .map(|t| {
                        if run.is_unlabelled(t) {
                            ratio.map_or(t.own_ns as f64, |r| t.own_ns as f64 * r)
                        } else {
                            means
                                .get(run.label_of(t))
                                .copied()
                                .unwrap_or(t.own_ns as f64)
                        }
                    })
                    .sum::<f64>() as u64
            });
            let totals = run.workers.get(w).copied().unwrap_or_default();
            PartRow {
                worker: Some(w),
                node: run.worker_nodes.get(w).copied().unwrap_or(0),
                cpu: run.worker_cpus.get(w).copied().flatten(),
                workers: 1,
                tasks: tasks.count() as u64,
                work_ns: work,
                sequential_work_ns: seq,
                inflation_ns: seq.map(|s| work as i64 - s as i64),
                overhead_ns: overhead,
                idle_ns: idle,
                cpu_ns: totals.cpu_ns,
                busy_ns: totals.work_ns + totals.overhead_ns,
            }
        })
        .collect()
}

fn node_rows(run: &Run, workers: &[PartRow]) -> Vec<PartRow> {
    let mut nodes: Vec<u32> = run.nodes.clone();
    for w in workers {
        if !nodes.contains(&w.node) {
            nodes.push(w.node);
        }
    }
    nodes
        .into_iter()
        .filter_map(|n| {
            let mine: Vec<&PartRow> = workers.iter().filter(|w| w.node == n).collect();
            if mine.is_empty() {
                return None;
            }
            let sum = |f: fn(&PartRow) -> u64| mine.iter().map(|w| f(w)).sum::<u64>();
            let seq = mine
                .iter()
                .map(|w| w.sequential_work_ns)
                .sum::<Option<u64>>();
            let cpu = mine.iter().map(|w| w.cpu_ns).sum::<Option<u64>>();
            let work = sum(|w| w.work_ns);
            Some(PartRow {
                worker: None,
                node: n,
                cpu: None,
                workers: mine.len(),
                tasks: sum(|w| w.tasks),
                work_ns: work,
                sequential_work_ns: seq,
                inflation_ns: seq.map(|s| work as i64 - s as i64),
                overhead_ns: sum(|w| w.overhead_ns),
                idle_ns: sum(|w| w.idle_ns),
                cpu_ns: cpu,
                busy_ns: sum(|w| w.busy_ns),
            })
        })
        .collect()
}
