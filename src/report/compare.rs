//! Two reports compared, label by label (e.g. before and after a change,
//! or two policies).

use std::fmt;

use super::{serde_type, InflationReport};

serde_type! {
/// One label in two reports.
#[derive(Clone, Debug, PartialEq)]
pub struct LabelDelta {
    /// The label.
    pub label: String,
    /// Parallel tasks in each report.
    pub tasks: (u64, u64),
    /// Mean parallel time per task in each, ns.
    pub mean_ns: (f64, f64),
    /// Inflation in each.
    pub inflation: (Option<f64>, Option<f64>),
    /// Share of its tasks that ran on their data's node, in each.
    pub locality: (Option<f64>, Option<f64>),
}

/// What changed from one report (`a`) to another (`b`).
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Workers and policy of each.
    pub pools: ((usize, String), (usize, String)),
    /// Parallel window, ns.
    pub window_ns: (u64, u64),
    /// Speedup.
    pub speedup: (Option<f64>, Option<f64>),
    /// Shares of the breakdown (sequential work, inflation, overhead,
    /// idle, unaccounted) in each.
    pub shares: ([f64; 5], [f64; 5]),
    /// Per label (those of either report).
    pub labels: Vec<LabelDelta>,
}
}

impl InflationReport {
    /// What changed from `self` to `other`, label by label.
    ///
    /// ```
    /// use terroir::report::{InflationReport, RecordOptions};
    /// use terroir::ThreadPoolBuilder;
    /// let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let one = InflationReport::baseline_pool(&pool).unwrap();
    /// let work = || terroir::join(|| terroir::label("a", || 1), || terroir::label("b", || 2));
    /// let ts = RecordOptions::timestamps_only();
    /// let base = one.record_with(&ts, work).1;
    /// let a = InflationReport::new(&base, &pool.record_with(&ts, work).1);
    /// let b = InflationReport::new(&base, &pool.record_with(&ts, work).1);
    /// let diff = a.compare(&b);
    /// assert!(diff.labels.iter().any(|l| l.label == "a"));
    /// println!("{diff}");
    /// ```
    pub fn compare(&self, other: &InflationReport) -> Comparison {
        let mut names: Vec<&str> = self
            .labels
            .iter()
            .chain(&other.labels)
            .map(|l| l.label.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        let labels = names
            .into_iter()
            .map(|name| {
                let (a, b) = (self.label(name), other.label(name));
                LabelDelta {
                    label: name.to_string(),
                    tasks: (
                        a.map_or(0, |r| r.parallel.count),
                        b.map_or(0, |r| r.parallel.count),
                    ),
                    mean_ns: (
                        a.map_or(0.0, |r| r.parallel.mean_ns),
                        b.map_or(0.0, |r| r.parallel.mean_ns),
                    ),
                    inflation: (a.and_then(|r| r.inflation), b.and_then(|r| r.inflation)),
                    locality: (a.and_then(|r| r.locality), b.and_then(|r| r.locality)),
                }
            })
            .collect();
        Comparison {
            pools: (
                (self.threads, self.policy.clone()),
                (other.threads, other.policy.clone()),
            ),
            window_ns: (self.window.len_ns(), other.window.len_ns()),
            speedup: (self.speedup(), other.speedup()),
            shares: (self.breakdown.shares(), other.breakdown.shares()),
            labels,
        }
    }
}

fn opt(x: Option<f64>, p: usize) -> String {
    x.map_or("-".to_string(), |v| format!("{v:.p$}"))
}

/// `b − a` with a sign, or "-".
fn delta(a: Option<f64>, b: Option<f64>, p: usize) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!("{:+.p$}", b - a),
        _ => "-".to_string(),
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ((ta, pa), (tb, pb)) = &self.pools;
        writeln!(
            f,
            "a: {ta} workers ({pa}), window {:.3} ms, speedup {}; b: {tb} workers ({pb}), window \
             {:.3} ms, speedup {} ({} ms, {:+.1} %)",
            self.window_ns.0 as f64 / 1e6,
            opt(self.speedup.0, 2),
            self.window_ns.1 as f64 / 1e6,
            opt(self.speedup.1, 2),
            format_args!(
                "{:+.3}",
                (self.window_ns.1 as f64 - self.window_ns.0 as f64) / 1e6
            ),
            (self.window_ns.1 as f64 / self.window_ns.0.max(1) as f64 - 1.0) * 100.0
        )?;
        let names = [
            "sequential work",
            "inflation",
            "overhead",
            "idle",
            "unaccounted",
        ];
        let parts: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                format!(
                    "{n} {:.1} % -> {:.1} %",
                    self.shares.0[i] * 100.0,
                    self.shares.1[i] * 100.0
                )
            })
            .collect();
        writeln!(f, "shares of p x window: {}", parts.join(", "))?;
        writeln!(
            f,
            "{:<22} {:>15} {:>23} {:>23} {:>21}",
            "label", "tasks a -> b", "mean µs a -> b", "inflation a -> b (Δ)", "locality a -> b"
        )?;
        for l in &self.labels {
            writeln!(
                f,
                "{:<22} {:>15} {:>23} {:>23} {:>21}",
                l.label,
                format!("{} -> {}", l.tasks.0, l.tasks.1),
                format!("{:.2} -> {:.2}", l.mean_ns.0 / 1e3, l.mean_ns.1 / 1e3),
                format!(
                    "{} -> {} ({})",
                    opt(l.inflation.0, 3),
                    opt(l.inflation.1, 3),
                    delta(l.inflation.0, l.inflation.1, 3)
                ),
                format!("{} -> {}", opt(l.locality.0, 3), opt(l.locality.1, 3)),
            )?;
        }
        Ok(())
    }
}
