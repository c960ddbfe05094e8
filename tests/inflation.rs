//! Honesty checks of the inflation report: an injected inflation factor is
//! found, a sequential section shows up as idle time, the breakdown adds up,
//! and counters that cannot count are named, never printed as zeros.

use std::hint::black_box;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use terroir::report::InflationReport;
use terroir::report::{Counter, RecordOptions};
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
    assert!(
        (got - expected).abs() <= 0.10 * expected,
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
            (seen - felt_ratio).abs() <= 0.10 * felt_ratio,
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
    let (_, base) = one.record(work);
    let (_, rec) = par.record(work);
    let report = InflationReport::new(&base, &rec);
    let b = report.breakdown;
    let parts =
        b.sequential_work_ns as i64 + b.inflation_ns + b.overhead_ns as i64 + b.idle_ns as i64;
    let off = (b.total_ns as i64 - parts).abs() as f64 / b.total_ns as f64;
    assert!(
        off <= 0.02,
        "work + overhead + idle is {:.1} % off p x wall\n{report}",
        off * 100.0
    );
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
            .count();
        assert_eq!(slices, 400, "one trace slice per leaf task");
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
