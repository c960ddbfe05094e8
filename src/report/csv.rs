//! The report as CSV: one line per label.

use std::fmt::Write as _;

use super::InflationReport;

/// A CSV field: quoted when it holds a separator, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl InflationReport {
    /// One CSV line per label: counts, total and mean times (ns) in each
    /// run, wall-time and CPU-time inflation, locality, the local and
    /// remote groups (count, mean ns, inflation), then each counter's mean
    /// per counted task in each run (empty: not counted).
    pub fn to_csv(&self) -> String {
        let mut out = String::from(
            "label,tasks_1,total_ns_1,mean_ns_1,tasks_p,total_ns_p,mean_ns_p,inflation,\
             cpu_inflation,locality,local_tasks,local_mean_ns,local_inflation,remote_tasks,\
             remote_mean_ns,remote_inflation",
        );
        let mut counters: Vec<&str> = self
            .labels
            .iter()
            .flat_map(|r| r.counters.iter().map(|c| c.counter.as_str()))
            .collect();
        counters.sort_unstable();
        counters.dedup();
        for c in &counters {
            let _ = write!(out, ",{c}_per_task_1,{c}_per_task_p");
        }
        out.push('\n');
        let opt = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.6}"));
        for r in &self.labels {
            let _ = write!(
                out,
                "{},{},{},{:.1},{},{},{:.1},{},{},{},{},{:.1},{},{},{:.1},{}",
                field(&r.label),
                r.baseline.count,
                r.baseline.total_ns,
                r.baseline.mean_ns,
                r.parallel.count,
                r.parallel.total_ns,
                r.parallel.mean_ns,
                opt(r.inflation),
                opt(r.cpu_inflation),
                opt(r.locality),
                r.local.count,
                r.local.mean_ns,
                opt(r.local.inflation),
                r.remote.count,
                r.remote.mean_ns,
                opt(r.remote.inflation),
            );
            for c in &counters {
                let row = r.counters.iter().find(|x| x.counter == *c);
                let _ = write!(
                    out,
                    ",{},{}",
                    opt(row.and_then(|x| x.baseline)),
                    opt(row.and_then(|x| x.parallel))
                );
            }
            out.push('\n');
        }
        out
    }
}
