//! Honesty checks of the inflation report: an injected inflation factor is
//! found, a sequential section shows up as idle time, the breakdown adds up,
//! and counters that cannot count are named, never printed as zeros.

use std::hint::black_box;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use terroir::report::InflationReport;
use terroir::report::{Counter, CounterSampling, RecordOptions};
use terroir::{label, ThreadPool, ThreadPoolBuilder};

/// Busy for `d` of wall-clock time (spinning, not sleeping). The honesty
/// checks test the recorder's accounting, so tasks must last exactly what
/// the test says; a fixed amount of work would not, since on this VM two
/// vCPUs running at once slow each other down (real inflation, which the
/// report would rightly show, but which would blur the injected factor).
fn busy_for(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// A fixed amount of work, about `units` thousand multiply-adds.
fn spin_units(units: u64) -> u64 {
    let mut x = 0u64;
    for i in 0..units * 1000 {
        x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
    }
    x
}

/// Units of `spin_units` per `d`, measured here.
fn calibrate(d: Duration) -> u64 {
    let t = Instant::now();
    black_box(spin_units(200));
    let per_unit = t.elapsed().as_secs_f64() / 200.0;
    ((d.as_secs_f64() / per_unit) as u64).max(1)
}

/// The checks time tasks against the wall clock: they run one at a time,
/// not beside each other's pools on this machine's few CPUs.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn pool(threads: usize) -> ThreadPool {
    ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

#[test]
fn an_injected_inflation_factor_is_reported() {
    let _serial = serial();
    const FACTOR: u32 = 3;
    let unit = Duration::from_micros(200);
    // Tasks on any worker but worker 0 do FACTOR times the work: on the
    // one-worker baseline every task runs on worker 0. Each task also
    // times itself: on a shared machine preemption stretches tasks, and the
    // truth the report must match is what the tasks took, not what they
    // were meant to take.
    let felt = Mutex::new(Vec::new());
    let work = || {
        terroir::scope(|s| {
            for _ in 0..200 {
                s.spawn(|_| {
                    let f = if terroir::current_thread_index() == Some(0) {
                        1
                    } else {
                        FACTOR
                    };
                    let t = Instant::now();
                    label("inflating", || busy_for(unit * f));
                    felt.lock()
                        .unwrap()
                        .push((f == 1, t.elapsed().as_nanos() as f64));
                });
            }
        })
    };
    let mean = |v: &[(bool, f64)]| v.iter().map(|&(_, ns)| ns).sum::<f64>() / v.len() as f64;
    let one = pool(1);
    let par = pool(2);
    let (_, base) = one.record_with(&RecordOptions::timestamps_only(), work);
    let felt_base = mean(&std::mem::take(&mut *felt.lock().unwrap()));
    let (_, rec) = par.record_with(&RecordOptions::timestamps_only(), work);
    let felt_par_tasks = std::mem::take(&mut *felt.lock().unwrap());
    let felt_par = mean(&felt_par_tasks);
    let report = InflationReport::new(&base, &rec);
    let off_zero = rec
        .tasks
        .iter()
        .filter(|t| t.label.as_str() == "inflating" && t.worker != 0)
        .count();
    let expected = felt_par / felt_base;
    let got = report.label("inflating").unwrap().inflation.unwrap();
    // 15 %: under a load average of 12 the report read 1.986 where the
    // tasks measured 2.218 (preemption between a task's own clock reads
    // and the recorder's); an injected factor of 3 misreported as 1 still
    // fails by far.
    assert!(
        (got - expected).abs() <= 0.15 * expected,
        "inflation ratio {got:.3}, the tasks measured {expected:.3} (factor {FACTOR} on \
         {off_zero} of 200 tasks)\n{report}"
    );
    // And the injection shows in the recording: the tasks off worker 0
    // took about as many times longer than those on it as they measured
    // themselves (FACTOR on a quiet machine; preemption on a loaded one
    // stretches either side, and the recording must show what happened).
    let mean_on = |zero: bool| {
        let v: Vec<u64> = rec
            .tasks
            .iter()
            .filter(|t| t.label.as_str() == "inflating" && (t.worker == 0) == zero)
            .map(|t| t.own_ns)
            .collect();
        v.iter().sum::<u64>() as f64 / v.len().max(1) as f64
    };
    let felt_on = |zero: bool| {
        let v: Vec<(bool, f64)> = felt_par_tasks
            .iter()
            .copied()
            .filter(|&(z, _)| z == zero)
            .collect();
        mean(&v)
    };
    if off_zero > 0 && off_zero < 200 {
        let seen = mean_on(false) / mean_on(true);
        let felt_ratio = felt_on(false) / felt_on(true);
        assert!(
            (seen - felt_ratio).abs() <= 0.15 * felt_ratio,
            "the recording says tasks off worker 0 took {seen:.2}x as long as on it, \
             the tasks measured {felt_ratio:.2}x (injected {FACTOR}x)"
        );
    }
}

#[test]
fn a_sequential_section_is_idle_time() {
    let _serial = serial();
    let section = Duration::from_millis(60);
    let par = pool(2);
    let one = pool(1);
    // One task alone for `section`, then two tasks of `section` each. The
    // tasks note when they ran, to know the truth: one worker idles through
    // the section, and each waits for the other at the start and end of
    // the pair (a parked worker takes a moment to wake).
    // Up to three attempts: on a loaded machine the main thread can be
    // late to stop the recording, which adds idle time no task saw.
    let attempt = || -> Result<(), String> {
        let marks = Mutex::new(Vec::new());
        let work = || {
            let mark = |name: &'static str| {
                let t = Instant::now();
                busy_for(section);
                marks.lock().unwrap().push((name, t, Instant::now()));
            };
            label("alone", || mark("alone"));
            terroir::join(
                || label("pair", || mark("pair")),
                || label("pair", || mark("pair")),
            );
        };
        let (_, base) = one.record_with(&RecordOptions::timestamps_only(), work);
        marks.lock().unwrap().clear();
        let (_, rec) = par.record_with(&RecordOptions::timestamps_only(), work);
        let m = marks.into_inner().unwrap();
        let span = |(_, a, b): &(&str, Instant, Instant)| b.duration_since(*a).as_nanos() as f64;
        let gap = |x: Instant, y: Instant| {
            if x > y {
                x.duration_since(y)
            } else {
                y.duration_since(x)
            }
            .as_nanos() as f64
        };
        let pairs: Vec<_> = m.iter().filter(|x| x.0 == "pair").collect();
        assert_eq!(pairs.len(), 2);
        let truth = span(m.iter().find(|x| x.0 == "alone").unwrap())
            + gap(pairs[0].1, pairs[1].1)
            + gap(pairs[0].2, pairs[1].2);
        let report = InflationReport::new(&base, &rec);
        let b = &report.breakdown;
        let expected = truth / b.total_ns as f64;
        let got = b.idle_ns as f64 / b.total_ns as f64;
        if (got - expected).abs() <= 0.10 * expected {
            return Ok(());
        }
        Err(format!(
            "idle share {got:.3}, expected {expected:.3} (one of two workers idle through the \
             sequential section)\n{report}"
        ))
    };
    let mut failures = Vec::new();
    for _ in 0..3 {
        match attempt() {
            Ok(()) => return,
            Err(e) => failures.push(e),
        }
    }
    panic!("three attempts failed:\n{}", failures.join("\n"));
}

#[test]
fn the_breakdown_adds_up() {
    let _serial = serial();
    let units = calibrate(Duration::from_micros(50));
    let par = pool(2);
    let one = pool(1);
    let work = || {
        terroir::scope(|s| {
            for i in 0..400u64 {
                s.spawn_labeled("leaf", move |_| {
                    black_box(spin_units(units + i % 7));
                });
            }
        })
    };
    // Work, overhead and idle are timed by the workers; a worker
    // descheduled between two of its timestamps leaves that time in no
    // part. On a loaded machine (a full `cargo test` beside other builds)
    // one run in a few was 11.6 % off, so: the best of three attempts,
    // each within 2 % (an accounting that loses time fails all three).
    let mut failures = Vec::new();
    let report = loop {
        let (_, base) = one.record(work);
        let (_, rec) = par.record(work);
        let report = InflationReport::new(&base, &rec);
        let b = report.breakdown;
        assert_eq!(
            b.sequential_work_ns.unwrap() as i64 + b.inflation_ns.unwrap(),
            b.work_ns as i64
        );
        let parts = b.work_ns as i64 + b.overhead_ns as i64 + b.idle_ns as i64;
        let off = (b.total_ns as i64 - parts).abs() as f64 / b.total_ns as f64;
        if off <= 0.02 {
            break report;
        }
        failures.push(format!(
            "work + overhead + idle is {:.1} % off p x wall\n{report}",
            off * 100.0
        ));
        assert!(
            failures.len() < 3,
            "three attempts failed:\n{}",
            failures.join("\n")
        );
    };
    assert_eq!(report.label("leaf").unwrap().parallel.count, 400);
    assert_eq!(report.label("leaf").unwrap().baseline.count, 400);
    // Every output renders and names the label.
    assert!(report.to_string().contains("leaf"));
    assert!(
        report.to_csv().lines().nth(1).unwrap().starts_with("leaf,")
            || report.to_csv().contains("\nleaf,")
    );
    #[cfg(feature = "report")]
    {
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).expect("valid JSON");
        assert_eq!(json["threads"], 2);
        let trace: serde_json::Value =
            serde_json::from_str(&report.to_chrome_trace()).expect("valid trace JSON");
        let slices = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X" && e["name"] == "leaf")
            .filter(|e| e["pid"].as_u64().unwrap() < 1000)
            .count();
        assert_eq!(
            slices, 400,
            "one trace slice per leaf task of the parallel run"
        );
    }
    let svg = report.to_svg();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("leaf on worker").count(), 400);
}

#[test]
fn counters_that_cannot_count_are_named_not_zeroed() {
    let _serial = serial();
    let par = pool(2);
    let options = RecordOptions {
        counters: vec![Counter::Cycles, Counter::TaskClock, Counter::PageFaults],
        sampling: CounterSampling::EveryTask,
    };
    let (_, rec) = par.record_with(&options, || {
        terroir::join(
            || {
                label("touch", || {
                    vec![1u8; 8 << 20].iter().map(|&b| b as u64).sum::<u64>()
                })
            },
            || {
                label("touch", || {
                    vec![1u8; 8 << 20].iter().map(|&b| b as u64).sum::<u64>()
                })
            },
        )
    });
    for c in &options.counters {
        let counted = rec.counters.contains(c);
        let named = rec
            .unavailable
            .iter()
            .any(|u| u.counter == *c && !u.reason.is_empty());
        assert!(
            counted ^ named,
            "{c}: counted {counted}, named unavailable {named}: {rec:?}"
        );
    }
    // Whatever counted, counted something on these tasks.
    for (i, c) in rec.counters.iter().enumerate() {
        let total: u64 = rec
            .tasks
            .iter()
            .filter(|t| t.label.as_str() == "touch")
            .map(|t| t.counters[i])
            .sum();
        assert!(total > 0, "{c} counted 0 on tasks that touched 16 MiB");
    }
    let report = InflationReport::new(&rec, &rec);
    for u in &rec.unavailable {
        assert!(
            report.to_string().contains(&u.to_string()),
            "the report does not name unavailable {u}"
        );
    }
}

/// Two workers on a described topology of two nodes, one CPU each.
fn two_nodes(policy: terroir::Policy) -> ThreadPool {
    let topo = terroir::numa::Topology::builder()
        .nodes(2)
        .l3_per_node(1)
        .pus_per_l3(1)
        .build()
        .unwrap();
    ThreadPoolBuilder::new()
        .topology(topo)
        .num_threads(2)
        .policy(policy)
        .build()
        .unwrap()
}

/// The node (OS number) of the worker running the caller, in `pool`.
fn my_node(pool: &ThreadPool) -> u32 {
    let w = terroir::current_thread_index().expect("on a worker");
    let n = pool.worker_node_index(w).unwrap();
    pool.topology().nodes()[n].id().os_index()
}

#[test]
fn remote_inflation_shows_in_the_remote_group_only() {
    use terroir::numa::NodeId;
    use terroir::report::{BaselinePlacement, MeasureOptions};
    use terroir::{Access, Place};
    let _serial = serial();
    const FACTOR: u32 = 3;
    let unit = Duration::from_micros(150);
    // 200 tasks, their data alternately on node 0 and node 1; a task
    // running off its data's node takes FACTOR times as long (a stand-in
    // for remote memory). Hierarchical ignores places, so both workers run
    // tasks of both nodes. Each task notes what it took, local or not, in
    // which pool: the truth the report must match.
    let par = two_nodes(terroir::Policy::Hierarchical);
    let felt = Mutex::new(Vec::new());
    let work = |pool: &ThreadPool| {
        terroir::scope(|s| {
            for i in 0..200u32 {
                let node = NodeId::new(i % 2);
                let place = Place::pushed([Access::new(Some(node), 1 << 20, false)]);
                let felt = &felt;
                s.spawn_on(&place, move |_| {
                    let local = my_node(pool) == node.os_index();
                    let t = Instant::now();
                    label("cell", || busy_for(unit * if local { 1 } else { FACTOR }));
                    felt.lock()
                        .unwrap()
                        .push((local, t.elapsed().as_nanos() as f64));
                });
            }
        })
    };
    let options = MeasureOptions {
        record: RecordOptions::timestamps_only(),
        baseline: BaselinePlacement::EachNode,
        warm_up: false,
        doctor: false,
        ..MeasureOptions::default()
    };
    // The baseline pools are this pool's topology restricted to each node:
    // `work` asks the pool it runs in for its worker's node.
    let ones = InflationReport::baseline_pools(&par, BaselinePlacement::EachNode).unwrap();
    assert_eq!(ones.len(), 2);
    let mut baselines = Vec::new();
    let mut felt_base = Vec::new();
    for one in &ones {
        let (_, rec) = one.record_with(&options.record, || work(one));
        baselines.push(terroir::report::Run::from_recording(&rec));
        felt_base.extend(std::mem::take(&mut *felt.lock().unwrap()));
    }
    let (_, rec) = par.record_with(&options.record, || work(&par));
    let felt_par = std::mem::take(&mut *felt.lock().unwrap());
    let report = InflationReport::from_runs(
        baselines,
        terroir::report::Run::from_recording(&rec),
        BaselinePlacement::EachNode,
    );
    let mean = |v: &[(bool, f64)], local: bool| {
        let x: Vec<f64> = v.iter().filter(|p| p.0 == local).map(|p| p.1).collect();
        x.iter().sum::<f64>() / x.len().max(1) as f64
    };
    // Every baseline task that the report keeps ran local: its reference
    // is the local time.
    let base_local = mean(&felt_base, true);
    let row = report.label("cell").expect("the label");
    assert_eq!(
        row.baseline.count, 200,
        "one local baseline per task\n{report}"
    );
    assert_eq!(row.local.count + row.remote.count, 200);
    assert!(row.local.count > 0 && row.remote.count > 0, "{report}");
    let truth_local = mean(&felt_par, true) / base_local;
    let truth_remote = mean(&felt_par, false) / base_local;
    let got_local = row.local.inflation.unwrap();
    let got_remote = row.remote.inflation.unwrap();
    assert!(
        (got_local - truth_local).abs() <= 0.10 * truth_local,
        "local group: inflation {got_local:.3}, the tasks measured {truth_local:.3}\n{report}"
    );
    assert!(
        (got_remote - truth_remote).abs() <= 0.10 * truth_remote,
        "remote group: inflation {got_remote:.3}, the tasks measured {truth_remote:.3}\n{report}"
    );
    // The injection shows where it was put: the remote tasks against the
    // local ones. (Not against 1.0: on a loaded machine a few tasks are
    // preempted for milliseconds in either group, which the tasks' own
    // times and the report both count, and which raises both means.)
    // When the report itself says a worker had the CPU for only part of
    // its busy time, the means carry milliseconds of waiting that land in
    // either group by chance, and the factor cannot be read back (seen at
    // a load average of 12 on this 2-vCPU machine: 5.8 for 3, with both
    // groups still within 10 % of what the tasks measured).
    let ratio = got_remote / got_local;
    if report.warnings.iter().any(|w| w.contains("preempted")) {
        eprintln!("remote / local inflation {ratio:.2}, injected {FACTOR}: preempted, not checked");
    } else {
        assert!(
            ratio > FACTOR as f64 * 0.67 && ratio < FACTOR as f64 * 1.5,
            "remote / local inflation {ratio:.2}, injected {FACTOR}\n{report}"
        );
    }
    let extra = row.remote_extra_ns.unwrap();
    let expected = row.remote.count as f64 * (row.remote.mean_ns - row.local.mean_ns);
    assert!((extra - expected).abs() < 1.0);
    // The matrix: every placed task in the cell of its worker's node and
    // its data's node, with its bytes.
    let tasks: u64 = report.matrix.iter().map(|c| c.tasks).sum();
    assert_eq!(tasks, 200);
    assert!(report.matrix.iter().all(|c| c.bytes == c.tasks << 20));
    let off_diagonal: u64 = report
        .matrix
        .iter()
        .filter(|c| c.node != c.data_node)
        .map(|c| c.tasks)
        .sum();
    assert_eq!(off_diagonal, row.remote.count);
    // With the baseline on the first node only, the remote half of the
    // baseline is said to be remote.
    let first = InflationReport::new(
        &ones[0].record_with(&options.record, || work(&ones[0])).1,
        &rec,
    );
    assert!(
        first
            .warnings
            .iter()
            .any(|w| w.contains("100 of the baseline's labelled tasks") && w.contains("EachNode")),
        "{first}"
    );
    assert!(
        !report.warnings.iter().any(|w| w.contains("EachNode")),
        "{report}"
    );
}

#[test]
fn a_preempted_baseline_is_flagged() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use terroir::numa::{bind_current_thread, CpuSet};
    let _serial = serial();
    // Each worker on its PU alone, the baseline's too: a competitor on
    // that CPU is one the worker cannot move away from.
    let par = ThreadPoolBuilder::new()
        .num_threads(2)
        .pinning(terroir::Pinning::Pu)
        .build()
        .unwrap();
    let one = InflationReport::baseline_pool(&par).unwrap();
    assert_eq!(
        one.pinning(),
        Some(terroir::Pinning::Pu),
        "the baseline pins as its pool"
    );
    let cpu = one.worker_cpu(0).unwrap();
    let units = calibrate(Duration::from_micros(200));
    let work = || {
        terroir::scope(|s| {
            for _ in 0..100 {
                s.spawn(|_| {
                    label("fixed", || black_box(spin_units(units)));
                });
            }
        })
    };
    // A competitor pinned beside the baseline's worker, busy throughout
    // its run: the worker gets about half the CPU.
    let stop = AtomicBool::new(false);
    let base = std::thread::scope(|s| {
        let stop = &stop;
        s.spawn(move || {
            bind_current_thread(&CpuSet::from_iter([cpu])).unwrap();
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        std::thread::sleep(Duration::from_millis(20));
        let (_, base) = one.record(work);
        stop.store(true, Ordering::Relaxed);
        base
    });
    let (_, rec) = par.record(work);
    let report = InflationReport::new(&base, &rec);
    let flagged: Vec<&String> = report
        .warnings
        .iter()
        .filter(|w| w.starts_with("the baseline") && w.contains("on a CPU for"))
        .collect();
    assert!(!flagged.is_empty(), "no preemption warning:\n{report}");
    // The worker's CPU time says it too.
    let busy = base.workers[0].work_ns + base.workers[0].overhead_ns;
    let cpu_ns = base.workers[0].cpu_ns.unwrap();
    assert!(
        (cpu_ns as f64) < 0.9 * busy as f64,
        "{cpu_ns} ns on a CPU of {busy} ns busy"
    );
}

/// Every event of a trace, checked field by field, and the flows paired.
#[cfg(feature = "report")]
fn check_trace(text: &str) -> std::collections::BTreeMap<String, usize> {
    use std::collections::{BTreeMap, BTreeSet};
    let trace: serde_json::Value = serde_json::from_str(text).expect("the trace is JSON");
    assert_eq!(trace["displayTimeUnit"], "ns");
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    let (mut starts, mut ends) = (BTreeSet::new(), BTreeSet::new());
    let mut slices: BTreeMap<(u64, u64), Vec<(f64, f64)>> = BTreeMap::new();
    for e in events {
        let ph = e["ph"].as_str().unwrap_or_else(|| panic!("no ph: {e}"));
        let name = e["name"].as_str().unwrap_or_else(|| panic!("no name: {e}"));
        assert!(!name.is_empty(), "{e}");
        let pid = e["pid"].as_u64().unwrap_or_else(|| panic!("no pid: {e}"));
        let tid = e["tid"].as_u64().unwrap_or_else(|| panic!("no tid: {e}"));
        let ts = e["ts"].as_f64().unwrap_or_else(|| panic!("no ts: {e}"));
        assert!(ts.is_finite() && ts >= 0.0, "{e}");
        match ph {
            "M" => {
                let args = &e["args"];
                assert!(
                    args["name"].is_string() || args["sort_index"].is_u64(),
                    "metadata without a name: {e}"
                );
                assert!(matches!(
                    name,
                    "process_name" | "process_sort_index" | "thread_name"
                ));
            }
            "X" => {
                let dur = e["dur"].as_f64().unwrap_or_else(|| panic!("no dur: {e}"));
                assert!(dur.is_finite() && dur >= 0.0, "{e}");
                let cat = e["cat"].as_str().unwrap();
                assert!(matches!(cat, "task" | "overhead" | "idle"), "{e}");
                let args = &e["args"];
                if cat == "task" {
                    assert_eq!(args["label"], name, "{e}");
                    for k in ["worker", "node", "bytes"] {
                        assert!(args[k].is_u64(), "{k}: {e}");
                    }
                    assert!(args["own_us"].as_f64().unwrap() <= dur + 1e-3, "{e}");
                    assert!(args["data_node"].is_u64() || args["data_node"].is_null());
                } else {
                    let parts =
                        args["overhead_us"].as_f64().unwrap() + args["idle_us"].as_f64().unwrap();
                    assert!(parts + 1e-3 >= dur, "{e}");
                }
                slices.entry((pid, tid)).or_default().push((ts, ts + dur));
            }
            "s" | "f" => {
                let id = e["id"].as_u64().unwrap_or_else(|| panic!("no id: {e}"));
                let cat = e["cat"].as_str().unwrap().to_string();
                assert!(cat == "steal" || cat == "push", "{e}");
                if ph == "s" {
                    assert!(starts.insert((cat, id)), "two starts: {e}");
                } else {
                    assert_eq!(e["bp"], "e", "{e}");
                    assert!(ends.insert((cat, id)), "two ends: {e}");
                }
            }
            "i" => assert_eq!(e["s"], "t", "{e}"),
            "C" => {
                let args = e["args"].as_object().unwrap_or_else(|| panic!("{e}"));
                assert!(
                    !args.is_empty() && args.values().all(|v| v.is_f64() || v.is_u64()),
                    "{e}"
                );
            }
            other => panic!("unexpected phase {other}: {e}"),
        }
        *kinds
            .entry(format!("{ph}:{}", e["cat"].as_str().unwrap_or(name)))
            .or_default() += 1;
    }
    assert_eq!(starts, ends, "every flow has both ends");
    // Slices on one thread nest: none overlaps another partially.
    for ((pid, tid), mut v) in slices {
        v.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut open: Vec<f64> = Vec::new();
        for (a, b) in v {
            while open.last().is_some_and(|&end| end <= a + 1e-3) {
                open.pop();
            }
            if let Some(&end) = open.last() {
                assert!(
                    b <= end + 1e-3,
                    "pid {pid} tid {tid}: [{a}, {b}] overlaps a slice ending at {end}"
                );
            }
            open.push(b);
        }
    }
    kinds
}

#[cfg(feature = "report")]
#[test]
fn the_trace_and_the_json_hold_every_part() {
    use terroir::numa::NodeId;
    use terroir::{Access, Place};
    let _serial = serial();
    let par = two_nodes(terroir::Policy::Locality);
    let one = InflationReport::baseline_pool(&par).unwrap();
    let work = || {
        terroir::scope(|s| {
            for i in 0..64u32 {
                let place = Place::pushed([Access::new(Some(NodeId::new(i % 2)), 1 << 20, false)]);
                s.spawn_on_labeled(&place, "placed", |_| busy_for(Duration::from_micros(100)));
                s.spawn(|_| {
                    terroir::join(
                        || label("joined", || busy_for(Duration::from_micros(50))),
                        || label("joined", || busy_for(Duration::from_micros(50))),
                    );
                });
            }
        })
    };
    let options = RecordOptions::default();
    let (_, base) = one.record_with(&options, work);
    let (_, rec) = par.record_with(&options, work);
    let report = InflationReport::new(&base, &rec);
    let mut trace = Vec::new();
    report.write_chrome_trace(&mut trace).unwrap();
    let kinds = check_trace(std::str::from_utf8(&trace).unwrap());
    for k in [
        "X:task",
        "X:idle",
        "s:push",
        "f:push",
        "s:steal",
        "C:busy workers",
        "M:process_name",
    ] {
        assert!(kinds.contains_key(k), "no {k} event in {kinds:?}");
    }
    // Two processes for the parallel run's nodes, one for the baseline.
    let text = String::from_utf8(trace).unwrap();
    assert!(text.contains("node 1 (parallel run"));
    assert!(text.contains("baseline: one worker on node 0"));
    // The JSON reads back whole, timelines included.
    let back = InflationReport::from_json(&report.to_json()).unwrap();
    assert_eq!(back.labels, report.labels);
    assert_eq!(back.parallel_run, report.parallel_run);
    assert_eq!(back.baseline_runs, report.baseline_runs);
    assert_eq!(back.to_string(), report.to_string());
    let mut compact = Vec::new();
    report.write_json(&mut compact).unwrap();
    let again = InflationReport::read_json(&compact[..]).unwrap();
    assert_eq!(again.parallel_run.tasks.len(), rec.tasks.len());
    // Steals and pushes of the recording, counted in the report.
    let steals: u64 = report.steals.iter().map(|s| s.count).sum();
    assert_eq!(steals, rec.steals.len() as u64);
    assert_eq!(report.pushes, rec.pushes.len() as u64);
    // Tasks whose data is on the spawner's node stay on its deque: no push.
    assert!(report.pushes > 0 && report.pushes <= 64);
}
