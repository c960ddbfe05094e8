//! The binding doctor: every rank's CPUs, NUMA nodes and pool in one
//! table (printed by rank 0), with warnings naming the launch options.
//!
//! ```text
//! mpirun -np 2 --map-by ppr:1:numa --bind-to numa \
//!     target/release/examples/doctor
//! srun --cpu-bind=ldoms target/release/examples/doctor
//! ```
//!
//! Exits with status 0 whether or not it warns; `--strict` makes a
//! warning exit with status 2 (for scripts). `--multiple` asks MPI for
//! `Threading::Multiple` (the default is `Funneled`).

use terroir_mpi::doctor::Report;

fn main() {
    let strict = std::env::args().any(|a| a == "--strict");
    let threading = if std::env::args().any(|a| a == "--multiple") {
        terroir_mpi::Threading::Multiple
    } else {
        terroir_mpi::Threading::Funneled
    };
    let rank = match terroir_mpi::Builder::new().threading(threading).init() {
        Ok(rank) => rank,
        Err(e) => {
            eprintln!("doctor: {e}");
            std::process::exit(1);
        }
    };
    if let Some(report) = Report::gather(&rank) {
        println!(
            "doctor: {} rank(s), MPI threading {:?}",
            rank.size(),
            rank.threading()
        );
        print!("{report}");
        if strict && !report.warnings().is_empty() {
            drop(rank);
            std::process::exit(2);
        }
    }
}
