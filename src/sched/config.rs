//! A builder's settings, their defaults and the environment variables that
//! override them (`TERROIR_NUM_THREADS`, `RAYON_NUM_THREADS`,
//! `TERROIR_POLICY`, `TERROIR_PIN`), resolved into a [`Config`] when a pool
//! is built.

use std::fmt;

use super::builder::{
    DequeOrder, PanicHandler, Pinning, ThreadHandler, ThreadPoolBuildError, DEFAULT_PUSH_THRESHOLD,
};
use super::policy::{ParsePolicyError, Policy};
use super::route::Distribution;
use crate::numa::{self, NumaError, Topology};

/// The most workers a pool may have: rayon-core's limit on 64-bit targets
/// (its sleep counters have 16 bits per count). terroir's own counters have
/// 32, but a pool of more threads than this is a mistake, not a machine.
pub(crate) const MAX_NUM_THREADS: usize = 0xFFFF;

/// What a [`ThreadPoolBuilder`](super::ThreadPoolBuilder) was told, before
/// defaults and the environment are applied.
#[derive(Default)]
pub(crate) struct Settings {
    pub(crate) num_threads: usize,
    pub(crate) use_current_thread: bool,
    pub(crate) thread_name: Option<Box<dyn FnMut(usize) -> String>>,
    pub(crate) stack_size: Option<usize>,
    pub(crate) topology: Option<Topology>,
    pub(crate) policy: Option<Policy>,
    pub(crate) pin: Option<bool>,
    pub(crate) pinning: Option<Pinning>,
    pub(crate) panic_handler: Option<Box<PanicHandler>>,
    pub(crate) start_handler: Option<Box<ThreadHandler>>,
    pub(crate) exit_handler: Option<Box<ThreadHandler>>,
    pub(crate) distribution: Distribution,
    pub(crate) deque_order: DequeOrder,
    pub(crate) push_threshold: Option<usize>,
}

/// Settings with every default resolved.
pub(crate) struct Config {
    pub(crate) num_threads: usize,
    pub(crate) use_current_thread: bool,
    pub(crate) thread_name: Option<Box<dyn FnMut(usize) -> String>>,
    pub(crate) stack_size: Option<usize>,
    pub(crate) topology: Topology,
    pub(crate) policy: Policy,
    pub(crate) pin: bool,
    /// The CPUs of each pinned worker (when `pin`).
    pub(crate) pinning: Pinning,
    pub(crate) panic_handler: Option<Box<PanicHandler>>,
    pub(crate) start_handler: Option<Box<ThreadHandler>>,
    pub(crate) exit_handler: Option<Box<ThreadHandler>>,
    pub(crate) distribution: Distribution,
    pub(crate) deque_order: DequeOrder,
    pub(crate) push_threshold: u64,
}

/// An environment variable's value, `None` when unset or blank.
fn env(var: &'static str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

fn invalid(var: &'static str, value: &str, reason: String) -> ThreadPoolBuildError {
    ThreadPoolBuildError::InvalidEnv {
        var,
        value: value.to_owned(),
        reason,
    }
}

/// A thread count from environment variable `var`: `Some(0)` for "the
/// default", as in rayon.
fn env_threads(var: &'static str) -> Result<Option<usize>, ThreadPoolBuildError> {
    let Some(v) = env(var) else { return Ok(None) };
    match v.trim().parse::<usize>() {
        Ok(n) if n > MAX_NUM_THREADS => Err(invalid(
            var,
            &v,
            format!("more than the {MAX_NUM_THREADS} workers a pool may have (max_num_threads())"),
        )),
        Ok(n) => Ok(Some(n)),
        Err(e) => Err(invalid(var, &v, format!("not a thread count ({e})"))),
    }
}

/// The default topology: this machine's, or, when its sysfs has no NUMA
/// information, every allowed CPU as one node with the reason in its
/// source. `detected` is [`Topology::detect`]'s answer (a parameter so that
/// tests can give a fixture's).
pub(crate) fn default_topology(
    detected: Result<Topology, NumaError>,
) -> Result<Topology, NumaError> {
    match detected {
        Err(e @ NumaError::NoNumaInfo { .. }) => Topology::single_node_fallback(e.to_string()),
        other => other,
    }
}

/// One worker per processing unit of `topology`; for this machine's
/// topology, at most the process's cgroup CPU quota (rounded up, at least
/// one), as `std::thread::available_parallelism` counts.
pub(crate) fn default_threads(topology: &Topology, quota: Option<f64>) -> usize {
    let pus = topology.pus().len();
    match quota {
        Some(q) if topology.is_this_machine() => pus.min((q.ceil() as usize).max(1)),
        _ => pus,
    }
}

impl Settings {
    /// Applies the environment and the defaults.
    pub(crate) fn resolve(self) -> Result<Config, ThreadPoolBuildError> {
        let topology = match self.topology {
            Some(t) => t,
            None => default_topology(Topology::detect())?,
        };
        let default_threads = || -> Result<usize, ThreadPoolBuildError> {
            let quota = if topology.is_this_machine() {
                numa::cpu_quota().map_err(ThreadPoolBuildError::CpuQuota)?
            } else {
                None
            };
            Ok(default_threads(&topology, quota))
        };
        let num_threads = match self.num_threads {
            0 => match env_threads("TERROIR_NUM_THREADS")? {
                Some(n) => n,
                None => env_threads("RAYON_NUM_THREADS")?.unwrap_or(0),
            },
            n if n > MAX_NUM_THREADS => {
                return Err(ThreadPoolBuildError::TooManyThreads {
                    requested: n,
                    max: MAX_NUM_THREADS,
                })
            }
            n => n,
        };
        let num_threads = match num_threads {
            0 => default_threads()?,
            n => n,
        };
        let policy = match (self.policy, env("TERROIR_POLICY")) {
            (Some(p), _) => p,
            (None, Some(v)) => v
                .parse()
                .map_err(|e: ParsePolicyError| invalid("TERROIR_POLICY", &v, e.to_string()))?,
            (None, None) => Policy::default(),
        };
        // TERROIR_PIN: whether to pin (0, 1) or how (pu, cache, node).
        let from_env = match env("TERROIR_PIN") {
            None => None,
            Some(v) => Some(match v.trim() {
                "1" => (true, None),
                "0" => (false, None),
                "pu" => (true, Some(Pinning::Pu)),
                "cache" => (true, Some(Pinning::Cache)),
                "node" => (true, Some(Pinning::Node)),
                _ => {
                    return Err(invalid(
                        "TERROIR_PIN",
                        &v,
                        "expected 0, 1, pu, cache or node".into(),
                    ))
                }
            }),
        };
        let pin = match (self.pin, from_env) {
            (Some(p), _) => p,
            (None, Some((p, _))) => p,
            (None, None) => topology.is_this_machine(),
        };
        let pinning = self
            .pinning
            .or(from_env.and_then(|(_, how)| how))
            .unwrap_or_default();
        Ok(Config {
            num_threads,
            use_current_thread: self.use_current_thread,
            thread_name: self.thread_name,
            stack_size: self.stack_size,
            topology,
            policy,
            pin,
            pinning,
            panic_handler: self.panic_handler,
            start_handler: self.start_handler,
            exit_handler: self.exit_handler,
            distribution: self.distribution,
            deque_order: self.deque_order,
            push_threshold: self.push_threshold.unwrap_or(DEFAULT_PUSH_THRESHOLD) as u64,
        })
    }
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPoolBuilder")
            .field("num_threads", &self.num_threads)
            .field("use_current_thread", &self.use_current_thread)
            .field("stack_size", &self.stack_size)
            .field("policy", &self.policy)
            .field("pin", &self.pin)
            .field("pinning", &self.pinning)
            .field("topology", &self.topology.as_ref().map(|t| t.source()))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numa::TopologySource;

    #[test]
    fn a_sysfs_without_nodes_becomes_one_node_over_the_allowed_cpus() {
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/no-numa");
        let detected = Topology::from_sysfs(fixture);
        assert!(matches!(detected, Err(NumaError::NoNumaInfo { .. })));
        let topo = default_topology(detected).unwrap();
        assert_eq!(topo.nodes().len(), 1);
        let allowed = numa::allowed_cpus().unwrap();
        assert_eq!(topo.pus().len(), allowed.iter().count());
        match topo.source() {
            TopologySource::SingleNodeFallback { reason } => {
                assert!(reason.contains("no-numa/devices/system/node"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        assert!(
            topo.is_this_machine(),
            "its CPUs are this machine's: pin them"
        );
        assert!(topo.to_string().contains("one node assumed"), "{topo}");
    }

    #[test]
    fn other_topology_errors_stay_errors() {
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/garbled-cpulist"
        );
        let err = default_topology(Topology::from_sysfs(fixture)).unwrap_err();
        assert!(matches!(err, NumaError::Parse { .. }), "{err:?}");
    }

    #[test]
    fn the_cpu_quota_caps_the_default_count_on_this_machine_only() {
        let here = Topology::single_node_fallback("test".into()).unwrap();
        let pus = here.pus().len();
        assert_eq!(default_threads(&here, None), pus);
        assert_eq!(
            default_threads(&here, Some(0.5)),
            1,
            "rounded up, at least one"
        );
        assert_eq!(default_threads(&here, Some(1000.0)), pus);
        if pus > 1 {
            assert_eq!(default_threads(&here, Some(1.2)), 2.min(pus));
        }
        let described = Topology::builder().nodes(2).pus_per_l3(4).build().unwrap();
        assert_eq!(
            default_threads(&described, Some(1.0)),
            8,
            "not this machine's quota"
        );
    }
}
