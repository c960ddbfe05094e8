//! The report as an SVG picture: where the thread time went (baseline and
//! parallel, on one scale), per worker, each label's local and remote
//! tasks against its baseline, and the parallel run's timeline with a time
//! axis. Beyond [`DETAILED_SPANS`] tasks the timeline aggregates (per
//! worker and time bucket: how busy, the main label and data node), so the
//! picture stays under 2 MB for millions of tasks.

use std::fmt::Write as _;

use super::text::{human_bytes, human_ns};
use super::InflationReport;

mod timeline;

/// Most tasks drawn one by one; beyond, the timeline aggregates.
pub(crate) const DETAILED_SPANS: usize = 4000;

/// Most rectangles of an aggregated timeline, over all workers.
const AGGREGATED_CELLS: usize = 8000;

const WIDTH: f64 = 1000.0;
const LEFT: f64 = 150.0;
const PLOT: f64 = WIDTH - LEFT - 30.0;

/// Colours for nodes (the data's node in the timeline), cycled.
const NODE_COLOURS: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7",
];
/// Tasks that declared no data.
const NO_DATA: &str = "#9aa3ad";
/// Unlabelled jobs without data (drawn under their labelled regions).
const JOB: &str = "#dde3ea";

const SEQ: &str = "#4e79a7";
const INFLATION: &str = "#e15759";
const OVERHEAD: &str = "#f28e2b";
const IDLE: &str = "#cfcfcf";

fn node_colour(node: Option<u32>) -> &'static str {
    node.map_or(NO_DATA, |n| NODE_COLOURS[n as usize % NODE_COLOURS.len()])
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

/// A tick step of 1, 2 or 5 × 10^k ns giving at most `max` ticks over
/// `span` ns.
fn tick_step(span: f64, max: f64) -> f64 {
    let raw = (span / max).max(1.0);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
}

/// A tick's label in the unit that suits `step`.
fn tick_label(ns: f64, step: f64) -> String {
    if step >= 1e9 {
        format!("{} s", trim(ns / 1e9))
    } else if step >= 1e6 {
        format!("{} ms", trim(ns / 1e6))
    } else if step >= 1e3 {
        format!("{} µs", trim(ns / 1e3))
    } else {
        format!("{ns:.0} ns")
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A horizontal time axis under `y` from `x0` over `width` px for `span`
/// ns.
fn axis(o: &mut String, x0: f64, width: f64, y: f64, span: f64, caption: &str) {
    let _ = writeln!(
        o,
        r##"<line x1="{x0}" y1="{y}" x2="{}" y2="{y}" stroke="#555" stroke-width="1"/>"##,
        x0 + width
    );
    let step = tick_step(span, 8.0);
    let mut t = 0.0;
    while t <= span * 1.0001 {
        let x = x0 + t / span.max(1.0) * width;
        let _ = writeln!(
            o,
            r##"<line x1="{x:.1}" y1="{y}" x2="{x:.1}" y2="{}" stroke="#555"/><text x="{x:.1}" y="{}" text-anchor="middle" font-size="10">{}</text>"##,
            y + 4.0,
            y + 15.0,
            tick_label(t, step)
        );
        t += step;
    }
    let _ = writeln!(
        o,
        r##"<text x="{}" y="{}" text-anchor="end" font-size="10" fill="#555">{}</text>"##,
        x0 + width,
        y + 27.0,
        xml_escape(caption)
    );
}

fn rect(o: &mut String, x: f64, y: f64, w: f64, h: f64, fill: &str, title: &str) {
    if w <= 0.0 {
        return;
    }
    let _ = writeln!(
        o,
        r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{fill}"><title>{}</title></rect>"#,
        xml_escape(title)
    );
}

fn text(o: &mut String, x: f64, y: f64, s: &str, extra: &str) {
    let _ = writeln!(
        o,
        r#"<text x="{x:.1}" y="{y:.1}"{extra}>{}</text>"#,
        xml_escape(s)
    );
}

/// A stacked bar of (name, ns, colour) parts from `x`, `scale` px per ns;
/// a negative inflation is drawn as a dashed bracket under the bar, from
/// the end of the work to where the baseline's work would end.
#[allow(clippy::too_many_arguments)]
fn stacked(
    o: &mut String,
    x: f64,
    y: f64,
    h: f64,
    scale: f64,
    seq: f64,
    inflation: Option<f64>,
    rest: &[(&str, f64, &str)],
    what: &str,
) {
    let mut cx = x;
    let infl = inflation.unwrap_or(0.0);
    let work = seq + infl;
    let seq_drawn = if infl < 0.0 { work } else { seq };
    let name = if inflation.is_some() {
        "sequential work"
    } else {
        "work"
    };
    rect(
        o,
        cx,
        y,
        seq_drawn * scale,
        h,
        SEQ,
        &format!("{what}: {name} {}", human_ns(seq)),
    );
    cx += seq_drawn.max(0.0) * scale;
    if infl > 0.0 {
        rect(
            o,
            cx,
            y,
            infl * scale,
            h,
            INFLATION,
            &format!("{what}: inflation +{}", human_ns(infl)),
        );
        cx += infl * scale;
    } else if infl < 0.0 {
        // Clipped to the plot: a worker's baseline work can be longer than
        // the window.
        let (a, b) = (cx, (cx + (-infl) * scale).min(LEFT + PLOT));
        let yb = y + h + 4.0;
        let _ = writeln!(
            o,
            r##"<path d="M{a:.1},{:.1} L{a:.1},{yb:.1} L{b:.1},{yb:.1} L{b:.1},{:.1}" fill="none" stroke="{INFLATION}" stroke-dasharray="3,2"><title>{}: negative inflation {}: the tasks took less time than in the baseline</title></path>"##,
            yb - 3.0,
            yb - 3.0,
            xml_escape(what),
            human_ns(infl)
        );
    }
    for (part, ns, fill) in rest {
        rect(
            o,
            cx,
            y,
            ns * scale,
            h,
            fill,
            &format!("{what}: {part} {}", human_ns(*ns)),
        );
        cx += ns.max(0.0) * scale;
    }
}

impl InflationReport {
    /// The report as an SVG picture (see the module docs of `report`): a
    /// time axis with units, a legend, where the thread time went in each
    /// run and per worker, each label's local and remote tasks, and the
    /// parallel run's timeline (aggregated beyond a few thousand tasks).
    pub fn to_svg(&self) -> String {
        let mut o = String::new();
        let mut y = 20.0;
        let _ = writeln!(
            o,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="HEIGHT" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(o, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let title = format!(
            "Where the thread time went: {} workers ({}), speedup {} (bound from inflation p/r {})",
            self.threads,
            self.policy,
            self.speedup().map_or("-".into(), |s| format!("{s:.2}")),
            self.speedup_bound()
                .map_or("-".into(), |s| format!("{s:.2}"))
        );
        text(
            &mut o,
            10.0,
            y,
            &title,
            r#" font-size="15" font-weight="bold""#,
        );
        y += 18.0;
        let w = &self.window;
        let sub = format!(
            "window {} from the first task's start to the last task's end ({} before and {} after it left out)",
            human_ns(w.len_ns() as f64),
            human_ns(w.start_ns as f64),
            human_ns(w.after_ns() as f64)
        );
        text(&mut o, 10.0, y, &sub, r##" fill="#333""##);
        y += 15.0;
        let base = match &self.baseline {
            Some(b) => format!("baseline: {}", b.placement),
            None => "no baseline: inflation unknown".to_string(),
        };
        text(&mut o, 10.0, y, &base, r##" fill="#333""##);
        y += 15.0;
        if let Some(r) = &self.repeats {
            let s = format!(
                "run {} of {} shown (median speedup {:.2}, range {:.2} to {:.2})",
                r.shown + 1,
                r.runs,
                r.speedup.median,
                r.speedup.min,
                r.speedup.max
            );
            text(&mut o, 10.0, y, &s, r##" fill="#333""##);
            y += 15.0;
        }
        for warn in self.warnings.iter().take(3) {
            let mut s: String = warn.chars().take(140).collect();
            if warn.chars().count() > 140 {
                s.push('…');
            }
            text(&mut o, 10.0, y, &format!("⚠ {s}"), r##" fill="#b22""##);
            y += 15.0;
        }
        if self.warnings.len() > 3 {
            let s = format!(
                "⚠ {} more warnings in the text report",
                self.warnings.len() - 3
            );
            text(&mut o, 10.0, y, &s, r##" fill="#b22""##);
            y += 15.0;
        }
        y += 10.0;
        y = self.svg_breakdown(&mut o, y);
        y = self.svg_workers(&mut o, y);
        y = self.svg_locality(&mut o, y);
        y = self.svg_timeline(&mut o, y);
        o.push_str("</svg>\n");
        o.replacen("HEIGHT", &format!("{:.0}", y + 10.0), 1)
    }

    /// The two runs' thread time, on one scale, with an axis.
    fn svg_breakdown(&self, o: &mut String, mut y: f64) -> f64 {
        text(
            o,
            10.0,
            y,
            "Thread time: workers × window",
            r#" font-weight="bold""#,
        );
        y += 10.0;
        let b = &self.breakdown;
        let base = self.baseline.as_ref().map(|x| x.breakdown);
        let max = base.map_or(0, |x| x.total_ns).max(b.total_ns).max(1) as f64;
        let scale = PLOT / max;
        let h = 24.0;
        if let Some(bb) = base {
            text(o, 10.0, y + h * 0.65, "baseline (1 worker)", "");
            stacked(
                o,
                LEFT,
                y,
                h,
                scale,
                bb.work_ns as f64,
                None,
                &[
                    ("overhead", bb.overhead_ns as f64, OVERHEAD),
                    ("idle", bb.idle_ns as f64, IDLE),
                ],
                "baseline",
            );
            y += h + 12.0;
        }
        text(
            o,
            10.0,
            y + h * 0.65,
            &format!("parallel ({} workers)", self.threads),
            "",
        );
        stacked(
            o,
            LEFT,
            y,
            h,
            scale,
            b.sequential_work_ns.unwrap_or(b.work_ns) as f64,
            b.inflation_ns.map(|x| x as f64),
            &[
                ("overhead", b.overhead_ns as f64, OVERHEAD),
                ("idle", b.idle_ns as f64, IDLE),
            ],
            "parallel",
        );
        y += h + 12.0;
        axis(o, LEFT, PLOT, y, max, "thread time (workers × window)");
        y += 40.0;
        let mut lx = LEFT;
        for (part, fill) in [
            ("sequential work", SEQ),
            ("inflation", INFLATION),
            ("overhead (looking for work, recording)", OVERHEAD),
            ("idle", IDLE),
        ] {
            rect(o, lx, y - 10.0, 12.0, 12.0, fill, part);
            text(o, lx + 16.0, y, part, "");
            lx += 16.0 + part.chars().count() as f64 * 6.6 + 18.0;
        }
        let _ = writeln!(
            o,
            r##"<path d="M{lx:.1},{:.1} L{lx:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1}" fill="none" stroke="{INFLATION}" stroke-dasharray="3,2"/>"##,
            y - 9.0,
            y - 4.0,
            lx + 14.0,
            y - 4.0,
            lx + 14.0,
            y - 9.0
        );
        text(o, lx + 18.0, y, "negative inflation", "");
        y + 28.0
    }

    /// One bar per worker (or per node, beyond 48 workers), on the scale
    /// of the window.
    fn svg_workers(&self, o: &mut String, mut y: f64) -> f64 {
        let per_node = self.workers.len() > 48;
        let rows = if per_node { &self.nodes } else { &self.workers };
        let title = if per_node {
            "Per node: work, inflation, overhead and idle over the window (all its workers)"
        } else {
            "Per worker: work, inflation, overhead and idle over the window"
        };
        text(o, 10.0, y, title, r#" font-weight="bold""#);
        y += 8.0;
        let max = rows
            .iter()
            .map(|r| r.workers as u64 * self.window.len_ns())
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        let scale = PLOT / max;
        let h = 12.0;
        for r in rows {
            let name = match r.worker {
                Some(w) => format!("worker {w} (node {})", r.node),
                None => format!("node {} ({} workers)", r.node, r.workers),
            };
            text(o, 10.0, y + h * 0.85, &name, r#" font-size="11""#);
            stacked(
                o,
                LEFT,
                y,
                h,
                scale,
                r.sequential_work_ns.unwrap_or(r.work_ns) as f64,
                r.inflation_ns.map(|x| x as f64),
                &[
                    ("overhead", r.overhead_ns as f64, OVERHEAD),
                    ("idle", r.idle_ns as f64, IDLE),
                ],
                &name,
            );
            y += h + 6.0;
        }
        y += 4.0;
        axis(o, LEFT, PLOT, y, max, "time in the window");
        y + 45.0
    }

    /// Per label with declared data: mean time in the baseline, of the
    /// local tasks and of the remote ones.
    fn svg_locality(&self, o: &mut String, mut y: f64) -> f64 {
        let rows: Vec<_> = self
            .labels
            .iter()
            .filter(|r| r.locality.is_some() && r.label != super::run::UNLABELLED)
            .take(8)
            .collect();
        text(
            o,
            10.0,
            y,
            "Locality: mean time of tasks whose data was on their worker's node (local) and elsewhere (remote)",
            r#" font-weight="bold""#,
        );
        y += 8.0;
        if rows.is_empty() {
            text(
                o,
                LEFT,
                y + 12.0,
                "no task declared data (Place::data, Place::pushed): no local/remote split",
                r##" fill="#555""##,
            );
            return y + 36.0;
        }
        let max = rows
            .iter()
            .flat_map(|r| [r.baseline.mean_ns, r.local.mean_ns, r.remote.mean_ns])
            .fold(1.0, f64::max);
        let scale = (PLOT - 260.0) / max;
        let h = 10.0;
        for r in rows {
            text(
                o,
                10.0,
                y + 22.0,
                &r.label,
                r#" font-weight="bold" font-size="11""#,
            );
            for (name, mean, count, infl, fill) in [
                ("baseline", r.baseline.mean_ns, r.baseline.count, None, IDLE),
                (
                    "local",
                    r.local.mean_ns,
                    r.local.count,
                    r.local.inflation,
                    "#59a14f",
                ),
                (
                    "remote",
                    r.remote.mean_ns,
                    r.remote.count,
                    r.remote.inflation,
                    INFLATION,
                ),
            ] {
                let note = match infl {
                    _ if count == 0 => format!("{name}: no task"),
                    Some(i) => format!(
                        "{name}: {count} tasks, mean {}, inflation {i:.3}",
                        human_ns(mean)
                    ),
                    None => format!("{name}: {count} tasks, mean {}", human_ns(mean)),
                };
                rect(o, LEFT, y, mean * scale, h, fill, &note);
                text(
                    o,
                    LEFT + mean * scale + 6.0,
                    y + h - 1.0,
                    &note,
                    r#" font-size="10""#,
                );
                y += h + 3.0;
            }
            if let Some(extra) = r.remote_extra_ns {
                text(
                    o,
                    LEFT,
                    y + 9.0,
                    &format!(
                        "remote tasks cost {} beyond local ones; {} of data remote",
                        human_ns(extra),
                        human_bytes(r.remote.bytes)
                    ),
                    r##" font-size="10" fill="#555""##,
                );
                y += 12.0;
            }
            y += 8.0;
        }
        y + 8.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_few() {
        assert_eq!(tick_step(10e6, 8.0), 2e6);
        assert_eq!(tick_step(1e9, 8.0), 2e8);
        assert_eq!(tick_step(7.0, 8.0), 1.0);
        assert_eq!(tick_label(2e6, 1e6), "2 ms");
        assert_eq!(tick_label(2.5e6, 5e5), "2500 µs");
        assert_eq!(tick_label(1.5e9, 5e8), "1500 ms");
    }
}
