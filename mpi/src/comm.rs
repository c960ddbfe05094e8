//! Sends and receives posted by tasks and carried out by the rank's MPI
//! thread; a task waits for one by running other work.
//!
//! A [`Comm`] is a handle tasks share: [`Comm::isend`] and
//! [`Comm::irecv`] move the buffer (a `Vec`) to the MPI thread and return a
//! [`Request`]; [`Request::wait`] gives the buffer back once the transfer is
//! done. While a request is pending the MPI thread owns its buffer, so a
//! task that drops one leaves nothing dangling: a receive that has not
//! matched a message yet is withdrawn, anything else completes in the
//! background and its buffer is freed then.
//!
//! Receives are matched with `MPI_Improbe` and received with `MPI_Imrecv`
//! once the size of the message is known, so a message of the wrong
//! length is a typed error ([`CommError::SizeMismatch`]) rather than
//! MPI's truncation error or an abort.

use std::ffi::{c_int, c_void};
use std::fmt;
use std::mem::MaybeUninit;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

use mpi::datatype::SystemDatatype;
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::traits::Equivalence;
use terroir::__capi::ExternalEvent;
use terroir::Yield;

use crate::progress::Waker;

/// The largest tag every MPI implementation accepts (`MPI_TAG_UB` is at
/// least this).
pub const MAX_TAG: i32 = 32767;

/// An element type that can travel in a [`Request`]: a plain number (or
/// `bool`) with a predefined MPI datatype.
pub trait Element: Equivalence<Out = SystemDatatype> + Copy + Send + 'static {}
impl<T: Equivalence<Out = SystemDatatype> + Copy + Send + 'static> Element for T {}

/// Why a send or receive failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommError {
    /// The peer rank is not in the communicator.
    InvalidRank {
        /// The rank asked for.
        rank: usize,
        /// The number of ranks.
        size: usize,
    },
    /// The tag is negative or above [`MAX_TAG`].
    InvalidTag(i32),
    /// The buffer has more elements than MPI can count (`i32::MAX`).
    TooLong(usize),
    /// The message matched by a receive does not have the receive's
    /// length. The message was consumed (so that it does not match a
    /// later receive) and dropped, and the receive's buffer with it.
    SizeMismatch {
        /// The rank the message came from.
        source: usize,
        /// Its tag.
        tag: i32,
        /// The receive's length, in elements.
        expected: usize,
        /// The message's length in bytes.
        received_bytes: usize,
        /// The size of one element, in bytes.
        element_size: usize,
    },
    /// An MPI call returned an error code.
    Mpi {
        /// The MPI function.
        call: &'static str,
        /// Its error code.
        code: i32,
        /// `MPI_Error_string` of the code.
        message: String,
    },
    /// The rank's MPI thread no longer serves requests: the
    /// [`Rank::run`](crate::Rank::run) that created this handle has
    /// returned (or the request was still unmatched when it did).
    Shutdown,
}

impl fmt::Display for CommError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommError::InvalidRank { rank, size } => {
                write!(
                    f,
                    "rank {rank} is not in the communicator (ranks 0..{size})"
                )
            }
            CommError::InvalidTag(tag) => write!(f, "tag {tag} is outside 0..={MAX_TAG}"),
            CommError::TooLong(len) => {
                write!(
                    f,
                    "a buffer of {len} elements is longer than MPI can count (i32::MAX)"
                )
            }
            CommError::SizeMismatch {
                source,
                tag,
                expected,
                received_bytes,
                element_size,
            } => write!(
                f,
                "the message from rank {source} with tag {tag} has {received_bytes} bytes, the \
                 receive expected {expected} elements of {element_size} bytes ({} bytes)",
                expected * element_size
            ),
            CommError::Mpi {
                call,
                code,
                message,
            } => write!(f, "{call} failed with MPI error {code}: {message}"),
            CommError::Shutdown => f.write_str(
                "the rank's MPI thread has stopped serving requests (its Rank::run returned)",
            ),
        }
    }
}

impl std::error::Error for CommError {}

/// The result of a request, filled by the MPI thread, and the event its
/// waiter waits on.
struct Slot<T> {
    result: Mutex<Option<Result<Vec<T>, CommError>>>,
    done: ExternalEvent,
}

impl<T> Slot<T> {
    fn new() -> Arc<Self> {
        Arc::new(Slot {
            result: Mutex::new(None),
            done: ExternalEvent::new(),
        })
    }

    fn finish(&self, result: Result<Vec<T>, CommError>) {
        *self.result.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
        self.done.set();
    }
}

/// A pending send or receive; [`wait`](Self::wait) for it to get its
/// buffer back.
///
/// Dropping a pending request never leaves a dangling buffer: the MPI
/// thread owns the buffer until the transfer is over. A dropped receive
/// that has not matched a message yet is withdrawn (no message is
/// consumed); a dropped send, or a receive already matched, completes in
/// the background and its buffer is freed then.
#[must_use = "a request does nothing useful unless waited for"]
pub struct Request<T> {
    slot: Arc<Slot<T>>,
    /// The MPI thread, told when a task waits.
    waker: Arc<Waker>,
}

impl<T> Request<T> {
    /// Waits until the transfer is over, then gives the buffer back (a
    /// receive's holds the message). On a worker of a terroir pool it runs
    /// other work meanwhile (as a task group's wait does); on any other
    /// thread it blocks.
    ///
    /// # Errors
    /// The [`CommError`] of the transfer.
    pub fn wait(self) -> Result<Vec<T>, CommError> {
        // Other work first, while there is some: the MPI thread keeps
        // backing off meanwhile (on a machine with no CPU to spare, its
        // polling would be taken from this work).
        while !self.slot.done.is_set() && terroir::yield_now() == Some(Yield::Executed) {}
        if !self.slot.done.is_set() {
            // Nothing else to do: the MPI thread polls meanwhile, on the
            // CPU this thread leaves idle.
            let _waiting = self.waker.waiting();
            self.slot.done.wait();
        }
        self.take()
    }

    /// Whether the transfer is over ([`wait`](Self::wait) would return at
    /// once).
    pub fn is_complete(&self) -> bool {
        self.slot.done.is_set()
    }

    /// The result, if the transfer is over; the request back otherwise.
    ///
    /// # Errors
    /// `Err(self)` while the transfer is pending.
    pub fn test(self) -> Result<Result<Vec<T>, CommError>, Self> {
        if self.is_complete() {
            Ok(self.take())
        } else {
            Err(self)
        }
    }

    fn take(self) -> Result<Vec<T>, CommError> {
        let result = self
            .slot
            .result
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        // The MPI thread fills the result before it sets the event.
        result.unwrap_or(Err(CommError::Shutdown))
    }
}

impl<T> fmt::Debug for Request<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("complete", &self.is_complete())
            .finish()
    }
}

/// Waits for every request, in order, and returns their buffers; the first
/// error ends the wait (the other requests are dropped, see [`Request`]).
///
/// # Errors
/// The first request's [`CommError`].
pub fn wait_all<T>(requests: Vec<Request<T>>) -> Result<Vec<Vec<T>>, CommError> {
    requests.into_iter().map(Request::wait).collect()
}

/// What a task asks of the MPI thread.
pub(crate) enum Command {
    Post(Box<dyn Op>),
    /// The closure of `run` returned: finish what is in flight and stop.
    Stop,
}

/// The handle tasks use to communicate with the other ranks (of
/// `MPI_COMM_WORLD`, through a duplicate of it): cheap to clone, `Send`
/// and `Sync`.
#[derive(Clone)]
pub struct Comm {
    tx: Sender<Command>,
    waker: Arc<Waker>,
    rank: usize,
    size: usize,
}

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Comm")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl Comm {
    pub(crate) fn new(tx: Sender<Command>, waker: Arc<Waker>, rank: usize, size: usize) -> Self {
        Comm {
            tx,
            waker,
            rank,
            size,
        }
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    fn check(&self, peer: usize, tag: i32, len: usize) -> Result<(c_int, c_int), CommError> {
        if peer >= self.size {
            return Err(CommError::InvalidRank {
                rank: peer,
                size: self.size,
            });
        }
        if !(0..=MAX_TAG).contains(&tag) {
            return Err(CommError::InvalidTag(tag));
        }
        let len = c_int::try_from(len).map_err(|_| CommError::TooLong(len))?;
        // `peer < size`, and MPI's sizes are `c_int`s.
        Ok((peer as c_int, len))
    }

    fn post<T: Element>(&self, op: Transfer<T>) -> Request<T> {
        let slot = Arc::clone(&op.slot);
        let send = op.kind == Kind::Send;
        match self.tx.send(Command::Post(Box::new(op))) {
            // A send wakes the MPI thread: the other rank waits for it. A
            // receive waits for the thread's next round (a wake-up costs
            // more than the transfer), at the latest for a task's wait.
            Ok(()) if send => {
                self.waker.poke();
                // And lends it this CPU: the thread may be runnable here
                // already (preempted when it woke this worker), and then
                // Linux lets the worker finish its time slice (1.4 ms on
                // the test machine) before it runs: measured, the send
                // left only when the worker blocked at the step's end.
                std::thread::yield_now();
            }
            Ok(()) => {}
            // The MPI thread is gone: the transfer never started.
            Err(mpsc::SendError(Command::Post(op))) => drop(op.shutdown()),
            Err(mpsc::SendError(Command::Stop)) => {}
        }
        Request {
            slot,
            waker: Arc::clone(&self.waker),
        }
    }

    /// Sends `buf` to rank `dest` with `tag` (`MPI_Isend`, from the MPI
    /// thread); the request gives the buffer back once it may be reused.
    ///
    /// # Errors
    /// A bad rank, tag or length, at once; MPI's errors through the
    /// request.
    pub fn isend<T: Element>(
        &self,
        dest: usize,
        tag: i32,
        buf: Vec<T>,
    ) -> Result<Request<T>, CommError> {
        let (peer, len) = self.check(dest, tag, buf.len())?;
        Ok(self.post(Transfer::new(Kind::Send, peer, tag, len, buf)))
    }

    /// Receives into `buf` a message of exactly `buf.len()` elements from
    /// rank `source` with `tag`; the request gives the buffer back holding
    /// the message.
    ///
    /// # Errors
    /// A bad rank, tag or length, at once; through the request, a message
    /// of another length ([`CommError::SizeMismatch`]) and MPI's errors.
    pub fn irecv<T: Element>(
        &self,
        source: usize,
        tag: i32,
        buf: Vec<T>,
    ) -> Result<Request<T>, CommError> {
        let (peer, len) = self.check(source, tag, buf.len())?;
        Ok(self.post(Transfer::new(Kind::Recv, peer, tag, len, buf)))
    }
}

/// A transfer the MPI thread carries out; boxed, of any element type.
pub(crate) trait Op: Send {
    /// Advances the transfer on the MPI thread; true once it is over (its
    /// result delivered, or its request dropped before it started).
    fn progress(&mut self, comm: ffi::MPI_Comm) -> bool;
    /// The MPI thread stops: true if the transfer can be dropped now (it
    /// is not in flight), after failing it with [`CommError::Shutdown`].
    fn shutdown(self: Box<Self>) -> Option<Box<dyn Op>>;
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Send,
    Recv,
}

/// An MPI request handle, held only by the MPI thread.
struct RawRequest(ffi::MPI_Request);
// SAFETY: the handle is created, tested and completed on the MPI thread
// only; it merely travels (unused, inside an Op) before it exists.
unsafe impl Send for RawRequest {}

/// A message consumed because its length was wrong, being drained.
struct Drain {
    _buf: Vec<u8>,
    req: RawRequest,
    error: CommError,
}

struct Transfer<T> {
    kind: Kind,
    peer: c_int,
    tag: c_int,
    len: c_int,
    /// Owned here until the transfer is over: MPI reads or writes it
    /// while `req` is in flight.
    buf: Vec<T>,
    req: Option<RawRequest>,
    drain: Option<Drain>,
    slot: Arc<Slot<T>>,
}

/// A transfer dropped before it ended (a post still queued when the MPI
/// thread stopped: a task that kept a `Comm` past `Rank::run` and posted
/// at its very end) fails its request with [`CommError::Shutdown`], so its
/// waiter does not wait forever. Only a transfer that never started can be
/// dropped unfinished: the MPI thread keeps those in flight until MPI is
/// done with their buffers.
impl<T> Drop for Transfer<T> {
    fn drop(&mut self) {
        if !self.slot.done.is_set() {
            debug_assert!(
                self.req.is_none() && self.drain.is_none(),
                "a transfer in flight was dropped"
            );
            self.slot.finish(Err(CommError::Shutdown));
        }
    }
}

impl<T: Element> Transfer<T> {
    fn new(kind: Kind, peer: c_int, tag: c_int, len: c_int, buf: Vec<T>) -> Self {
        Transfer {
            kind,
            peer,
            tag,
            len,
            buf,
            req: None,
            drain: None,
            slot: Slot::new(),
        }
    }

    fn abandoned(&self) -> bool {
        Arc::strong_count(&self.slot) == 1
    }

    fn fail(&mut self, call: &'static str, code: c_int) -> bool {
        self.slot.finish(Err(mpi_error(call, code)));
        true
    }

    /// Starts the transfer: `Ok(true)` once in flight, `Ok(false)` when a
    /// receive has no message yet.
    fn start(&mut self, comm: ffi::MPI_Comm) -> Result<bool, (&'static str, c_int)> {
        let dtype = T::equivalent_datatype().as_raw();
        let mut req = MaybeUninit::<ffi::MPI_Request>::uninit();
        match self.kind {
            Kind::Send => {
                // SAFETY: `buf` holds `len` elements of `dtype` and stays
                // alive and unmoved (its heap block) in `self` until the
                // request completes; `comm` is the rank's duplicate.
                let rc = unsafe {
                    ffi::MPI_Isend(
                        self.buf.as_ptr().cast::<c_void>(),
                        self.len,
                        dtype,
                        self.peer,
                        self.tag,
                        comm,
                        req.as_mut_ptr(),
                    )
                };
                check("MPI_Isend", rc)?;
            }
            Kind::Recv => {
                let mut flag: c_int = 0;
                let mut msg = MaybeUninit::<ffi::MPI_Message>::uninit();
                let mut status = MaybeUninit::<ffi::MPI_Status>::uninit();
                // SAFETY: out-pointers to live locals; `comm` is valid.
                let rc = unsafe {
                    ffi::MPI_Improbe(
                        self.peer,
                        self.tag,
                        comm,
                        &mut flag,
                        msg.as_mut_ptr(),
                        status.as_mut_ptr(),
                    )
                };
                check("MPI_Improbe", rc)?;
                if flag == 0 {
                    return Ok(false);
                }
                // SAFETY: a message matched: MPI wrote both.
                let (mut msg, status) = unsafe { (msg.assume_init(), status.assume_init()) };
                let mut bytes: c_int = 0;
                // SAFETY: a status MPI filled; MPI_BYTE counts any message.
                let rc = unsafe { ffi::MPI_Get_count(&status, ffi::RSMPI_UINT8_T, &mut bytes) };
                check("MPI_Get_count", rc)?;
                let want = self.buf.len() * size_of::<T>();
                if usize::try_from(bytes).ok() != Some(want) {
                    // Consume the message so that it matches nothing else.
                    // A count MPI cannot give in a c_int (MPI_UNDEFINED,
                    // a message over 2 GiB): received into nothing, which
                    // still consumes it (MPI reports the truncation).
                    let bytes = bytes.max(0);
                    let n = usize::try_from(bytes).unwrap_or(0);
                    let mut scratch = vec![0u8; n];
                    // SAFETY: `scratch` holds `bytes` bytes and lives in
                    // `self.drain` until the request completes; `msg` is
                    // the message just matched.
                    let rc = unsafe {
                        ffi::MPI_Imrecv(
                            scratch.as_mut_ptr().cast::<c_void>(),
                            bytes,
                            ffi::RSMPI_UINT8_T,
                            &mut msg,
                            req.as_mut_ptr(),
                        )
                    };
                    check("MPI_Imrecv", rc)?;
                    self.drain = Some(Drain {
                        _buf: scratch,
                        // SAFETY: MPI_Imrecv succeeded and wrote it.
                        req: RawRequest(unsafe { req.assume_init() }),
                        error: CommError::SizeMismatch {
                            source: self.peer as usize,
                            tag: self.tag,
                            expected: self.buf.len(),
                            received_bytes: n,
                            element_size: size_of::<T>(),
                        },
                    });
                    return Ok(true);
                }
                // SAFETY: `buf` holds `len` elements of `dtype` (the
                // message's size, checked) and stays alive and unmoved in
                // `self` until the request completes.
                let rc = unsafe {
                    ffi::MPI_Imrecv(
                        self.buf.as_mut_ptr().cast::<c_void>(),
                        self.len,
                        dtype,
                        &mut msg,
                        req.as_mut_ptr(),
                    )
                };
                check("MPI_Imrecv", rc)?;
            }
        }
        // SAFETY: the call that creates it succeeded.
        self.req = Some(RawRequest(unsafe { req.assume_init() }));
        Ok(true)
    }
}

/// Tests an MPI request: `Ok(true)` once complete (the handle is then
/// `MPI_REQUEST_NULL`).
fn test(req: &mut RawRequest) -> Result<bool, (&'static str, c_int)> {
    let mut flag: c_int = 0;
    // SAFETY: a live request of this thread; the status is ignored.
    let rc = unsafe { ffi::MPI_Test(&mut req.0, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
    check("MPI_Test", rc)?;
    Ok(flag != 0)
}

fn check(call: &'static str, rc: c_int) -> Result<(), (&'static str, c_int)> {
    if rc == ffi::MPI_SUCCESS as c_int {
        Ok(())
    } else {
        Err((call, rc))
    }
}

/// The typed error of an MPI error code, with MPI's description.
pub(crate) fn mpi_error(call: &'static str, code: c_int) -> CommError {
    let mut text = vec![0u8; ffi::MPI_MAX_ERROR_STRING as usize + 1];
    let mut len: c_int = 0;
    // SAFETY: the buffer has MPI_MAX_ERROR_STRING bytes and more.
    let rc = unsafe { ffi::MPI_Error_string(code, text.as_mut_ptr().cast(), &mut len) };
    let message = if rc == ffi::MPI_SUCCESS as c_int {
        text.truncate(usize::try_from(len).unwrap_or(0));
        String::from_utf8_lossy(&text).into_owned()
    } else {
        "(no description)".to_owned()
    };
    CommError::Mpi {
        call,
        code,
        message,
    }
}

impl<T: Element> Op for Transfer<T> {
    fn progress(&mut self, comm: ffi::MPI_Comm) -> bool {
        if let Some(drain) = &mut self.drain {
            return match test(&mut drain.req) {
                Ok(false) => false,
                Ok(true) => {
                    let error = drain.error.clone();
                    self.slot.finish(Err(error));
                    true
                }
                Err((call, code)) => self.fail(call, code),
            };
        }
        let Some(req) = &mut self.req else {
            // Not started: a receive dropped before it matched is withdrawn.
            if self.kind == Kind::Recv && self.abandoned() {
                return true;
            }
            return match self.start(comm) {
                Ok(_) => false,
                Err((call, code)) => self.fail(call, code),
            };
        };
        match test(req) {
            Ok(false) => false,
            Ok(true) => {
                let buf = std::mem::take(&mut self.buf);
                self.slot.finish(Ok(buf));
                true
            }
            Err((call, code)) => self.fail(call, code),
        }
    }

    fn shutdown(self: Box<Self>) -> Option<Box<dyn Op>> {
        if self.req.is_some() || self.drain.is_some() {
            return Some(self);
        }
        self.slot.finish(Err(CommError::Shutdown));
        None
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::{Comm, CommError};
    use crate::progress::Waker;

    /// A post still queued when the MPI thread's queue goes away (a task
    /// that kept a `Comm` past `Rank::run`) fails its request: its waiter
    /// gets `Shutdown` instead of waiting forever. No MPI call is made.
    #[test]
    fn a_post_the_mpi_thread_never_took_fails_with_shutdown() {
        let (tx, rx) = mpsc::channel();
        let comm = Comm::new(tx, Waker::for_current_thread(), 0, 1);
        let recv = comm.irecv::<u8>(0, 0, vec![0; 4]).expect("posted");
        let send = comm.isend::<u8>(0, 1, vec![1; 4]).expect("posted");
        assert!(!recv.is_complete());
        drop(rx);
        assert!(recv.is_complete() && send.is_complete());
        assert!(matches!(recv.wait(), Err(CommError::Shutdown)));
        assert!(matches!(send.wait(), Err(CommError::Shutdown)));
    }
}
