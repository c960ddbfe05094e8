//! The CPU quota of the process's cgroup: how many CPUs' worth of time it
//! may use (`cpu.max` in cgroup v2, `cpu.cfs_quota_us` over
//! `cpu.cfs_period_us` in v1), the smallest along the path from its cgroup
//! to the root of the hierarchy. Containers limited with `--cpus` see it;
//! `std::thread::available_parallelism` counts it too.
//!
//! Files read, below the root (`/` on a real machine): `proc/self/cgroup`
//! (which cgroup the process is in), `proc/self/mountinfo` (where each
//! hierarchy is mounted; when it lists no cgroup2 mount,
//! `sys/fs/cgroup` is assumed for v2), and the quota files of each cgroup
//! directory from the process's up to the mount. A machine without cgroups
//! (no `proc/self/cgroup`) has no quota; a quota file that exists but
//! cannot be parsed is an error naming it.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::NumaError;

/// The CPU quota of this process's cgroup, in CPUs (`1.5`: one and a half
/// CPUs' worth of time per period), or `None` when there is no limit.
///
/// ```
/// if let Some(cpus) = terroir::numa::cpu_quota().unwrap() {
///     assert!(cpus > 0.0);
/// }
/// ```
///
/// # Errors
/// [`NumaError::Parse`] naming a quota file whose text is garbled;
/// [`NumaError::Io`] naming one that exists but cannot be read.
pub fn cpu_quota() -> Result<Option<f64>, NumaError> {
    cpu_quota_under(Path::new("/"))
}

/// [`cpu_quota`] read from a tree rooted at `root` instead of `/` (with
/// `proc/self/cgroup`, `proc/self/mountinfo` and the cgroup files at their
/// mount points below `root`), for fixtures of other machines.
///
/// # Errors
/// As [`cpu_quota`], naming files below `root`.
pub fn cpu_quota_under(root: impl AsRef<Path>) -> Result<Option<f64>, NumaError> {
    let root = root.as_ref();
    let Some(membership) = read_optional(&root.join("proc/self/cgroup"))? else {
        return Ok(None);
    };
    let mounts = read_optional(&root.join("proc/self/mountinfo"))?.unwrap_or_default();
    let mut quota: Option<f64> = None;
    let mut keep = |q: Option<f64>| {
        if let Some(q) = q {
            quota = Some(quota.map_or(q, |old| old.min(q)));
        }
    };
    for line in membership.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            let mount = mount_point(&mounts, |fs, _| fs == "cgroup2")
                .unwrap_or_else(|| ("/".into(), "/sys/fs/cgroup".into()));
            keep(walk(root, &mount, path, read_v2)?);
        } else if controllers.split(',').any(|c| c == "cpu") {
            let cpu = |fs: &str, opts: &str| fs == "cgroup" && opts.split(',').any(|o| o == "cpu");
            if let Some(mount) = mount_point(&mounts, cpu) {
                keep(walk(root, &mount, path, read_v1)?);
            }
        }
    }
    Ok(quota)
}

/// A file's text, `None` when it does not exist.
fn read_optional(path: &Path) -> Result<Option<String>, NumaError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(NumaError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The (root in the hierarchy, mount point) of the first mount whose file
/// system type and super options `matches`.
fn mount_point(mountinfo: &str, matches: impl Fn(&str, &str) -> bool) -> Option<(String, String)> {
    mountinfo.lines().find_map(|line| {
        // id parent major:minor root mount-point options [optional...] - fstype source super-options
        let (before, after) = line.split_once(" - ")?;
        let mut after = after.split_whitespace();
        let (fs, _source, opts) = (after.next()?, after.next()?, after.next().unwrap_or(""));
        if !matches(fs, opts) {
            return None;
        }
        let mut before = before.split_whitespace().skip(3);
        Some((before.next()?.to_owned(), before.next()?.to_owned()))
    })
}

/// The smallest quota `read` finds in the directories from the process's
/// cgroup `path` up to the mount point of its hierarchy.
fn walk(
    root: &Path,
    (mount_root, mount_point): &(String, String),
    path: &str,
    read: fn(&Path) -> Result<Option<f64>, NumaError>,
) -> Result<Option<f64>, NumaError> {
    // The part of the hierarchy mounted is `mount_root`: a container sees
    // its own cgroup as the root.
    let Ok(rel) = Path::new(path).strip_prefix(mount_root) else {
        return Ok(None);
    };
    let top: PathBuf = root.join(mount_point.trim_start_matches('/'));
    let mut dir = top.join(rel);
    let mut quota: Option<f64> = None;
    loop {
        if let Some(q) = read(&dir)? {
            quota = Some(quota.map_or(q, |old| old.min(q)));
        }
        if dir == top || !dir.pop() || !dir.starts_with(&top) {
            return Ok(quota);
        }
    }
}

fn parse_err(path: &Path, text: &str, expected: &'static str) -> NumaError {
    NumaError::Parse {
        what: path.display().to_string(),
        text: text.to_owned(),
        expected,
    }
}

/// cgroup v2: `cpu.max` is `max <period>` or `<quota> <period>`.
fn read_v2(dir: &Path) -> Result<Option<f64>, NumaError> {
    let path = dir.join("cpu.max");
    let Some(text) = read_optional(&path)? else {
        return Ok(None);
    };
    const EXPECTED: &str = "\"max <period>\" or \"<quota> <period>\" in microseconds";
    let mut words = text.split_whitespace();
    let (Some(quota), Some(period), None) = (words.next(), words.next(), words.next()) else {
        return Err(parse_err(&path, &text, EXPECTED));
    };
    let period: u64 = period
        .parse()
        .map_err(|_| parse_err(&path, &text, EXPECTED))?;
    if quota == "max" {
        return Ok(None);
    }
    let quota: u64 = quota
        .parse()
        .map_err(|_| parse_err(&path, &text, EXPECTED))?;
    if period == 0 {
        return Err(parse_err(&path, &text, EXPECTED));
    }
    Ok(Some(quota as f64 / period as f64))
}

/// cgroup v1: `cpu.cfs_quota_us` (`-1`: no limit) over `cpu.cfs_period_us`.
fn read_v1(dir: &Path) -> Result<Option<f64>, NumaError> {
    let quota_path = dir.join("cpu.cfs_quota_us");
    let Some(quota) = read_optional(&quota_path)? else {
        return Ok(None);
    };
    let quota: i64 = quota
        .trim()
        .parse()
        .map_err(|_| parse_err(&quota_path, &quota, "a number of microseconds, or -1"))?;
    if quota < 0 {
        return Ok(None);
    }
    let period_path = dir.join("cpu.cfs_period_us");
    let Some(period) = read_optional(&period_path)? else {
        return Ok(None);
    };
    match period.trim().parse::<u64>() {
        Ok(p) if p > 0 => Ok(Some(quota as f64 / p as f64)),
        _ => Err(parse_err(
            &period_path,
            &period,
            "a positive number of microseconds",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree under the temporary directory, removed on drop.
    struct Tree(PathBuf);

    impl Tree {
        fn new(name: &str) -> Tree {
            let dir = std::env::temp_dir().join(format!(
                "terroir-cgroup-{name}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Tree(dir)
        }

        fn file(&self, path: &str, text: &str) -> &Tree {
            let p = self.0.join(path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
            self
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    const V2_MOUNTS: &str = "31 23 0:28 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n";

    #[test]
    fn v2_quota_is_the_smallest_on_the_path_to_the_root() {
        let t = Tree::new("v2");
        t.file("proc/self/cgroup", "0::/docker/abc\n")
            .file("proc/self/mountinfo", V2_MOUNTS)
            .file("sys/fs/cgroup/cpu.max", "max 100000\n")
            .file("sys/fs/cgroup/docker/cpu.max", "300000 100000\n")
            .file("sys/fs/cgroup/docker/abc/cpu.max", "150000 100000\n");
        assert_eq!(cpu_quota_under(&t.0).unwrap(), Some(1.5));
        t.file("sys/fs/cgroup/docker/cpu.max", "50000 100000\n");
        assert_eq!(
            cpu_quota_under(&t.0).unwrap(),
            Some(0.5),
            "a parent's is lower"
        );
        t.file("sys/fs/cgroup/docker/cpu.max", "max 100000\n")
            .file("sys/fs/cgroup/docker/abc/cpu.max", "max 100000\n");
        assert_eq!(cpu_quota_under(&t.0).unwrap(), None, "no limit anywhere");
    }

    #[test]
    fn v2_in_a_container_sees_its_cgroup_as_the_root() {
        let t = Tree::new("v2ns");
        t.file("proc/self/cgroup", "0::/\n")
            .file("proc/self/mountinfo", V2_MOUNTS)
            .file("sys/fs/cgroup/cpu.max", "200000 100000\n");
        assert_eq!(cpu_quota_under(&t.0).unwrap(), Some(2.0));
    }

    #[test]
    fn v1_quota_reads_the_cpu_hierarchy() {
        let t = Tree::new("v1");
        t.file(
            "proc/self/cgroup",
            "4:memory:/x\n1:cpu,cpuacct:/kube/pod1\n0::/\n",
        )
        .file(
            "proc/self/mountinfo",
            "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n\
                 41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
        )
        .file("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n")
        .file("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n")
        .file(
            "sys/fs/cgroup/cpu,cpuacct/kube/pod1/cpu.cfs_quota_us",
            "250000\n",
        )
        .file(
            "sys/fs/cgroup/cpu,cpuacct/kube/pod1/cpu.cfs_period_us",
            "100000\n",
        );
        assert_eq!(cpu_quota_under(&t.0).unwrap(), Some(2.5));
    }

    #[test]
    fn no_cgroup_file_means_no_quota() {
        let t = Tree::new("none");
        assert_eq!(cpu_quota_under(&t.0).unwrap(), None);
    }

    #[test]
    fn a_garbled_quota_file_is_an_error_naming_it() {
        let t = Tree::new("garbled");
        t.file("proc/self/cgroup", "0::/\n")
            .file("proc/self/mountinfo", V2_MOUNTS)
            .file("sys/fs/cgroup/cpu.max", "lots\n");
        match cpu_quota_under(&t.0).unwrap_err() {
            NumaError::Parse { what, text, .. } => {
                assert!(what.ends_with("sys/fs/cgroup/cpu.max"), "{what}");
                assert_eq!(text, "lots\n");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn this_machine_reads_without_error() {
        let q = cpu_quota().unwrap();
        assert!(q.is_none_or(|q| q > 0.0), "{q:?}");
    }
}
