//! One run as the report keeps it: the timeline of a [`Recording`] (tasks,
//! waits, steals, pushes, queue samples) with its pool's shape, in a form
//! that the report's JSON holds and reads back.

use crate::sched::{Label, Recording, StealLevel};

/// One task of a [`Run`] (a [`TaskRecord`](crate::report::TaskRecord),
/// with its label as an index into [`Run::labels`]).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "report", derive(serde::Serialize, serde::Deserialize))]
pub struct Span {
    /// Index into [`Run::labels`].
    pub label: u32,
    /// The worker that ran it.
    pub worker: u32,
    /// The OS number of the node of its declared data, if it declared any.
    #[cfg_attr(
        feature = "report",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub data_node: Option<u32>,
    /// Bytes of declared data (0: none).
    #[cfg_attr(feature = "report", serde(default, skip_serializing_if = "is_zero"))]
    pub bytes: u64,
    /// Start, ns from the start of the recording.
    pub start_ns: u64,
    /// End, ns from the start of the recording.
    pub end_ns: u64,
    /// Own time (duration minus nested tasks and waits), ns.
    pub own_ns: u64,
    /// Counter deltas, in the order of [`Run::counters`] (empty: not read).
    #[cfg_attr(
        feature = "report",
        serde(default, skip_serializing_if = "Vec::is_empty")
    )]
    pub counters: Vec<u64>,
    /// The id of the steal that brought its job to its worker.
    #[cfg_attr(
        feature = "report",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub stolen: Option<u64>,
    /// The id of the push that sent it (placed tasks).
    #[cfg_attr(
        feature = "report",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub pushed: Option<u64>,
}

#[cfg(feature = "report")]
fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// A wait for work of a worker ([`WaitRecord`](crate::report::WaitRecord)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "report", derive(serde::Serialize, serde::Deserialize))]
pub struct WaitSpan {
    /// The worker.
    pub worker: u32,
    /// Start, ns from the start of the recording.
    pub start_ns: u64,
    /// End, ns from the start of the recording.
    pub end_ns: u64,
    /// Of the wait, ns spent looking for work.
    pub overhead_ns: u64,
}

/// A steal ([`StealRecord`](crate::report::StealRecord)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "report", derive(serde::Serialize, serde::Deserialize))]
pub struct Steal {
    /// Its id (a [`Span::stolen`]).
    pub id: u64,
    /// When, ns from the start of the recording.
    pub time_ns: u64,
    /// The worker that took the job.
    pub thief: u32,
    /// The worker it was taken from (`None`: a node's queue).
    #[cfg_attr(feature = "report", serde(default))]
    pub victim: Option<u32>,
    /// The OS number of that worker's or queue's node.
    pub victim_node: u32,
    /// The level, as [`StealLevel::name`] says it.
    pub level: String,
}

/// A push of a placed task ([`PushRecord`](crate::report::PushRecord)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "report", derive(serde::Serialize, serde::Deserialize))]
pub struct Push {
    /// Its id (a [`Span::pushed`]).
    pub id: u64,
    /// When, ns from the start of the recording.
    pub time_ns: u64,
    /// The spawning worker (`None`: a thread outside the pool).
    #[cfg_attr(feature = "report", serde(default))]
    pub from: Option<u32>,
    /// The OS number of the node it went to.
    pub to_node: u32,
    /// The worker it went to, for worker places.
    #[cfg_attr(feature = "report", serde(default))]
    pub to_worker: Option<u32>,
    /// Whether it went to another node than its spawner's.
    pub remote: bool,
    /// Placed tasks queued on `to_node` just after.
    pub queued: u64,
}

/// Placed tasks queued on a node at one moment
/// ([`QueueSample`](crate::report::QueueSample)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "report", derive(serde::Serialize, serde::Deserialize))]
pub struct Queued {
    /// When, ns from the start of the recording.
    pub time_ns: u64,
    /// The node's OS number.
    pub node: u32,
    /// Tasks queued.
    pub queued: u64,
}

/// A worker's totals over the whole recording (not only the window).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "report", derive(serde::Serialize, serde::Deserialize))]
pub struct WorkerTotals {
    /// In tasks.
    pub work_ns: u64,
    /// Looking for work, and recording.
    pub overhead_ns: u64,
    /// Idle.
    pub idle_ns: u64,
    /// Its thread's CPU time, when read.
    #[cfg_attr(feature = "report", serde(default))]
    pub cpu_ns: Option<u64>,
}

/// One recorded run: the pool's shape and everything recorded.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "report", derive(serde::Serialize, serde::Deserialize))]
pub struct Run {
    /// Workers.
    pub threads: usize,
    /// The policy's name.
    pub policy: String,
    /// The OS numbers of the pool's nodes, by node index.
    pub nodes: Vec<u32>,
    /// Each worker's node's OS number.
    pub worker_nodes: Vec<u32>,
    /// Each worker's CPU, when its thread is bound to that CPU alone
    /// ([`Pinning::Pu`](crate::Pinning::Pu)).
    pub worker_cpus: Vec<Option<u32>>,
    /// Length of the recording, ns.
    pub wall_ns: u64,
    /// Label names ([`Span::label`] indexes them).
    pub labels: Vec<String>,
    /// Counter names ([`Span::counters`] follows them).
    pub counters: Vec<String>,
    /// Counters that could not be opened, with the reason.
    pub unavailable: Vec<String>,
    /// How the counters were read, in words.
    pub counter_method: String,
    /// Labelled tasks whose counters were read.
    pub counted: u64,
    /// Labelled tasks.
    pub labelled: u64,
    /// Tasks, worker by worker, by start.
    pub tasks: Vec<Span>,
    /// Waits for work, worker by worker, by start.
    pub waits: Vec<WaitSpan>,
    /// Steals, by time.
    pub steals: Vec<Steal>,
    /// Pushes, by time.
    pub pushes: Vec<Push>,
    /// Queue samples, by time.
    pub queued: Vec<Queued>,
    /// Per worker, totals over the recording.
    pub workers: Vec<WorkerTotals>,
}

/// The label table's name for unlabelled jobs.
pub(crate) const UNLABELLED: &str = "unlabelled";

impl Run {
    /// The run `rec` recorded.
    pub fn from_recording(rec: &Recording) -> Run {
        let node_os = |i: usize| rec.nodes.get(i).map_or(i as u32, |n| n.os_index());
        let mut labels: Vec<String> = vec![UNLABELLED.to_string()];
        // Labels are `&'static str`: look them up by address first.
        let mut index: std::collections::HashMap<(usize, usize), u32> = Default::default();
        let mut label_of = |l: Label| -> u32 {
            let s = match l {
                Label::Unlabelled => return 0,
                Label::Named(s) => s,
            };
            *index
                .entry((s.as_ptr() as usize, s.len()))
                .or_insert_with(|| match labels.iter().position(|x| x == s) {
                    Some(i) if i > 0 => i as u32,
                    _ => {
                        labels.push(s.to_string());
                        (labels.len() - 1) as u32
                    }
                })
        };
        let tasks: Vec<Span> = rec
            .tasks
            .iter()
            .map(|t| Span {
                label: label_of(t.label),
                worker: t.worker as u32,
                data_node: t.data_node.map(|n| n.os_index()),
                bytes: t.data_bytes,
                start_ns: t.start_ns,
                end_ns: t.end_ns.max(t.start_ns),
                own_ns: t.own_ns,
                counters: t.counters.clone(),
                stolen: t.stolen,
                pushed: t.pushed,
            })
            .collect();
        let method = &rec.counter_method;
        let counter_method = if rec.counters.is_empty() {
            "no counter counted".to_string()
        } else {
            format!(
                "read on {} of {} labelled tasks ({}), by {}",
                method.counted, method.labelled, method.sampling, method.read
            )
        };
        Run {
            threads: rec.threads,
            policy: rec.policy.to_string(),
            nodes: rec.nodes.iter().map(|n| n.os_index()).collect(),
            worker_nodes: rec.worker_nodes.iter().map(|&n| node_os(n)).collect(),
            worker_cpus: rec.worker_cpus.clone(),
            wall_ns: rec.wall_ns,
            labels,
            counters: rec.counters.iter().map(|c| c.name().to_string()).collect(),
            unavailable: rec.unavailable.iter().map(|u| u.to_string()).collect(),
            counter_method,
            counted: method.counted,
            labelled: method.labelled,
            tasks,
            waits: rec
                .waits
                .iter()
                .map(|w| WaitSpan {
                    worker: w.worker as u32,
                    start_ns: w.start_ns,
                    end_ns: w.end_ns.max(w.start_ns),
                    overhead_ns: w.overhead_ns,
                })
                .collect(),
            steals: rec
                .steals
                .iter()
                .map(|s| Steal {
                    id: s.id,
                    time_ns: s.time_ns,
                    thief: s.thief as u32,
                    victim: s.victim.map(|v| v as u32),
                    victim_node: node_os(s.victim_node),
                    level: s.level.name().to_string(),
                })
                .collect(),
            pushes: rec
                .pushes
                .iter()
                .map(|p| Push {
                    id: p.id,
                    time_ns: p.time_ns,
                    from: p.from.map(|w| w as u32),
                    to_node: node_os(p.to_node),
                    to_worker: p.to_worker.map(|w| w as u32),
                    remote: p.is_remote(&rec.worker_nodes),
                    queued: p.queued,
                })
                .collect(),
            queued: rec
                .queued
                .iter()
                .map(|q| Queued {
                    time_ns: q.time_ns,
                    node: node_os(q.node),
                    queued: q.queued,
                })
                .collect(),
            workers: rec
                .workers
                .iter()
                .map(|w| WorkerTotals {
                    work_ns: w.work_ns,
                    overhead_ns: w.overhead_ns,
                    idle_ns: w.idle_ns,
                    cpu_ns: w.cpu_ns,
                })
                .collect(),
        }
    }

    /// The label of `span`.
    pub fn label_of(&self, span: &Span) -> &str {
        self.labels
            .get(span.label as usize)
            .map_or("?", String::as_str)
    }

    /// Whether `span` is an unlabelled job.
    pub fn is_unlabelled(&self, span: &Span) -> bool {
        span.label == 0
    }

    /// The node (OS number) of `span`'s worker.
    pub fn node_of(&self, span: &Span) -> u32 {
        self.worker_nodes
            .get(span.worker as usize)
            .copied()
            .unwrap_or(0)
    }

    /// Whether `span` declared data: `Some(true)` when it was on its
    /// worker's node.
    pub fn is_local(&self, span: &Span) -> Option<bool> {
        span.data_node.map(|d| d == self.node_of(span))
    }

    /// From the first task's start to the last task's end (the whole
    /// recording when it has no task), ns from the recording's start.
    pub fn window(&self) -> (u64, u64) {
        let start = self.tasks.iter().map(|t| t.start_ns).min();
        let end = self.tasks.iter().map(|t| t.end_ns).max();
        match (start, end) {
            (Some(s), Some(e)) if e > s => (s, e),
            _ => (0, self.wall_ns),
        }
    }

    /// The index of the counter named `name`.
    pub fn counter(&self, name: &str) -> Option<usize> {
        self.counters.iter().position(|c| c == name)
    }
}

/// [`StealLevel`] names in report order.
pub(crate) const STEAL_LEVELS: [StealLevel; 4] = [
    StealLevel::SameL3,
    StealLevel::SameNode,
    StealLevel::Remote,
    StealLevel::NodeQueue,
];
