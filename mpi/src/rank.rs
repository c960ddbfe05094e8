//! Start-up: MPI at a checked threading level, and the rank's terroir pool
//! over the rank's own CPU set.

use std::ffi::c_int;
use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::sync::mpsc;

use mpi::environment::Universe;
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;
use mpi::traits::Communicator;
use mpi::Threading;
use terroir::numa::{CpuSet, NumaError};
use terroir::{ThreadPool, ThreadPoolBuildError, ThreadPoolBuilder};

use crate::comm::{self, progress_loop, Comm, CommError, Command};

/// Why a rank could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum InitError {
    /// MPI was initialised already (by this crate, rsmpi or C code).
    AlreadyInitialized,
    /// MPI was finalised already: it cannot be initialised again.
    Finalized,
    /// MPI granted a lower threading level than the one asked for.
    ThreadingTooLow {
        /// The level asked for.
        requested: Threading,
        /// The level MPI provides.
        provided: Threading,
    },
    /// The rank's CPU set (its affinity mask) could not be read.
    Cpus(NumaError),
    /// The rank may run on no CPU.
    EmptyCpuSet,
    /// The rank's pool could not be built.
    Pool(ThreadPoolBuildError),
    /// An MPI call of the start-up failed.
    Mpi(CommError),
}

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InitError::AlreadyInitialized => f.write_str("MPI is initialised already"),
            InitError::Finalized => {
                f.write_str("MPI was finalised already and cannot be initialised again")
            }
            InitError::ThreadingTooLow {
                requested,
                provided,
            } => write!(
                f,
                "MPI provides the threading level {provided:?}, below the {requested:?} asked for"
            ),
            InitError::Cpus(e) => write!(f, "the rank's CPU set could not be read: {e}"),
            InitError::EmptyCpuSet => f.write_str("the rank's CPU set (affinity mask) is empty"),
            InitError::Pool(e) => write!(f, "the rank's pool could not be built: {e}"),
            InitError::Mpi(e) => write!(f, "MPI start-up failed: {e}"),
        }
    }
}

impl std::error::Error for InitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InitError::Cpus(e) => Some(e),
            InitError::Pool(e) => Some(e),
            InitError::Mpi(e) => Some(e),
            _ => None,
        }
    }
}

/// How a rank starts: the threading level to ask MPI for, and the pool.
///
/// ```no_run
/// use terroir_mpi::{Builder, Threading};
///
/// let rank = Builder::new()
///     .threading(Threading::Multiple)
///     .pool(terroir::ThreadPoolBuilder::new().num_threads(4))
///     .init()?;
/// println!("rank {} of {}", rank.rank(), rank.size());
/// # Ok::<(), terroir_mpi::InitError>(())
/// ```
#[derive(Debug)]
pub struct Builder {
    threading: Threading,
    pool: ThreadPoolBuilder,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    /// `Threading::Funneled` (only the thread that initialises MPI calls
    /// it: the design of this crate), and a default pool (one worker per
    /// CPU of the rank's mask, or `TERROIR_NUM_THREADS`).
    pub fn new() -> Self {
        Builder {
            threading: Threading::Funneled,
            pool: ThreadPoolBuilder::new(),
        }
    }

    /// The threading level to ask for; [`init`](Self::init) fails when MPI
    /// provides less. Ask for `Multiple` when code of yours calls MPI from
    /// other threads than the rank's MPI thread.
    pub fn threading(mut self, threading: Threading) -> Self {
        self.threading = threading;
        self
    }

    /// The builder of the rank's pool. Its topology defaults to the CPUs
    /// of the rank's affinity mask (what `mpirun --bind-to` or `srun
    /// --cpu-bind` gave it).
    pub fn pool(mut self, pool: ThreadPoolBuilder) -> Self {
        self.pool = pool;
        self
    }

    /// Initialises MPI (`MPI_Init_thread`) on the calling thread, which
    /// becomes the rank's MPI thread, and builds the rank's pool.
    ///
    /// # Errors
    /// See [`InitError`]: MPI initialised or finalised already, a
    /// threading level below the one asked for (MPI is then finalised),
    /// an empty or unreadable CPU set, a pool that could not be built.
    pub fn init(self) -> Result<Rank, InitError> {
        let cpus = terroir::numa::allowed_cpus().map_err(InitError::Cpus)?;
        if cpus.is_empty() {
            return Err(InitError::EmptyCpuSet);
        }
        if mpi::environment::is_finalized() {
            return Err(InitError::Finalized);
        }
        let (universe, provided) =
            mpi::initialize_with_threading(self.threading).ok_or(InitError::AlreadyInitialized)?;
        check_threading(self.threading, provided)?;
        let pool = self.pool.build().map_err(InitError::Pool)?;
        let world = universe.world();
        let comm = P2pComm::dup(&world).map_err(InitError::Mpi)?;
        Ok(Rank {
            rank: world.rank() as usize,
            size: world.size() as usize,
            cpus,
            threading: provided,
            comm,
            pool,
            world,
            universe,
            _not_send: PhantomData,
        })
    }
}

/// The threading check of [`Builder::init`]: `provided` must be at least
/// `requested`.
fn check_threading(requested: Threading, provided: Threading) -> Result<(), InitError> {
    if provided < requested {
        Err(InitError::ThreadingTooLow {
            requested,
            provided,
        })
    } else {
        Ok(())
    }
}

/// [`Builder::new`]`.init()`: MPI at `Threading::Funneled`, a default pool.
///
/// # Errors
/// As [`Builder::init`].
pub fn init() -> Result<Rank, InitError> {
    Builder::new().init()
}

/// The duplicate of `MPI_COMM_WORLD` the MPI thread communicates on, with
/// errors returned (not fatal) so that they become [`CommError`]s.
struct P2pComm(ffi::MPI_Comm);

impl P2pComm {
    fn dup(world: &SimpleCommunicator) -> Result<Self, CommError> {
        let mut raw = MaybeUninit::<ffi::MPI_Comm>::uninit();
        // SAFETY: MPI is initialised; `world` is a valid communicator.
        let rc = unsafe { ffi::MPI_Comm_dup(world.as_raw(), raw.as_mut_ptr()) };
        if rc != ffi::MPI_SUCCESS as c_int {
            return Err(comm::mpi_error("MPI_Comm_dup", rc));
        }
        // SAFETY: MPI_Comm_dup succeeded and wrote it.
        let comm = P2pComm(unsafe { raw.assume_init() });
        // SAFETY: a communicator of ours and a predefined handler.
        let rc = unsafe { ffi::MPI_Comm_set_errhandler(comm.0, ffi::RSMPI_ERRORS_RETURN) };
        if rc != ffi::MPI_SUCCESS as c_int {
            return Err(comm::mpi_error("MPI_Comm_set_errhandler", rc));
        }
        Ok(comm)
    }
}

impl Drop for P2pComm {
    fn drop(&mut self) {
        // SAFETY: our duplicate, freed once, before MPI is finalised (a
        // Rank's `comm` field is dropped before its `universe`).
        unsafe { ffi::MPI_Comm_free(&mut self.0) };
    }
}

/// One MPI rank: MPI initialised on this thread (the rank's MPI thread),
/// and the rank's terroir pool. Dropping it shuts the pool down and
/// finalises MPI (once: a `Rank` cannot be copied, and MPI cannot be
/// initialised twice).
///
/// A `Rank` stays on the thread that created it (it is neither `Send` nor
/// `Sync`): with `Threading::Funneled` only that thread may call MPI.
pub struct Rank {
    rank: usize,
    size: usize,
    cpus: CpuSet,
    threading: Threading,
    // Drop order: the communicator, the pool, then MPI (finalised).
    comm: P2pComm,
    pool: ThreadPool,
    world: SimpleCommunicator,
    universe: Universe,
    _not_send: PhantomData<*const ()>,
}

impl fmt::Debug for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rank")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("cpus", &self.cpus.to_string())
            .field("threading", &self.threading)
            .field("threads", &self.pool.current_num_threads())
            .finish_non_exhaustive()
    }
}

impl Rank {
    /// This rank's number in `MPI_COMM_WORLD`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The threading level MPI provides (at least the one asked for).
    pub fn threading(&self) -> Threading {
        self.threading
    }

    /// The CPUs this rank may run on (its affinity mask at start-up).
    pub fn cpus(&self) -> &CpuSet {
        &self.cpus
    }

    /// The rank's pool.
    pub fn pool(&self) -> &ThreadPool {
        &self.pool
    }

    /// `MPI_COMM_WORLD`, for collectives called from this thread (outside
    /// [`run`](Self::run)).
    pub fn world(&self) -> &SimpleCommunicator {
        &self.world
    }

    /// The MPI universe (rsmpi's), for what this crate does not wrap.
    pub fn universe(&self) -> &Universe {
        &self.universe
    }

    /// Runs `f` on the rank's pool while this thread serves its sends and
    /// receives: `f` and the tasks it starts post transfers through the
    /// [`Comm`] and wait for them by running other work; this thread (the
    /// MPI thread) only communicates. Returns `f`'s result once `f` has
    /// returned and the transfers in flight are over (receives still
    /// unmatched then fail with [`CommError::Shutdown`]).
    ///
    /// # Panics
    /// Propagates a panic of `f`, after the transfers in flight are over.
    pub fn run<R, F>(&self, f: F) -> R
    where
        F: FnOnce(&Comm) -> R + Send,
        R: Send,
    {
        let (tx, rx) = mpsc::channel();
        let comm = Comm::new(tx.clone(), self.rank, self.size);
        let pool = &self.pool;
        std::thread::scope(|s| {
            let user = s.spawn(move || {
                /// Stops the MPI thread when `f` returns or unwinds.
                struct Stop(mpsc::Sender<Command>);
                impl Drop for Stop {
                    fn drop(&mut self) {
                        let _ = self.0.send(Command::Stop);
                    }
                }
                let _stop = Stop(tx);
                pool.install(|| f(&comm))
            });
            progress_loop(self.comm.0, &rx);
            match user.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threading_below_the_request_is_an_error_naming_both() {
        let err = check_threading(Threading::Multiple, Threading::Funneled).unwrap_err();
        assert!(matches!(
            err,
            InitError::ThreadingTooLow {
                requested: Threading::Multiple,
                provided: Threading::Funneled
            }
        ));
        let text = err.to_string();
        assert!(
            text.contains("Multiple") && text.contains("Funneled"),
            "{text}"
        );
        assert!(check_threading(Threading::Funneled, Threading::Multiple).is_ok());
        assert!(check_threading(Threading::Funneled, Threading::Funneled).is_ok());
    }
}
