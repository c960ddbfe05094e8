//! The recorded work time agrees with the CPU time the process used (its
//! own test binary, so that no other test's threads count in getrusage).

use std::hint::black_box;

use terroir::sched::RecordOptions;
use terroir::ThreadPoolBuilder;

fn cpu_ns() -> u64 {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    assert_eq!(rc, 0, "getrusage failed");
    let t = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
    t(ru.ru_utime) + t(ru.ru_stime)
}

#[test]
fn recorded_work_matches_process_cpu_time() {
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    // Busy from start to end: many tasks of ~100 µs, so neither worker
    // waits long (idle spinning would burn CPU that is not work).
    let work = || {
        terroir::scope(|s| {
            for i in 0..4000u64 {
                s.spawn(move |_| {
                    let mut x = i;
                    for k in 0..100_000u64 {
                        x = black_box(x.wrapping_mul(31).wrapping_add(k));
                    }
                    black_box(x);
                });
            }
        })
    };
    pool.install(work); // warm up (pages, caches)
    let before = cpu_ns();
    let (_, rec) = pool.record_with(&RecordOptions::timestamps_only(), work);
    let cpu = cpu_ns() - before;
    let work_ns: u64 = rec.workers.iter().map(|w| w.work_ns).sum();
    let busy_ns: u64 = rec.workers.iter().map(|w| w.work_ns + w.overhead_ns).sum();
    let off = (busy_ns as f64 - cpu as f64).abs() / cpu as f64;
    assert!(
        off <= 0.10,
        "work {work_ns} ns + overhead = {busy_ns} ns recorded, process CPU time {cpu} ns \
         ({:.1} % apart); workers: {:?}",
        off * 100.0,
        rec.workers
    );
}
