//! Tests of recording: start, stop, ownership, concurrency.

use super::*;
use crate::ThreadPoolBuilder;

fn pool(n: usize) -> crate::ThreadPool {
    ThreadPoolBuilder::new()
        .num_threads(n)
        .pin(false)
        .build()
        .unwrap()
}

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
