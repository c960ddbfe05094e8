//! Start-up: MPI at a checked threading level, and the rank's terroir pool
//! over the rank's own CPU set.

use std::ffi::c_int;
use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::sync::{mpsc, Arc};

use mpi::collective::{CommunicatorCollectives, SystemOperation};
use mpi::environment::Universe;
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;
use mpi::traits::Communicator;
use mpi::Threading;
use terroir::numa::{CpuSet, NumaError, Topology};
use terroir::{ThreadPool, ThreadPoolBuildError, ThreadPoolBuilder};

use crate::comm::{self, Comm, CommError, Command};
use crate::progress::{progress_loop, Backoff, Waker};

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
    spread: bool,
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
            spread: true,
        }
    }

    /// Whether ranks on one host that were given the same CPUs (`mpirun
    /// --bind-to none`, or an oversubscribed run, which Open MPI leaves
    /// unbound) split them: each such rank's pool then takes its own share
    /// of the CPUs (the ranks in the order of their rank numbers, a
    /// contiguous share each; one CPU each, round robin, when there are
    /// more ranks than CPUs), and its workers are pinned there; the
    /// calling thread (the MPI thread) is bound to the share too while the
    /// [`Rank`] lives (its mask is given back when the `Rank` is dropped,
    /// or when `init` fails). Without it every rank pins its workers to the same first CPUs
    /// of the mask, where they compete while the other CPUs idle.
    ///
    /// Default: on. When it applies it sets the pool builder's topology
    /// (this machine's, restricted to the share): turn it off to keep a
    /// topology of your own. [`Rank::cpus`] stays the rank's whole mask,
    /// [`Rank::pool_cpus`] is the share. Ranks whose masks differ (bound
    /// by the launcher) are left as they are.
    pub fn spread(mut self, spread: bool) -> Self {
        self.spread = spread;
        self
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
        let world = universe.world();
        let mut pool = self.pool;
        let mut pool_cpus = cpus.clone();
        let mut rebind = None;
        if self.spread {
            let local = world.split_shared(world.rank());
            let masks = host_masks(&local, &cpus);
            if let Some(share) = cpu_share(&masks, local.rank() as usize) {
                pool = pool.topology(topology_over(&share).map_err(InitError::Cpus)?);
                // The MPI thread (this one) with its workers: unbound, it
                // woke on other ranks' CPUs and waited there while its own
                // worker's CPU idled. Best effort: the pool is placed
                // either way.
                if terroir::numa::bind_current_thread(&share).is_ok() {
                    rebind = Some(Rebind(cpus.clone()));
                }
                pool_cpus = share;
            }
        }
        // On an error below, `rebind` gives the thread its mask back.
        let pool = pool.build().map_err(InitError::Pool)?;
        let comm = P2pComm::dup(&world).map_err(InitError::Mpi)?;
        Ok(Rank {
            rank: world.rank() as usize,
            size: world.size() as usize,
            cpus,
            pool_cpus,
            threading: provided,
            comm,
            pool,
            world,
            universe,
            _rebind: rebind,
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

/// The affinity masks of the ranks of `local` (the ranks on this host),
/// by their rank in `local`; `mine` is this rank's. Collective over
/// `local`.
fn host_masks(local: &SimpleCommunicator, mine: &CpuSet) -> Vec<CpuSet> {
    let words = mine.as_words();
    let mut len = 0u64;
    local.all_reduce_into(&(words.len() as u64), &mut len, SystemOperation::max());
    // `len` is the longest mask's length in words, at least ours.
    let len = len as usize;
    let mut padded = words.to_vec();
    padded.resize(len, 0);
    let mut all = vec![0u64; len * local.size() as usize];
    local.all_gather_into(&padded[..], &mut all[..]);
    if len == 0 {
        return vec![CpuSet::new(); local.size() as usize];
    }
    all.chunks(len)
        .map(|w| {
            w.iter()
                .enumerate()
                .flat_map(|(i, &word)| {
                    (0..64u32)
                        .filter(move |b| word >> b & 1 == 1)
                        .map(move |b| i as u32 * 64 + b)
                })
                .collect()
        })
        .collect()
}

/// The share of its mask the rank `me` of a host takes when other ranks
/// of the host have the same mask (`masks`: every rank's of the host, by
/// rank): `None` when no other rank has it (or the mask is empty).
///
/// The `k` ranks with the mask, in rank order, take contiguous shares of
/// its `n` CPUs (`n / k` or one more each); with more ranks than CPUs,
/// one CPU each, round robin.
fn cpu_share(masks: &[CpuSet], me: usize) -> Option<CpuSet> {
    let mask = masks.get(me)?;
    let sharers: Vec<usize> = (0..masks.len()).filter(|&r| masks[r] == *mask).collect();
    let (k, n) = (sharers.len(), mask.len());
    if k < 2 || n == 0 {
        return None;
    }
    let i = sharers.iter().position(|&r| r == me)?;
    let cpus: Vec<u32> = mask.iter().collect();
    Some(if n >= k {
        cpus[i * n / k..(i + 1) * n / k].iter().copied().collect()
    } else {
        std::iter::once(cpus[i % n]).collect()
    })
}

/// This machine's topology over `cpus` (one node over them when the
/// kernel exposes no NUMA information: a described topology, whose
/// workers are not pinned unless the pool builder says so).
fn topology_over(cpus: &CpuSet) -> Result<Topology, NumaError> {
    match Topology::detect() {
        Err(NumaError::NoNumaInfo { .. }) => Topology::single_node()?.restrict(cpus),
        other => other?.restrict(cpus),
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
    pool_cpus: CpuSet,
    threading: Threading,
    // Drop order: the communicator, the pool, then MPI (finalised).
    comm: P2pComm,
    pool: ThreadPool,
    world: SimpleCommunicator,
    universe: Universe,
    /// The mask the calling thread had before `init` bound it to its share
    /// (ranks splitting a mask), given back when the `Rank` is dropped.
    _rebind: Option<Rebind>,
    _not_send: PhantomData<*const ()>,
}

/// Binds the calling thread back to its mask when dropped: after a failed
/// `init`, or with the `Rank` (which is not `Send`: dropped on the thread
/// that `init` bound), so that threads it starts later (a pool built for
/// post-processing, say) are not confined to one rank's share.
struct Rebind(CpuSet);

impl Drop for Rebind {
    fn drop(&mut self) {
        // Best effort, as the binding was.
        let _ = terroir::numa::bind_current_thread(&self.0);
    }
}

impl fmt::Debug for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rank")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("cpus", &self.cpus.to_string())
            .field("pool_cpus", &self.pool_cpus.to_string())
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

    /// The CPUs the rank's pool was built over: [`cpus`](Self::cpus), or
    /// the rank's share of them when ranks on its host were given the
    /// same mask (see [`Builder::spread`]).
    pub fn pool_cpus(&self) -> &CpuSet {
        &self.pool_cpus
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
        let waker = Waker::for_current_thread();
        let comm = Comm::new(tx.clone(), Arc::clone(&waker), self.rank, self.size);
        let pool = &self.pool;
        let stop_waker = Arc::clone(&waker);
        std::thread::scope(|s| {
            let user = s.spawn(move || {
                /// Stops the MPI thread when `f` returns or unwinds.
                struct Stop(mpsc::Sender<Command>, Arc<Waker>);
                impl Drop for Stop {
                    fn drop(&mut self) {
                        let _ = self.0.send(Command::Stop);
                        self.1.poke();
                    }
                }
                let _stop = Stop(tx, stop_waker);
                pool.install(|| f(&comm))
            });
            progress_loop(self.comm.0, &rx, &waker, Backoff::DEFAULT);
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

    fn sets(lists: &[&str]) -> Vec<CpuSet> {
        lists.iter().map(|l| l.parse().unwrap()).collect()
    }

    #[test]
    fn ranks_with_the_same_mask_split_it() {
        let masks = sets(&["0-1", "0-1"]);
        assert_eq!(cpu_share(&masks, 0), Some("0".parse().unwrap()));
        assert_eq!(cpu_share(&masks, 1), Some("1".parse().unwrap()));
        // Uneven: 5 CPUs over 2 ranks.
        let masks = sets(&["0-4", "0-4"]);
        assert_eq!(cpu_share(&masks, 0), Some("0-1".parse().unwrap()));
        assert_eq!(cpu_share(&masks, 1), Some("2-4".parse().unwrap()));
        // More ranks than CPUs: round robin.
        let masks = sets(&["0-1", "0-1", "0-1"]);
        let shares: Vec<_> = (0..3).map(|r| cpu_share(&masks, r).unwrap()).collect();
        assert_eq!(shares, sets(&["0", "1", "0"]));
        // Only the ranks with the same mask share it; a sparse mask.
        let masks = sets(&["0-3", "4-7", "0,2,4,6", "0-3"]);
        assert_eq!(cpu_share(&masks, 0), Some("0-1".parse().unwrap()));
        assert_eq!(cpu_share(&masks, 3), Some("2-3".parse().unwrap()));
        assert_eq!(cpu_share(&masks, 1), None);
        assert_eq!(cpu_share(&masks, 2), None);
    }

    #[test]
    fn a_mask_of_its_own_is_kept() {
        assert_eq!(cpu_share(&sets(&["0", "1"]), 0), None);
        assert_eq!(cpu_share(&sets(&["0-7"]), 0), None);
        assert_eq!(cpu_share(&[CpuSet::new(), CpuSet::new()], 0), None);
        assert_eq!(cpu_share(&sets(&["0"]), 3), None);
    }

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
