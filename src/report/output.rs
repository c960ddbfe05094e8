//! The report's outputs: CSV, an SVG picture and, with the `report`
//! feature (serde and serde_json), JSON and a Chrome trace-event file
//! (opens in Perfetto or `chrome://tracing`). The text table is the
//! report's `Display`, in every build.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use super::InflationReport;
use crate::numa::NodeId;

/// Colours for nodes (data node in the timeline), cycled.
const NODE_COLOURS: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948", "#9c755f",
];
/// Tasks that declared no data.
const NO_DATA: &str = "#bab0ac";

fn colour(node: Option<NodeId>) -> &'static str {
    node.map_or(NO_DATA, |n| {
        NODE_COLOURS[n.os_index() as usize % NODE_COLOURS.len()]
    })
}

#[cfg(feature = "report")]
fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".into())
}

/// Text for an SVG element or attribute: markup escaped, control
/// characters (not allowed in XML 1.0) dropped.
fn xml_escape(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r'))
        .collect::<String>()
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl InflationReport {
    /// The report as JSON (every public field). Needs the `report`
    /// feature.
    #[cfg(feature = "report")]
    #[cfg_attr(docsrs, doc(cfg(feature = "report")))]
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the report serialises")
    }

    /// One CSV line per label: counts, total and mean times (ns) in each
    /// run, inflation, locality, then each counter's mean per task in each
    /// run (empty: not counted).
    pub fn to_csv(&self) -> String {
        let mut out = String::from(
            "label,tasks_1,total_ns_1,mean_ns_1,tasks_p,total_ns_p,mean_ns_p,inflation,locality",
        );
        let counters: Vec<&str> = self
            .labels
            .first()
            .map(|r| r.counters.iter().map(|c| c.counter.as_str()).collect())
            .unwrap_or_default();
        for c in &counters {
            let _ = write!(out, ",{c}_per_task_1,{c}_per_task_p");
        }
        out.push('\n');
        let opt = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.6}"));
        for r in &self.labels {
            let label = if r.label.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", r.label.replace('"', "\"\""))
            } else {
                r.label.clone()
            };
            let _ = write!(
                out,
                "{label},{},{},{:.1},{},{},{:.1},{},{}",
                r.baseline.count,
                r.baseline.total_ns,
                r.baseline.mean_ns,
                r.parallel.count,
                r.parallel.total_ns,
                r.parallel.mean_ns,
                opt(r.inflation),
                opt(r.locality)
            );
            for c in &r.counters {
                let _ = write!(out, ",{},{}", opt(c.baseline), opt(c.parallel));
            }
            out.push('\n');
        }
        out
    }

    /// The parallel run as Chrome trace events: one track per worker, one
    /// slice per task (args: label, node, data node, counter deltas).
    /// Needs the `report` feature.
    #[cfg(feature = "report")]
    #[cfg_attr(docsrs, doc(cfg(feature = "report")))]
    pub fn to_chrome_trace(&self) -> String {
        let mut out = String::from("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
        let workers = self
            .timeline
            .iter()
            .map(|s| s.worker + 1)
            .max()
            .unwrap_or(0);
        let mut first = true;
        let mut sep = |out: &mut String| {
            if !first {
                out.push_str(",\n");
            }
            first = false;
        };
        for w in 0..workers.max(self.threads) {
            sep(&mut out);
            let _ = write!(
                out,
                "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":{w},\"args\":{{\"name\":\"worker {w}\"}}}}"
            );
        }
        for s in &self.timeline {
            sep(&mut out);
            let mut args = format!(
                "\"label\":{},\"node\":{},\"data_node\":{}",
                json_str(&s.label),
                s.node.os_index(),
                s.data_node
                    .map_or("null".to_string(), |n| n.os_index().to_string())
            );
            for (name, v) in &s.counters {
                let _ = write!(args, ",{}:{v}", json_str(name));
            }
            let _ = write!(
                out,
                "{{\"ph\":\"X\",\"name\":{},\"pid\":1,\"tid\":{},\"ts\":{:.3},\"dur\":{:.3},\"args\":{{{args}}}}}",
                json_str(&s.label),
                s.worker,
                s.start_ns as f64 / 1e3,
                s.end_ns.saturating_sub(s.start_ns) as f64 / 1e3,
            );
        }
        out.push_str("\n]}\n");
        out
    }

    /// An SVG picture: stacked bars of where the thread time went in each
    /// run (work, inflation, overhead, idle), and the parallel run's
    /// timeline, one row per worker, each task coloured by the node of its
    /// declared data (grey: none declared) and outlined in its worker's
    /// node colour.
    pub fn to_svg(&self) -> String {
        let width = 960.0;
        let left = 110.0;
        let plot = width - left - 20.0;
        let bar_h = 28.0;
        let row_h = 18.0;
        let workers = self.threads.max(
            self.timeline
                .iter()
                .map(|s| s.worker + 1)
                .max()
                .unwrap_or(0),
        );
        let timeline_top = 150.0;
        let height = timeline_top + workers as f64 * row_h + 80.0;
        let mut o = String::new();
        let _ = writeln!(
            o,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(o, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let _ = writeln!(
            o,
            r#"<text x="10" y="18" font-size="14" font-weight="bold">Where the thread time went: {} workers ({}), speedup {:.2} (bound from inflation {:.2})</text>"#,
            self.threads,
            xml_escape(&self.policy),
            self.speedup(),
            self.speedup_bound()
        );
        // Bars: baseline (1 worker × its wall) and parallel (p × wall), on
        // one scale so that their lengths compare.
        let b = &self.breakdown;
        let (bw, bwork, bover, bidle) = self.baseline_breakdown;
        let scale_ns = (b.total_ns.max(bw)).max(1) as f64;
        let parts_base = [
            ("sequential work", bwork as f64, "#4e79a7"),
            ("overhead", bover as f64, "#f28e2b"),
            ("idle", bidle as f64, "#bab0ac"),
        ];
        let infl = b.inflation_ns.max(0) as f64;
        let work_p = (b.sequential_work_ns as i64 + b.inflation_ns).max(0) as f64;
        let parts_par = [
            ("sequential work", work_p - infl, "#4e79a7"),
            ("inflation", infl, "#e15759"),
            ("overhead", b.overhead_ns as f64, "#f28e2b"),
            ("idle", b.idle_ns as f64, "#bab0ac"),
        ];
        for (row, (name, parts)) in [("1 worker", &parts_base[..]), ("parallel", &parts_par[..])]
            .into_iter()
            .enumerate()
        {
            let y = 34.0 + row as f64 * (bar_h + 8.0);
            let _ = writeln!(o, r#"<text x="10" y="{}">{name}</text>"#, y + bar_h * 0.65);
            let mut x = left;
            for (part, ns, fill) in parts {
                let w = (ns / scale_ns * plot).max(0.0);
                if w > 0.0 {
                    let _ = writeln!(
                        o,
                        r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{bar_h}" fill="{fill}"><title>{part}: {:.3} ms</title></rect>"#,
                        ns / 1e6
                    );
                }
                x += w;
            }
        }
        // Legend.
        let mut lx = left;
        for (part, fill) in [
            ("sequential work", "#4e79a7"),
            ("inflation", "#e15759"),
            ("overhead", "#f28e2b"),
            ("idle", "#bab0ac"),
        ] {
            let _ = writeln!(
                o,
                r#"<rect x="{lx}" y="112" width="12" height="12" fill="{fill}"/><text x="{}" y="122">{part}</text>"#,
                lx + 16.0
            );
            lx += 130.0;
        }
        // Timeline.
        let _ = writeln!(
            o,
            r#"<text x="10" y="{}" font-weight="bold">Parallel run, per worker ({:.3} ms); fill: node of the task's data, grey: none declared</text>"#,
            timeline_top - 8.0,
            self.wall_ns as f64 / 1e6
        );
        let wall = self.wall_ns.max(1) as f64;
        for w in 0..workers {
            let y = timeline_top + w as f64 * row_h;
            let _ = writeln!(
                o,
                r#"<text x="10" y="{}">worker {w}</text>"#,
                y + row_h * 0.7
            );
            let _ = writeln!(
                o,
                r##"<rect x="{left}" y="{y}" width="{plot}" height="{}" fill="#f4f4f4"/>"##,
                row_h - 3.0
            );
        }
        for s in &self.timeline {
            // A task still closing as the recording stopped may end after it.
            let (start, end) = (s.start_ns.min(self.wall_ns), s.end_ns.min(self.wall_ns));
            let x = left + start as f64 / wall * plot;
            let w = (end.saturating_sub(start) as f64 / wall * plot).max(0.5);
            let y = timeline_top + s.worker as f64 * row_h;
            let _ = writeln!(
                o,
                r#"<rect x="{x:.2}" y="{y:.1}" width="{w:.2}" height="{}" fill="{}" stroke="{}" stroke-width="0.5"><title>{} on worker {} ({}), data {}: {:.1} µs</title></rect>"#,
                row_h - 3.0,
                colour(s.data_node),
                colour(Some(s.node)),
                xml_escape(&s.label),
                s.worker,
                s.node,
                s.data_node.map_or("none".to_string(), |n| n.to_string()),
                s.end_ns.saturating_sub(s.start_ns) as f64 / 1e3
            );
        }
        o.push_str("</svg>\n");
        o
    }

    /// The JSON files, with the `report` feature.
    #[cfg(feature = "report")]
    fn serialised(&self) -> Vec<(&'static str, String)> {
        vec![
            ("report.json", self.to_json()),
            ("trace.json", self.to_chrome_trace()),
        ]
    }

    /// No JSON files without the `report` feature.
    #[cfg(not(feature = "report"))]
    fn serialised(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// Writes `report.csv` and `report.svg`, and with the `report` feature
    /// `report.json` and `trace.json` too, into `dir` (created if missing);
    /// returns their paths. (The text table is the report's `Display`.)
    ///
    /// # Errors
    /// The I/O error, with the path it concerns in its message.
    pub fn write_all(&self, dir: impl AsRef<Path>) -> io::Result<Vec<PathBuf>> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir)
            .map_err(|e| io::Error::new(e.kind(), format!("creating {}: {e}", dir.display())))?;
        let files = self
            .serialised()
            .into_iter()
            .chain([("report.csv", self.to_csv()), ("report.svg", self.to_svg())]);
        let mut out = Vec::new();
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|e| {
                io::Error::new(e.kind(), format!("writing {}: {e}", path.display()))
            })?;
            out.push(path);
        }
        Ok(out)
    }
}
