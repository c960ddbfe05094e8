//! Idle workers sleep: a pool with nothing to do burns (almost) no CPU.
//! Measured as process CPU time (`getrusage`) over a wall-clock window, so
//! the check is a ratio, not an absolute time.

use std::time::{Duration, Instant};

mod common;
use common::fib;

fn cpu_time() -> Duration {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `ru` is a valid, writable rusage; RUSAGE_SELF is a valid `who`.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
    assert_eq!(rc, 0, "getrusage: {}", std::io::Error::last_os_error());
    // SAFETY: getrusage succeeded and filled the struct.
    let ru = unsafe { ru.assume_init() };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[test]
fn idle_pool_uses_under_20ms_of_cpu_in_half_a_second() {
    let pool = terroir::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .unwrap();
    // Wake everybody up, then let them go idle.
    assert_eq!(pool.install(|| fib(22)), 17711);
    // The numbers: idle for 0.5 s, then under 20 ms of CPU time
    // (all threads of the process, getrusage) over the next 0.5 s.
    std::thread::sleep(Duration::from_millis(500));
    let (cpu0, wall0) = (cpu_time(), Instant::now());
    std::thread::sleep(Duration::from_millis(500));
    let (cpu, wall) = (cpu_time() - cpu0, wall0.elapsed());
    assert!(
        cpu < Duration::from_millis(20),
        "4 idle workers used {cpu:?} of CPU in {wall:?}"
    );
    // And they wake up again.
    assert_eq!(pool.install(|| fib(15)), 610);
}
