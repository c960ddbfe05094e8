//! Per-thread perf_event counters, read by the recorder at task boundaries.
//!
//! With the `counters` feature (perf-event2). Without it, recording
//! works with timestamps only: [`CounterGroup::open`] opens nothing and
//! returns every counter asked for as [`Unavailable`], with the reason
//! "built without the `counters` feature", so that reports name them
//! (never zeros).
//!
//! Hardware counters go in one perf group and software counters in
//! another, so that a kind the machine lacks (hardware events in most VMs)
//! does not take the other down. A counter that cannot be opened is
//! returned as an [`Unavailable`] that names the system's error and says
//! what it means; it is never read as zeros.
//!
//! # Kernel mode
//!
//! Each counter is first opened counting kernel mode too. When that is
//! refused (`perf_event_paranoid` ≥ 2 for a process without
//! `CAP_PERFMON`) it is opened counting user mode only — except the
//! counters that only ever count in kernel mode (context switches, CPU
//! migrations: user-only they read 0), which are then reported
//! unavailable. User-only, the hardware counters and page faults miss the
//! kernel's share (faults the kernel takes while copying into user
//! buffers, for one); task-clock is a clock, not an event filtered by
//! mode, and counts the thread's whole running time either way.
//!
//! # Hardware groups
//!
//! The hardware group is *pinned*: it counts whenever the thread runs or,
//! if the CPU's counter registers cannot hold all of it at once, not at
//! all, and then its read fails. (Unpinned, the kernel would time-share it
//! with other users of the registers and the deltas would silently miss
//! the time it was off; a group too big for the free registers would read
//! zeros forever.) [`CounterGroup::open`] checks that the group is counting
//! and, while it is not, drops its last counter and tries again: the
//! dropped ones are returned as unavailable. The NMI watchdog, which holds
//! one register on many machines, is the usual reason.
//!
//! # Threads
//!
//! A group counts the thread that called [`CounterGroup::open`] (and not
//! the threads it spawns). It is `Send` and may be read from any thread:
//! a read is one `read(2)` system call per group (one when only software
//! counters opened, as in a VM; two with hardware counters too), and the
//! kernel answers with the opening thread's counts.

use std::fmt;
#[cfg(feature = "counters")]
use std::io;
#[cfg(feature = "counters")]
use std::os::fd::AsRawFd;

#[cfg(feature = "counters")]
use perf_event::events::{Cache, CacheId, CacheOp, CacheResult, Event, Hardware, Software};
#[cfg(feature = "counters")]
use perf_event::{Builder, Group, ReadFormat};

/// Why every counter is unavailable in a build without the `counters`
/// feature.
#[cfg(not(feature = "counters"))]
pub(crate) const WITHOUT_FEATURE: &str = "built without the `counters` feature";

/// Most counters a [`CounterGroup`] reads: the length of [`Counter::ALL`]
/// (which must stay at most this), so `[u64; MAX_COUNTERS]` holds any
/// read.
pub(crate) const MAX_COUNTERS: usize = 10;

const _: () = assert!(Counter::ALL.len() <= MAX_COUNTERS);

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
    /// Loads that went to memory, local or remote
    /// (`PERF_COUNT_HW_CACHE_NODE` read accesses, hardware).
    NodeLoads,
    /// Loads served by another node's memory (`PERF_COUNT_HW_CACHE_NODE`
    /// read misses, hardware).
    NodeLoadMisses,
    /// Time the thread ran, ns (software).
    TaskClock,
    /// Page faults (software).
    PageFaults,
    /// Context switches (software, counted in kernel mode only).
    ContextSwitches,
    /// Moves to another CPU (software, counted in kernel mode only).
    CpuMigrations,
}

impl Counter {
    /// The hardware (PMU) counters.
    pub const HARDWARE: &'static [Counter] = &[
        Counter::Cycles,
        Counter::Instructions,
        Counter::CacheMisses,
        Counter::LlcLoadMisses,
        Counter::NodeLoads,
        Counter::NodeLoadMisses,
    ];
    /// The software (kernel) counters.
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
    #[cfg(feature = "counters")]
    fn kernel_only(self) -> bool {
        matches!(self, Counter::ContextSwitches | Counter::CpuMigrations)
    }

    /// A builder for its event: this thread, any CPU, enabled (it counts
    /// once its group's disabled leader is enabled).
    #[cfg(feature = "counters")]
    fn builder(self) -> Builder<'static> {
        fn b(e: impl Event + 'static) -> Builder<'static> {
            let mut b = Builder::new(e);
            // Enabled at creation, so that enabling the leader schedules
            // the whole group at once. Created disabled and enabled with
            // the group, member by member, a task-clock enabled last (alone
            // in its group, or after page-faults) did not count until the
            // thread's next context switch: measured on Linux 6.18, it read
            // 0 to 90% of a 5 ms busy loop.
            b.observe_self().any_cpu().enabled(true);
            b
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
    /// Why, in words, with the system's error where there was one.
    pub reason: String,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.counter, self.reason)
    }
}

#[cfg(feature = "counters")]
/// The file that rules who may count what.
const PARANOID: &str = "/proc/sys/kernel/perf_event_paranoid";

#[cfg(feature = "counters")]
/// `perf_event_paranoid`'s value, or "unknown".
fn paranoid() -> String {
    std::fs::read_to_string(PARANOID)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

#[cfg(feature = "counters")]
/// Whether `e` is a refusal on permission (as of kernel-mode counting).
fn refused(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM))
}

#[cfg(feature = "counters")]
/// Explains an open failure in words, with the system's error.
fn reason(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOENT | libc::EOPNOTSUPP) => {
            format!("not supported by this CPU or hypervisor ({e})")
        }
        Some(libc::EINVAL) => {
            format!("not supported by this CPU or kernel: the event was rejected as invalid ({e})")
        }
        Some(libc::EACCES) => format!(
            "not permitted: {PARANOID} is {} and this process lacks CAP_PERFMON ({e})",
            paranoid()
        ),
        Some(libc::EPERM) => format!(
            "not permitted: {PARANOID} is {} and this process lacks CAP_PERFMON, \
             or a seccomp filter (as in a container) refuses perf_event_open ({e})",
            paranoid()
        ),
        Some(libc::ENOSYS) => format!("perf_event_open is not available in this kernel ({e})"),
        Some(libc::EBUSY) => {
            format!("the counter registers are held exclusively by another program ({e})")
        }
        Some(libc::EMFILE | libc::ENFILE) => {
            format!("no file descriptor left for the counter ({e})")
        }
        _ => format!("perf_event_open failed ({e})"),
    }
}

#[cfg(feature = "counters")]
/// `u64`s in the largest read: `nr`, then (value, id) for the leader and
/// up to [`MAX_COUNTERS`] members.
const READ_WORDS: usize = 1 + 2 * (1 + MAX_COUNTERS);

#[cfg(feature = "counters")]
/// One perf group: a dummy leader, whose descriptor is read, and its
/// members.
struct Set {
    /// The leader (a dummy event): reading it reads the group.
    leader: Group,
    /// The members' handles, in read order. Dropping one would close it
    /// and take it out of the group, so they are kept.
    members: Vec<perf_event::Counter>,
    /// The ids the kernel lists in a read, leader first, then the members
    /// in the order they were added.
    ids: Vec<u64>,
}

#[cfg(feature = "counters")]
impl Set {
    /// A new, empty group; `pinned` for hardware (see the module's docs).
    fn new(pinned: bool) -> io::Result<Set> {
        // GROUP (with ID, which perf-event2 adds): the read is `nr`, then
        // (value, id) per event. No time fields: a pinned group is never
        // time-shared, and software events never are.
        let leader = Group::builder()
            .observe_self()
            .any_cpu()
            .pinned(pinned)
            .read_format(ReadFormat::GROUP)
            .build_group()?;
        let ids = vec![leader.id()];
        Ok(Set {
            leader,
            members: Vec::new(),
            ids,
        })
    }

    /// Adds `b`'s event to the group.
    fn add(&mut self, b: &Builder<'_>) -> io::Result<()> {
        let member = self.leader.add(b)?;
        self.ids.push(member.id());
        self.members.push(member);
        Ok(())
    }

    /// Reads the group into `buf`: the bytes read (0 for a pinned group
    /// that is off the counter registers), or the error.
    fn read_raw(&self, buf: &mut [u64; READ_WORDS]) -> io::Result<usize> {
        let fd = self.leader.as_counter().as_raw_fd();
        // SAFETY: `fd` is the leader's open descriptor, owned by
        // `self.leader` and so open for this call; `buf` is a writable
        // buffer of exactly the length passed, and read(2) writes at most
        // that many bytes into it.
        let got = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), std::mem::size_of_val(buf)) };
        usize::try_from(got).map_err(|_| io::Error::last_os_error())
    }

    /// Whether `got` bytes of `buf` are a read of this group: `nr`, then
    /// (value, id) for the leader and each member, in `ids`' order.
    fn is_read_of(&self, buf: &[u64; READ_WORDS], got: usize) -> bool {
        let n = self.ids.len();
        got == (1 + 2 * n) * std::mem::size_of::<u64>()
            && buf[0] == n as u64
            && (0..n).all(|k| buf[2 + 2 * k] == self.ids[k])
    }

    /// The members' values into `out[..members.len()]`; false (`out`
    /// untouched) if the read failed, came back empty (a pinned group
    /// pushed off the counter registers), or did not list the group's
    /// events.
    fn read(&self, out: &mut [u64]) -> bool {
        // perf-event2's `Group::read` allocates twice per read; reading the
        // leader's descriptor straight into the stack costs ~20% less.
        let mut buf = [0u64; READ_WORDS];
        match self.read_raw(&mut buf) {
            Ok(got) if self.is_read_of(&buf, got) => {
                for (k, o) in out[..self.members.len()].iter_mut().enumerate() {
                    // Entry k + 1 (entry 0 is the leader): its value is at
                    // 1 + 2 (k + 1).
                    *o = buf[3 + 2 * k];
                }
                true
            }
            _ => false,
        }
    }
}

#[cfg(feature = "counters")]
/// Failures a test forces (the machine may not fail on its own).
struct Faults<'a> {
    /// An error to fail a counter's open with, instead of trying.
    open: &'a dyn Fn(Counter) -> Option<io::Error>,
    /// Refuse kernel-mode counting (with `EACCES`, as
    /// `perf_event_paranoid` ≥ 2 does) without asking the kernel.
    refuse_kernel: bool,
    /// Most members a group can count at once, as if the counter registers
    /// held only that many (software groups always fit).
    fit: usize,
}

#[cfg(feature = "counters")]
/// Opens `c` in `set`: kernel mode too if allowed, else user mode only
/// (unless `c` counts only in kernel mode); `Err` is the reason it did not
/// open.
fn open_one(set: &mut Set, c: Counter, faults: &Faults<'_>) -> Result<(), String> {
    if let Some(e) = (faults.open)(c) {
        return Err(reason(&e));
    }
    let mut b = c.builder();
    let with_kernel = if faults.refuse_kernel {
        Err(io::Error::from_raw_os_error(libc::EACCES))
    } else {
        set.add(b.include_kernel())
    };
    match with_kernel {
        Ok(()) => Ok(()),
        Err(e) if refused(&e) && c.kernel_only() => Err(format!(
            "counted only in kernel mode, which {PARANOID} = {} forbids for this process ({e})",
            paranoid()
        )),
        Err(e) if refused(&e) => set.add(b.exclude_kernel(true)).map_err(|e| reason(&e)),
        Err(e) => Err(reason(&e)),
    }
}

#[cfg(feature = "counters")]
/// Opens the counters of one kind (`hardware` or not) into a group, enabled
/// and counting; every counter of `members` ends up either in the returned
/// set's read order or in `unavailable`.
fn open_set(
    mut members: Vec<Counter>,
    hardware: bool,
    faults: &Faults<'_>,
    unavailable: &mut Vec<Unavailable>,
) -> Option<(Set, Vec<Counter>)> {
    fn all_out(cs: &[Counter], reason: String, unavailable: &mut Vec<Unavailable>) {
        unavailable.extend(cs.iter().map(|&counter| Unavailable {
            counter,
            reason: reason.clone(),
        }));
    }
    while !members.is_empty() {
        let mut set = match Set::new(hardware) {
            Ok(s) => s,
            Err(e) => {
                all_out(&members, reason(&e), unavailable);
                return None;
            }
        };
        let mut opened = Vec::new();
        for &c in &members {
            match open_one(&mut set, c, faults) {
                Ok(()) => opened.push(c),
                Err(reason) => unavailable.push(Unavailable { counter: c, reason }),
            }
        }
        if opened.is_empty() {
            return None;
        }
        if let Err(e) = set.leader.enable() {
            all_out(&opened, reason(&e), unavailable);
            return None;
        }
        // Enabling puts the group on this CPU's registers at once (the
        // thread is running): a pinned group that does not fit is in error
        // state now, and its read comes back empty.
        let mut buf = [0u64; READ_WORDS];
        let probe = if opened.len() > faults.fit {
            Ok(0)
        } else {
            set.read_raw(&mut buf)
        };
        match probe {
            Ok(got) if set.is_read_of(&buf, got) => return Some((set, opened)),
            Ok(0) => {}
            Ok(got) => {
                let r = format!(
                    "the group's read ({got} bytes) did not list its {} events",
                    set.ids.len()
                );
                all_out(&opened, r, unavailable);
                return None;
            }
            Err(e) => {
                all_out(
                    &opened,
                    format!("reading the group failed ({e})"),
                    unavailable,
                );
                return None;
            }
        }
        drop(set);
        let last = opened.pop().expect("opened is not empty");
        let reason = if opened.is_empty() {
            "the CPU has no free counter register for it (the NMI watchdog, \
             /proc/sys/kernel/nmi_watchdog, or another program's pinned counters \
             hold them)"
                .to_string()
        } else {
            let others: Vec<_> = opened.iter().map(|c| c.name()).collect();
            format!(
                "the CPU's free counter registers cannot hold it together with {} \
                 (a group counts all its members at once or not at all; the NMI \
                 watchdog, /proc/sys/kernel/nmi_watchdog, may hold one)",
                others.join(", ")
            )
        };
        unavailable.push(Unavailable {
            counter: last,
            reason,
        });
        // The ones that failed to open are reported; try the rest again.
        members = opened;
    }
    None
}

/// The counters of the thread that opened it, read together.
///
/// It counts that thread only, from [`open`](Self::open) on; it is `Send`
/// and may be read from any thread (see the module's docs).
#[cfg(feature = "counters")]
pub(crate) struct CounterGroup {
    /// The hardware group, then the software group (those that opened).
    sets: Vec<Set>,
    /// Their counters, in read order.
    order: Vec<Counter>,
}

#[cfg(feature = "counters")]
impl fmt::Debug for CounterGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CounterGroup")
            .field("counters", &self.order)
            .finish()
    }
}

#[cfg(feature = "counters")]
impl CounterGroup {
    /// Opens `wanted` for the calling thread (hardware counters in one perf
    /// group, software ones in another, so that one failing kind does not
    /// take the other down), counting at once. The ones that cannot be
    /// counted come back as [`Unavailable`], each with its reason; every
    /// counter of `wanted` is either in [`counters`](Self::counters) or
    /// unavailable, once (repeats in `wanted` are ignored).
    ///
    /// Kernel mode is counted where allowed, else user mode only; the
    /// counters that count only in kernel mode are then unavailable (see
    /// the module's docs).
    pub(crate) fn open(wanted: &[Counter]) -> (CounterGroup, Vec<Unavailable>) {
        CounterGroup::open_with(wanted, &|_| None)
    }

    /// [`open`](Self::open), but a counter for which `fail` gives an error
    /// fails to open with it (for tests).
    pub(crate) fn open_with(
        wanted: &[Counter],
        fail: &dyn Fn(Counter) -> Option<io::Error>,
    ) -> (CounterGroup, Vec<Unavailable>) {
        CounterGroup::open_inner(
            wanted,
            &Faults {
                open: fail,
                refuse_kernel: false,
                fit: usize::MAX,
            },
        )
    }

    fn open_inner(wanted: &[Counter], faults: &Faults<'_>) -> (CounterGroup, Vec<Unavailable>) {
        let mut unique: Vec<Counter> = Vec::with_capacity(wanted.len());
        for &c in wanted {
            if !unique.contains(&c) {
                unique.push(c);
            }
        }
        let mut unavailable = Vec::new();
        let mut sets = Vec::new();
        let mut order = Vec::new();
        for hardware in [true, false] {
            let members: Vec<Counter> = unique
                .iter()
                .copied()
                .filter(|c| c.is_hardware() == hardware)
                .collect();
            if let Some((set, opened)) = open_set(members, hardware, faults, &mut unavailable) {
                sets.push(set);
                order.extend(opened);
            }
        }
        // In the order asked for.
        unavailable.sort_by_key(|u| unique.iter().position(|&c| c == u.counter));
        (CounterGroup { sets, order }, unavailable)
    }

    /// The counters that opened, in the order [`read`](Self::read) gives:
    /// the hardware ones, then the software ones, each in the order asked
    /// for.
    pub(crate) fn counters(&self) -> &[Counter] {
        &self.order
    }

    /// The current values, one per opened counter, into
    /// `out[..counters().len()]`; false (and `out` untouched) if a read
    /// failed. One `read(2)` per perf group, no allocation.
    ///
    /// A read fails when a pinned hardware group has been pushed off the
    /// counter registers (it then no longer counts); the recorder should
    /// then report no values rather than zeros.
    ///
    /// # Panics
    ///
    /// If `out` is shorter than [`counters`](Self::counters).
    pub(crate) fn read(&mut self, out: &mut [u64]) -> bool {
        let n = self.order.len();
        assert!(out.len() >= n, "{} slots for {n} counters", out.len());
        let mut values = [0u64; MAX_COUNTERS];
        let mut i = 0;
        for set in &self.sets {
            let k = set.members.len();
            if !set.read(&mut values[i..i + k]) {
                return false;
            }
            i += k;
        }
        out[..n].copy_from_slice(&values[..n]);
        true
    }
}

/// A build without the `counters` feature: no counter opens.
#[cfg(not(feature = "counters"))]
#[derive(Debug)]
pub(crate) struct CounterGroup;

#[cfg(not(feature = "counters"))]
impl CounterGroup {
    /// Opens nothing: every counter of `wanted` (once each, in order) is
    /// unavailable with the reason `WITHOUT_FEATURE`.
    pub(crate) fn open(wanted: &[Counter]) -> (CounterGroup, Vec<Unavailable>) {
        let mut unavailable: Vec<Unavailable> = Vec::with_capacity(wanted.len());
        for &counter in wanted {
            if !unavailable.iter().any(|u| u.counter == counter) {
                unavailable.push(Unavailable {
                    counter,
                    reason: WITHOUT_FEATURE.to_string(),
                });
            }
        }
        (CounterGroup, unavailable)
    }

    /// No counter opened.
    pub(crate) fn counters(&self) -> &[Counter] {
        &[]
    }

    /// Reads nothing (there is nothing to read): always succeeds.
    pub(crate) fn read(&mut self, _out: &mut [u64]) -> bool {
        true
    }
}

#[cfg(all(test, feature = "counters"))]
#[path = "counters_tests.rs"]
mod tests;

#[cfg(all(test, not(feature = "counters")))]
mod tests {
    use super::*;

    #[test]
    fn without_the_feature_every_counter_is_named_unavailable_once() {
        let (mut g, un) =
            CounterGroup::open(&[Counter::Cycles, Counter::TaskClock, Counter::Cycles]);
        assert!(g.counters().is_empty());
        assert!(g.read(&mut []));
        let names: Vec<_> = un.iter().map(|u| (u.counter, u.reason.as_str())).collect();
        assert_eq!(
            names,
            [
                (Counter::Cycles, WITHOUT_FEATURE),
                (Counter::TaskClock, WITHOUT_FEATURE)
            ]
        );
    }
}
