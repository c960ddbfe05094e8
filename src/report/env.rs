//! `TERROIR_REPORT=<dir>`: the report of an unmodified program.
//!
//! With the variable set, the global pool records from the moment it is
//! built until the process exits (`atexit`), with the default
//! [`RecordOptions`] (every counter, sampled), and the report is written
//! into `<dir>` (as [`InflationReport::write_all`] does, plus a note on
//! stderr). Only the global pool is recorded: pools the program builds
//! itself are not. A program that ends by a signal or an abort writes
//! nothing.
//!
//! **The baseline.** A running program cannot be run again on one worker
//! from inside, so by default the report has *no baseline*: work, overhead,
//! idle, the locality story, but no inflation or speedup. With
//! `TERROIR_REPORT_BASELINE=1` as well, the program is run a second time
//! at exit, as a child process with the same executable, arguments and
//! environment, `TERROIR_NUM_THREADS=1` (one worker, on the first node),
//! its standard input from `/dev/null` and its output into
//! `<dir>/baseline/output.txt`; the child records its global pool the same
//! way and the parent compares the two. Only do that for a program that
//! can run twice with the same result (no input read, no files it would
//! clobber). The re-run needs the `report` feature (the child hands its
//! recording over as JSON).

use std::path::Path;

use super::run::Run;
use super::*;
use crate::sched::{set_exit_writer, REPORT_VAR};

/// Asks for the baseline re-run.
pub const BASELINE_VAR: &str = "TERROIR_REPORT_BASELINE";

/// Set to `baseline` in the re-run's environment.
const ROLE_VAR: &str = "TERROIR_REPORT_ROLE";

extern "C" fn register() {
    set_exit_writer(write_at_exit);
}

// Registers the writer when the program (or libterroir.so) is loaded: the
// scheduler starts the recording only when a writer is there, and does not
// call into this layer otherwise.
#[used]
#[link_section = ".init_array"]
static REGISTER: extern "C" fn() = register;

fn write_at_exit(recording: Result<Recording, String>, dir: &Path) {
    let rec = match recording {
        Ok(r) => r,
        Err(e) => {
            eprintln!("terroir: {REPORT_VAR}: {e}");
            return;
        }
    };
    let run = Run::from_recording(&rec);
    drop(rec);
    if std::env::var_os(ROLE_VAR).is_some_and(|r| r == "baseline") {
        write_baseline_run(&run, dir);
        return;
    }
    let wanted = std::env::var_os(BASELINE_VAR).is_some_and(|v| v == "1");
    let (baselines, note) = if wanted {
        match rerun(dir) {
            Ok(b) => (vec![b], None),
            Err(e) => (Vec::new(), Some(format!("the baseline re-run failed: {e}"))),
        }
    } else {
        (
            Vec::new(),
            Some(format!(
                "{REPORT_VAR} recorded the global pool of a running program: no baseline was \
                 run, so inflation and speedup are unknown; {BASELINE_VAR}=1 re-runs the \
                 program at exit with one worker (only for a program that can run twice)"
            )),
        )
    };
    let mut report = InflationReport::from_runs(baselines, run, BaselinePlacement::FirstNode);
    report.warnings.extend(note);
    report.doctor = Some(Doctor::check(None));
    match report.write_all(dir) {
        Ok(_) => eprintln!(
            "terroir: {REPORT_VAR}: the report of the global pool is in {}",
            dir.display()
        ),
        Err(e) => eprintln!("terroir: {REPORT_VAR}: {e}"),
    }
}

/// In the re-run: hands the run to the parent.
fn write_baseline_run(run: &Run, dir: &Path) {
    #[cfg(feature = "report")]
    {
        let written = std::fs::create_dir_all(dir)
            .map_err(|e| output::at(dir, "creating", e))
            .and_then(|()| output::write_file(&dir.join("run.json"), |w| run.write_json(w)));
        if let Err(e) = written {
            eprintln!("terroir: {REPORT_VAR}: {e}");
        }
    }
    #[cfg(not(feature = "report"))]
    {
        let _ = (run, dir);
        eprintln!(
            "terroir: {REPORT_VAR}: the baseline re-run needs the `report` feature to hand its \
             recording over"
        );
    }
}

/// Runs the program again with one worker and reads its run.
fn rerun(dir: &Path) -> Result<Run, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let out_dir = dir.join("baseline");
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| output::at(&out_dir, "creating", e).to_string())?;
    let out_path = out_dir.join("output.txt");
    let out = std::fs::File::create(&out_path)
        .map_err(|e| output::at(&out_path, "creating", e).to_string())?;
    let err = out
        .try_clone()
        .map_err(|e| format!("cannot share {}: {e}", out_path.display()))?;
    let status = std::process::Command::new(&exe)
        .args(std::env::args_os().skip(1))
        .env(REPORT_VAR, &out_dir)
        .env(ROLE_VAR, "baseline")
        .env("TERROIR_NUM_THREADS", "1")
        .env_remove(BASELINE_VAR)
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    if !status.success() {
        return Err(format!(
            "{} exited with {status} (its output is in {})",
            exe.display(),
            out_path.display()
        ));
    }
    read_baseline_run(&out_dir.join("run.json"))
}

#[cfg(feature = "report")]
fn read_baseline_run(path: &Path) -> Result<Run, String> {
    let file = std::fs::File::open(path)
        .map_err(|e| format!("the re-run left no {}: {e}", path.display()))?;
    Run::read_json(file).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(not(feature = "report"))]
fn read_baseline_run(_: &Path) -> Result<Run, String> {
    Err("the baseline re-run needs the `report` feature".to_string())
}
