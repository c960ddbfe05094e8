//! The report as text (its `Display`).

use std::fmt;

use super::*;

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

fn opt(x: Option<f64>, p: usize) -> String {
    x.map_or("-".to_string(), |v| format!("{v:.p$}"))
}

/// `ns` as a signed millisecond figure.
fn signed_ms(ns: Option<i64>) -> String {
    ns.map_or("-".to_string(), |v| format!("{:+.3}", v as f64 / 1e6))
}

/// A duration with a unit that suits it.
pub(super) fn human_ns(ns: f64) -> String {
    let a = ns.abs();
    if a >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if a >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if a >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// Bytes with a binary unit.
pub(super) fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    } else if b >= 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{b:.0} B")
    }
}

impl fmt::Display for InflationReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.breakdown;
        let w = &self.window;
        writeln!(
            f,
            "work-time inflation: {} workers ({}), window {:.3} ms",
            self.threads,
            self.policy,
            ms(w.len_ns() as f64)
        )?;
        writeln!(
            f,
            "  window: from the first task's start to the last task's end; left out: {:.3} ms \
             before it (workers waking, the caller starting the work) and {:.3} ms after it \
             (stopping), of {:.3} ms recorded",
            ms(w.start_ns as f64),
            ms(w.after_ns() as f64),
            ms(w.recorded_ns as f64)
        )?;
        match &self.baseline {
            Some(base) => {
                writeln!(f, "  baseline: {}", base.placement)?;
                let windows: Vec<String> = base
                    .runs
                    .iter()
                    .map(|r| format!("{:.3} ms on node {}", ms(r.window_ns as f64), r.node))
                    .collect();
                writeln!(
                    f,
                    "  baseline window {}: speedup {}, bound from inflation p/r = {}",
                    windows.join(", "),
                    opt(self.speedup(), 2),
                    opt(self.speedup_bound(), 2)
                )?;
            }
            None => writeln!(
                f,
                "  baseline: none (no one-worker run): inflation and speedup unknown"
            )?,
        }
        if let Some(r) = &self.repeats {
            writeln!(
                f,
                "  repeated {} times (after a warm-up run); shown: run {} (the median speedup). \
                 speedup median {:.2} [{:.2}, {:.2}], window median {:.3} ms [{:.3}, {:.3}], \
                 work ratio r median {:.3} [{:.3}, {:.3}]",
                r.runs,
                r.shown + 1,
                r.speedup.median,
                r.speedup.min,
                r.speedup.max,
                ms(r.window_ns.median),
                ms(r.window_ns.min),
                ms(r.window_ns.max),
                r.work_ratio.median,
                r.work_ratio.min,
                r.work_ratio.max,
            )?;
            for l in &r.labels {
                writeln!(
                    f,
                    "    {:<22} inflation median {:.3} [{:.3}, {:.3}]",
                    l.label, l.inflation.median, l.inflation.min, l.inflation.max
                )?;
            }
        }
        writeln!(f)?;
        writeln!(
            f,
            "{:<22} {:>8} {:>12} {:>12} {:>10} {:>10} {:>9}",
            "label", "tasks", "mean 1 (µs)", "mean p (µs)", "inflation", "cpu infl.", "locality"
        )?;
        for r in &self.labels {
            writeln!(
                f,
                "{:<22} {:>8} {:>12.2} {:>12.2} {:>10} {:>10} {:>9}",
                r.label,
                r.parallel.count,
                r.baseline.mean_ns / 1e3,
                r.parallel.mean_ns / 1e3,
                opt(r.inflation, 3),
                opt(r.cpu_inflation, 3),
                opt(r.locality, 3),
            )?;
            if r.locality.is_some() {
                for (name, g) in [
                    ("local (data on the worker's node)", &r.local),
                    ("remote (data on another node)", &r.remote),
                ] {
                    if g.count == 0 {
                        writeln!(f, "    {name:<34} {:>7} tasks", 0)?;
                        continue;
                    }
                    writeln!(
                        f,
                        "    {:<34} {:>7} tasks, mean {:>10.2} µs, inflation {:>7}, {} declared",
                        name,
                        g.count,
                        g.mean_ns / 1e3,
                        opt(g.inflation, 3),
                        human_bytes(g.bytes)
                    )?;
                }
                if let Some(extra) = r.remote_extra_ns {
                    writeln!(
                        f,
                        "    remote tasks cost {} beyond what local ones would have \
                         ({} × their difference in mean)",
                        human_ns(extra),
                        r.remote.count
                    )?;
                }
            }
            if !r.histogram.bins.is_empty() {
                let cells: Vec<String> = r
                    .histogram
                    .bins
                    .iter()
                    .zip(r.histogram.baseline.iter().zip(&r.histogram.parallel))
                    .map(|(&k, (bc, pc))| format!("{}: {bc}|{pc}", human_ns((1u64 << k) as f64)))
                    .collect();
                writeln!(
                    f,
                    "    durations (bins from 2^k ns; baseline|parallel): {}",
                    cells.join("  ")
                )?;
            }
            let counted: Vec<&CounterRow> = r
                .counters
                .iter()
                .filter(|c| c.baseline.is_some() || c.parallel.is_some())
                .collect();
            if !counted.is_empty() {
                writeln!(
                    f,
                    "    counters per counted task ({} of {} baseline, {} of {} parallel tasks \
                     counted):",
                    r.baseline.counted, r.baseline.count, r.parallel.counted, r.parallel.count
                )?;
                for c in counted {
                    writeln!(
                        f,
                        "      {:<20} {:>14} -> {:>14}",
                        c.counter,
                        opt(c.baseline, 1),
                        opt(c.parallel, 1)
                    )?;
                }
            }
        }
        writeln!(f)?;
        let [sw, i, o, id, u] = b.shares();
        match (b.sequential_work_ns, b.inflation_ns) {
            (Some(seq), Some(infl)) => writeln!(
                f,
                "p x window = {:.3} ms = sequential work {:.3} ms ({:.1} %) + inflation {:+.3} ms \
                 ({:+.1} %) + overhead {:.3} ms ({:.1} %) + idle {:.3} ms ({:.1} %) + \
                 unaccounted {:+.3} ms ({:+.1} %)",
                ms(b.total_ns as f64),
                ms(seq as f64),
                sw * 100.0,
                ms(infl as f64),
                i * 100.0,
                ms(b.overhead_ns as f64),
                o * 100.0,
                ms(b.idle_ns as f64),
                id * 100.0,
                ms(b.unaccounted_ns as f64),
                u * 100.0,
            )?,
            _ => writeln!(
                f,
                "p x window = {:.3} ms = work {:.3} ms ({:.1} %) + overhead {:.3} ms ({:.1} %) + \
                 idle {:.3} ms ({:.1} %) + unaccounted {:+.3} ms ({:+.1} %)",
                ms(b.total_ns as f64),
                ms(b.work_ns as f64),
                sw * 100.0,
                ms(b.overhead_ns as f64),
                o * 100.0,
                ms(b.idle_ns as f64),
                id * 100.0,
                ms(b.unaccounted_ns as f64),
                u * 100.0,
            )?,
        }
        if b.inflation_ns.is_some_and(|x| x < 0) {
            writeln!(
                f,
                "  (negative inflation: the tasks took less time in parallel than in the \
                 baseline)"
            )?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "{:<12} {:>5} {:>5} {:>8} {:>10} {:>10} {:>13} {:>11} {:>9} {:>13}",
            "worker",
            "node",
            "cpu",
            "tasks",
            "work ms",
            "seq ms",
            "inflation ms",
            "overhead ms",
            "idle ms",
            "cpu/busy ms"
        )?;
        for r in self.workers.iter().chain(&self.nodes) {
            let name = match r.worker {
                Some(w) => format!("worker {w}"),
                None => format!("node {} ({}w)", r.node, r.workers),
            };
            writeln!(
                f,
                "{:<12} {:>5} {:>5} {:>8} {:>10.3} {:>10} {:>13} {:>11.3} {:>9.3} {:>13}",
                name,
                r.node,
                r.cpu.map_or("-".to_string(), |c| c.to_string()),
                r.tasks,
                ms(r.work_ns as f64),
                opt(r.sequential_work_ns.map(|s| ms(s as f64)), 3),
                signed_ms(r.inflation_ns),
                ms(r.overhead_ns as f64),
                ms(r.idle_ns as f64),
                match r.cpu_ns {
                    Some(c) => format!("{:.1}/{:.1}", ms(c as f64), ms(r.busy_ns as f64)),
                    None => "-".to_string(),
                }
            )?;
        }
        if !self.matrix.is_empty() {
            writeln!(f)?;
            writeln!(
                f,
                "placed tasks by the node that ran them (rows) and their data's node (columns):"
            )?;
            let mut cols: Vec<u32> = self.matrix.iter().map(|c| c.data_node).collect();
            cols.sort_unstable();
            cols.dedup();
            let mut rows: Vec<u32> = self.matrix.iter().map(|c| c.node).collect();
            rows.sort_unstable();
            rows.dedup();
            write!(f, "{:<10}", "")?;
            for c in &cols {
                write!(f, " {:>22}", format!("data on node {c}"))?;
            }
            writeln!(f)?;
            for r in &rows {
                write!(f, "{:<10}", format!("node {r}"))?;
                for c in &cols {
                    let cell = self
                        .matrix
                        .iter()
                        .find(|m| m.node == *r && m.data_node == *c);
                    let text = cell.map_or("-".to_string(), |m| {
                        format!("{} ({})", m.tasks, human_bytes(m.bytes))
                    });
                    write!(f, " {text:>22}")?;
                }
                writeln!(f)?;
            }
        }
        let steals: Vec<String> = self
            .steals
            .iter()
            .map(|s| format!("{} {}", s.level, s.count))
            .collect();
        writeln!(
            f,
            "steals (jobs taken from other workers or node queues): {}; placed tasks pushed: {} \
             ({} to another node than their spawner's)",
            steals.join(", "),
            self.pushes,
            self.remote_pushes
        )?;
        writeln!(f)?;
        writeln!(f, "counters:")?;
        for m in &self.counter_method {
            writeln!(f, "    {m}")?;
        }
        if !self.unavailable.is_empty() {
            writeln!(f, "not counted:")?;
            for u in &self.unavailable {
                writeln!(f, "    {u}")?;
            }
        }
        if !self.warnings.is_empty() {
            writeln!(f, "warnings:")?;
            for w in &self.warnings {
                writeln!(f, "  ! {w}")?;
            }
        }
        if let Some(d) = &self.doctor {
            writeln!(f)?;
            write!(f, "{d}")?;
        }
        Ok(())
    }
}
