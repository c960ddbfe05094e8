//! Recording and the work-time inflation report: start and stop a pool's
//! recording ([`ThreadPool::start_recording`],
//! [`ThreadPool::stop_recording`]), compare two recordings
//! ([`InflationReport::new`]) or measure a C function on a one-worker pool
//! and on a pool (as [`InflationReport::measure`]), write the report in
//! each of its formats, and label regions ([`terroir::label`]).
//!
//! Recordings and reports are handles into tables of their own
//! (`handle.rs`), like pools and groups: a destroyed or garbage handle is
//! `TERROIR_ERROR_INVALID_HANDLE`.
//!
//! Labels are `&'static str` in Rust (a label is compared and kept by
//! address, at no cost per task). A C name is copied once into a
//! process-wide table, [`MAX_LABELS`] distinct names of at most
//! [`MAX_LABEL_BYTES`] bytes each, that lives as long as the process; each
//! thread keeps the names it used in a small cache of its own (64 entries,
//! by a hash of the name), so a labelled region usually costs a hash of its
//! name and no lock.
//!
//! [`ThreadPool::start_recording`]: terroir::ThreadPool::start_recording
//! [`ThreadPool::stop_recording`]: terroir::ThreadPool::stop_recording

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CStr, OsStr};
use std::mem::{offset_of, size_of};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Mutex;

use super::error::{call, Error, TerroirError};
use super::handle::{HandleTable, LocalFree};
use super::pool::{handle_ptr, with_pool, write, TerroirPool, TerroirTaskFn};
use super::sized::{read_sized, SizedStruct};
use super::task::CTask;
use std::io::Write as _;
use terroir::__capi::{close_label, install_carrying_frame, open_label, LabelRegion};
use terroir::report::InflationReport;
use terroir::report::{RecordError, RecordOptions, Recording};

/// Creates `path` and runs `write` on it, buffered.
fn write_file(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    write(&mut w)?;
    w.flush()
}

/// An opaque recording handle: what `terroir_record_stop` returns (a key
/// into terroir's handle table, like `terroir_pool`).
pub struct TerroirRecording {
    _opaque: [u8; 0],
}

/// An opaque report handle: a baseline and a parallel recording compared
/// (a key into terroir's handle table, like `terroir_pool`).
pub struct TerroirReport {
    _opaque: [u8; 0],
}

/// Which counters a recording reads (`terroir_record_options.counters`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TerroirCounters {
    /// Every counter that can be opened (cycles, instructions, cache
    /// misses, page faults, ... as the kernel and its
    /// `perf_event_paranoid` allow), read at each labelled region's ends.
    All = 0,
    /// None: timestamps only, the cheapest recording.
    None = 1,
}

/// How to record. Set `size` to `sizeof(terroir_record_options)` (or
/// start from `TERROIR_RECORD_OPTIONS_INIT`); every other field's zero is
/// its default (a NULL pointer is the defaults too: every counter that can
/// be opened). It can grow as `terroir_pool_config` does: the library
/// reads the caller's `size` bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TerroirRecordOptions {
    /// `sizeof(terroir_record_options)` as the caller's header declares it.
    pub size: usize,
    /// A `terroir_counters` value.
    pub counters: u32,
    /// Zero. (It makes the struct's tail explicit: a later version may give
    /// these bytes a meaning, which padding a caller leaves unset could
    /// not have.)
    pub reserved: u32,
}

// SAFETY: `#[repr(C)]`, `size: usize` first, integer fields only; zero is
// the default of each.
unsafe impl SizedStruct for TerroirRecordOptions {
    const C_NAME: &'static str = "terroir_record_options";
    const ARG: &'static str = "options";
    // The first version ends with `reserved`: this must not change when
    // fields are added.
    const MIN_SIZE: usize = offset_of!(TerroirRecordOptions, reserved) + size_of::<u32>();
    fn zeroed() -> Self {
        TerroirRecordOptions::default()
    }
}

/// A report's output format (`terroir_report_write`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TerroirReportFormat {
    /// The text table: per label, tasks, mean times on one worker and in
    /// parallel, inflation, locality; then the thread-time breakdown.
    Text = 0,
    /// JSON: every field of the report, the timelines included.
    Json = 1,
    /// CSV: one line per label.
    Csv = 2,
    /// Chrome trace events (opens in Perfetto or `chrome://tracing`).
    Trace = 3,
    /// An SVG picture: where the thread time went, and the timeline.
    Svg = 4,
}

thread_local!(static FREE_RECORDING_SLOTS: LocalFree = const { LocalFree::new() });
static RECORDINGS: HandleTable<Recording> = HandleTable::new("recording", &FREE_RECORDING_SLOTS);
thread_local!(static FREE_REPORT_SLOTS: LocalFree = const { LocalFree::new() });
static REPORTS: HandleTable<InflationReport> = HandleTable::new("report", &FREE_REPORT_SLOTS);

/// Distinct label names a process may use (`terroir_label`).
const MAX_LABELS: usize = 4096;
/// Longest label name, in bytes.
const MAX_LABEL_BYTES: usize = 256;

/// Interned label names: each distinct name leaked once, at most `max`.
struct Labels {
    names: Mutex<BTreeMap<&'static [u8], &'static str>>,
    max: usize,
}

impl Labels {
    const fn new(max: usize) -> Labels {
        Labels {
            names: Mutex::new(BTreeMap::new()),
            max,
        }
    }

    /// The interned copy of `name`, checked.
    fn intern(&self, name: &CStr) -> Result<&'static str, Error> {
        let bytes = name.to_bytes();
        if bytes.is_empty() {
            return Err(Error::invalid("the label name is empty"));
        }
        if bytes.len() > MAX_LABEL_BYTES {
            return Err(Error::invalid(format!(
                "the label name of {} bytes is longer than {MAX_LABEL_BYTES} bytes",
                bytes.len()
            )));
        }
        let text = std::str::from_utf8(bytes)
            .map_err(|e| Error::invalid(format!("the label name {name:?} is not UTF-8 ({e})")))?;
        let mut names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = names.get(bytes) {
            return Ok(s);
        }
        if names.len() >= self.max {
            return Err(Error::new(
                TerroirError::OutOfMemory,
                format!(
                    "the label name {text:?} would be a new one, but the process has used {} \
                     distinct label names already, the most terroir keeps",
                    self.max
                ),
            ));
        }
        let s: &'static str = Box::leak(text.to_owned().into_boxed_str());
        names.insert(s.as_bytes(), s);
        Ok(s)
    }
}

static LABELS: Labels = Labels::new(MAX_LABELS);

/// Entries of a thread's label cache.
const CACHE_SLOTS: usize = 64;

thread_local! {
    /// Label names this thread used, by a hash of their bytes: no lock on
    /// the way to them. A fixed array, not a map: a thread's cache owns no
    /// heap memory (the names belong to `LABELS`), so nothing leaks when a
    /// thread still runs at exit.
    static SEEN_LABELS: RefCell<[Option<&'static str>; CACHE_SLOTS]> =
        const { RefCell::new([None; CACHE_SLOTS]) };
}

/// The cache entry of `bytes` (FNV-1a).
fn cache_slot(bytes: &[u8]) -> usize {
    let h = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (h % CACHE_SLOTS as u64) as usize
}

/// The `&'static str` for the C label name `name`.
fn label_name(name: &CStr) -> Result<&'static str, Error> {
    let bytes = name.to_bytes();
    let slot = cache_slot(bytes);
    // During thread teardown the cache may be gone: the table still works.
    if let Some(s) = SEEN_LABELS
        .try_with(|c| c.borrow()[slot])
        .ok()
        .flatten()
        .filter(|s| s.as_bytes() == bytes)
    {
        return Ok(s);
    }
    let s = LABELS.intern(name)?;
    let _ = SEEN_LABELS.try_with(|c| c.borrow_mut()[slot] = Some(s));
    Ok(s)
}

/// What `pool` names, for messages.
fn pool_name(pool: *mut TerroirPool) -> String {
    if pool.is_null() {
        "the current pool (NULL)".to_owned()
    } else {
        format!("pool {:#x}", pool.addr())
    }
}

/// A recording error on `pool`, its message naming the pool.
fn on_pool(pool: *mut TerroirPool, e: RecordError) -> Error {
    let e = Error::from(e);
    Error::new(e.code, format!("{}: {}", pool_name(pool), e.message))
}

/// `e` (a handle lookup's error) naming the argument it concerns.
fn argument(name: &str, e: Error) -> Error {
    Error::new(e.code, format!("argument `{name}`: {}", e.message))
}

fn record_options(options: Option<TerroirRecordOptions>) -> Result<RecordOptions, Error> {
    if let Some(o) = options.filter(|o| o.reserved != 0) {
        return Err(Error::invalid(format!(
            "options->reserved = {} (it must be zero)",
            o.reserved
        )));
    }
    match options.map_or(TerroirCounters::All as u32, |o| o.counters) {
        c if c == TerroirCounters::All as u32 => Ok(RecordOptions::default()),
        c if c == TerroirCounters::None as u32 => Ok(RecordOptions::timestamps_only()),
        c => Err(Error::invalid(format!(
            "options->counters = {c} is not a terroir_counters (0 to 1)"
        ))),
    }
}

/// The path `path` names (any bytes but NUL: Linux paths need not be
/// UTF-8).
///
/// # Safety
/// `path` is a NUL-terminated string.
unsafe fn c_path<'a>(path: *const c_char, name: &str) -> Result<&'a Path, Error> {
    // SAFETY: non-null (checked by the callers) and NUL-terminated (the
    // caller's promise).
    let bytes = unsafe { CStr::from_ptr(path) }.to_bytes();
    if bytes.is_empty() {
        return Err(Error::invalid(format!(
            "argument `{name}` is an empty path"
        )));
    }
    Ok(Path::new(OsStr::from_bytes(bytes)))
}

/// Starts recording `pool` (NULL: the current pool): every task it runs
/// and every worker's time, until `terroir_record_stop`. `options` may be
/// NULL (every counter that can be opened). Start and stop may be called
/// from any threads, in or outside the pool; the recording covers every
/// task the pool runs meanwhile. Label the regions to compare with
/// `terroir_label`.
///
/// Errors: `TERROIR_ERROR_INVALID_HANDLE` (`pool`),
/// `TERROIR_ERROR_INVALID_ARGUMENT` (`options->counters` out of range),
/// `TERROIR_ERROR_ALREADY_RECORDING` when the pool records already (a
/// start not stopped yet, or a `terroir_report_measure` in progress): a
/// pool has one recording at a time.
///
/// # Safety
/// `options` is NULL or points to a `terroir_record_options` of
/// `options->size` bytes.
#[no_mangle]
pub unsafe extern "C" fn terroir_record_start(
    pool: *mut TerroirPool,
    options: *const TerroirRecordOptions,
) -> c_int {
    call("terroir_record_start", || {
        // SAFETY: NULL or options of `options->size` bytes (the caller's
        // promise).
        let options = record_options(unsafe { read_sized(options) }?)?;
        with_pool(pool, |p| {
            p.start_recording(&options).map_err(|e| on_pool(pool, e))
        })
    })
}

/// Stops the recording `terroir_record_start` started on `pool` (NULL: the
/// current pool); `*out` is the recording, to compare with
/// `terroir_report_create` and free with `terroir_recording_destroy`.
///
/// Errors: `TERROIR_ERROR_NULL_POINTER` (`out`: the recording goes on),
/// `TERROIR_ERROR_INVALID_HANDLE` (`pool`), `TERROIR_ERROR_NOT_RECORDING`
/// when the pool does not record (never started, stopped already) or its
/// recording belongs to a `terroir_report_measure` in progress.
///
/// # Safety
/// `out` is NULL or points to writable storage for a pointer.
#[no_mangle]
pub unsafe extern "C" fn terroir_record_stop(
    pool: *mut TerroirPool,
    out: *mut *mut TerroirRecording,
) -> c_int {
    call("terroir_record_stop", || {
        if out.is_null() {
            return Err(Error::null("out"));
        }
        let recording = with_pool(pool, |p| p.stop_recording().map_err(|e| on_pool(pool, e)))?;
        let handle = RECORDINGS.insert(|_| recording)?;
        write(out, "out", handle_ptr(handle))
    })
}

/// Frees a recording. Reports made from it stay valid.
///
/// Errors: `TERROIR_ERROR_NULL_POINTER`; `TERROIR_ERROR_INVALID_HANDLE` for
/// a recording destroyed already (a double destroy) or a garbage handle.
///
/// # Safety
/// Any pointer value is accepted: handles are never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn terroir_recording_destroy(recording: *mut TerroirRecording) -> c_int {
    call("terroir_recording_destroy", || {
        if recording.is_null() {
            return Err(Error::null("recording"));
        }
        drop(RECORDINGS.remove(recording.addr())?);
        Ok(())
    })
}

/// Compares `baseline` (the workload recorded on a one-worker pool) with
/// `parallel` (the same workload on the pool under study), label by label;
/// `*out` is the report (free it with `terroir_report_destroy`). The
/// recordings are not consumed.
///
/// Errors: `TERROIR_ERROR_NULL_POINTER` (`baseline`, `parallel`, `out`),
/// `TERROIR_ERROR_INVALID_HANDLE` (naming the argument).
///
/// # Safety
/// `out` is NULL or points to writable storage for a pointer.
#[no_mangle]
pub unsafe extern "C" fn terroir_report_create(
    baseline: *mut TerroirRecording,
    parallel: *mut TerroirRecording,
    out: *mut *mut TerroirReport,
) -> c_int {
    call("terroir_report_create", || {
        if baseline.is_null() {
            return Err(Error::null("baseline"));
        }
        if parallel.is_null() {
            return Err(Error::null("parallel"));
        }
        if out.is_null() {
            return Err(Error::null("out"));
        }
        let b = RECORDINGS
            .get(baseline.addr())
            .map_err(|e| argument("baseline", e))?;
        let p = RECORDINGS
            .get(parallel.addr())
            .map_err(|e| argument("parallel", e))?;
        let report = InflationReport::new(&b, &p);
        let handle = REPORTS.insert(|_| report)?;
        write(out, "out", handle_ptr(handle))
    })
}

/// Runs `f(arg)` on a one-worker pool with `pool`'s topology, policy and
/// pinning (the baseline), then on `pool` (NULL: the current pool), each
/// recorded with every counter that can be opened, and compares the two
/// runs: `*out` is the report. `f` runs twice, as a task of each pool (a
/// NULL pool inside it is that pool).
///
/// Errors: `TERROIR_ERROR_NULL_POINTER` (`f`, `out`),
/// `TERROIR_ERROR_INVALID_HANDLE` (`pool`), `TERROIR_ERROR_POOL_BUILD`
/// (the one-worker pool), `TERROIR_ERROR_ALREADY_RECORDING` when `pool`
/// records already (`f` has run on the baseline pool by then).
///
/// # Safety
/// `f` must be safe to call with `arg` on any thread, twice, until this
/// function returns; `out` is NULL or points to writable storage for a
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn terroir_report_measure(
    pool: *mut TerroirPool,
    f: TerroirTaskFn,
    arg: *mut c_void,
    out: *mut *mut TerroirReport,
) -> c_int {
    call("terroir_report_measure", || {
        let f = f.ok_or_else(|| Error::null("f"))?;
        if out.is_null() {
            return Err(Error::null("out"));
        }
        let task = CTask::new(f, arg);
        let options = RecordOptions::default();
        // Each run enters its pool in a frame whose parent is the caller's,
        // so that a NULL pool inside `f` is the pool it runs on and a wait
        // that could never end is refused.
        let report = with_pool(pool, |p| {
            let one = InflationReport::baseline_pool(p)?;
            let (_, baseline) = one
                .try_record_with(&options, || install_carrying_frame(&one, || task.run()))
                .map_err(Error::from)?;
            drop(one);
            let (_, parallel) = p
                .try_record_with(&options, || install_carrying_frame(p, || task.run()))
                .map_err(|e| on_pool(pool, e))?;
            Ok(InflationReport::new(&baseline, &parallel))
        })?;
        let handle = REPORTS.insert(|_| report)?;
        write(out, "out", handle_ptr(handle))
    })
}

/// Writes `report` to the file `path` (created or truncated) in `format`,
/// a `terroir_report_format` value. `path` is any NUL-terminated byte
/// string (Linux paths need not be UTF-8).
///
/// Errors: `TERROIR_ERROR_NULL_POINTER` (`report`, `path`),
/// `TERROIR_ERROR_INVALID_HANDLE`, `TERROIR_ERROR_INVALID_ARGUMENT` (a
/// format out of range, an empty path), `TERROIR_ERROR_IO` (the file
/// cannot be written: the message names the path and the system's error).
///
/// # Safety
/// `path` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn terroir_report_write(
    report: *mut TerroirReport,
    format: u32,
    path: *const c_char,
) -> c_int {
    call("terroir_report_write", || {
        if report.is_null() {
            return Err(Error::null("report"));
        }
        if path.is_null() {
            return Err(Error::null("path"));
        }
        let format = match format {
            f if f == TerroirReportFormat::Text as u32 => TerroirReportFormat::Text,
            f if f == TerroirReportFormat::Json as u32 => TerroirReportFormat::Json,
            f if f == TerroirReportFormat::Csv as u32 => TerroirReportFormat::Csv,
            f if f == TerroirReportFormat::Trace as u32 => TerroirReportFormat::Trace,
            f if f == TerroirReportFormat::Svg as u32 => TerroirReportFormat::Svg,
            f => {
                return Err(Error::invalid(format!(
                    "format = {f} is not a terroir_report_format (0 to 4)"
                )))
            }
        };
        // SAFETY: non-null and NUL-terminated (the caller's promise).
        let path = unsafe { c_path(path, "path") }?;
        let report = REPORTS.get(report.addr())?;
        let written = match format {
            TerroirReportFormat::Text => write_file(path, |w| write!(w, "{report}")),
            TerroirReportFormat::Csv => {
                write_file(path, |w| w.write_all(report.to_csv().as_bytes()))
            }
            TerroirReportFormat::Svg => {
                write_file(path, |w| w.write_all(report.to_svg().as_bytes()))
            }
            TerroirReportFormat::Json => write_file(path, |w| report.write_json(w)),
            TerroirReportFormat::Trace => write_file(path, |w| report.write_chrome_trace(w)),
        };
        written.map_err(|e| {
            Error::new(
                TerroirError::Io,
                format!("cannot write the report to {path:?}: {e}"),
            )
        })
    })
}

/// Writes `report.txt`, `report.json`, `report.csv`, `trace.json` (Chrome
/// trace events) and `report.svg` into the directory `dir`, created if
/// missing.
///
/// Errors: `TERROIR_ERROR_NULL_POINTER` (`report`, `dir`),
/// `TERROIR_ERROR_INVALID_HANDLE`, `TERROIR_ERROR_INVALID_ARGUMENT` (an
/// empty path), `TERROIR_ERROR_IO` (the directory or a file cannot be
/// written: the message names it and the system's error).
///
/// # Safety
/// `dir` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn terroir_report_write_all(
    report: *mut TerroirReport,
    dir: *const c_char,
) -> c_int {
    call("terroir_report_write_all", || {
        if report.is_null() {
            return Err(Error::null("report"));
        }
        if dir.is_null() {
            return Err(Error::null("dir"));
        }
        // SAFETY: non-null and NUL-terminated (the caller's promise).
        let dir = unsafe { c_path(dir, "dir") }?;
        let report = REPORTS.get(report.addr())?;
        report
            .write_all(dir)
            .map(drop)
            .map_err(|e| Error::new(TerroirError::Io, e.to_string()))
    })
}

/// Frees a report.
///
/// Errors: `TERROIR_ERROR_NULL_POINTER`; `TERROIR_ERROR_INVALID_HANDLE` for
/// a report destroyed already (a double destroy) or a garbage handle.
///
/// # Safety
/// Any pointer value is accepted: handles are never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn terroir_report_destroy(report: *mut TerroirReport) -> c_int {
    call("terroir_report_destroy", || {
        if report.is_null() {
            return Err(Error::null("report"));
        }
        drop(REPORTS.remove(report.addr())?);
        Ok(())
    })
}

/// Runs `f(arg)` as a region labelled `name`: while the pool of the
/// calling worker records, its time (minus the time of the labelled
/// regions and waits inside it) is reported under `name`, and reports
/// compare the regions of each name between runs. Otherwise (no recording,
/// or a thread outside every pool) it just calls `f(arg)`. Regions nest.
///
/// `name` is copied on its first use into a process-wide table that lives
/// as long as the process: at most 4096 distinct names, each of 1 to 256
/// bytes of UTF-8. A thread finds the names it used recently without a
/// lock.
///
/// Errors (`f` is then not called): `TERROIR_ERROR_NULL_POINTER` (`name`,
/// `f`), `TERROIR_ERROR_INVALID_ARGUMENT` (an empty name, a name longer
/// than 256 bytes, or not UTF-8), `TERROIR_ERROR_OUT_OF_MEMORY` (a 4097th
/// distinct name).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `f` must be safe to call
/// with `arg` on the calling thread.
#[no_mangle]
pub unsafe extern "C" fn terroir_label(
    name: *const c_char,
    f: TerroirTaskFn,
    arg: *mut c_void,
) -> c_int {
    call("terroir_label", || {
        if name.is_null() {
            return Err(Error::null("name"));
        }
        let f = f.ok_or_else(|| Error::null("f"))?;
        // SAFETY: non-null and NUL-terminated (the caller's promise).
        let name = label_name(unsafe { CStr::from_ptr(name) })?;
        let task = CTask::new(f, arg);
        terroir::label(name, || task.run());
        Ok(())
    })
}

/// Labels a thread may have pushed and not popped
/// (`terroir_label_push`).
const MAX_PUSHED: usize = 1024;

/// A label pushed by `terroir_label_push` and not popped yet.
struct Pushed {
    name: &'static str,
    /// Its region, when the pool of the calling worker recorded at the
    /// push.
    region: Option<LabelRegion>,
}

thread_local! {
    /// The labels this thread pushed, innermost last.
    static PUSHED: RefCell<Vec<Pushed>> = const { RefCell::new(Vec::new()) };
}

/// Opens a labelled region on the calling thread, NVTX-style: the region
/// lasts until the matching `terroir_label_pop`, and is reported as
/// `terroir_label`'s callback is (its time, minus the labelled regions and
/// waits inside it, under `name`, when the pool of the calling worker
/// records; nothing is recorded otherwise, or on a thread outside every
/// pool, but the push still counts for its pop).
///
/// Pushes and pops nest per thread, as NVTX ranges do: a pop closes the
/// newest label pushed on the calling thread. A worker runs other tasks
/// while one waits, on the same thread, so each task pops exactly the
/// labels it pushed (balanced, like braces), before it returns. A region
/// a task leaves open is recorded as ending when the task's job ends
/// (its label stays on the thread's list until popped). A pop of a label
/// that the pool's recording shows was pushed by a task below the
/// calling one (which runs during that task's wait) is refused with
/// `TERROIR_ERROR_LABEL_NOT_PUSHED`.
///
/// `name` is copied (the caller may free it at once), interned as for
/// `terroir_label`: at most 4096 distinct names, each of 1 to 256 bytes of
/// UTF-8.
///
/// Errors (nothing is pushed): `TERROIR_ERROR_NULL_POINTER` (`name`),
/// `TERROIR_ERROR_INVALID_ARGUMENT` (an empty name, a name longer than 256
/// bytes, or not UTF-8), `TERROIR_ERROR_OUT_OF_MEMORY` (a 4097th distinct
/// name, or a 1025th label open on the thread).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn terroir_label_push(name: *const c_char) -> c_int {
    call("terroir_label_push", || {
        if name.is_null() {
            return Err(Error::null("name"));
        }
        // SAFETY: non-null and NUL-terminated (the caller's promise).
        let name = label_name(unsafe { CStr::from_ptr(name) })?;
        PUSHED
            .try_with(|p| {
                let mut pushed = p.borrow_mut();
                if pushed.len() >= MAX_PUSHED {
                    return Err(Error::new(
                        TerroirError::OutOfMemory,
                        format!(
                            "label {name:?}: the thread has {MAX_PUSHED} labels pushed and not \
                             popped, the most terroir keeps (a terroir_label_pop missing?)"
                        ),
                    ));
                }
                pushed.push(Pushed {
                    name,
                    region: open_label(name),
                });
                Ok(())
            })
            .map_err(|_| Error::invalid("the calling thread is exiting"))?
    })
}

/// Closes the region of the calling thread's newest `terroir_label_push`.
///
/// Errors (nothing is popped): `TERROIR_ERROR_LABEL_NOT_PUSHED` when the
/// thread has no label pushed, or when the pool's recording shows that its
/// newest label was pushed by a task that the calling one runs on top of
/// (during a wait inside that label).
#[no_mangle]
pub extern "C" fn terroir_label_pop() -> c_int {
    call("terroir_label_pop", || {
        PUSHED
            .try_with(|p| {
                let mut pushed = p.borrow_mut();
                let Some(top) = pushed.last() else {
                    return Err(Error::new(
                        TerroirError::LabelNotPushed,
                        "the calling thread has no label pushed (more pops than \
                         terroir_label_push calls)",
                    ));
                };
                if let Some(region) = top.region {
                    close_label(region).map_err(|_| {
                        Error::new(
                            TerroirError::LabelNotPushed,
                            format!(
                                "the thread's newest label, {:?}, was pushed by a task that this \
                                 one runs on top of (during a wait inside the label): a task \
                                 pops only the labels it pushed",
                                top.name
                            ),
                        )
                    })?;
                }
                pushed.pop();
                Ok(())
            })
            .map_err(|_| Error::invalid("the calling thread is exiting"))?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_names_are_checked_interned_and_bounded() {
        static T: Labels = Labels::new(2);
        let a = T.intern(c"alpha").unwrap();
        assert_eq!(a, "alpha");
        assert!(std::ptr::eq(a, T.intern(c"alpha").unwrap()));
        assert_eq!(
            T.intern(c"").unwrap_err().code,
            TerroirError::InvalidArgument
        );
        let e = T.intern(c"\xff\xfe").unwrap_err();
        assert_eq!(e.code, TerroirError::InvalidArgument);
        assert!(e.message.contains("not UTF-8"), "{}", e.message);
        let long = std::ffi::CString::new(vec![b'x'; MAX_LABEL_BYTES + 1]).unwrap();
        assert!(T.intern(&long).unwrap_err().message.contains("longer"));
        let max = std::ffi::CString::new(vec![b'x'; MAX_LABEL_BYTES]).unwrap();
        assert_eq!(T.intern(&max).unwrap().len(), MAX_LABEL_BYTES);
        let e = T.intern(c"gamma").unwrap_err();
        assert_eq!(e.code, TerroirError::OutOfMemory);
        assert!(e.message.contains("\"gamma\""), "{}", e.message);
        // Known names still work when the table is full.
        assert_eq!(T.intern(c"alpha").unwrap(), "alpha");
    }

    #[test]
    fn the_thread_cache_returns_the_table_entry() {
        let a = label_name(c"ffi-report-test").unwrap();
        let b = std::thread::spawn(|| label_name(c"ffi-report-test").unwrap())
            .join()
            .unwrap();
        assert!(std::ptr::eq(a, b));
        assert!(std::ptr::eq(a, label_name(c"ffi-report-test").unwrap()));
    }
}
