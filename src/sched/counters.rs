//! Per-thread perf_event counters, read by the recorder at task boundaries.
//!
//! Hardware counters go in one perf group and software counters in
//! another, so that a kind the machine lacks (hardware events in most VMs)
//! does not take the other down. Each counter is first opened counting
//! kernel mode too; when that is refused (`perf_event_paranoid` ≥ 2 for an
//! unprivileged process) it is opened for user mode only — except the
//! counters that only ever count in kernel mode (context switches, CPU
//! migrations), which are then reported unavailable rather than read as
//! zeros. A group counts the thread that opened it and is read with one
//! `read` system call; it may be read from any thread.

use std::fmt;
use std::io;

use perf_event::events::{Cache, CacheId, CacheOp, CacheResult, Event, Hardware, Software};
use perf_event::{Builder, Group};

/// Most counters one group set reads (the length of [`Counter::ALL`]).
pub(crate) const MAX_COUNTERS: usize = 10;

/// A counter the recorder can read at task boundaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Counter {
    /// CPU cycles (hardware).
    Cycles,
    /// Instructions retired (hardware).
    Instructions,
    /// Cache misses, as the CPU defines them (hardware).
    CacheMisses,
    /// Last-level-cache load misses (hardware).
    LlcLoadMisses,
    /// Loads served by memory of any node (`PERF_COUNT_HW_CACHE_NODE`
    /// read accesses, hardware).
    NodeLoads,
    /// Loads served by another node's memory (`PERF_COUNT_HW_CACHE_NODE`
    /// read misses, hardware).
    NodeLoadMisses,
    /// Time the thread ran, ns (software).
    TaskClock,
    /// Page faults (software).
    PageFaults,
    /// Context switches (software, kernel-mode only).
    ContextSwitches,
    /// Moves to another CPU (software, kernel-mode only).
    CpuMigrations,
}

impl Counter {
    /// The hardware counters.
    pub const HARDWARE: &'static [Counter] = &[
        Counter::Cycles,
        Counter::Instructions,
        Counter::CacheMisses,
        Counter::LlcLoadMisses,
        Counter::NodeLoads,
        Counter::NodeLoadMisses,
    ];
    /// The software counters.
    pub const SOFTWARE: &'static [Counter] = &[
        Counter::TaskClock,
        Counter::PageFaults,
        Counter::ContextSwitches,
        Counter::CpuMigrations,
    ];
    /// Every counter, hardware first.
    pub const ALL: &'static [Counter] = &[
        Counter::Cycles,
        Counter::Instructions,
        Counter::CacheMisses,
        Counter::LlcLoadMisses,
        Counter::NodeLoads,
        Counter::NodeLoadMisses,
        Counter::TaskClock,
        Counter::PageFaults,
        Counter::ContextSwitches,
        Counter::CpuMigrations,
    ];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Counter::Cycles => "cycles",
            Counter::Instructions => "instructions",
            Counter::CacheMisses => "cache-misses",
            Counter::LlcLoadMisses => "llc-load-misses",
            Counter::NodeLoads => "node-loads",
            Counter::NodeLoadMisses => "node-load-misses",
            Counter::TaskClock => "task-clock-ns",
            Counter::PageFaults => "page-faults",
            Counter::ContextSwitches => "context-switches",
            Counter::CpuMigrations => "cpu-migrations",
        }
    }

    /// Whether it is a hardware (PMU) counter.
    pub fn is_hardware(self) -> bool {
        Counter::HARDWARE.contains(&self)
    }

    /// Counts only in kernel mode (so user-only counting reads 0).
    fn kernel_only(self) -> bool {
        matches!(self, Counter::ContextSwitches | Counter::CpuMigrations)
    }

    fn builder(self) -> Builder<'static> {
        fn b(e: impl Event + 'static) -> Builder<'static> {
            Builder::new(e)
        }
        let cache = |which, result| Cache {
            which,
            operation: CacheOp::READ,
            result,
        };
        match self {
            Counter::Cycles => b(Hardware::CPU_CYCLES),
            Counter::Instructions => b(Hardware::INSTRUCTIONS),
            Counter::CacheMisses => b(Hardware::CACHE_MISSES),
            Counter::LlcLoadMisses => b(cache(CacheId::LL, CacheResult::MISS)),
            Counter::NodeLoads => b(cache(CacheId::NODE, CacheResult::ACCESS)),
            Counter::NodeLoadMisses => b(cache(CacheId::NODE, CacheResult::MISS)),
            Counter::TaskClock => b(Software::TASK_CLOCK),
            Counter::PageFaults => b(Software::PAGE_FAULTS),
            Counter::ContextSwitches => b(Software::CONTEXT_SWITCHES),
            Counter::CpuMigrations => b(Software::CPU_MIGRATIONS),
        }
    }
}

impl fmt::Display for Counter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A counter that could not be opened, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable {
    /// The counter.
    pub counter: Counter,
    /// Why, in words, with the system's error.
    pub reason: String,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.counter, self.reason)
    }
}

fn paranoid() -> String {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// Explains an open failure.
fn reason(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) => {
            format!("not supported by this CPU or hypervisor ({e})")
        }
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "not permitted: /proc/sys/kernel/perf_event_paranoid is {} ({e})",
            paranoid()
        ),
        Some(libc::ENOSYS) => format!("perf_event_open is not available in this kernel ({e})"),
        Some(libc::EMFILE) | Some(libc::ENFILE) => {
            format!("no file descriptor left for the counter ({e})")
        }
        _ => format!("perf_event_open failed ({e})"),
    }
}

/// A set of counters of the calling thread.
pub(crate) struct CounterGroup {
    /// (group, its members' handles (dropping one closes it and takes it
    /// out of the group), its counters in read order)
    groups: Vec<(Group, Vec<perf_event::Counter>, Vec<Counter>)>,
    order: Vec<Counter>,
}

impl fmt::Debug for CounterGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CounterGroup")
            .field("counters", &self.order)
            .finish()
    }
}

fn open_one(
    group: &mut Group,
    c: Counter,
    fail: &dyn Fn(Counter) -> Option<io::Error>,
) -> Result<perf_event::Counter, String> {
    if let Some(e) = fail(c) {
        return Err(reason(&e));
    }
    let mut b = c.builder();
    b.observe_self().any_cpu().include_kernel();
    match group.add(&b) {
        Ok(member) => Ok(member),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) => {
            if c.kernel_only() {
                return Err(format!(
                    "counted only in kernel mode, which /proc/sys/kernel/perf_event_paranoid = {} \
                     forbids for this process ({e})",
                    paranoid()
                ));
            }
            b.exclude_kernel(true);
            group.add(&b).map_err(|e| reason(&e))
        }
        Err(e) => Err(reason(&e)),
    }
}

impl CounterGroup {
    /// Opens `wanted` for the calling thread, enabled at once; the ones
    /// that fail come back as [`Unavailable`].
    pub(crate) fn open(wanted: &[Counter]) -> (CounterGroup, Vec<Unavailable>) {
        CounterGroup::open_with(wanted, &|_| None)
    }

    /// [`open`](Self::open), with `fail` deciding (for tests) that a
    /// counter fails to open with the given error.
    pub(crate) fn open_with(
        wanted: &[Counter],
        fail: &dyn Fn(Counter) -> Option<io::Error>,
    ) -> (CounterGroup, Vec<Unavailable>) {
        let mut unavailable = Vec::new();
        let mut groups = Vec::new();
        for kind in [true, false] {
            let members: Vec<Counter> = wanted
                .iter()
                .copied()
                .filter(|c| c.is_hardware() == kind)
                .collect();
            if members.is_empty() {
                continue;
            }
            let mut group = match Group::builder().observe_self().any_cpu().build_group() {
                Ok(g) => g,
                Err(e) => {
                    let r = reason(&e);
                    unavailable.extend(members.iter().map(|&c| Unavailable {
                        counter: c,
                        reason: r.clone(),
                    }));
                    continue;
                }
            };
            let mut opened = Vec::new();
            let mut handles = Vec::new();
            for c in members {
                match open_one(&mut group, c, fail) {
                    Ok(h) => {
                        handles.push(h);
                        opened.push(c);
                    }
                    Err(reason) => unavailable.push(Unavailable { counter: c, reason }),
                }
            }
            if opened.is_empty() {
                continue;
            }
            match group.enable() {
                Ok(()) => groups.push((group, handles, opened)),
                Err(e) => {
                    let r = reason(&e);
                    unavailable.extend(opened.into_iter().map(|c| Unavailable {
                        counter: c,
                        reason: r.clone(),
                    }));
                }
            }
        }
        let order = groups
            .iter()
            .flat_map(|(_, _, cs)| cs.iter().copied())
            .collect();
        (CounterGroup { groups, order }, unavailable)
    }

    /// The counters that opened, in the order [`read`](Self::read) gives.
    pub(crate) fn counters(&self) -> &[Counter] {
        &self.order
    }

    /// Current values, one per opened counter, into `out`; false (and
    /// `out` untouched) if a read failed.
    pub(crate) fn read(&mut self, out: &mut [u64]) -> bool {
        let mut values = [0u64; MAX_COUNTERS];
        let mut i = 0;
        for (g, _, cs) in &mut self.groups {
            let Ok(data) = g.read() else {
                return false;
            };
            let mut n = 0;
            for entry in data.iter() {
                if n == cs.len() || i == MAX_COUNTERS {
                    break;
                }
                values[i] = entry.value();
                i += 1;
                n += 1;
            }
            if n != cs.len() {
                return false;
            }
        }
        let len = i.min(out.len());
        out[..len].copy_from_slice(&values[..len]);
        true
    }
}

#[cfg(test)]
mod tests {
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

    /// Burns `ms` of this thread's CPU time (not wall time: other tests
    /// share the CPUs).
    fn busy(ms: u64) {
        let t = thread_cpu_ns();
        let mut x = 0u64;
        // Few clock reads: in a VM each is a system call, kernel time that a
        // user-only counter rightly does not count.
        while thread_cpu_ns() - t < ms * 1_000_000 {
            for _ in 0..1_000_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
    }

    #[test]
    fn every_counter_is_opened_or_named_unavailable_once() {
        let (g, un) = CounterGroup::open(Counter::ALL);
        for &c in Counter::ALL {
            let opened = g.counters().contains(&c);
            let named: Vec<_> = un.iter().filter(|u| u.counter == c).collect();
            assert!(
                opened ^ (named.len() == 1),
                "{c}: opened {opened}, unavailable {named:?}"
            );
            for u in named {
                assert!(!u.reason.is_empty());
                println!("{u}");
            }
        }
    }

    #[test]
    fn task_clock_counts_a_busy_loop() {
        let (mut g, un) = CounterGroup::open(&[Counter::TaskClock]);
        assert!(un.is_empty(), "task-clock must open: {un:?}");
        let (mut a, mut b) = ([0u64; MAX_COUNTERS], [0u64; MAX_COUNTERS]);
        let t = thread_cpu_ns();
        assert!(g.read(&mut a));
        busy(20);
        assert!(g.read(&mut b));
        let cpu = thread_cpu_ns() - t;
        let ns = b[0] - a[0];
        // Not equal: where kernel counting is refused the counter sees user
        // time only, and with other tests on the CPUs a good share of this
        // thread's CPU time is kernel time (interrupts, scheduling).
        assert!(
            ns as f64 >= cpu as f64 * 0.25 && ns as f64 <= cpu as f64 * 1.2,
            "task-clock counted {ns} ns over a busy loop of {cpu} ns of thread CPU time"
        );
    }

    #[test]
    fn page_faults_count_fresh_memory() {
        let (mut g, un) = CounterGroup::open(&[Counter::PageFaults]);
        assert!(un.is_empty(), "page-faults must open: {un:?}");
        let (mut a, mut b) = ([0u64; MAX_COUNTERS], [0u64; MAX_COUNTERS]);
        assert!(g.read(&mut a));
        let v = vec![1u8; 16 << 20];
        std::hint::black_box(&v);
        assert!(g.read(&mut b));
        assert!(b[0] - a[0] >= 100, "{} faults touching 16 MiB", b[0] - a[0]);
    }

    #[test]
    fn a_forced_failure_is_named_and_the_rest_counts() {
        let fail = |c: Counter| {
            (c == Counter::TaskClock).then(|| io::Error::from_raw_os_error(libc::EACCES))
        };
        let (mut g, un) =
            CounterGroup::open_with(&[Counter::TaskClock, Counter::PageFaults], &fail);
        assert_eq!(g.counters(), &[Counter::PageFaults]);
        assert_eq!(un.len(), 1);
        let msg = un[0].to_string();
        assert!(
            msg.starts_with("task-clock-ns: not permitted") && msg.contains("perf_event_paranoid"),
            "{msg}"
        );
        let mut a = [0u64; MAX_COUNTERS];
        assert!(g.read(&mut a));
    }

    #[test]
    fn an_empty_set_reads() {
        let (mut g, un) = CounterGroup::open(&[]);
        assert!(g.counters().is_empty() && un.is_empty());
        assert!(g.read(&mut [0u64; MAX_COUNTERS]));
    }
}
