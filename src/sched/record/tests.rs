//! Tests of recording: start, stop, ownership, concurrency.

use super::*;
use crate::ThreadPoolBuilder;

use crate::sched::test_pool as pool;

fn labelled(rec: &Recording, name: &str) -> usize {
    rec.tasks
        .iter()
        .filter(|t| t.label.as_str() == name)
        .count()
}

fn leaves(n: usize) {
    crate::scope(|s| {
        for _ in 0..n {
            s.spawn(|_| {
                label("leaf", || std::hint::black_box((0..1000u64).sum::<u64>()));
            });
        }
    });
}

#[test]
fn start_and_stop_record_what_ran_between() {
    let pool = pool(2);
    let options = RecordOptions::timestamps_only();
    pool.start_recording(&options).unwrap();
    pool.install(|| leaves(20));
    let rec = pool.stop_recording().unwrap();
    assert_eq!(labelled(&rec, "leaf"), 20);
    assert_eq!(rec.threads, 2);
    assert_eq!(rec.workers.len(), 2);
    assert!(rec.wall_ns > 0);
    assert!(rec.counters.is_empty());
    // Work after the stop is not recorded; a new recording starts empty.
    pool.install(|| leaves(5));
    pool.start_recording(&options).unwrap();
    pool.install(|| leaves(3));
    let again = pool.stop_recording().unwrap();
    assert_eq!(labelled(&again, "leaf"), 3);
}

#[test]
fn start_twice_and_stop_without_start_are_errors() {
    let pool = pool(2);
    assert_eq!(
        pool.stop_recording().unwrap_err(),
        RecordError::NotRecording
    );
    pool.start_recording(&RecordOptions::default()).unwrap();
    assert_eq!(
        pool.start_recording(&RecordOptions::timestamps_only()),
        Err(RecordError::AlreadyRecording)
    );
    // The closure form on a recording pool: an error, `op` not run.
    let ran = std::sync::atomic::AtomicBool::new(false);
    let r = pool.try_record_with(&RecordOptions::default(), || {
        ran.store(true, Ordering::SeqCst)
    });
    assert_eq!(r.unwrap_err(), RecordError::AlreadyRecording);
    assert!(!ran.load(Ordering::SeqCst));
    pool.install(|| leaves(2));
    let rec = pool.stop_recording().unwrap();
    assert_eq!(labelled(&rec, "leaf"), 2);
    assert_eq!(
        pool.stop_recording().unwrap_err(),
        RecordError::NotRecording
    );
    for e in [
        RecordError::AlreadyRecording,
        RecordError::NotRecording,
        RecordError::RecordInProgress,
    ] {
        assert!(!e.to_string().is_empty());
    }
}

#[test]
fn a_record_call_owns_its_recording() {
    let pool = pool(2);
    let options = RecordOptions::timestamps_only();
    let ((start, stop), rec) = pool.record_with(&options, || {
        leaves(4);
        (
            pool.start_recording(&options),
            pool.stop_recording().map(drop),
        )
    });
    assert_eq!(start, Err(RecordError::AlreadyRecording));
    assert_eq!(stop, Err(RecordError::RecordInProgress));
    assert_eq!(labelled(&rec, "leaf"), 4);
    // From another thread while the closure runs: the same.
    let (tx, rx) = std::sync::mpsc::channel();
    let ((), _) = pool.record_with(&options, || {
        std::thread::scope(|s| {
            s.spawn(|| {
                tx.send((
                    pool.start_recording(&options),
                    pool.stop_recording().map(drop),
                ))
                .unwrap()
            });
        });
    });
    let (start, stop) = rx.recv().unwrap();
    assert_eq!(start, Err(RecordError::AlreadyRecording));
    assert_eq!(stop, Err(RecordError::RecordInProgress));
    // And the pool records again afterwards, both ways.
    pool.start_recording(&options).unwrap();
    pool.stop_recording().unwrap();
    let (_, rec) = pool.record_with(&options, || leaves(1));
    assert_eq!(labelled(&rec, "leaf"), 1);
}

#[test]
#[should_panic(expected = "already recording")]
fn the_closure_form_panics_on_a_recording_pool() {
    let pool = pool(1);
    pool.start_recording(&RecordOptions::timestamps_only())
        .unwrap();
    pool.record(|| ());
}

#[test]
fn a_panic_in_the_closure_stops_the_recording() {
    let pool = pool(2);
    let options = RecordOptions::timestamps_only();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.record_with(&options, || panic!("expected: a test panic"))
    }));
    assert!(r.is_err());
    assert_eq!(
        pool.stop_recording().unwrap_err(),
        RecordError::NotRecording
    );
    pool.start_recording(&options).unwrap();
    pool.stop_recording().unwrap();
}

#[test]
fn start_and_stop_on_different_threads_and_inside_the_pool() {
    let pool = pool(2);
    let options = RecordOptions::timestamps_only();
    std::thread::scope(|s| {
        s.spawn(|| pool.start_recording(&options).unwrap());
    });
    pool.install(|| leaves(6));
    let rec = std::thread::scope(|s| s.spawn(|| pool.stop_recording().unwrap()).join()).unwrap();
    assert_eq!(labelled(&rec, "leaf"), 6);
    // Started and stopped by a job of the pool itself.
    let rec = pool.install(|| {
        pool.start_recording(&options).unwrap();
        leaves(3);
        pool.stop_recording().unwrap()
    });
    assert_eq!(labelled(&rec, "leaf"), 3);
    // Stopped by a job that began after the start: its own open frame
    // encloses the stop and does not hold it up for the grace period
    // (50 ms), at least once in five tries on a loaded machine.
    let fastest = (0..5)
        .map(|_| {
            pool.start_recording(&options).unwrap();
            let (rec, took) = pool.install(|| {
                leaves(3);
                let t = Instant::now();
                (pool.stop_recording().unwrap(), t.elapsed())
            });
            assert_eq!(labelled(&rec, "leaf"), 3);
            took
        })
        .min()
        .unwrap();
    assert!(
        fastest < std::time::Duration::from_millis(40),
        "{fastest:?}"
    );
}

#[test]
fn one_of_concurrent_starts_wins() {
    let pool = pool(2);
    let options = RecordOptions::timestamps_only();
    for _ in 0..20 {
        let wins: usize = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| s.spawn(|| pool.start_recording(&options).is_ok()))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap() as usize).sum()
        });
        assert_eq!(wins, 1);
        pool.stop_recording().unwrap();
    }
}

#[test]
fn a_pool_dropped_while_recording_discards_it() {
    let pool = pool(2);
    pool.start_recording(&RecordOptions::timestamps_only())
        .unwrap();
    pool.install(|| leaves(2));
    drop(pool);
    // Another pool records as usual.
    let other = self::pool(1);
    let (_, rec) = other.record_with(&RecordOptions::timestamps_only(), || leaves(2));
    assert_eq!(labelled(&rec, "leaf"), 2);
}

/// A pool of two workers on a described two-node topology (one CPU each,
/// not pinned), under `policy`.
fn two_nodes(policy: crate::Policy) -> crate::ThreadPool {
    let topo = crate::numa::Topology::builder()
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

fn spin(us: u64) {
    let t = Instant::now();
    while t.elapsed() < std::time::Duration::from_micros(us) {
        std::hint::spin_loop();
    }
}

#[test]
fn waits_steals_and_cpu_time_add_up() {
    let pool = pool(2);
    let (_, rec) = pool.record_with(&RecordOptions::timestamps_only(), || {
        crate::scope(|s| {
            for _ in 0..64 {
                s.spawn(|_| label("leaf", || spin(200)));
            }
        })
    });
    assert_eq!(labelled(&rec, "leaf"), 64);
    for (w, times) in rec.workers.iter().enumerate() {
        let waits: Vec<&WaitRecord> = rec.waits.iter().filter(|x| x.worker == w).collect();
        // Each worker's idle time is the idle part of its waits, and its
        // waits do not overlap and lie in the recording.
        assert_eq!(
            times.idle_ns,
            waits.iter().map(|x| x.idle_ns()).sum::<u64>(),
            "worker {w}"
        );
        assert!(times.overhead_ns >= waits.iter().map(|x| x.overhead_ns).sum::<u64>());
        for pair in waits.windows(2) {
            assert!(pair[0].end_ns <= pair[1].start_ns, "{pair:?}");
        }
        assert!(waits
            .iter()
            .all(|x| x.end_ns <= rec.wall_ns && x.start_ns <= x.end_ns));
        // A worker that ran tasks has a CPU time, at most its wall time.
        if rec.tasks.iter().any(|t| t.worker == w) {
            let cpu = times.cpu_ns.expect("a worker with tasks has a CPU time");
            assert!(cpu <= rec.wall_ns + 1_000_000, "{cpu} > {}", rec.wall_ns);
        }
    }
    // Every job a thief took names its steal, taken by that worker.
    let stolen: Vec<&TaskRecord> = rec.tasks.iter().filter(|t| t.stolen.is_some()).collect();
    assert!(!stolen.is_empty(), "no job was stolen among 64 spawns");
    for t in stolen {
        let s = rec
            .steals
            .iter()
            .find(|s| Some(s.id) == t.stolen)
            .expect("the steal of a stolen job");
        assert_eq!(s.thief, t.worker);
        assert!(s.time_ns <= t.start_ns);
        assert_eq!(t.label, Label::Unlabelled);
    }
    assert!(rec.steals.windows(2).all(|p| p[0].time_ns <= p[1].time_ns));
}

#[test]
fn pushes_and_declared_data_are_recorded() {
    let pool = two_nodes(crate::Policy::StrictLocality);
    let node1 = crate::numa::NodeId::new(1);
    let place = crate::Place::pushed([crate::Access::new(Some(node1), 1 << 20, false)]);
    let (_, rec) = pool.record_with(&RecordOptions::timestamps_only(), || {
        crate::scope(|s| {
            for _ in 0..10 {
                s.spawn_on_labeled(&place, "placed", |_| spin(50));
            }
        })
    });
    let placed: Vec<&TaskRecord> = rec
        .tasks
        .iter()
        .filter(|t| t.label.as_str() == "placed")
        .collect();
    assert_eq!(placed.len(), 10);
    for t in &placed {
        // Strict: on node 1's worker, with the data's node and bytes (the
        // labelled region repeats its job's).
        assert_eq!(
            (t.node, t.data_node, t.data_bytes),
            (1, Some(node1), 1 << 20)
        );
    }
    let jobs: Vec<&TaskRecord> = rec.tasks.iter().filter(|t| t.pushed.is_some()).collect();
    assert_eq!(jobs.len(), 10, "each placed job names its push");
    for t in jobs {
        let p = rec
            .pushes
            .iter()
            .find(|p| Some(p.id) == t.pushed)
            .expect("the push of a placed job");
        assert_eq!((p.to_node, p.strict), (1, true));
        assert!(p.time_ns <= t.start_ns);
        assert!(p.queued >= 1, "the pushed task itself is queued: {p:?}");
    }
    // The scope's body runs on worker 0 (node 0) or 1: pushes from node 0
    // are remote, as PoolStats counts them.
    let remote = rec
        .pushes
        .iter()
        .filter(|p| p.is_remote(&rec.worker_nodes))
        .count();
    assert!(remote == 0 || remote == 10, "{remote}");
    assert!(rec.queued.iter().any(|q| q.node == 1));
    assert_eq!(rec.worker_nodes, vec![0, 1]);
}

#[test]
fn counters_are_read_on_the_sampled_tasks_and_inside_them() {
    let pool = pool(1);
    let options = |sampling| RecordOptions {
        counters: vec![Counter::TaskClock],
        sampling,
    };
    let work = || {
        for _ in 0..40 {
            label("outer", || {
                spin(20);
                label("inner", || spin(20));
            });
        }
    };
    let (_, rec) = pool.record_with(&options(CounterSampling::Every(4)), work);
    if rec.counters.is_empty() {
        eprintln!("task-clock cannot be counted here: {:?}", rec.unavailable);
        return;
    }
    let counted = |name: &str| {
        rec.tasks
            .iter()
            .filter(|t| t.label.as_str() == name && !t.counters.is_empty())
            .count()
    };
    // One outer task in four is picked; an inner task is counted exactly
    // when its outer one is (so the outer's own count can subtract it),
    // and never picked by the sampling itself (it is always inside one:
    // deciding region by region would alias, picking only inner ones).
    assert_eq!(counted("outer"), 10);
    assert_eq!(counted("inner"), 10);
    // Own CPU time: the outer's 20 µs, not the inner's too. Judged on the
    // median over the counted outer tasks (one task whose thread was
    // preempted between a counter read and a timestamp can read more CPU
    // time than its span): own < span − inner / 2, which an outer count
    // that kept its inner's 20 µs (own ≈ span) fails.
    let mut margins = Vec::new();
    for t in rec.tasks.iter().filter(|t| t.label.as_str() == "outer") {
        let inner = rec
            .tasks
            .iter()
            .find(|i| {
                i.label.as_str() == "inner" && i.start_ns >= t.start_ns && i.end_ns <= t.end_ns
            })
            .unwrap();
        assert_eq!(t.counters.is_empty(), inner.counters.is_empty());
        if let (Some(&own), Some(&inner_cpu)) = (t.counters.first(), inner.counters.first()) {
            assert!(inner_cpu > 0);
            let span = (t.end_ns - t.start_ns) as i64;
            margins.push(span - inner_cpu as i64 / 2 - own as i64);
        }
    }
    margins.sort_unstable();
    assert!(
        margins[margins.len() / 2] > 0,
        "the outer tasks' own CPU time includes their inner tasks' (span − inner/2 − own, \
         sorted: {margins:?})"
    );
    let m = &rec.counter_method;
    assert_eq!((m.labelled, m.counted), (80, 20));
    assert!(m.read.contains("read(2)"), "{}", m.read);
    // Every task, and the budget: tasks of 1 ms pay for every read.
    let (_, every) = pool.record_with(&options(CounterSampling::EveryTask), work);
    assert_eq!(every.counter_method.counted, 80);
    // (A read preempted for longer than a task's 5 % skips the next task:
    // on a loaded machine, up to three tries.)
    let counted_long = || {
        let (_, auto) = pool.record_with(&options(CounterSampling::Auto(5)), || {
            for _ in 0..10 {
                label("long", || spin(1000));
            }
        });
        auto.counter_method
    };
    let tries: Vec<_> = (0..3).map(|_| counted_long()).collect();
    assert!(
        tries.iter().any(|m| m.counted == 10),
        "1 ms tasks under Auto(5) were not all counted in any of 3 tries: {tries:?}"
    );
    // Tasks of ~1 µs do not: a read costs more than 5 % of them.
    let (_, short) = pool.record_with(&options(CounterSampling::Auto(5)), || {
        for _ in 0..2000 {
            label("short", || spin(1));
        }
    });
    let m = &short.counter_method;
    assert!(m.counted >= 1 && m.counted < m.labelled / 4, "{m:?}");
}

/// Regions opened and closed by two calls (the C API's
/// `terroir_label_push` / `_pop`): nested ones are recorded like `label`'s,
/// a close from work nested in the region is refused, and a region left
/// open when its job returns is closed with the job, so the job's own
/// frame and the frames after it still close the right frames.
#[test]
fn regions_opened_without_a_scope_nest_and_close_with_their_job() {
    use crate::__capi::{close_label, open_label, LabelNested};
    let pool = pool(1);
    // Not recording: nothing to open.
    assert_eq!(pool.install(|| open_label("x")), None);
    let options = RecordOptions::timestamps_only();
    pool.start_recording(&options).unwrap();
    pool.install(|| {
        let outer = open_label("outer").expect("recording");
        let inner = open_label("inner").expect("recording");
        // A close of the outer region while the inner one is open.
        assert_eq!(close_label(outer), Err(LabelNested));
        label("scoped", || std::hint::black_box(1));
        assert_eq!(close_label(inner), Ok(()));
        assert_eq!(close_label(outer), Ok(()));
        // Closed already: nothing happens.
        assert_eq!(close_label(outer), Ok(()));
        crate::scope(|s| {
            s.spawn(|_| {
                // Left open: closed when this job returns.
                let _ = open_label("left-open");
            });
        });
        label("after", || std::hint::black_box(2));
    });
    let rec = pool.stop_recording().unwrap();
    for name in ["outer", "inner", "scoped", "left-open", "after"] {
        assert_eq!(labelled(&rec, name), 1, "{name}");
    }
    let find = |name: &str| rec.tasks.iter().find(|t| t.label.as_str() == name).unwrap();
    let (outer, inner) = (find("outer"), find("inner"));
    assert!(outer.start_ns <= inner.start_ns && inner.end_ns <= outer.end_ns);
    // Both jobs (the install's and the scope task's) were recorded: the
    // scope task's frame was not taken for the region left open in it
    // (which would leave the install's frame open, never recorded).
    let jobs: Vec<_> = rec
        .tasks
        .iter()
        .filter(|t| t.label == Label::Unlabelled)
        .collect();
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    let left = find("left-open");
    assert!(jobs
        .iter()
        .any(|j| j.start_ns <= left.start_ns && left.end_ns <= j.end_ns));
}
