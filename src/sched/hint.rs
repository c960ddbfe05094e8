//! The hint cost rule: when a thief of another node may take a task
//! placed (as a hint) on a busy node, and how long it naps when it leaves
//! one (see `README.md` beside this file, "Hints left for later").

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crossbeam_deque::Injector;

use super::job::JobRef;
use super::record;
use super::registry::Registry;
use super::worker::WorkerThread;

/// One placed task in this many (per worker, starting with the first) is
/// timed for its node's mean: a clock read can cost microseconds where the
/// clock is not the TSC (the emulated guest reads an HPET).
pub(super) const TIME_EVERY: u64 = 8;

/// How long a thief that left a hint waits before it looks again, from
/// `d` ns (the time until the estimate could allow taking it, or the
/// node's mean task time when a worker looked free), kept within 0.1 to
/// 10 ms.
fn look_again_after(d: u64) -> Duration {
    Duration::from_nanos(d.clamp(
        LOOK_AGAIN_FLOOR.as_nanos() as u64,
        LOOK_AGAIN_CAP.as_nanos() as u64,
    ))
}

/// The shortest nap of a thief that left a hint; nodes whose placed tasks
/// take less on average have their hints taken as before the cost rule
/// (whenever the node is all busy).
const LOOK_AGAIN_FLOOR: Duration = Duration::from_micros(100);

/// The longest a thief naps before it looks at a hint it left again.
const LOOK_AGAIN_CAP: Duration = Duration::from_millis(10);

/// What a thief may do with another node's hint (see
/// [`Registry::hint_for_thief`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum HintSteal {
    /// Leave it: a worker of its node is free to take it.
    No,
    /// Leave it for now, and look again within this long.
    Later(Duration),
    /// Take it.
    Yes,
}

/// Adds a placed task's duration `d` (ns) to its node's running mean.
pub(super) fn add_to_mean(mean: &AtomicU64, d: u64) {
    let d = d.max(1);
    let m = mean.load(Ordering::Relaxed);
    // An exponential mean (weight 1/8): a racing update from another
    // worker of the node may be lost, which only delays it.
    let next = if m == 0 { d } else { m - m / 8 + d / 8 };
    mean.store(next.max(1), Ordering::Relaxed);
}

/// The cost rule itself, for a node whose workers are all busy: whether a
/// thief `distance` away (SLIT; `local` is the node's distance to itself)
/// should take one of the node's hints now.
///
/// A hint is taken only when the node's backlog would keep its workers
/// busier than running the task away from its data costs. With `w`
/// workers, `k` hints `queued`, `d` the node's `mean` placed-task time
/// (ns; 0 before the first) and `r` the expected rest of each worker's
/// current job, the node needs about `(Σr + k·d) / w` to run them all;
/// running one elsewhere takes `d` inflated by the distance ratio. So the
/// thief takes one when `(Σr + k·d) · local > w · d · distance`: a last
/// task that the node's workers are about to reach stays home, a backlog
/// is shared. A job's rest is `d - elapsed` while it runs for less than
/// `d`, and `elapsed - d` after (one that overran may run long), whether
/// it is placed or not, so hints queued behind jobs that block become
/// stealable as they block longer; `elapsed` gives, per worker, how long
/// it has been in its current job (at least). Nodes whose placed tasks
/// take less than a thief's shortest nap (0.1 ms) on average are exempt:
/// waiting for them would idle longer than the task.
///
/// When the answer is "later", the duration is when, if nothing changes,
/// the overrunning workers could have made the backlog large enough,
/// within 0.1 to 10 ms.
pub(super) fn cost_rule(
    mean: u64,
    queued: u64,
    elapsed: impl ExactSizeIterator<Item = u64>,
    local: u32,
    distance: u32,
) -> HintSteal {
    let d = mean;
    if d < LOOK_AGAIN_FLOOR.as_nanos() as u64 {
        // Nothing measured yet, or tasks shorter than a thief's nap: it
        // could not wait for the node without idling longer than the task,
        // so it takes it (as when the node is all busy).
        return HintSteal::Yes;
    }
    let w = elapsed.len() as u64;
    let backlog = elapsed.fold(queued.saturating_mul(d), |b, e| {
        b.saturating_add(d.abs_diff(e))
    });
    let local = u64::from(local).max(1);
    let distance = u64::from(distance).max(local);
    let threshold = w.saturating_mul(d).saturating_mul(distance);
    let have = backlog.saturating_mul(local);
    if have > threshold {
        HintSteal::Yes
    } else {
        // If nothing changes, each overrunning worker adds to the backlog
        // as time passes: look again when it could be enough.
        HintSteal::Later(look_again_after(
            (threshold - have) / local.saturating_mul(w).max(1),
        ))
    }
}

impl Registry {
    /// Whether a worker of node index `thief` may take a hint placed on
    /// node index `node` (another node) now, or should leave it to the
    /// node's own workers for a while: [`HintSteal::No`] while a worker of
    /// the node looks free, else what [`cost_rule`] says of the node's
    /// load as this thief sees it.
    ///
    /// A worker's `elapsed` is counted from the first time a thief saw it
    /// in its current job (its `job_seq` unchanged), so that busy workers
    /// read no clock; a job first seen now counts as just begun. `now`
    /// gives `record::now_ns()`; a thief reads the clock at most once per
    /// look at the queues (a read costs 2.4 µs in the emulated guest, whose
    /// clock is an HPET).
    fn hint_for_thief(&self, node: usize, thief: usize, now: impl FnOnce() -> u64) -> HintSteal {
        if !self.node_all_busy(node) {
            return HintSteal::No;
        }
        let mean = self.hint_ns[node].load(Ordering::Relaxed);
        let workers = &self.node_workers[node];
        let now = if mean < LOOK_AGAIN_FLOOR.as_nanos() as u64 {
            0 // the rule takes the hint without looking at the workers
        } else {
            now()
        };
        let queued = self.hint_queues[node].len() as u64
            + workers
                .iter()
                .map(|&w| self.workers[w].hint_inbox.len() as u64)
                .sum::<u64>();
        let elapsed = workers.iter().map(|&w| {
            let seq = self.workers[w].job_seq.load(Ordering::Relaxed);
            let (seen_seq, seen_at) = &*self.job_seen[w];
            // Racing thieves may each record a first sighting, close to one
            // another; the time since is about how long the worker has been
            // in the job, or less (it may have started before anyone
            // looked).
            if seen_seq.load(Ordering::Relaxed) == seq {
                now.saturating_sub(seen_at.load(Ordering::Relaxed))
            } else {
                seen_at.store(now, Ordering::Relaxed);
                seen_seq.store(seq, Ordering::Relaxed);
                0
            }
        });
        cost_rule(
            mean,
            queued,
            elapsed,
            self.topology.distance_by_index(node, node),
            self.topology.distance_by_index(thief, node),
        )
    }

    /// Whether every worker of node index `node` is running a job (so a
    /// hint placed there may be taken by another node).
    pub(super) fn node_all_busy(&self, node: usize) -> bool {
        self.node_workers[node]
            .iter()
            .all(|&w| self.workers[w].busy.load(Ordering::Relaxed))
    }
}

impl WorkerThread {
    /// Whether this worker may take a hint from `queue`, one of node index
    /// `node`'s (another node); when it should look again later, notes
    /// when in `look_again`.
    pub(super) fn may_take_hint(&self, node: usize, queue: &Injector<JobRef>) -> bool {
        let reg = &*self.registry;
        if queue.is_empty() {
            return false;
        }
        let now = || match self.look_now.get() {
            0 => {
                let t = record::now_ns().max(1);
                self.look_now.set(t);
                t
            }
            t => t,
        };
        let after = match reg.hint_for_thief(node, self.node, now) {
            HintSteal::Yes => return true,
            HintSteal::Later(after) => after,
            // A worker of the node looked free; it is about to take the
            // hint, or was between two jobs (`busy` is clear while a worker
            // looks for its next one). Look again in case it stays busy.
            HintSteal::No => look_again_after(reg.hint_ns[node].load(Ordering::Relaxed)),
        };
        let soonest = self.look_again.get().map_or(after, |a| a.min(after));
        self.look_again.set(Some(soonest));
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    fn rule(mean: u64, queued: u64, elapsed: &[u64], local: u32, distance: u32) -> HintSteal {
        cost_rule(mean, queued, elapsed.iter().copied(), local, distance)
    }

    #[test]
    fn short_or_unmeasured_tasks_are_taken() {
        assert_eq!(rule(0, 0, &[0, 0], 10, 30), HintSteal::Yes);
        assert_eq!(rule(99_999, 0, &[0, 0], 10, 30), HintSteal::Yes);
        assert_ne!(rule(100_000, 0, &[0, 0], 10, 30), HintSteal::Yes);
    }

    #[test]
    fn a_last_task_the_node_is_about_to_reach_stays_home() {
        // Two workers that just began 40 ms tasks, one hint queued: the
        // node reaches it in ~40 ms, running it 3× as far away costs 120.
        assert!(matches!(
            rule(40 * MS, 1, &[0, 0], 10, 30),
            HintSteal::Later(_)
        ));
    }

    #[test]
    fn a_backlog_is_shared() {
        // Eight hints for two busy workers: 4 × 40 ms of waiting each.
        assert_eq!(rule(40 * MS, 8, &[0, 0], 10, 30), HintSteal::Yes);
    }

    #[test]
    fn a_hint_behind_an_overrunning_job_becomes_worth_taking() {
        // One worker, one hint, d = 1 ms, distance ratio 2: the rest of an
        // overrunning job counts as its overrun, so after 2 ms beyond the
        // mean (rest 2 ms + the hint's 1 ms = 3 > 2) the thief takes it.
        assert!(matches!(rule(MS, 1, &[MS], 10, 20), HintSteal::Later(_)));
        assert!(matches!(
            rule(MS, 1, &[2 * MS], 10, 20),
            HintSteal::Later(_)
        ));
        assert_eq!(rule(MS, 1, &[3 * MS + 1], 10, 20), HintSteal::Yes);
    }

    #[test]
    fn a_later_look_comes_when_the_overrun_could_be_enough() {
        // Needs backlog > 2 ms; has 1 ms (queued) + 1 ms (rest of a job
        // just begun): look again within about the 0 ms missing, clamped
        // to the 0.1 ms floor.
        assert_eq!(
            rule(MS, 1, &[0], 10, 20),
            HintSteal::Later(LOOK_AGAIN_FLOOR)
        );
        // Ten workers of 20 ms tasks, nothing queued, just begun: the
        // backlog (200 ms) falls 400 ms short of 3 × 200 ms; spread over
        // ten overrunning workers that is 40 ms, capped at 10 ms.
        assert_eq!(
            rule(20 * MS, 0, &[0; 10], 10, 30),
            HintSteal::Later(LOOK_AGAIN_CAP)
        );
    }

    proptest! {
        #[test]
        fn later_naps_stay_within_their_bounds(
            mean in 0u64..100 * MS,
            queued in 0u64..64,
            elapsed in proptest::collection::vec(0u64..200 * MS, 1..16),
            local in 1u32..20,
            extra in 0u32..200,
        ) {
            if let HintSteal::Later(t) = rule(mean, queued, &elapsed, local, local + extra) {
                prop_assert!(t >= LOOK_AGAIN_FLOOR && t <= LOOK_AGAIN_CAP);
            }
        }

        #[test]
        fn more_queued_work_never_keeps_a_hint_home_that_less_gave_away(
            mean in 0u64..100 * MS,
            queued in 0u64..64,
            elapsed in proptest::collection::vec(0u64..200 * MS, 1..16),
            local in 1u32..20,
            extra in 0u32..200,
        ) {
            let d = local + extra;
            if rule(mean, queued, &elapsed, local, d) == HintSteal::Yes {
                prop_assert_eq!(rule(mean, queued + 1, &elapsed, local, d), HintSteal::Yes);
            }
        }

        #[test]
        fn a_nearer_thief_takes_what_a_farther_one_takes(
            mean in 0u64..100 * MS,
            queued in 0u64..64,
            elapsed in proptest::collection::vec(0u64..200 * MS, 1..16),
            local in 1u32..20,
            near in 0u32..100,
            further in 0u32..100,
        ) {
            if rule(mean, queued, &elapsed, local, local + near + further) == HintSteal::Yes {
                prop_assert_eq!(rule(mean, queued, &elapsed, local, local + near), HintSteal::Yes);
            }
        }

        #[test]
        fn a_longer_overrun_never_keeps_a_hint_home(
            mean in 100_000u64..100 * MS,
            queued in 0u64..8,
            elapsed in proptest::collection::vec(0u64..200 * MS, 1..8),
            which in 0usize..8,
            more in 0u64..100 * MS,
            local in 1u32..20,
            extra in 0u32..200,
        ) {
            // Beyond the mean, every extra ns of a job adds to the backlog.
            let mut longer = elapsed.clone();
            let i = which % longer.len();
            longer[i] = longer[i].max(mean) + more;
            let mut base = elapsed;
            base[i] = base[i].max(mean);
            let d = local + extra;
            if rule(mean, queued, &base, local, d) == HintSteal::Yes {
                prop_assert_eq!(rule(mean, queued, &longer, local, d), HintSteal::Yes);
            }
        }

        #[test]
        fn the_last_task_of_a_node_whose_jobs_just_began_stays_home(
            mean in 100_000u64..100 * MS,
            workers in 1usize..16,
            local in 1u32..20,
            extra in 0u32..200,
        ) {
            // Each worker has `mean` left and nothing is queued: the node
            // needs `mean` to reach a hint; running it away costs more.
            let elapsed = vec![0; workers];
            prop_assert_ne!(rule(mean, 0, &elapsed, local, local + extra), HintSteal::Yes);
        }
    }
}
