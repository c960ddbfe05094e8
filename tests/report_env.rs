//! `TERROIR_REPORT=<dir>`: an unmodified program (here, this test binary
//! run again as a child running only `workload`) gets its global pool's
//! report written at exit; with `TERROIR_REPORT_BASELINE=1` the program is
//! re-run with one worker for the baseline.

use std::path::{Path, PathBuf};
use std::process::Command;

const LEAVES: u64 = 64;

/// The child's work: labelled leaves on the global pool. In the parent
/// run (no `TERROIR_REPORT`), it is a plain test.
#[test]
fn workload() {
    fn leaves(n: u64) -> u64 {
        if n == 1 {
            return terroir::label("leaf", || {
                std::hint::black_box((0..20_000u64).fold(0, |a, b| a ^ b));
                1
            });
        }
        let (a, b) = terroir::join(|| leaves(n / 2), || leaves(n - n / 2));
        a + b
    }
    assert_eq!(leaves(LEAVES), LEAVES);
}

fn run_child(dir: &Path, baseline: bool) -> String {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "workload", "--test-threads", "1"])
        .env("TERROIR_REPORT", dir)
        .env_remove("TERROIR_NUM_THREADS");
    if baseline {
        cmd.env("TERROIR_REPORT_BASELINE", "1");
    } else {
        cmd.env_remove("TERROIR_REPORT_BASELINE");
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the child failed: {text}");
    text
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("terroir-env-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn the_global_pool_is_reported_at_exit() {
    if std::env::var_os("TERROIR_REPORT").is_some() {
        return; // in a child
    }
    let d = dir("plain");
    let out = run_child(&d, false);
    assert!(out.contains("the report of the global pool is in"), "{out}");
    let text = std::fs::read_to_string(d.join("report.txt")).unwrap();
    assert!(text.contains("leaf"), "{text}");
    assert!(text.contains("baseline: none"), "{text}");
    assert!(text.contains("TERROIR_REPORT_BASELINE=1"), "{text}");
    assert!(std::fs::metadata(d.join("report.svg")).unwrap().len() > 0);
    #[cfg(feature = "report")]
    {
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
        assert!(json["baseline"].is_null());
        let leaf = json["labels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["label"] == "leaf")
            .unwrap();
        assert_eq!(leaf["parallel"]["count"], LEAVES);
        assert!(d.join("trace.json").exists());
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[cfg(feature = "report")]
#[test]
fn a_baseline_reruns_the_program_with_one_worker() {
    if std::env::var_os("TERROIR_REPORT").is_some() {
        return; // in a child
    }
    let d = dir("baseline");
    run_child(&d, true);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
    let runs = json["baseline"]["runs"].as_array().expect("a baseline");
    assert_eq!(runs.len(), 1);
    assert_eq!(json["baseline_runs"][0]["threads"], 1);
    let leaf = json["labels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["label"] == "leaf")
        .unwrap();
    assert_eq!(leaf["baseline"]["count"], LEAVES);
    assert_eq!(leaf["parallel"]["count"], LEAVES);
    assert!(leaf["inflation"].is_f64());
    assert!(d.join("baseline/output.txt").exists());
    std::fs::remove_dir_all(&d).unwrap();
}
