//! The "NUMA doctor": the machine's settings that bend what a report
//! measures, each with what it means for the numbers.
//!
//! ```
//! use terroir::report::Doctor;
//! let d = Doctor::check(None);
//! assert!(d.checks.iter().any(|c| c.name == "binding"));
//! println!("{d}");
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use super::serde_type;
use crate::numa::{
    allowed_cpus, bind_current_thread, current_cpu_and_node, locate, CpuSet, Sample, Topology,
};
use crate::pool::NodeVec;

serde_type! {
/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// As it should be for the report's numbers.
    Ok,
    /// Worth knowing when reading them.
    Note,
    /// Bends them: read them with this in mind.
    Warn,
}

/// One setting and what it means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// What was found.
    pub value: String,
    /// How it came out.
    pub status: Status,
    /// What it means for the report's numbers.
    pub meaning: String,
}

/// The checks ([`Doctor::check`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Doctor {
    /// In the order made.
    pub checks: Vec<Check>,
}
}

fn read(root: &Path, path: &str) -> Option<String> {
    std::fs::read_to_string(root.join(path.trim_start_matches('/')))
        .ok()
        .map(|s| s.trim().to_string())
}

fn check(
    name: &str,
    value: impl Into<String>,
    status: Status,
    meaning: impl Into<String>,
) -> Check {
    Check {
        name: name.to_string(),
        value: value.into(),
        status,
        meaning: meaning.into(),
    }
}

/// The bracketed word of a sysfs choice list ("always [madvise] never").
fn chosen(list: &str) -> &str {
    list.split_whitespace()
        .find(|w| w.starts_with('['))
        .map_or(list, |w| w.trim_matches(|c| c == '[' || c == ']'))
}

/// A Linux CPU list ("0-3,8") as numbers.
fn cpu_list(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.parse::<u32>().ok()),
        }
    }
    out
}

fn status_field<'a>(status: &'a str, key: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .map(str::trim)
}

fn thp(root: &Path) -> Check {
    let Some(text) = read(root, "/sys/kernel/mm/transparent_hugepage/enabled") else {
        return check(
            "transparent huge pages",
            "not available",
            Status::Ok,
            "4 KiB pages only: placement is exact to the page",
        );
    };
    let mode = chosen(&text).to_string();
    let (status, meaning) = match mode.as_str() {
        "always" => (
            Status::Note,
            "anonymous memory may come in 2 MiB pages, each placed whole on the node of its \
             first touch: data blocks smaller than 2 MiB meant for different nodes can share \
             one node. NodeVec and NodeBox bind before the first touch, so their placement \
             holds (to 2 MiB); other memory follows whoever touched each 2 MiB first",
        ),
        "madvise" => (
            Status::Ok,
            "only memory that asks (madvise) gets 2 MiB pages: placement is exact to the \
             4 KiB page elsewhere",
        ),
        "never" => (
            Status::Ok,
            "4 KiB pages: placement is exact to the page (large data costs more TLB misses)",
        ),
        _ => (Status::Note, "an unknown mode"),
    };
    check("transparent huge pages", mode, status, meaning)
}

fn numa_balancing(root: &Path) -> Check {
    match read(root, "/proc/sys/kernel/numa_balancing").as_deref() {
        None => check(
            "automatic NUMA balancing",
            "not in this kernel",
            Status::Ok,
            "pages stay where they were placed",
        ),
        Some("0") => check(
            "automatic NUMA balancing",
            "0 (off)",
            Status::Ok,
            "pages stay where they were placed: the locality figures describe the placement the \
             program asked for",
        ),
        Some(v) => check(
            "automatic NUMA balancing",
            format!("{v} (on)"),
            Status::Warn,
            "the kernel samples memory accesses (hinting page faults, counted in page-faults) and \
             migrates unbound pages toward the threads that use them, and threads toward their \
             pages: locality and inflation drift during a run. Memory bound with mbind \
             (NodeVec, NodeBox, slab pools) is not moved by it. Set \
             /proc/sys/kernel/numa_balancing to 0 for stable numbers",
        ),
    }
}

fn cpuset(root: &Path, topology: Option<&Topology>) -> Vec<Check> {
    let mut out = Vec::new();
    let status = read(root, "/proc/self/status").unwrap_or_default();
    let allowed = status_field(&status, "Cpus_allowed_list").map(cpu_list);
    let mems = status_field(&status, "Mems_allowed_list").map(cpu_list);
    let online = read(root, "/sys/devices/system/node/online").map(|s| cpu_list(&s));
    let Some(allowed) = allowed else {
        out.push(check(
            "cpuset",
            "unknown",
            Status::Note,
            "/proc/self/status has no Cpus_allowed_list",
        ));
        return out;
    };
    let mut partial = Vec::new();
    let mut per_node = Vec::new();
    for node in online.clone().unwrap_or_default() {
        let Some(list) = read(
            root,
            &format!("/sys/devices/system/node/node{node}/cpulist"),
        ) else {
            continue;
        };
        let cpus = cpu_list(&list);
        if cpus.is_empty() {
            continue;
        }
        let n = cpus.iter().filter(|c| allowed.contains(c)).count();
        per_node.push(format!("node {node}: {n} of {} CPUs", cpus.len()));
        if n > 0 && n < cpus.len() {
            partial.push(node);
        }
    }
    let value = format!(
        "CPUs {} allowed ({}); {}",
        compact(&allowed),
        allowed.len(),
        if per_node.is_empty() {
            "no node information in sysfs".to_string()
        } else {
            per_node.join(", ")
        }
    );
    if partial.is_empty() {
        out.push(check(
            "cpuset (CPUs)",
            value,
            Status::Ok,
            "the pool's workers cover each allowed node's CPUs",
        ));
    } else {
        out.push(check(
            "cpuset (CPUs)",
            value,
            Status::Note,
            format!(
                "only part of node(s) {partial:?} is allowed: those nodes get fewer workers \
                 than CPUs, so their placed tasks queue longer and other nodes help more"
            ),
        ));
    }
    if let Some(mems) = mems {
        let missing: Vec<u32> = online
            .unwrap_or_default()
            .into_iter()
            .filter(|n| !mems.contains(n))
            .collect();
        if missing.is_empty() {
            out.push(check(
                "cpuset (memory)",
                format!("nodes {} allowed", compact(&mems)),
                Status::Ok,
                "memory may be bound to every node",
            ));
        } else {
            out.push(check(
                "cpuset (memory)",
                format!("nodes {} allowed", compact(&mems)),
                Status::Warn,
                format!(
                    "memory cannot be bound to nodes {missing:?} (cpuset.mems): placements there \
                     fail with NodeNotAllowed, and data meant for them lands elsewhere"
                ),
            ));
        }
    }
    if let Some(t) = topology {
        if !t.is_this_machine() {
            out.push(check(
                "topology",
                "described",
                Status::Note,
                "the pool runs on a described topology, not the machine's: its nodes are \
                 labels over the real CPUs, and memory is not really on them",
            ));
        }
    }
    out
}

/// A sorted list of numbers as ranges ("0-3,8").
fn compact(v: &[u32]) -> String {
    let mut v = v.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The tightest CPU quota of the process's cgroups and their ancestors (v2
/// `cpu.max`, v1 `cpu.cfs_quota_us`), in CPUs, with the file it came from
/// (`Some((None, file))`: a file saying "no quota"; `None`: no file).
fn quota(root: &Path) -> Option<(Option<f64>, PathBuf)> {
    let cgroups = read(root, "/proc/self/cgroup").unwrap_or_default();
    let mut best: Option<(Option<f64>, PathBuf)> = None;
    let mut consider = |q: Option<f64>, path: PathBuf| {
        let tighter = match (&best, q) {
            (None, _) => true,
            (Some((None, _)), Some(_)) => true,
            (Some((Some(b), _)), Some(q)) => q < *b,
            _ => false,
        };
        if tighter {
            best = Some((q, path));
        }
    };
    for line in cgroups.lines() {
        let mut f = line.splitn(3, ':');
        let (_, controllers, path) = match (f.next(), f.next(), f.next()) {
            (Some(a), Some(b), Some(c)) => (a, b, c),
            _ => continue,
        };
        // The cgroup and its ancestors: the tightest quota rules.
        let mut dir = PathBuf::from(path.trim_start_matches('/'));
        loop {
            if controllers.is_empty() {
                let file = Path::new("sys/fs/cgroup").join(&dir).join("cpu.max");
                if let Some(text) = read(root, &file.to_string_lossy()) {
                    let mut w = text.split_whitespace();
                    let q = match (w.next(), w.next().and_then(|p| p.parse::<f64>().ok())) {
                        (Some("max"), _) | (None, _) => None,
                        (Some(q), Some(p)) if p > 0.0 => q.parse::<f64>().ok().map(|q| q / p),
                        _ => None,
                    };
                    consider(q, root.join(file));
                }
            } else if controllers.split(',').any(|c| c == "cpu") {
                let base = Path::new("sys/fs/cgroup/cpu").join(&dir);
                let q = read(root, &base.join("cpu.cfs_quota_us").to_string_lossy());
                let p = read(root, &base.join("cpu.cfs_period_us").to_string_lossy());
                if let (Some(q), Some(p)) = (q, p) {
                    let q = match (q.parse::<f64>(), p.parse::<f64>()) {
                        (Ok(q), Ok(p)) if q > 0.0 && p > 0.0 => Some(q / p),
                        _ => None,
                    };
                    consider(q, root.join(base).join("cpu.cfs_quota_us"));
                }
            }
            if !dir.pop() {
                break;
            }
        }
    }
    best
}

fn cgroup_quota(root: &Path, cpus: usize) -> Check {
    match quota(root) {
        None => check(
            "cgroup CPU quota",
            "none found",
            Status::Ok,
            "the workers may use every allowed CPU all the time",
        ),
        Some((None, path)) => check(
            "cgroup CPU quota",
            format!("none ({})", path.display()),
            Status::Ok,
            "the workers may use every allowed CPU all the time",
        ),
        Some((Some(q), path)) if q + 1e-9 < cpus as f64 => check(
            "cgroup CPU quota",
            format!("{q:.2} CPUs ({})", path.display()),
            Status::Warn,
            format!(
                "less than the {cpus} allowed CPUs: a pool with a worker per CPU is throttled \
                 every period, and the throttled time shows as preemption, inflation and idle \
                 time that the program did not cause. Use at most {} workers",
                q.floor().max(1.0)
            ),
        ),
        Some((Some(q), path)) => check(
            "cgroup CPU quota",
            format!("{q:.2} CPUs ({})", path.display()),
            Status::Ok,
            format!("at least the {cpus} allowed CPUs"),
        ),
    }
}

fn load(root: &Path, cpus: usize) -> Option<Check> {
    let text = read(root, "/proc/loadavg")?;
    let one: f64 = text.split_whitespace().next()?.parse().ok()?;
    Some(if one > cpus as f64 * 0.5 {
        check(
            "machine load",
            format!("{one:.2} over the last minute, {cpus} CPUs"),
            Status::Warn,
            "other processes compete for the CPUs: workers and baseline runs get preempted \
             (see the CPU-time columns and warnings), and times vary from run to run. Compare \
             runs made together, by ratio, or repeat (MeasureOptions::repeat)",
        )
    } else {
        check(
            "machine load",
            format!("{one:.2} over the last minute, {cpus} CPUs"),
            Status::Ok,
            "the CPUs were mostly free",
        )
    })
}

fn virtual_machine(root: &Path) -> Option<Check> {
    let info = read(root, "/proc/cpuinfo")?;
    let vm = info
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    vm.then(|| {
        check(
            "virtual machine",
            "yes (the CPU reports a hypervisor)",
            Status::Note,
            "NUMA nodes may be emulated (memory of every node equally far), hardware counters \
             are usually absent, and the host can take a vCPU away without the guest knowing: \
             task-clock counts that time as running",
        )
    })
}

/// Whether the process's effective capabilities include CAP_PERFMON (38)
/// or CAP_SYS_ADMIN (21), which lift `perf_event_paranoid`.
fn may_perfmon(root: &Path) -> bool {
    let status = read(root, "/proc/self/status").unwrap_or_default();
    status_field(&status, "CapEff")
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .is_some_and(|caps| caps & (1 << 38 | 1 << 21) != 0)
}

fn paranoid(root: &Path) -> Option<Check> {
    let v = read(root, "/proc/sys/kernel/perf_event_paranoid")?;
    let level: i64 = v.parse().ok()?;
    if may_perfmon(root) {
        return Some(check(
            "perf_event_paranoid",
            format!("{v}, lifted (the process has CAP_PERFMON or CAP_SYS_ADMIN)"),
            Status::Ok,
            "counters may count kernel mode too: page faults and context switches are complete",
        ));
    }
    let (status, meaning) = match level {
        i64::MIN..=1 => (
            Status::Ok,
            "counters may count kernel mode too: page faults and context switches are \
             complete",
        ),
        2 => (
            Status::Note,
            "counters count user mode only (without CAP_PERFMON): context switches and CPU \
             migrations are unavailable, hardware counters miss the kernel's share",
        ),
        _ => (
            Status::Warn,
            "perf_event_open is refused to unprivileged processes: no counter counts",
        ),
    };
    Some(check("perf_event_paranoid", v, status, meaning))
}

/// Whether a thread binds to each allowed CPU (and `getcpu` agrees), and
/// memory to each allowed node of `topology` (a page bound there is found
/// there).
fn binding(topology: Option<&Topology>) -> Check {
    let threads = std::thread::spawn(|| -> Result<usize, String> {
        let cpus = allowed_cpus().map_err(|e| format!("cannot read the allowed CPUs: {e}"))?;
        let mut n = 0;
        for cpu in cpus.iter() {
            bind_current_thread(&CpuSet::from_iter([cpu]))
                .map_err(|e| format!("cannot bind to CPU {cpu}: {e}"))?;
            let (now, _) = current_cpu_and_node().map_err(|e| format!("getcpu: {e}"))?;
            if now != cpu {
                return Err(format!("bound to CPU {cpu} but running on CPU {now}"));
            }
            n += 1;
        }
        Ok(n)
    })
    .join()
    .unwrap_or_else(|_| Err("the checking thread panicked".into()));
    let mut memory = Vec::new();
    let mut memory_ok = true;
    if let Some(t) = topology.filter(|t| t.is_this_machine()) {
        for node in t.nodes() {
            let id = node.id();
            let found = NodeVec::from_fn_on(4096, id, |i| i as u8)
                .map_err(|e| e.to_string())
                .and_then(|v| {
                    locate(&v, Sample::All)
                        .map_err(|e| e.to_string())
                        .map(|l| l.majority())
                });
            match found {
                Ok(Some(n)) if n == id => memory.push(format!("node {}: ok", id.os_index())),
                Ok(other) => {
                    memory_ok = false;
                    memory.push(format!(
                        "node {}: its page was found on {}",
                        id.os_index(),
                        other.map_or("no node".to_string(), |n| format!("node {}", n.os_index()))
                    ));
                }
                Err(e) => {
                    memory_ok = false;
                    memory.push(format!("node {}: {e}", id.os_index()));
                }
            }
        }
    }
    let mem = if memory.is_empty() {
        String::new()
    } else {
        format!("; memory binding: {}", memory.join(", "))
    };
    match threads {
        Ok(n) if memory_ok => check(
            "binding",
            format!("threads bind to each of the {n} allowed CPUs{mem}"),
            Status::Ok,
            "workers stay on their CPUs and memory lands where it is bound: a task's node is \
             the node it ran on",
        ),
        Ok(n) => check(
            "binding",
            format!("threads bind to each of the {n} allowed CPUs{mem}"),
            Status::Warn,
            "memory does not land where it is bound: locality figures (which trust the \
             declared node) overstate",
        ),
        Err(e) => check(
            "binding",
            format!("does not work: {e}{mem}"),
            Status::Warn,
            "workers cannot be pinned: the kernel moves them, and a task's node is only its \
             worker's usual node",
        ),
    }
}

impl Doctor {
    /// Checks this machine: transparent huge pages, automatic NUMA
    /// balancing, the cpuset against the nodes' CPUs and memory, the
    /// cgroup's CPU quota against the allowed CPUs, whether threads and
    /// memory bind (memory on each node of `topology`, when it is the
    /// machine's), the machine's load, whether it is a virtual machine,
    /// and `perf_event_paranoid`.
    pub fn check(topology: Option<&Topology>) -> Doctor {
        let mut d = Doctor::check_files(Path::new("/"), topology);
        d.checks.push(binding(topology));
        d
    }

    /// The checks that read files, under `root` instead of `/` (tests).
    pub(crate) fn check_files(root: &Path, topology: Option<&Topology>) -> Doctor {
        let status = read(root, "/proc/self/status").unwrap_or_default();
        let cpus = status_field(&status, "Cpus_allowed_list")
            .map(|l| cpu_list(l).len())
            .unwrap_or(1);
        let mut checks = vec![thp(root), numa_balancing(root)];
        checks.extend(cpuset(root, topology));
        checks.push(cgroup_quota(root, cpus));
        checks.extend(load(root, cpus));
        checks.extend(virtual_machine(root));
        checks.extend(paranoid(root));
        Doctor { checks }
    }
}

impl fmt::Display for Doctor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "NUMA doctor (this machine's settings that bend the numbers):"
        )?;
        for c in &self.checks {
            let tag = match c.status {
                Status::Ok => "ok  ",
                Status::Note => "note",
                Status::Warn => "WARN",
            };
            writeln!(f, "  [{tag}] {}: {}", c.name, c.value)?;
            writeln!(f, "         {}", c.meaning)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> PathBuf {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "terroir-doctor-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        for (path, text) in files {
            let p = root.join(path.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        root
    }

    fn find<'a>(d: &'a Doctor, name: &str) -> &'a Check {
        d.checks.iter().find(|c| c.name == name).unwrap()
    }

    #[test]
    fn reads_each_setting_and_says_what_it_means() {
        let root = tree(&[
            (
                "/sys/kernel/mm/transparent_hugepage/enabled",
                "[always] madvise never\n",
            ),
            ("/proc/sys/kernel/numa_balancing", "1\n"),
            (
                "/proc/self/status",
                "Name:\tx\nCpus_allowed_list:\t0-5\nMems_allowed_list:\t0\n",
            ),
            ("/sys/devices/system/node/online", "0-1\n"),
            ("/sys/devices/system/node/node0/cpulist", "0-3\n"),
            ("/sys/devices/system/node/node1/cpulist", "4-7\n"),
            ("/proc/self/cgroup", "0::/job/step\n"),
            ("/sys/fs/cgroup/job/cpu.max", "200000 100000\n"),
            ("/sys/fs/cgroup/job/step/cpu.max", "max 100000\n"),
            ("/proc/loadavg", "9.50 3.00 1.00 2/100 42\n"),
            ("/proc/sys/kernel/perf_event_paranoid", "2\n"),
        ]);
        let d = Doctor::check_files(&root, None);
        let thp = find(&d, "transparent huge pages");
        assert_eq!((thp.value.as_str(), thp.status), ("always", Status::Note));
        assert_eq!(find(&d, "automatic NUMA balancing").status, Status::Warn);
        let cpus = find(&d, "cpuset (CPUs)");
        assert_eq!(cpus.status, Status::Note, "{cpus:?}");
        assert!(cpus.value.contains("node 1: 2 of 4 CPUs"), "{cpus:?}");
        assert!(cpus.meaning.contains("[1]"), "{cpus:?}");
        let mems = find(&d, "cpuset (memory)");
        assert_eq!(mems.status, Status::Warn);
        assert!(mems.meaning.contains("[1]"));
        // The parent's 2-CPU quota rules over the child's "max": 6 CPUs
        // allowed, 2 CPUs of time.
        let q = find(&d, "cgroup CPU quota");
        assert_eq!(q.status, Status::Warn, "{q:?}");
        assert!(q.value.starts_with("2.00 CPUs"), "{q:?}");
        assert!(q.value.contains("job/cpu.max"), "{q:?}");
        assert_eq!(find(&d, "machine load").status, Status::Warn);
        assert_eq!(find(&d, "perf_event_paranoid").status, Status::Note);
        // CAP_PERFMON lifts it.
        std::fs::write(
            root.join("proc/self/status"),
            "Cpus_allowed_list:\t0-5\nMems_allowed_list:\t0\nCapEff:\t0000004000000000\n",
        )
        .unwrap();
        let lifted = Doctor::check_files(&root, None);
        assert_eq!(find(&lifted, "perf_event_paranoid").status, Status::Ok);
        assert!(d.checks.iter().all(|c| c.name != "virtual machine"));
        let text = d.to_string();
        assert!(
            text.contains("[WARN] automatic NUMA balancing: 1 (on)"),
            "{text}"
        );
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn quiet_settings_are_ok() {
        let root = tree(&[
            (
                "/sys/kernel/mm/transparent_hugepage/enabled",
                "always madvise [never]\n",
            ),
            ("/proc/sys/kernel/numa_balancing", "0\n"),
            (
                "/proc/self/status",
                "Cpus_allowed_list:\t0-3\nMems_allowed_list:\t0\n",
            ),
            ("/sys/devices/system/node/online", "0\n"),
            ("/sys/devices/system/node/node0/cpulist", "0-3\n"),
            ("/proc/self/cgroup", "1:cpu,cpuacct:/\n"),
            ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n"),
            ("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n"),
            ("/proc/loadavg", "0.10 0.10 0.10 1/100 42\n"),
        ]);
        let d = Doctor::check_files(&root, None);
        for c in &d.checks {
            assert_eq!(c.status, Status::Ok, "{c:?}");
        }
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn cpu_lists_and_ranges() {
        assert_eq!(cpu_list("0-3,8,10-11"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(compact(&[3, 0, 1, 2, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(chosen("always [madvise] never"), "madvise");
    }
}
