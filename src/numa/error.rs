//! [`NumaError`]: everything the `numa` layer can refuse, naming the input.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// An error from topology discovery or from the OS's NUMA and affinity calls.
///
/// Each variant names the input that caused it: the file and the text that
/// could not be parsed, the CPU that could not be bound, and so on.
#[derive(Debug)]
#[non_exhaustive]
pub enum NumaError {
    /// Text (from a sysfs file or from a caller) could not be parsed.
    Parse {
        /// Where the text came from: a file path or a description.
        what: String,
        /// The offending text.
        text: String,
        /// What was expected instead.
        expected: &'static str,
    },
    /// A file or directory could not be read.
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The machine (or sysfs tree) has no NUMA information at all. Use
    /// [`Topology::single_node`](super::Topology::single_node) to run anyway
    /// with every allowed CPU in one node.
    NoNumaInfo {
        /// The directory that was expected to describe the nodes.
        path: PathBuf,
    },
    /// The pieces of a topology do not fit together (a distance row of the
    /// wrong length, a CPU in two nodes, a node with no CPUs, ...).
    Inconsistent {
        /// What does not fit, with the values involved.
        detail: String,
    },
    /// No CPU is left after restricting the topology to the CPUs this
    /// process may run on.
    NoAllowedCpus {
        /// The CPUs the process may run on.
        allowed: super::CpuSet,
    },
    /// A system call failed.
    Syscall {
        /// The call, with its main argument (e.g. `sched_setaffinity(cpus 3)`).
        call: String,
        /// The OS error.
        source: io::Error,
    },
    /// A memory policy names a node this process may not allocate on: it
    /// does not exist, or the cgroup cpuset (`mems_allowed`) excludes it.
    NodeNotAllowed {
        /// The node asked for.
        node: super::NodeId,
        /// The nodes this process may allocate on.
        allowed: super::NodeSet,
    },
    /// A `Bind` or `Interleave` policy with no node.
    EmptyNodeSet {
        /// The policy (`"bind"` or `"interleave"`).
        policy: &'static str,
    },
    /// A region of zero bytes was given where pages are needed.
    EmptyRegion {
        /// The operation.
        call: &'static str,
    },
    /// Part of the region is not mapped in this process (`EFAULT`, or
    /// `ENOMEM` from `mbind` on an unmapped hole).
    NotMapped {
        /// The operation.
        call: &'static str,
        /// First byte of the region.
        addr: usize,
        /// Length of the region in bytes.
        len: usize,
    },
    /// The kernel refused for lack of privilege (`EPERM`), e.g. moving pages
    /// of another process or `MPOL_MF_MOVE_ALL` without `CAP_SYS_NICE`.
    NotPermitted {
        /// The operation, with its arguments.
        call: String,
    },
    /// This kernel does not support the call (`ENOSYS`: built without
    /// `CONFIG_NUMA`, or a seccomp filter refuses it).
    NotSupported {
        /// The system call.
        call: &'static str,
    },
    /// The kernel ran out of memory on the requested nodes.
    OutOfMemory {
        /// The operation, with its arguments.
        call: String,
    },
    /// `MPOL_MF_STRICT`: some pages of the region are not on the policy's
    /// nodes and could not be moved there (`EIO`).
    StrictViolation {
        /// First byte of the region.
        addr: usize,
        /// Length of the region in bytes.
        len: usize,
    },
    /// The hwloc backend failed (only with the `hwloc` feature).
    Hwloc {
        /// What hwloc was asked to do and what it said.
        detail: String,
    },
}

impl fmt::Display for NumaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NumaError::Parse {
                what,
                text,
                expected,
            } => write!(f, "cannot parse {what}: {text:?} (expected {expected})"),
            NumaError::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            NumaError::NoNumaInfo { path } => write!(
                f,
                "no NUMA information: {} does not exist (use Topology::single_node() to treat \
                 the machine as one node)",
                path.display()
            ),
            NumaError::Inconsistent { detail } => write!(f, "inconsistent topology: {detail}"),
            NumaError::NoAllowedCpus { allowed } => write!(
                f,
                "no CPU of the topology is in this process's affinity mask ({allowed})"
            ),
            NumaError::Syscall { call, source } => write!(f, "{call} failed: {source}"),
            NumaError::NodeNotAllowed { node, allowed } => write!(
                f,
                "{node} is not a node this process may allocate on (allowed nodes: {allowed})"
            ),
            NumaError::EmptyNodeSet { policy } => {
                write!(f, "the {policy} memory policy needs at least one node")
            }
            NumaError::EmptyRegion { call } => write!(f, "{call}: the region is empty (0 bytes)"),
            NumaError::NotMapped { call, addr, len } => write!(
                f,
                "{call}: the region {addr:#x}..{:#x} ({len} bytes) is not (entirely) mapped",
                addr.saturating_add(*len)
            ),
            NumaError::NotPermitted { call } => write!(f, "{call}: not permitted (EPERM)"),
            NumaError::NotSupported { call } => write!(
                f,
                "{call} is not supported by this kernel (ENOSYS: built without CONFIG_NUMA, \
                 or blocked by seccomp)"
            ),
            NumaError::OutOfMemory { call } => write!(f, "{call}: out of memory"),
            NumaError::StrictViolation { addr, len } => write!(
                f,
                "MPOL_MF_STRICT: pages of {addr:#x}..{:#x} ({len} bytes) are not on the \
                 policy's nodes and could not be moved",
                addr.saturating_add(*len)
            ),
            NumaError::Hwloc { detail } => write!(f, "hwloc: {detail}"),
        }
    }
}

impl std::error::Error for NumaError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NumaError::Io { source, .. } | NumaError::Syscall { source, .. } => Some(source),
            _ => None,
        }
    }
}
