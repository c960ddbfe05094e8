//! # terroir-mpi
//!
//! Hybrid MPI + [`terroir`]: one MPI rank per NUMA node (or per
//! host), a terroir pool of tasks inside each rank.
//!
//! - **Start-up** ([`init`], [`Builder`]): initialises MPI at a threading
//!   level that is checked (`Threading::Funneled` by default: only the
//!   thread that initialised MPI calls it; `Multiple` on request), and
//!   builds the rank's pool over the rank's own CPU set (its affinity
//!   mask, as the launcher bound it).
//! - **The binding doctor** ([`doctor::Report`]): every rank's CPUs, the
//!   NUMA nodes they cover and its pool, in one table printed by rank 0,
//!   with warnings naming the launch options to use when a rank is bound
//!   too narrowly, shares CPUs with another rank, or spans nodes.
//! - **Communication that does not stall workers** ([`Rank::run`],
//!   [`Comm`], [`Request`]): tasks post sends and receives to the rank's
//!   MPI thread (the thread that initialised MPI, which only
//!   communicates) and wait for them the way a worker waits for a task
//!   group: by running other work. Buffers are owned by the transfer until
//!   it is over, so a dropped request leaves nothing dangling; errors are
//!   typed ([`CommError`]), a message of the wrong size included.
//!
//! ```no_run
//! // mpirun -np 2 --map-by ppr:1:numa --bind-to numa ./ring
//! let rank = terroir_mpi::init()?;
//! let (me, n) = (rank.rank(), rank.size());
//! let got = rank.run(|comm| {
//!     // A task posts, then does other work while the message travels.
//!     let recv = comm.irecv((me + n - 1) % n, 0, vec![0u64; 1])?;
//!     let send = comm.isend((me + 1) % n, 0, vec![me as u64])?;
//!     let other = terroir::join(|| 1 + 1, || 2 + 2);
//!     send.wait()?;
//!     Ok::<_, terroir_mpi::CommError>((recv.wait()?[0], other))
//! })?;
//! assert_eq!(got.0 as usize, (me + n - 1) % n);
//! if let Some(report) = terroir_mpi::doctor::Report::gather(&rank) {
//!     print!("{report}");
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Run MPI programs with `mpirun` (Open MPI) or `srun` (Slurm); the
//! crate's README gives the launch lines and what each one binds.
#![warn(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod comm;
pub mod doctor;
mod gather;
mod progress;
mod rank;
#[cfg(feature = "report")]
pub mod report;
mod split;

pub use comm::{wait_all, Comm, CommError, Element, Request, MAX_TAG};
pub use mpi;
pub use mpi::Threading;
pub use rank::{init, Builder, InitError, Rank};
pub use split::{split_rows, SplitError};

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
