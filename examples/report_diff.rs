//! Compares two reports written by [`InflationReport::write_all`] (their
//! `report.json`), label by label: tasks, mean time, inflation and
//! locality in each, with the change; then the window, the speedup and
//! the breakdown's shares.
//!
//! ```text
//! cargo run --release --example inflation -- health --out target/a
//! TERROIR_POLICY=locality cargo run --release --example inflation -- health --out target/b
//! cargo run --release --example report_diff -- target/a/report.json target/b/report.json
//! ```
//!
//! Needs the `report` feature (JSON). Exit status 2 on a bad argument or
//! a file that is not a report's JSON (the message names it).

use std::process::exit;

#[cfg(feature = "report")]
fn main() {
    use terroir::report::InflationReport;
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 2 {
        eprintln!("usage: report_diff a/report.json b/report.json");
        exit(2);
    }
    let read = |path: &str| -> InflationReport {
        let file = std::fs::File::open(path).unwrap_or_else(|e| {
            eprintln!("report_diff: cannot open {path}: {e}");
            exit(2)
        });
        InflationReport::read_json(file).unwrap_or_else(|e| {
            eprintln!("report_diff: {path} is not a report's JSON: {e}");
            exit(2)
        })
    };
    let (a, b) = (read(&args[0]), read(&args[1]));
    println!("a = {}\nb = {}", args[0], args[1]);
    print!("{}", a.compare(&b));
}

#[cfg(not(feature = "report"))]
fn main() {
    eprintln!("report_diff reads JSON: build it with the `report` feature");
    exit(2);
}
