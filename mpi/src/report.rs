//! Recordings across ranks (feature `report`): each rank records its pool
//! ([`Rank::run_recorded`]), rank 0 gathers the recordings
//! ([`JobRecording::gather`]) into one timeline, the ranks' clocks aligned
//! at a barrier, and writes one inflation report and one Chrome trace with
//! a process per rank ([`JobRecording::write_all`]).
//!
//! ```no_run
//! // mpirun -np 2 ./app
//! let rank = terroir_mpi::init()?;
//! let (sum, recording) = rank.run_recorded(|_comm| {
//!     terroir::join(|| terroir::label("left", || 1), || terroir::label("right", || 2))
//! });
//! if let Some(job) = terroir_mpi::report::JobRecording::gather(&rank, Some(&recording))? {
//!     // Rank 0: report.txt, report.json (an InflationReport), trace.json.
//!     job.write_all("job-report")?;
//! }
//! # let _ = sum;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **Clocks.** Each rank notes, on its own monotonic clock, when its
//! recording started and when it left a barrier that every rank enters
//! after recording: the recording started that long before the barrier.
//! Ranks leave a barrier at about the same moment (within the barrier's
//! latency: microseconds on one host, a few more across a network), so
//! the ranks' recordings are placed on one timeline by how long before the
//! barrier each started; the earliest start is time 0.
//!
//! **The merged run.** The job's workers are numbered rank by rank (rank
//! 0's first); labels are merged by name; nodes keep their OS numbers, so
//! ranks on different hosts with the same node numbers share the per-node
//! rows of the report (each task's locality is still its own rank's). The
//! report has no baseline (a job cannot be re-run on one worker from
//! inside): work, overhead, idle and locality, no inflation.

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use mpi::collective::CommunicatorCollectives;
use serde::Serialize;
use terroir::report::{BaselinePlacement, InflationReport, Recording, Run};

use crate::{Comm, Rank};

/// One rank's recording, with when it started on the rank's clock.
#[derive(Clone, Debug)]
pub struct RankRecording {
    run: Run,
    started: Instant,
}

impl RankRecording {
    /// `recording`, which started at `started` on this rank's clock (taken
    /// just before [`ThreadPool::record`](terroir::ThreadPool::record)).
    pub fn new(recording: &Recording, started: Instant) -> RankRecording {
        RankRecording {
            run: Run::from_recording(recording),
            started,
        }
    }

    /// The recorded run.
    pub fn run(&self) -> &Run {
        &self.run
    }
}

impl Rank {
    /// [`run`](Self::run), with the rank's pool recorded meanwhile
    /// ([`ThreadPool::record`](terroir::ThreadPool::record)): `f`'s result
    /// and the rank's recording, for [`JobRecording::gather`].
    ///
    /// # Panics
    /// As [`run`](Self::run); and as `ThreadPool::record` when the pool
    /// records already.
    pub fn run_recorded<R, F>(&self, f: F) -> (R, RankRecording)
    where
        F: FnOnce(&Comm) -> R + Send,
        R: Send,
    {
        let pool = self.pool();
        let (r, recording, started) = self.run(|comm| {
            let started = Instant::now();
            let (r, recording) = pool.record(|| f(comm));
            (r, recording, started)
        });
        (r, RankRecording::new(&recording, started))
    }
}

/// Why the recordings of a job could not be merged.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GatherError {
    /// A rank had no recording to give (it passed `None`).
    NoRecording {
        /// The rank.
        rank: usize,
    },
    /// A rank's recording did not arrive whole (it does not parse).
    Corrupt {
        /// The rank.
        rank: usize,
        /// What the parser said.
        message: String,
    },
    /// As many recordings as ranks are needed, with one start each.
    CountMismatch {
        /// Recordings given.
        recordings: usize,
        /// Starts given.
        starts: usize,
    },
    /// A rank recorded other counters than rank 0 (the merged tasks'
    /// counter columns would not line up).
    CounterMismatch {
        /// The rank.
        rank: usize,
        /// Rank 0's counters.
        expected: Vec<String>,
        /// The rank's.
        found: Vec<String>,
    },
    /// No recording at all.
    Empty,
}

impl fmt::Display for GatherError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GatherError::NoRecording { rank } => {
                write!(f, "rank {rank} has no recording to gather")
            }
            GatherError::Corrupt { rank, message } => {
                write!(f, "rank {rank}'s recording does not parse: {message}")
            }
            GatherError::CountMismatch { recordings, starts } => write!(
                f,
                "{recordings} recording(s) but {starts} start(s): one of each per rank is needed"
            ),
            GatherError::CounterMismatch {
                rank,
                expected,
                found,
            } => write!(
                f,
                "rank {rank} recorded the counters {found:?}, rank 0 {expected:?}: record the \
                 same counters on every rank"
            ),
            GatherError::Empty => f.write_str("no recording to merge (no rank)"),
        }
    }
}

impl std::error::Error for GatherError {}

/// The recordings of every rank of a job on one timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRecording {
    /// Each rank's run, by rank, its times from its own recording's start.
    pub ranks: Vec<Run>,
    /// Each rank's recording's start on the job's timeline, ns (the
    /// earliest is 0).
    pub offsets_ns: Vec<u64>,
}

impl JobRecording {
    /// Gathers every rank's recording on rank 0, the clocks aligned at a
    /// barrier (see the module docs): `Ok(Some)` on rank 0, `Ok(None)` on
    /// the other ranks. Collective: every rank calls it, from the thread
    /// that initialised MPI (outside [`Rank::run`]), with its recording,
    /// or `None` if it has none (rank 0 then fails).
    ///
    /// # Errors
    /// On rank 0, as [`from_runs`](Self::from_runs): a rank without a
    /// recording, one that does not parse, counters that differ.
    pub fn gather(
        rank: &Rank,
        recording: Option<&RankRecording>,
    ) -> Result<Option<JobRecording>, GatherError> {
        let world = rank.world();
        world.barrier();
        let left = Instant::now();
        // One line "<ns from the recording's start to the barrier>" (or
        // "none"), then the run as JSON.
        let mut payload = Vec::new();
        match recording {
            Some(r) => {
                let before = left.saturating_duration_since(r.started).as_nanos();
                writeln!(payload, "{before}").expect("writing to memory");
                r.run.write_json(&mut payload).expect("writing to memory");
            }
            None => payload.extend_from_slice(b"none\n"),
        }
        let Some(all) = crate::gather::gather_bytes(world, &payload) else {
            return Ok(None);
        };
        let mut runs = Vec::with_capacity(all.len());
        let mut starts = Vec::with_capacity(all.len());
        for (r, bytes) in all.iter().enumerate() {
            let corrupt = |message: String| GatherError::Corrupt { rank: r, message };
            let split = bytes
                .iter()
                .position(|&b| b == b'\n')
                .unwrap_or(bytes.len());
            let (head, body) = bytes.split_at(split);
            if head == b"none" {
                runs.push(None);
                starts.push(0);
                continue;
            }
            let before: i128 = std::str::from_utf8(head)
                .ok()
                .and_then(|h| h.parse().ok())
                .ok_or_else(|| corrupt("no start time".into()))?;
            let run = Run::read_json(body.get(1..).unwrap_or_default())
                .map_err(|e| corrupt(e.to_string()))?;
            runs.push(Some(run));
            // On the barrier's timeline: started `before` ns before it.
            starts.push(-before);
        }
        JobRecording::from_runs(runs, starts).map(Some)
    }

    /// The job from each rank's run (by rank; `None`: the rank recorded
    /// nothing) and each run's start on a common clock, in ns (any origin:
    /// the earliest becomes 0).
    ///
    /// ```
    /// use terroir::report::{RecordOptions, Run};
    /// use terroir_mpi::report::{GatherError, JobRecording};
    ///
    /// let pool = terroir::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    /// let (_, rec) = pool.record_with(&RecordOptions::timestamps_only(), || {
    ///     terroir::label("step", || 1 + 1)
    /// });
    /// let run = Run::from_recording(&rec);
    /// // Two ranks; rank 1 started 5 µs after rank 0.
    /// let job = JobRecording::from_runs(vec![Some(run.clone()), Some(run.clone())], vec![100, 5_100])?;
    /// assert_eq!(job.offsets_ns, vec![0, 5_000]);
    /// assert_eq!(job.merged_run().threads, 2);
    /// assert!(job.to_chrome_trace().contains("\"pid\":1"));
    /// // A rank without a recording is named.
    /// assert_eq!(
    ///     JobRecording::from_runs(vec![Some(run), None], vec![0, 0]),
    ///     Err(GatherError::NoRecording { rank: 1 })
    /// );
    /// # Ok::<(), GatherError>(())
    /// ```
    ///
    /// # Errors
    /// [`GatherError::NoRecording`] naming the first rank without a run,
    /// [`GatherError::CountMismatch`] when `runs` and `starts_ns` differ in
    /// length, [`GatherError::CounterMismatch`] when a rank recorded other
    /// counters than rank 0, [`GatherError::Empty`] for no rank at all.
    pub fn from_runs(
        runs: Vec<Option<Run>>,
        starts_ns: Vec<i128>,
    ) -> Result<JobRecording, GatherError> {
        if runs.len() != starts_ns.len() {
            return Err(GatherError::CountMismatch {
                recordings: runs.len(),
                starts: starts_ns.len(),
            });
        }
        let ranks = runs
            .into_iter()
            .enumerate()
            .map(|(rank, r)| r.ok_or(GatherError::NoRecording { rank }))
            .collect::<Result<Vec<Run>, _>>()?;
        let first = ranks.first().ok_or(GatherError::Empty)?;
        for (rank, run) in ranks.iter().enumerate().skip(1) {
            if run.counters != first.counters {
                return Err(GatherError::CounterMismatch {
                    rank,
                    expected: first.counters.clone(),
                    found: run.counters.clone(),
                });
            }
        }
        let earliest = starts_ns.iter().copied().min().unwrap_or(0);
        let offsets_ns = starts_ns
            .iter()
            .map(|&s| u64::try_from(s - earliest).unwrap_or(u64::MAX))
            .collect();
        Ok(JobRecording { ranks, offsets_ns })
    }

    /// The job as one run: every rank's workers (rank 0's first), tasks,
    /// waits, steals, pushes and queue samples, on the job's timeline.
    pub fn merged_run(&self) -> Run {
        let mut m = Run {
            threads: 0,
            policy: String::new(),
            nodes: Vec::new(),
            worker_nodes: Vec::new(),
            worker_cpus: Vec::new(),
            wall_ns: 0,
            labels: Vec::new(),
            counters: self
                .ranks
                .first()
                .map(|r| r.counters.clone())
                .unwrap_or_default(),
            unavailable: Vec::new(),
            counter_method: String::new(),
            counted: 0,
            labelled: 0,
            tasks: Vec::new(),
            waits: Vec::new(),
            steals: Vec::new(),
            pushes: Vec::new(),
            queued: Vec::new(),
            workers: Vec::new(),
        };
        let (mut steal_ids, mut push_ids) = (0u64, 0u64);
        for (run, &off) in self.ranks.iter().zip(&self.offsets_ns) {
            let w0 = m.threads as u32;
            let worker = |w: u32| w0 + w;
            let labels: Vec<u32> = run
                .labels
                .iter()
                .map(|l| match m.labels.iter().position(|x| x == l) {
                    Some(i) => i as u32,
                    None => {
                        m.labels.push(l.clone());
                        (m.labels.len() - 1) as u32
                    }
                })
                .collect();
            let (s0, p0) = (steal_ids, push_ids);
            for t in &run.tasks {
                let mut t = t.clone();
                t.label = labels.get(t.label as usize).copied().unwrap_or(0);
                t.worker = worker(t.worker);
                t.start_ns += off;
                t.end_ns += off;
                t.stolen = t.stolen.map(|id| s0 + id);
                t.pushed = t.pushed.map(|id| p0 + id);
                m.tasks.push(t);
            }
            for w in &run.waits {
                let mut w = *w;
                w.worker = worker(w.worker);
                w.start_ns += off;
                w.end_ns += off;
                m.waits.push(w);
            }
            for s in &run.steals {
                let mut s = s.clone();
                s.id += s0;
                steal_ids = steal_ids.max(s.id + 1);
                s.time_ns += off;
                s.thief = worker(s.thief);
                s.victim = s.victim.map(worker);
                m.steals.push(s);
            }
            for p in &run.pushes {
                let mut p = p.clone();
                p.id += p0;
                push_ids = push_ids.max(p.id + 1);
                p.time_ns += off;
                p.from = p.from.map(worker);
                p.to_worker = p.to_worker.map(worker);
                m.pushes.push(p);
            }
            for q in &run.queued {
                let mut q = *q;
                q.time_ns += off;
                m.queued.push(q);
            }
            m.threads += run.threads;
            for n in &run.nodes {
                if !m.nodes.contains(n) {
                    m.nodes.push(*n);
                }
            }
            m.worker_nodes.extend_from_slice(&run.worker_nodes);
            m.worker_cpus.extend_from_slice(&run.worker_cpus);
            m.workers.extend_from_slice(&run.workers);
            m.wall_ns = m.wall_ns.max(off + run.wall_ns);
            for u in &run.unavailable {
                if !m.unavailable.contains(u) {
                    m.unavailable.push(u.clone());
                }
            }
            if m.policy.is_empty() {
                m.policy = run.policy.clone();
                m.counter_method = run.counter_method.clone();
            }
            m.counted += run.counted;
            m.labelled += run.labelled;
        }
        if m.labels.is_empty() {
            m.labels.push("unlabelled".into());
        }
        m.steals.sort_by_key(|s| s.time_ns);
        m.pushes.sort_by_key(|p| p.time_ns);
        m.queued.sort_by_key(|q| q.time_ns);
        m
    }

    /// The inflation report of the merged run ([`merged_run`](Self::merged_run)),
    /// without a baseline.
    pub fn report(&self) -> InflationReport {
        InflationReport::from_runs(Vec::new(), self.merged_run(), BaselinePlacement::FirstNode)
    }

    /// Writes the job's Chrome trace to `w`: one process per rank (its
    /// pid the rank), a thread per worker, each task a complete event
    /// named by its label and each wait for work an `idle` event, on the
    /// job's timeline (µs).
    ///
    /// # Errors
    /// The writer's error.
    pub fn write_chrome_trace(&self, w: impl Write) -> io::Result<()> {
        #[derive(Serialize)]
        struct Event<'a> {
            name: &'a str,
            cat: &'a str,
            ph: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            ts: Option<f64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            dur: Option<f64>,
            pid: usize,
            tid: u32,
            #[serde(skip_serializing_if = "Option::is_none")]
            args: Option<serde_json::Value>,
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        let mut w = io::BufWriter::new(w);
        w.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
        let mut first = true;
        let mut emit = |w: &mut io::BufWriter<_>, e: &Event<'_>| -> io::Result<()> {
            if !first {
                w.write_all(b",\n")?;
            }
            first = false;
            serde_json::to_writer(&mut *w, e).map_err(io::Error::from)
        };
        for (rank, (run, &off)) in self.ranks.iter().zip(&self.offsets_ns).enumerate() {
            let meta = |name: &'static str, tid: u32, args: serde_json::Value| Event {
                name,
                cat: "",
                ph: "M",
                ts: None,
                dur: None,
                pid: rank,
                tid,
                args: Some(args),
            };
            let plural = if run.threads == 1 { "" } else { "s" };
            let name = format!("rank {rank} ({} worker{plural})", run.threads);
            emit(
                &mut w,
                &meta("process_name", 0, serde_json::json!({ "name": name })),
            )?;
            emit(
                &mut w,
                &meta(
                    "process_sort_index",
                    0,
                    serde_json::json!({ "sort_index": rank }),
                ),
            )?;
            for t in 0..run.threads as u32 {
                let name = match run.worker_cpus.get(t as usize).copied().flatten() {
                    Some(cpu) => format!("worker {t} (CPU {cpu})"),
                    None => format!("worker {t}"),
                };
                emit(
                    &mut w,
                    &meta("thread_name", t, serde_json::json!({ "name": name })),
                )?;
            }
            for t in &run.tasks {
                emit(
                    &mut w,
                    &Event {
                        name: run.label_of(t),
                        cat: "task",
                        ph: "X",
                        ts: Some(us(off + t.start_ns)),
                        dur: Some(us(t.end_ns.saturating_sub(t.start_ns))),
                        pid: rank,
                        tid: t.worker,
                        args: None,
                    },
                )?;
            }
            for i in &run.waits {
                emit(
                    &mut w,
                    &Event {
                        name: "idle",
                        cat: "wait",
                        ph: "X",
                        ts: Some(us(off + i.start_ns)),
                        dur: Some(us(i.end_ns.saturating_sub(i.start_ns))),
                        pid: rank,
                        tid: i.worker,
                        args: None,
                    },
                )?;
            }
        }
        w.write_all(b"\n]}\n")?;
        w.flush()
    }

    /// The trace as a string ([`write_chrome_trace`](Self::write_chrome_trace)
    /// into memory: for small jobs).
    pub fn to_chrome_trace(&self) -> String {
        let mut out = Vec::new();
        self.write_chrome_trace(&mut out)
            .expect("writing to memory does not fail");
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }

    /// Writes into `dir` (created if needed) `report.txt` and
    /// `report.json` (the [`report`](Self::report); the JSON reads back
    /// with `InflationReport::from_json`) and `trace.json` (the
    /// [Chrome trace](Self::write_chrome_trace)); returns their paths.
    ///
    /// # Errors
    /// The file system's error, naming the path.
    pub fn write_all(&self, dir: impl AsRef<Path>) -> io::Result<Vec<PathBuf>> {
        let dir = dir.as_ref();
        let at = |path: &Path, e: io::Error| {
            io::Error::new(e.kind(), format!("{}: {e}", path.display()))
        };
        std::fs::create_dir_all(dir).map_err(|e| at(dir, e))?;
        let report = self.report();
        let mut out = Vec::new();
        let mut file = |name: &str, f: &dyn Fn(&mut std::fs::File) -> io::Result<()>| {
            let path = dir.join(name);
            let mut file = std::fs::File::create(&path).map_err(|e| at(&path, e))?;
            f(&mut file).map_err(|e| at(&path, e))?;
            out.push(path);
            Ok::<(), io::Error>(())
        };
        file("report.txt", &|w| write!(w, "{report}"))?;
        file("report.json", &|w| report.write_json(w))?;
        file("trace.json", &|w| self.write_chrome_trace(w))?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use terroir::report::{RecordOptions, Span, Steal};

    fn run_of(label: &'static str) -> Run {
        let pool = terroir::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let (_, rec) = pool.record_with(&RecordOptions::timestamps_only(), || {
            terroir::label(label, || std::hint::black_box(1 + 1))
        });
        Run::from_recording(&rec)
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        let r = run_of("a");
        assert_eq!(
            JobRecording::from_runs(vec![Some(r.clone())], vec![0, 1]),
            Err(GatherError::CountMismatch {
                recordings: 1,
                starts: 2
            })
        );
        assert_eq!(
            JobRecording::from_runs(vec![None, Some(r.clone())], vec![0, 0]),
            Err(GatherError::NoRecording { rank: 0 })
        );
        assert_eq!(
            JobRecording::from_runs(vec![], vec![]),
            Err(GatherError::Empty)
        );
        let mut other = r.clone();
        other.counters = vec!["task-clock".into()];
        let e = JobRecording::from_runs(vec![Some(r), Some(other)], vec![0, 0]).unwrap_err();
        assert!(matches!(e, GatherError::CounterMismatch { rank: 1, .. }));
        assert!(e.to_string().contains("task-clock"), "{e}");
    }

    #[test]
    fn ranks_are_shifted_and_renumbered() {
        let (mut a, mut b) = (run_of("a"), run_of("b"));
        // A steal on each rank, with the same id.
        let steal = |thief| Steal {
            id: 0,
            time_ns: 10,
            thief,
            victim: None,
            victim_node: 0,
            level: "node".into(),
        };
        let labelled =
            |r: &Run, name: &str| r.tasks.iter().position(|t| r.label_of(t) == name).unwrap();
        let (ia, ib) = (labelled(&a, "a"), labelled(&b, "b"));
        a.steals.push(steal(0));
        b.steals.push(steal(0));
        b.tasks[ib].stolen = Some(0);
        // Rank 1 started 1 ms before rank 0.
        let job =
            JobRecording::from_runs(vec![Some(a.clone()), Some(b.clone())], vec![1_000_000, 0])
                .unwrap();
        assert_eq!(job.offsets_ns, vec![1_000_000, 0]);
        let m = job.merged_run();
        assert_eq!(m.threads, 2);
        let find =
            |name: &str| -> &Span { m.tasks.iter().find(|t| m.label_of(t) == name).unwrap() };
        let (ta, tb) = (find("a"), find("b"));
        assert_eq!((ta.worker, tb.worker), (0, 1));
        assert_eq!(ta.start_ns, a.tasks[ia].start_ns + 1_000_000);
        assert_eq!(tb.start_ns, b.tasks[ib].start_ns);
        // Steal ids stay unique, and the task still names its own.
        let ids: std::collections::BTreeSet<u64> = m.steals.iter().map(|s| s.id).collect();
        assert_eq!(ids.len(), m.steals.len());
        assert_eq!(m.steals.len(), a.steals.len() + b.steals.len());
        let own = m.steals.iter().find(|s| Some(s.id) == tb.stolen).unwrap();
        assert_eq!((own.thief, own.time_ns), (1, 10));
        assert!(m.wall_ns >= 1_000_000 + a.wall_ns);
        // The trace: one process per rank, pid = rank.
        let trace: serde_json::Value = serde_json::from_str(&job.to_chrome_trace()).unwrap();
        let events = trace["traceEvents"].as_array().unwrap();
        for (pid, name) in [(0, "a"), (1, "b")] {
            assert!(
                events
                    .iter()
                    .any(|e| e["pid"] == pid && e["name"] == name && e["ph"] == "X"),
                "{name} on pid {pid}"
            );
        }
        // The report reads back.
        let report = job.report();
        let back = InflationReport::from_json(&report.to_json()).unwrap();
        assert_eq!(back.threads, 2);
    }
}
