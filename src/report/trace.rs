//! The report as a Chrome trace-event file (the `report` feature), for
//! <https://ui.perfetto.dev> or `chrome://tracing`, streamed event by
//! event to a writer.
//!
//! - One process per NUMA node of the parallel pool, one thread per worker
//!   in its node's process; each baseline run is a process of its own.
//! - Slices: each task (name: its label; args: worker, node, data node,
//!   bytes, own time, counter deltas) and, for each wait for work, the time
//!   spent looking ("looking for work", category `overhead`) and the rest
//!   ("idle", category `idle`). The looking is spread over the wait in
//!   reality; the trace draws it as one slice at the wait's start.
//! - Flows: from the worker a job was stolen from to the job on the thief
//!   (category `steal`), and from the task that spawned a placed task to
//!   that task (category `push`). A job taken from a node's queue is an
//!   instant event on the thief.
//! - Counter tracks per node: busy workers (averaged over short buckets)
//!   and placed tasks queued (the largest sample in each bucket).

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;

use super::run::Run;
use super::InflationReport;

/// Process ids: nodes of the parallel run from 1, baseline runs from this.
const BASELINE_PID: u64 = 1000;

/// Buckets of the counter tracks over a run's window.
const COUNTER_BUCKETS: u64 = 2000;

/// One trace event.
#[derive(Serialize)]
struct Event<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    cat: &'a str,
    ph: &'static str,
    ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: u64,
    tid: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Args<'a>>,
}

/// A task's counter deltas, as a JSON object.
struct CounterArgs<'a>(&'a [String], &'a [u64]);

impl Serialize for CounterArgs<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.1.len()))?;
        for (name, v) in self.0.iter().zip(self.1) {
            m.serialize_entry(name, v)?;
        }
        m.end()
    }
}

#[derive(Serialize)]
#[serde(untagged)]
enum Args<'a> {
    Name {
        name: &'a str,
    },
    Sort {
        sort_index: u64,
    },
    Task {
        label: &'a str,
        worker: u32,
        node: u32,
        data_node: Option<u32>,
        bytes: u64,
        own_us: f64,
        #[serde(skip_serializing_if = "Option::is_none")]
        counters: Option<CounterArgs<'a>>,
    },
    Wait {
        worker: u32,
        overhead_us: f64,
        idle_us: f64,
    },
    Steal {
        thief: u32,
        victim: Option<u32>,
        victim_node: u32,
        level: &'a str,
    },
    Push {
        from: Option<u32>,
        to_node: u32,
        to_worker: Option<u32>,
        remote: bool,
        queued: u64,
    },
    Counter(BTreeMap<&'a str, f64>),
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// Writes events with commas between them.
struct Out<W: Write> {
    w: W,
    first: bool,
}

impl<W: Write> Out<W> {
    fn event(&mut self, e: &Event<'_>) -> io::Result<()> {
        if !self.first {
            self.w.write_all(b",\n")?;
        }
        self.first = false;
        serde_json::to_writer(&mut self.w, e).map_err(io::Error::from)
    }

    fn meta(&mut self, name: &'static str, pid: u64, tid: u64, args: Args<'_>) -> io::Result<()> {
        self.event(&Event {
            name,
            cat: "",
            ph: "M",
            ts: 0.0,
            dur: None,
            pid,
            tid,
            id: None,
            bp: None,
            s: None,
            args: Some(args),
        })
    }
}

/// How one run maps on processes: the pid of each worker.
struct Layout {
    pids: Vec<u64>,
}

impl Layout {
    fn parallel(run: &Run) -> Layout {
        Layout {
            pids: run
                .worker_nodes
                .iter()
                .map(|n| 1 + run.nodes.iter().position(|x| x == n).unwrap_or(0) as u64)
                .collect(),
        }
    }

    fn pid(&self, worker: u32) -> u64 {
        self.pids.get(worker as usize).copied().unwrap_or(1)
    }
}

/// Ids of the steals and pushes that a task of `run` repeats (dense ids
/// from 1: a bit set).
fn flow_ends(run: &Run) -> Vec<u64> {
    let max = run
        .tasks
        .iter()
        .flat_map(|t| [t.stolen, t.pushed])
        .flatten()
        .max()
        .unwrap_or(0);
    let mut bits = vec![0u64; (max as usize + 64) / 64];
    for id in run
        .tasks
        .iter()
        .flat_map(|t| [t.stolen, t.pushed])
        .flatten()
    {
        bits[id as usize / 64] |= 1 << (id % 64);
    }
    bits
}

fn has(bits: &[u64], id: u64) -> bool {
    bits.get(id as usize / 64)
        .is_some_and(|w| w & (1 << (id % 64)) != 0)
}

/// Writes the slices, flows and instant events of `run`.
fn write_run<W: Write>(out: &mut Out<W>, run: &Run, layout: &Layout) -> io::Result<()> {
    let ends = flow_ends(run);
    for t in &run.tasks {
        let pid = layout.pid(t.worker);
        let label = run.label_of(t);
        out.event(&Event {
            name: label,
            cat: "task",
            ph: "X",
            ts: us(t.start_ns),
            dur: Some(us(t.end_ns.saturating_sub(t.start_ns))),
            pid,
            tid: u64::from(t.worker),
            id: None,
            bp: None,
            s: None,
            args: Some(Args::Task {
                label,
                worker: t.worker,
                node: run.node_of(t),
                data_node: t.data_node,
                bytes: t.bytes,
                own_us: us(t.own_ns),
                counters: (!t.counters.is_empty()).then(|| CounterArgs(&run.counters, &t.counters)),
            }),
        })?;
        for (id, cat) in [(t.stolen, "steal"), (t.pushed, "push")] {
            if let Some(id) = id {
                out.event(&Event {
                    name: cat,
                    cat,
                    ph: "f",
                    ts: us(t.start_ns),
                    dur: None,
                    pid,
                    tid: u64::from(t.worker),
                    id: Some(id),
                    bp: Some("e"),
                    s: None,
                    args: None,
                })?;
            }
        }
    }
    for w in &run.waits {
        let pid = layout.pid(w.worker);
        let len = w.end_ns.saturating_sub(w.start_ns);
        let over = w.overhead_ns.min(len);
        let args = || {
            Some(Args::Wait {
                worker: w.worker,
                overhead_us: us(over),
                idle_us: us(len - over),
            })
        };
        if over > 0 {
            out.event(&Event {
                name: "looking for work",
                cat: "overhead",
                ph: "X",
                ts: us(w.start_ns),
                dur: Some(us(over)),
                pid,
                tid: u64::from(w.worker),
                id: None,
                bp: None,
                s: None,
                args: args(),
            })?;
        }
        if len > over {
            out.event(&Event {
                name: "idle",
                cat: "idle",
                ph: "X",
                ts: us(w.start_ns + over),
                dur: Some(us(len - over)),
                pid,
                tid: u64::from(w.worker),
                id: None,
                bp: None,
                s: None,
                args: args(),
            })?;
        }
    }
    for st in &run.steals {
        let args = || {
            Some(Args::Steal {
                thief: st.thief,
                victim: st.victim,
                victim_node: st.victim_node,
                level: &st.level,
            })
        };
        match st.victim {
            Some(v) if has(&ends, st.id) => out.event(&Event {
                name: "steal",
                cat: "steal",
                ph: "s",
                ts: us(st.time_ns),
                dur: None,
                pid: layout.pid(v),
                tid: u64::from(v),
                id: Some(st.id),
                bp: None,
                s: None,
                args: args(),
            })?,
            Some(_) => {}
            None => out.event(&Event {
                name: "took a job from a node's queue",
                cat: "steal",
                ph: "i",
                ts: us(st.time_ns),
                dur: None,
                pid: layout.pid(st.thief),
                tid: u64::from(st.thief),
                id: None,
                bp: None,
                s: Some("t"),
                args: args(),
            })?,
        }
    }
    for p in &run.pushes {
        if let (Some(from), true) = (p.from, has(&ends, p.id)) {
            out.event(&Event {
                name: "push",
                cat: "push",
                ph: "s",
                ts: us(p.time_ns),
                dur: None,
                pid: layout.pid(from),
                tid: u64::from(from),
                id: Some(p.id),
                bp: None,
                s: None,
                args: Some(Args::Push {
                    from: p.from,
                    to_node: p.to_node,
                    to_worker: p.to_worker,
                    remote: p.remote,
                    queued: p.queued,
                }),
            })?;
        }
    }
    Ok(())
}

/// Counter tracks of the parallel run, per node: busy workers (time
/// average per bucket) and placed tasks queued (largest sample per
/// bucket), each written when it changes.
fn write_counters<W: Write>(out: &mut Out<W>, run: &Run) -> io::Result<()> {
    let (s, e) = run.window();
    let width = ((e - s) / COUNTER_BUCKETS).max(1_000);
    let buckets = ((e - s) / width + 1) as usize;
    for (k, &node) in run.nodes.iter().enumerate() {
        let pid = 1 + k as u64;
        let workers: Vec<u32> = (0..run.threads as u32)
            .filter(|&w| run.worker_nodes.get(w as usize) == Some(&node))
            .collect();
        if workers.is_empty() {
            continue;
        }
        // Waiting time per bucket, from the waits clipped to the window.
        let mut waiting = vec![0f64; buckets];
        for w in run.waits.iter().filter(|w| workers.contains(&w.worker)) {
            let (a, b) = (w.start_ns.max(s), w.end_ns.min(e));
            let mut t = a;
            while t < b {
                let i = ((t - s) / width) as usize;
                let edge = (s + (i as u64 + 1) * width).min(b);
                waiting[i.min(buckets - 1)] += (edge - t) as f64;
                t = edge;
            }
        }
        let mut last = f64::NAN;
        for (i, wait) in waiting.iter().enumerate() {
            let busy = workers.len() as f64 - wait / width as f64;
            let busy = (busy.max(0.0) * 100.0).round() / 100.0;
            if busy != last {
                last = busy;
                out.event(&Event {
                    name: "busy workers",
                    cat: "",
                    ph: "C",
                    ts: us(s + i as u64 * width),
                    dur: None,
                    pid,
                    tid: 0,
                    id: None,
                    bp: None,
                    s: None,
                    args: Some(Args::Counter(BTreeMap::from([("busy", busy)]))),
                })?;
            }
        }
        let mut queued = vec![None::<u64>; buckets];
        for q in run.queued.iter().filter(|q| q.node == node) {
            let i = (q.time_ns.saturating_sub(s) / width).min(buckets as u64 - 1) as usize;
            queued[i] = Some(queued[i].map_or(q.queued, |x: u64| x.max(q.queued)));
        }
        let mut last = None;
        for (i, q) in queued.iter().enumerate() {
            if let Some(q) = *q {
                if last != Some(q) {
                    last = Some(q);
                    out.event(&Event {
                        name: "placed tasks queued",
                        cat: "",
                        ph: "C",
                        ts: us(s + i as u64 * width),
                        dur: None,
                        pid,
                        tid: 0,
                        id: None,
                        bp: None,
                        s: None,
                        args: Some(Args::Counter(BTreeMap::from([("queued", q as f64)]))),
                    })?;
                }
            }
        }
    }
    Ok(())
}

impl InflationReport {
    /// Writes the runs as Chrome trace events to `w` (see the module docs
    /// of `report` for what the trace shows), event by event: the trace is
    /// never held in memory.
    ///
    /// ```
    /// use terroir::report::{InflationReport, RecordOptions};
    /// use terroir::ThreadPoolBuilder;
    /// let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let work = || terroir::join(|| terroir::label("a", || 1), || terroir::label("b", || 2));
    /// let ts = RecordOptions::timestamps_only();
    /// let base = InflationReport::baseline_pool(&pool).unwrap().record_with(&ts, work).1;
    /// let report = InflationReport::new(&base, &pool.record_with(&ts, work).1);
    /// let mut out = Vec::new();
    /// report.write_chrome_trace(&mut out).unwrap();
    /// let trace: serde_json::Value = serde_json::from_slice(&out).unwrap();
    /// assert!(trace["traceEvents"].as_array().unwrap().iter().any(|e| e["name"] == "a"));
    /// ```
    ///
    /// # Errors
    /// The writer's error.
    #[cfg_attr(docsrs, doc(cfg(feature = "report")))]
    pub fn write_chrome_trace(&self, w: impl Write) -> io::Result<()> {
        let mut w = io::BufWriter::new(w);
        w.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
        let mut out = Out {
            w: &mut w,
            first: true,
        };
        let run = &self.parallel_run;
        for (k, node) in run.nodes.iter().enumerate() {
            let pid = 1 + k as u64;
            let name = format!("node {node} (parallel run, {})", run.policy);
            out.meta("process_name", pid, 0, Args::Name { name: &name })?;
            out.meta("process_sort_index", pid, 0, Args::Sort { sort_index: pid })?;
        }
        let layout = Layout::parallel(run);
        for w in 0..run.threads as u32 {
            let name = match run.worker_cpus.get(w as usize).copied().flatten() {
                Some(cpu) => format!("worker {w} (CPU {cpu})"),
                None => format!("worker {w}"),
            };
            out.meta(
                "thread_name",
                layout.pid(w),
                u64::from(w),
                Args::Name { name: &name },
            )?;
        }
        for (j, b) in self.baseline_runs.iter().enumerate() {
            let pid = BASELINE_PID + j as u64;
            let node = b.worker_nodes.first().copied().unwrap_or(0);
            let name = format!("baseline: one worker on node {node}");
            out.meta("process_name", pid, 0, Args::Name { name: &name })?;
            out.meta("process_sort_index", pid, 0, Args::Sort { sort_index: pid })?;
            out.meta("thread_name", pid, 0, Args::Name { name: "worker 0" })?;
        }
        write_run(&mut out, run, &layout)?;
        write_counters(&mut out, run)?;
        for (j, b) in self.baseline_runs.iter().enumerate() {
            let layout = Layout {
                pids: vec![BASELINE_PID + j as u64; b.threads.max(1)],
            };
            write_run(&mut out, b, &layout)?;
        }
        w.write_all(b"\n]}\n")?;
        w.flush()
    }

    /// The trace as a string ([`write_chrome_trace`](Self::write_chrome_trace)
    /// into memory: for small reports).
    #[cfg_attr(docsrs, doc(cfg(feature = "report")))]
    pub fn to_chrome_trace(&self) -> String {
        let mut out = Vec::new();
        self.write_chrome_trace(&mut out)
            .expect("writing to memory does not fail");
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }
}
