//! Error codes, the thread-local last-error message, and [`call`], the
//! wrapper every entry point runs its body in.

use std::any::Any;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use terroir::numa::NumaError;
use terroir::report::RecordError;
use terroir::{PlaceError, ThreadPoolBuildError};

/// The result of every fallible C entry point: `TERROIR_ERROR_OK` (0) or
/// the reason for the failure. Functions return it as an `int`;
/// `terroir_strerror` describes a code, `terroir_last_error_message` names
/// the input at fault.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TerroirError {
    /// Success.
    Ok = 0,
    /// A pointer argument that must not be NULL was NULL.
    NullPointer = 1,
    /// A pool or group handle that is not live: destroyed already (a double
    /// destroy), never returned by terroir, or corrupted.
    InvalidHandle = 2,
    /// An argument is out of its domain (an unknown enum value, a place
    /// kind, destroying the global pool, a range that is not mapped).
    InvalidArgument = 3,
    /// A NUMA node that the pool has no worker on or that this process may
    /// not allocate memory on.
    InvalidNode = 4,
    /// A worker index outside the pool.
    InvalidWorker = 5,
    /// A size or length of zero where bytes are needed.
    ZeroSize = 6,
    /// `terroir_free` of a pointer that `terroir_alloc_*` did not return,
    /// or that was freed already.
    UnknownPointer = 7,
    /// Waiting on a group from inside one of its own tasks (or from work
    /// such a task is waiting for): the wait could never end.
    WouldDeadlock = 8,
    /// `terroir_pool_global_init` after the global pool was built.
    GlobalAlreadyInitialized = 9,
    /// A pool could not be built (topology discovery, pinning, thread
    /// start, environment variables).
    PoolBuild = 10,
    /// The kernel or the allocator ran out of memory.
    OutOfMemory = 11,
    /// A system call failed (see the message).
    System = 12,
    /// The calling thread is not a worker of any pool.
    NotInPool = 13,
    /// terroir panicked inside the call (a bug): the panic was caught at
    /// the C boundary and its message kept.
    Panic = 14,
    /// `terroir_record_start` (or `terroir_report_measure`) on a pool that
    /// records already: a pool has one recording at a time.
    AlreadyRecording = 15,
    /// `terroir_record_stop` on a pool that does not record (never started,
    /// stopped already), or whose recording belongs to a
    /// `terroir_report_measure` in progress.
    NotRecording = 16,
    /// A file could not be written (the message names the path and the
    /// system's error).
    Io = 17,
    /// `terroir_label_pop` with no label pushed on the calling thread, or
    /// whose newest label, as the pool's recording shows, was pushed by a
    /// task that the calling one runs on top of (during a wait inside the
    /// label).
    LabelNotPushed = 18,
}

impl TerroirError {
    /// Every code, for `terroir_strerror` and the tests.
    pub(crate) const ALL: [TerroirError; 19] = [
        TerroirError::Ok,
        TerroirError::NullPointer,
        TerroirError::InvalidHandle,
        TerroirError::InvalidArgument,
        TerroirError::InvalidNode,
        TerroirError::InvalidWorker,
        TerroirError::ZeroSize,
        TerroirError::UnknownPointer,
        TerroirError::WouldDeadlock,
        TerroirError::GlobalAlreadyInitialized,
        TerroirError::PoolBuild,
        TerroirError::OutOfMemory,
        TerroirError::System,
        TerroirError::NotInPool,
        TerroirError::Panic,
        TerroirError::AlreadyRecording,
        TerroirError::NotRecording,
        TerroirError::Io,
        TerroirError::LabelNotPushed,
    ];

    fn describe(self) -> &'static CStr {
        match self {
            TerroirError::Ok => c"success",
            TerroirError::NullPointer => c"a required pointer argument is NULL",
            TerroirError::InvalidHandle => {
                c"invalid handle (destroyed already, or never returned by terroir)"
            }
            TerroirError::InvalidArgument => c"invalid argument",
            TerroirError::InvalidNode => c"invalid NUMA node",
            TerroirError::InvalidWorker => c"invalid worker index",
            TerroirError::ZeroSize => c"zero size",
            TerroirError::UnknownPointer => {
                c"pointer not allocated by terroir_alloc_* (or freed already)"
            }
            TerroirError::WouldDeadlock => {
                c"waiting on a task group from inside one of its own tasks would deadlock"
            }
            TerroirError::GlobalAlreadyInitialized => {
                c"the global pool has already been initialized"
            }
            TerroirError::PoolBuild => c"the thread pool could not be built",
            TerroirError::OutOfMemory => c"out of memory",
            TerroirError::System => c"a system call failed",
            TerroirError::NotInPool => c"the calling thread is not a worker of a terroir pool",
            TerroirError::Panic => c"internal error: terroir panicked (caught at the C boundary)",
            TerroirError::AlreadyRecording => c"the pool is recording already",
            TerroirError::NotRecording => c"the pool is not recording (no recording was started)",
            TerroirError::Io => c"a file could not be written",
            TerroirError::LabelNotPushed => {
                c"terroir_label_pop without a matching terroir_label_push on this thread"
            }
        }
    }
}

/// A failed call: the code and the message naming the input at fault.
#[derive(Debug)]
pub(crate) struct Error {
    pub(crate) code: TerroirError,
    pub(crate) message: String,
}

impl Error {
    pub(crate) fn new(code: TerroirError, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
        }
    }

    /// `argument` (a parameter name such as `"out"` or `"config"`) is NULL.
    pub(crate) fn null(argument: &str) -> Error {
        Error::new(
            TerroirError::NullPointer,
            format!("argument `{argument}` is NULL"),
        )
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(TerroirError::InvalidArgument, message)
    }

    fn panic(payload: Box<dyn Any + Send>) -> Error {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        Error::new(TerroirError::Panic, format!("terroir panicked: {what}"))
    }
}

/// The code of a memory-layer error.
fn numa_code(e: &NumaError) -> TerroirError {
    match e {
        NumaError::NodeNotAllowed { .. } => TerroirError::InvalidNode,
        NumaError::EmptyRegion { .. } => TerroirError::ZeroSize,
        NumaError::OutOfMemory { .. } => TerroirError::OutOfMemory,
        NumaError::EmptyNodeSet { .. } | NumaError::NotMapped { .. } => {
            TerroirError::InvalidArgument
        }
        _ => TerroirError::System,
    }
}

impl From<NumaError> for Error {
    fn from(e: NumaError) -> Error {
        Error::new(numa_code(&e), e.to_string())
    }
}

impl From<PlaceError> for Error {
    fn from(e: PlaceError) -> Error {
        let code = match &e {
            PlaceError::NodeOutOfRange { .. }
            | PlaceError::NoWorkerOnNode { .. }
            | PlaceError::NodeNotInPool { .. } => TerroirError::InvalidNode,
            PlaceError::WorkerOutOfRange { .. } => TerroirError::InvalidWorker,
            PlaceError::Numa(inner) => numa_code(inner),
            // A kind terroir added since: its message says what it is.
            _ => TerroirError::InvalidArgument,
        };
        Error::new(code, e.to_string())
    }
}

impl From<ThreadPoolBuildError> for Error {
    fn from(e: ThreadPoolBuildError) -> Error {
        let code = match &e {
            ThreadPoolBuildError::GlobalPoolAlreadyInitialized => {
                TerroirError::GlobalAlreadyInitialized
            }
            _ => TerroirError::PoolBuild,
        };
        Error::new(code, e.to_string())
    }
}

impl From<RecordError> for Error {
    fn from(e: RecordError) -> Error {
        match e {
            RecordError::AlreadyRecording => Error::new(
                TerroirError::AlreadyRecording,
                "the pool is recording already (a terroir_record_start not stopped yet, or a \
                 terroir_report_measure in progress): a pool has one recording at a time",
            ),
            RecordError::NotRecording => Error::new(
                TerroirError::NotRecording,
                "the pool is not recording (terroir_record_start was not called, or its \
                 recording was stopped already)",
            ),
            RecordError::RecordInProgress => Error::new(
                TerroirError::NotRecording,
                "the pool's recording belongs to a terroir_report_measure in progress, which \
                 stops it itself",
            ),
            // A kind terroir added since: its message says what it is.
            e => Error::new(TerroirError::InvalidArgument, e.to_string()),
        }
    }
}

thread_local! {
    /// The message of the last failed call on this thread.
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// Records `e` as this thread's last error (prefixed with the entry point's
/// name) and returns its code.
fn store(function: &str, e: Error) -> c_int {
    let text = format!("{function}: {}", e.message).replace('\0', "\\0");
    let text = CString::new(text).unwrap_or_default();
    // During thread teardown the slot may be gone: the code still returns.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = Some(text));
    e.code as c_int
}

/// Runs an entry point's body: `Ok` becomes `TERROIR_ERROR_OK`, an error
/// its code (with the message stored for [`terroir_last_error_message`]),
/// and a panic `TERROIR_ERROR_PANIC`: nothing unwinds into C.
#[inline(always)]
pub(crate) fn call(function: &str, body: impl FnOnce() -> Result<(), Error>) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => TerroirError::Ok as c_int,
        Ok(Err(e)) => store(function, e),
        Err(payload) => store(function, Error::panic(payload)),
    }
}

/// [`call`] for a body that cannot fail (but might panic).
#[inline(always)]
pub(crate) fn call_infallible(function: &str, body: impl FnOnce()) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(()) => TerroirError::Ok as c_int,
        Err(payload) => store(function, Error::panic(payload)),
    }
}

/// A static, NUL-terminated English description of an error code (an
/// `int` returned by a terroir function). Unknown codes get
/// `"unknown terroir error code"`. Never NULL; never freed.
#[no_mangle]
pub extern "C" fn terroir_strerror(code: c_int) -> *const c_char {
    TerroirError::ALL
        .iter()
        .find(|e| **e as c_int == code)
        .map_or(c"unknown terroir error code", |e| e.describe())
        .as_ptr()
}

/// The message of the most recent failed terroir call on the calling
/// thread, naming the function and the input at fault (e.g.
/// `"terroir_alloc_on_node: node 7 is not a node this process may allocate
/// on (allowed nodes: 0-1)"`), or NULL when no call on this thread has
/// failed. Like `errno`, successful calls leave it alone. The string is
/// owned by terroir and valid until the next failing call on this thread.
#[no_mangle]
pub extern "C" fn terroir_last_error_message() -> *const c_char {
    LAST_ERROR
        .try_with(|slot| {
            slot.borrow()
                .as_ref()
                .map_or(std::ptr::null(), |s| s.as_ptr())
        })
        .unwrap_or(std::ptr::null())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_described() {
        for (i, e) in TerroirError::ALL.iter().enumerate() {
            assert_eq!(*e as usize, i);
            // SAFETY: terroir_strerror returns a static C string.
            let s = unsafe { CStr::from_ptr(terroir_strerror(*e as c_int)) };
            assert!(!s.to_bytes().is_empty());
        }
        // SAFETY: as above.
        let unknown = unsafe { CStr::from_ptr(terroir_strerror(-1)) };
        assert_eq!(unknown.to_str().unwrap(), "unknown terroir error code");
    }

    #[test]
    fn errors_and_panics_are_stored() {
        assert_eq!(
            call("f", || Err(Error::null("out"))),
            TerroirError::NullPointer as c_int
        );
        // SAFETY: the message is a live C string on this thread.
        let m = unsafe { CStr::from_ptr(terroir_last_error_message()) };
        assert_eq!(m.to_str().unwrap(), "f: argument `out` is NULL");
        assert_eq!(call("g", || Ok(())), 0);
        assert_eq!(
            call("h", || panic!("expected: a test panic")),
            TerroirError::Panic as c_int
        );
        // SAFETY: as above.
        let m = unsafe { CStr::from_ptr(terroir_last_error_message()) };
        assert!(m.to_str().unwrap().contains("expected: a test panic"));
    }
}
