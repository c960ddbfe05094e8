//! `TERROIR_REPORT=<dir>`: the global pool records from the moment it is
//! built until the process exits, and then hands the recording to the
//! report layer, which writes the report into `<dir>`.
//!
//! The scheduler does not know reports (the layers depend one way): the
//! report layer registers its writer with [`set_exit_writer`] when the
//! program is loaded, and the recording is started here only when a writer
//! is registered.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::*;
use crate::sched::registry::{self, Registry};

/// The environment variable naming the report's directory.
pub const REPORT_VAR: &str = "TERROIR_REPORT";

/// What the report layer does with the global pool's recording at exit:
/// `Ok` is the recording; `Err` says why there is none.
pub type ExitWriter = fn(recording: Result<Recording, String>, dir: &Path);

static WRITER: OnceLock<ExitWriter> = OnceLock::new();

/// The directory of the recording in progress (set once, when the global
/// pool is built with `TERROIR_REPORT` set).
static DIR: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Registers what writes the report at exit (the report layer, at load).
pub fn set_exit_writer(writer: ExitWriter) {
    let _ = WRITER.set(writer);
}

/// Called once the global pool is built: with `TERROIR_REPORT` set (and a
/// writer registered), starts recording it with the default options and
/// arranges for the recording to be stopped and written at exit.
pub(crate) fn global_pool_built(reg: &Arc<Registry>) {
    let Some(dir) = std::env::var_os(REPORT_VAR).filter(|d| !d.is_empty()) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let Some(&writer) = WRITER.get() else {
        eprintln!(
            "terroir: {REPORT_VAR} is set but no report writer is linked in; nothing is recorded"
        );
        return;
    };
    let options = RecordOptions::default();
    let slots: Vec<&Slot> = reg.workers.iter().map(|w| &w.rec).collect();
    if let Err(e) = start(reg.recorder(), &slots, &options, Owner::Env) {
        writer(Err(format!("the global pool could not record: {e}")), &dir);
        return;
    }
    *DIR.lock().unwrap_or_else(|e| e.into_inner()) = Some(dir);
    extern "C" fn at_exit() {
        let Some(dir) = DIR.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return;
        };
        let Some(&writer) = WRITER.get() else {
            return;
        };
        let reg = registry::global_registry();
        let (slots, meta) = reg.rec_parts();
        let result = stop(reg.recorder(), &slots, meta, Owner::Env)
            .map_err(|e| format!("the global pool's recording could not be stopped at exit: {e}"));
        writer(result, &dir);
    }
    // SAFETY: `at_exit` is a plain `extern "C" fn()` that lives as long as
    // the program (a function item); atexit only stores the pointer.
    if unsafe { libc::atexit(at_exit) } != 0 {
        eprintln!("terroir: atexit failed: the {REPORT_VAR} report will not be written");
    }
}
