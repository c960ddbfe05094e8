//! Tests of the counter groups.

use super::*;

/// This thread's CPU time, ns.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a pointer to a timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Burns `ms` of this thread's CPU time (CPU time, not wall time: other
/// tests share the CPUs).
fn busy(ms: u64) {
    let t = thread_cpu_ns();
    let mut x = 0u64;
    while thread_cpu_ns() - t < ms * 1_000_000 {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    }
}

/// Page faults counted while writing one byte in each 4 KiB page of 16
/// MiB of fresh anonymous memory (no huge pages: 4096 faults), by
/// counter `i` of `g`.
fn faults_touching_16_mib(g: &mut CounterGroup, i: usize) -> (u64, u64) {
    const LEN: usize = 16 << 20;
    // SAFETY: a new private anonymous mapping; no existing memory is
    // affected.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            LEN,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    // SAFETY: `p..p + LEN` is the mapping just made. (If THP is off
    // this fails harmlessly, hence the ignored result.)
    let _ = unsafe { libc::madvise(p, LEN, libc::MADV_NOHUGEPAGE) };
    let (mut a, mut b) = ([0u64; MAX_COUNTERS], [0u64; MAX_COUNTERS]);
    assert!(g.read(&mut a));
    for off in (0..LEN).step_by(4096) {
        // SAFETY: `off < LEN`, inside the writable mapping.
        unsafe { p.cast::<u8>().add(off).write_volatile(1) };
    }
    assert!(g.read(&mut b));
    // SAFETY: the mapping made above, no longer used.
    assert_eq!(unsafe { libc::munmap(p, LEN) }, 0);
    (b[i] - a[i], (LEN / 4096) as u64)
}

#[test]
fn names_and_kinds() {
    let joined: Vec<Counter> = [Counter::HARDWARE, Counter::SOFTWARE].concat();
    assert_eq!(joined, Counter::ALL);
    assert!(Counter::ALL.len() <= MAX_COUNTERS);
    for &c in Counter::HARDWARE {
        assert!(c.is_hardware());
    }
    for &c in Counter::SOFTWARE {
        assert!(!c.is_hardware());
    }
    let mut names: Vec<_> = Counter::ALL.iter().map(|c| c.to_string()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), Counter::ALL.len());
    assert_eq!(Counter::TaskClock.to_string(), "task-clock-ns");
    let u = Unavailable {
        counter: Counter::Cycles,
        reason: "why".into(),
    };
    assert_eq!(u.to_string(), "cycles: why");
}

#[test]
fn is_send() {
    fn send<T: Send>() {}
    send::<CounterGroup>();
}

#[test]
fn every_counter_is_opened_or_named_unavailable_once() {
    let (mut g, un) = CounterGroup::open(Counter::ALL);
    println!("opened: {:?}", g.counters());
    for &c in Counter::ALL {
        let opened = g.counters().iter().filter(|&&o| o == c).count();
        let named: Vec<_> = un.iter().filter(|u| u.counter == c).collect();
        assert_eq!(
            opened + named.len(),
            1,
            "{c}: opened {opened} times, unavailable {named:?}"
        );
        for u in named {
            assert!(!u.reason.is_empty());
            println!("{u}");
        }
    }
    // Hardware first, then software, each in the order asked for.
    let mut sorted = g.counters().to_vec();
    sorted.sort();
    assert_eq!(g.counters(), sorted);
    let mut out = [0u64; MAX_COUNTERS];
    assert!(g.read(&mut out));
}

#[test]
fn repeats_are_opened_once() {
    let (g, un) = CounterGroup::open(&[Counter::PageFaults, Counter::PageFaults]);
    assert_eq!(g.counters(), [Counter::PageFaults]);
    assert!(un.is_empty(), "{un:?}");
}

#[test]
fn task_clock_counts_a_busy_loop() {
    // Alone and enabled last in its group too (see `Counter::builder`).
    for wanted in [
        &[Counter::TaskClock][..],
        &[Counter::PageFaults, Counter::TaskClock],
        Counter::SOFTWARE,
    ] {
        let (mut g, un) = CounterGroup::open(wanted);
        assert!(
            un.iter().all(|u| u.counter != Counter::TaskClock),
            "task-clock must open: {un:?}"
        );
        let i = g.counters().iter().position(|&c| c == Counter::TaskClock);
        let i = i.expect("task-clock opened");
        let (mut a, mut b) = ([0u64; MAX_COUNTERS], [0u64; MAX_COUNTERS]);
        let t = thread_cpu_ns();
        assert!(g.read(&mut a));
        busy(5);
        assert!(g.read(&mut b));
        let cpu = thread_cpu_ns() - t;
        let ns = b[i] - a[i];
        assert!(cpu >= 5_000_000);
        assert!(
            ns as f64 >= cpu as f64 * 0.5 && ns as f64 <= cpu as f64 * 1.5,
            "{wanted:?}: task-clock counted {ns} ns over a busy loop of {cpu} ns \
             of thread CPU time"
        );
    }
}

#[test]
fn page_faults_count_fresh_memory() {
    let (mut g, un) = CounterGroup::open(&[Counter::PageFaults]);
    assert!(un.is_empty(), "page-faults must open: {un:?}");
    let (faults, pages) = faults_touching_16_mib(&mut g, 0);
    assert!(
        faults >= pages / 2,
        "{faults} faults writing to {pages} fresh pages"
    );
}

#[test]
fn a_forced_failure_is_named_and_the_rest_count() {
    let fail =
        |c: Counter| (c == Counter::TaskClock).then(|| io::Error::from_raw_os_error(libc::EACCES));
    let (mut g, un) = CounterGroup::open_with(&[Counter::TaskClock, Counter::PageFaults], &fail);
    assert_eq!(g.counters(), [Counter::PageFaults]);
    assert_eq!(un.len(), 1);
    let msg = un[0].to_string();
    assert!(
        msg.starts_with("task-clock-ns: not permitted")
            && msg.contains("/proc/sys/kernel/perf_event_paranoid is ")
            && msg.contains("os error 13"),
        "{msg}"
    );
    let (faults, pages) = faults_touching_16_mib(&mut g, 0);
    assert!(faults >= pages / 2, "{faults} faults for {pages} pages");
}

#[test]
fn without_kernel_counting_kernel_only_counters_are_unavailable() {
    let faults = Faults {
        open: &|_| None,
        refuse_kernel: true,
        fit: usize::MAX,
    };
    let (mut g, un) = CounterGroup::open_inner(Counter::SOFTWARE, &faults);
    assert_eq!(g.counters(), [Counter::TaskClock, Counter::PageFaults]);
    let named: Vec<Counter> = un.iter().map(|u| u.counter).collect();
    assert_eq!(named, [Counter::ContextSwitches, Counter::CpuMigrations]);
    for u in &un {
        let msg = u.to_string();
        assert!(
            msg.contains(": counted only in kernel mode, which ")
                && msg.contains("perf_event_paranoid"),
            "{msg}"
        );
    }
    // User mode only, task-clock still counts the thread's time.
    let (mut a, mut b) = ([0u64; MAX_COUNTERS], [0u64; MAX_COUNTERS]);
    let t = thread_cpu_ns();
    assert!(g.read(&mut a));
    busy(5);
    assert!(g.read(&mut b));
    let cpu = thread_cpu_ns() - t;
    let ns = b[0] - a[0];
    assert!(
        ns as f64 >= cpu as f64 * 0.5 && ns as f64 <= cpu as f64 * 1.5,
        "user-only task-clock counted {ns} ns over {cpu} ns of thread CPU time"
    );
}

#[test]
fn a_group_too_big_for_the_registers_drops_its_last_counters() {
    let faults = Faults {
        open: &|_| None,
        refuse_kernel: false,
        fit: 1,
    };
    let wanted = [Counter::TaskClock, Counter::PageFaults];
    let (mut g, un) = CounterGroup::open_inner(&wanted, &faults);
    assert_eq!(g.counters(), [Counter::TaskClock]);
    assert_eq!(un.len(), 1);
    let msg = un[0].to_string();
    assert!(
        msg.starts_with("page-faults: the CPU's free counter registers cannot hold it together with task-clock-ns"),
        "{msg}"
    );
    assert!(g.read(&mut [0u64; MAX_COUNTERS]));

    let faults = Faults { fit: 0, ..faults };
    let (g, un) = CounterGroup::open_inner(&wanted, &faults);
    assert!(g.counters().is_empty());
    let named: Vec<Counter> = un.iter().map(|u| u.counter).collect();
    assert_eq!(named, wanted);
    assert!(un[0].reason.contains("no free counter register"), "{un:?}");
}

#[test]
fn an_empty_set_reads() {
    let (mut g, un) = CounterGroup::open(&[]);
    assert!(g.counters().is_empty() && un.is_empty());
    assert!(g.read(&mut []));
    assert!(g.read(&mut [0u64; MAX_COUNTERS]));
}

#[test]
fn a_failed_read_leaves_out_untouched() {
    let (mut g, _) = CounterGroup::open(&[Counter::TaskClock]);
    // A read that does not match the group fails, as does the empty
    // read of a pinned hardware group pushed off the registers.
    g.sets[0].ids[1] ^= 1;
    let mut out = [7u64; MAX_COUNTERS];
    assert!(!g.read(&mut out));
    assert_eq!(out, [7u64; MAX_COUNTERS]);
}

/// What one `read` of the software group costs (run with
/// `cargo test --release --lib read_cost -- --ignored --nocapture`).
#[test]
#[ignore = "timing, prints ns per read"]
fn read_cost() {
    let (mut g, un) = CounterGroup::open(Counter::SOFTWARE);
    println!("software group: {:?}, unavailable: {un:?}", g.counters());
    let mut out = [0u64; MAX_COUNTERS];
    for _ in 0..3 {
        const N: u32 = 100_000;
        let t = std::time::Instant::now();
        for _ in 0..N {
            assert!(g.read(std::hint::black_box(&mut out)));
        }
        println!(
            "{:.0} ns per read",
            t.elapsed().as_nanos() as f64 / N as f64
        );
    }
}
