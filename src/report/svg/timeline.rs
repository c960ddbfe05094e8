//! The parallel run's timeline in the SVG: one row per worker, each task
//! drawn, or, beyond [`DETAILED_SPANS`] tasks, time buckets.

use std::fmt::Write as _;

use super::super::run::Run;
use super::super::text::human_ns;
use super::super::InflationReport;
use super::*;

/// Per worker of `run`, top-level spans (not inside another span of the
/// same worker), by start.
fn top_level(run: &Run, worker: u32) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for t in run.tasks.iter().filter(|t| t.worker == worker) {
        match out.last_mut() {
            Some(last) if t.start_ns < last.1 => last.1 = last.1.max(t.end_ns),
            _ => out.push((t.start_ns, t.end_ns)),
        }
    }
    out
}

impl InflationReport {
    /// The parallel run's timeline: one row per worker, tasks coloured by
    /// their data's node.
    pub(super) fn svg_timeline(&self, o: &mut String, mut y: f64) -> f64 {
        let run = &self.parallel_run;
        let (s, e) = (
            self.window.start_ns,
            self.window.end_ns.max(self.window.start_ns + 1),
        );
        let span = (e - s) as f64;
        let detailed = run.tasks.len() <= DETAILED_SPANS;
        let title = if detailed {
            format!(
                "Parallel run, per worker ({} tasks); fill: node of the task's data",
                run.tasks.len()
            )
        } else {
            format!(
                "Parallel run, per worker ({} tasks, aggregated into time buckets: fill = main data node, opacity = how busy)",
                run.tasks.len()
            )
        };
        text(o, 10.0, y, &title, r#" font-weight="bold""#);
        y += 8.0;
        // Legend: the nodes' colours.
        let mut nodes: Vec<Option<u32>> = run.tasks.iter().map(|t| t.data_node).collect();
        nodes.sort_unstable();
        nodes.dedup();
        let mut lx = LEFT;
        for n in nodes.iter().take(10) {
            let name = match n {
                Some(n) => format!("data on node {n}"),
                None => "no data declared".to_string(),
            };
            rect(o, lx, y, 12.0, 12.0, node_colour(*n), &name);
            text(o, lx + 16.0, y + 10.0, &name, r#" font-size="11""#);
            lx += 16.0 + name.chars().count() as f64 * 6.2 + 16.0;
        }
        rect(o, lx, y, 12.0, 12.0, JOB, "an unlabelled job");
        let job = if detailed {
            "unlabelled job (outline: the worker's node)"
        } else {
            "in an unlabelled job only (or preempted in one)"
        };
        text(o, lx + 16.0, y + 10.0, job, r#" font-size="11""#);
        y += 22.0;
        let row = if run.threads > 64 { 6.0 } else { 16.0 };
        let x_of = |t: u64| LEFT + (t.clamp(s, e) - s) as f64 / span * PLOT;
        for w in 0..run.threads as u32 {
            let ry = y + w as f64 * row;
            if row >= 10.0 {
                let node = run.worker_nodes.get(w as usize).copied().unwrap_or(0);
                text(
                    o,
                    10.0,
                    ry + row * 0.7,
                    &format!("worker {w} (node {node})"),
                    r#" font-size="11""#,
                );
            }
            let _ = writeln!(
                o,
                r##"<rect x="{LEFT}" y="{ry:.1}" width="{PLOT}" height="{:.1}" fill="#f4f4f4"/>"##,
                row - 2.0
            );
        }
        if detailed {
            for t in &run.tasks {
                let x = x_of(t.start_ns);
                let wpx = (x_of(t.end_ns) - x).max(0.5);
                let ry = y + t.worker as f64 * row;
                let unlabelled = run.is_unlabelled(t);
                let fill = if unlabelled && t.data_node.is_none() {
                    JOB
                } else {
                    node_colour(t.data_node)
                };
                let (ty, th) = if unlabelled {
                    (ry, row - 2.0)
                } else {
                    (ry + 2.0, row - 6.0)
                };
                let _ = writeln!(
                    o,
                    r#"<rect x="{x:.2}" y="{ty:.1}" width="{wpx:.2}" height="{th:.1}" fill="{fill}" stroke="{}" stroke-width="0.5"><title>{} on worker {} (node {}), data {}: {} (own {})</title></rect>"#,
                    node_colour(Some(run.node_of(t))),
                    xml_escape(run.label_of(t)),
                    t.worker,
                    run.node_of(t),
                    t.data_node
                        .map_or("none".to_string(), |n| format!("on node {n}")),
                    human_ns(t.end_ns.saturating_sub(t.start_ns) as f64),
                    human_ns(t.own_ns as f64),
                );
            }
        } else {
            self.svg_aggregated(o, y, row, (s, e));
        }
        y += run.threads as f64 * row + 6.0;
        axis(o, LEFT, PLOT, y, span, "time since the first task's start");
        y + 34.0
    }

    /// The timeline in buckets: per worker and bucket, the busy share (of
    /// top-level tasks), the label with the most own time and the data node
    /// with the most time; equal neighbours merge.
    fn svg_aggregated(&self, o: &mut String, y: f64, row: f64, (s, e): (u64, u64)) {
        let run = &self.parallel_run;
        let buckets = (AGGREGATED_CELLS / run.threads.max(1)).clamp(40, PLOT as usize);
        let width = ((e - s) as f64 / buckets as f64).max(1.0);
        let px = PLOT / buckets as f64;
        let bucket_of = |t: u64| (((t.clamp(s, e) - s) as f64 / width) as usize).min(buckets - 1);
        // Split [a, b) over buckets, calling f(bucket, ns).
        let spread = |a: u64, b: u64, f: &mut dyn FnMut(usize, f64)| {
            let (a, b) = (a.clamp(s, e) as f64, b.clamp(s, e) as f64);
            let mut t = a;
            // The bucket index steps by one (recomputing it from `t` could
            // round down to the same bucket again).
            let mut i = (((a - s as f64) / width) as usize).min(buckets - 1);
            while t < b {
                let edge = if i + 1 >= buckets {
                    b
                } else {
                    (s as f64 + (i + 1) as f64 * width).min(b)
                };
                f(i, (edge - t).max(0.0));
                t = edge;
                i += 1;
            }
        };
        for w in 0..run.threads as u32 {
            let mut busy = vec![0f64; buckets];
            for (a, b) in top_level(run, w) {
                spread(a, b, &mut |i, ns| busy[i] += ns);
            }
            // Own time per (bucket, label) and time per (bucket, data node):
            // a task's own time is spread over its duration.
            let mut labels: Vec<Vec<(u32, f64)>> = vec![Vec::new(); buckets];
            let mut data: Vec<Vec<(Option<u32>, f64)>> = vec![Vec::new(); buckets];
            for t in run.tasks.iter().filter(|t| t.worker == w) {
                let dur = t.end_ns.saturating_sub(t.start_ns).max(1) as f64;
                let own = t.own_ns as f64 / dur;
                let unlabelled = run.is_unlabelled(t);
                let mut add = |i: usize, ns: f64| {
                    if !unlabelled {
                        match labels[i].iter_mut().find(|(l, _)| *l == t.label) {
                            Some((_, x)) => *x += ns * own,
                            None => labels[i].push((t.label, ns * own)),
                        }
                    }
                    if t.data_node.is_some() || !unlabelled {
                        match data[i].iter_mut().find(|(d, _)| *d == t.data_node) {
                            Some((_, x)) => *x += ns * own,
                            None => data[i].push((t.data_node, ns * own)),
                        }
                    }
                };
                if t.start_ns < e && t.end_ns > s {
                    if bucket_of(t.start_ns) == bucket_of(t.end_ns) {
                        add(bucket_of(t.start_ns), dur);
                    } else {
                        spread(t.start_ns, t.end_ns, &mut add);
                    }
                }
            }
            let top = |v: &[(u32, f64)]| v.iter().max_by(|a, b| a.1.total_cmp(&b.1)).map(|x| x.0);
            let top_node =
                |v: &[(Option<u32>, f64)]| v.iter().max_by(|a, b| a.1.total_cmp(&b.1)).map(|x| x.0);
            let mut cells: Vec<Cell> = Vec::new();
            for i in 0..buckets {
                let share = (busy[i] / width).clamp(0.0, 1.0);
                if share < 0.02 {
                    continue;
                }
                let fill = match top_node(&data[i]) {
                    Some(n) => node_colour(n),
                    None => JOB,
                };
                let tenth = (share * 10.0).round() as u32;
                let label = top(&labels[i]);
                match cells.last_mut() {
                    Some(c)
                        if c.last + 1 == i
                            && c.fill == fill
                            && c.tenth == tenth
                            && c.label == label =>
                    {
                        c.last = i;
                        c.busy_ns += busy[i];
                    }
                    _ => cells.push(Cell {
                        first: i,
                        last: i,
                        fill,
                        tenth,
                        label,
                        busy_ns: busy[i],
                    }),
                }
            }
            let ry = y + w as f64 * row;
            for c in cells {
                let from = c.first as f64 * width;
                let to = (c.last + 1) as f64 * width;
                let name = c.label.map_or("unlabelled jobs".to_string(), |l| {
                    run.labels.get(l as usize).cloned().unwrap_or_default()
                });
                let _ = writeln!(
                    o,
                    r#"<rect x="{:.1}" y="{ry:.1}" width="{:.1}" height="{:.1}" fill="{}" fill-opacity="{:.1}"><title>worker {w}, {} to {}: busy {:.0} %, mostly {}</title></rect>"#,
                    LEFT + c.first as f64 * px,
                    (c.last + 1 - c.first) as f64 * px,
                    row - 2.0,
                    c.fill,
                    (c.tenth.max(1) as f64 / 10.0),
                    human_ns(from),
                    human_ns(to),
                    c.busy_ns / (to - from) * 100.0,
                    xml_escape(&name)
                );
            }
        }
    }
}

/// Neighbouring buckets of an aggregated timeline row that look alike.
struct Cell {
    first: usize,
    last: usize,
    /// The main data node's colour.
    fill: &'static str,
    /// How busy, in tenths (the opacity).
    tenth: u32,
    /// The label with the most own time.
    label: Option<u32>,
    busy_ns: f64,
}
