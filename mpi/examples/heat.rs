//! A 2-D heat (Jacobi) stencil across ranks: rows split across ranks
//! (uneven splits allowed), each rank's block in `NodeVec`s placed on its
//! nodes and updated by placed tasks, halo rows exchanged every step with
//! the interior computed while they travel. Rank 0 checks the result
//! against a sequential computation (bit for bit) and prints one line.
//!
//! ```text
//! mpirun -np 2 target/release/examples/heat [--rows R] [--cols C] [--steps S] [--no-overlap] [--report DIR]
//! heat ranks=2 threads=1 size=1024x1024 steps=100 overlap=on time_s=… verified=true
//! ```
//!
//! With `--report DIR` (built with `--features report`) every rank records
//! its pool during the steps and rank 0 writes the job's inflation report
//! and Chrome trace (a process per rank) into `DIR`.
//!
//! The top edge is held at 1.0, the other edges at 0.0; a cell becomes the
//! mean of its four neighbours.

use std::process::exit;
use std::time::Instant;

use terroir::numa::NodeSet;
use terroir::pool::{NodeVec, Placement};
use terroir::Place;
use terroir_mpi::mpi::collective::CommunicatorCollectives;
use terroir_mpi::{split_rows, Comm, CommError, Rank, Request};

/// The held temperature of the top edge.
const HOT: f64 = 1.0;
/// A row travelling down (a rank's last row, to the rank below).
const TAG_DOWN: i32 = 0;
/// A row travelling up (a rank's first row, to the rank above).
const TAG_UP: i32 = 1;
/// A block travelling to rank 0 for the check.
const TAG_GATHER: i32 = 2;

struct Args {
    rows: usize,
    cols: usize,
    steps: usize,
    overlap: bool,
    verify: bool,
    /// Where rank 0 writes the job's report (`--report`).
    report: Option<std::path::PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        rows: 1024,
        cols: 1024,
        steps: 100,
        overlap: true,
        verify: true,
        report: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut num = |name: &str| -> Result<usize, String> {
            let v = it.next().ok_or(format!("{name} needs a value"))?;
            v.parse()
                .map_err(|_| format!("{name} {v:?}: not a non-negative integer"))
        };
        match flag.as_str() {
            "--rows" => a.rows = num("--rows")?,
            "--cols" => a.cols = num("--cols")?,
            "--steps" => a.steps = num("--steps")?,
            "--no-overlap" => a.overlap = false,
            "--no-verify" => a.verify = false,
            "--report" => {
                let dir = it.next().ok_or("--report needs a directory")?;
                if cfg!(not(feature = "report")) {
                    return Err("--report needs terroir-mpi's `report` feature \
                                (cargo build --features report)"
                        .into());
                }
                a.report = Some(dir.into());
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?} (--rows R --cols C --steps S --no-overlap \
                     --no-verify --report DIR)"
                ))
            }
        }
    }
    if a.cols == 0 {
        return Err("--cols 0: the grid needs a column".into());
    }
    Ok(a)
}

/// One row of the update: `out[j]` is the mean of `mid[j]`'s neighbours
/// (0.0 beyond the left and right edges).
fn stencil_row(up: &[f64], mid: &[f64], down: &[f64], out: &mut [f64]) {
    let n = mid.len();
    for j in 0..n {
        let left = if j > 0 { mid[j - 1] } else { 0.0 };
        let right = if j + 1 < n { mid[j + 1] } else { 0.0 };
        out[j] = 0.25 * (up[j] + down[j] + left + right);
    }
}

/// The whole grid on one thread: what the ranks must reproduce exactly.
fn sequential(rows: usize, cols: usize, steps: usize) -> Vec<f64> {
    let (hot, cold) = (vec![HOT; cols], vec![0.0; cols]);
    let mut a = vec![0.0; rows * cols];
    let mut b = a.clone();
    for _ in 0..steps {
        for i in 0..rows {
            let up = if i == 0 {
                &hot[..]
            } else {
                &a[(i - 1) * cols..i * cols]
            };
            let down = if i + 1 == rows {
                &cold[..]
            } else {
                &a[(i + 1) * cols..(i + 2) * cols]
            };
            stencil_row(
                up,
                &a[i * cols..(i + 1) * cols],
                down,
                &mut b[i * cols..(i + 1) * cols],
            );
        }
        std::mem::swap(&mut a, &mut b);
    }
    a
}

/// A rank's halo buffers, each lent to a request during a step.
struct Halo {
    up: Option<usize>,
    down: Option<usize>,
    recv_up: Vec<f64>,
    recv_down: Vec<f64>,
    send_up: Vec<f64>,
    send_down: Vec<f64>,
}

/// The requests of one step's exchange.
struct Exchange {
    recv_up: Option<Request<f64>>,
    recv_down: Option<Request<f64>>,
    send_up: Option<Request<f64>>,
    send_down: Option<Request<f64>>,
}

impl Halo {
    /// Posts this step's sends (copies of the block's first and last rows)
    /// and receives.
    fn post(&mut self, comm: &Comm, old: &[f64], cols: usize) -> Result<Exchange, CommError> {
        let n = old.len() / cols;
        let mut ex = Exchange {
            recv_up: None,
            recv_down: None,
            send_up: None,
            send_down: None,
        };
        if let Some(up) = self.up {
            ex.recv_up = Some(comm.irecv(up, TAG_DOWN, std::mem::take(&mut self.recv_up))?);
            self.send_up.copy_from_slice(&old[..cols]);
            ex.send_up = Some(comm.isend(up, TAG_UP, std::mem::take(&mut self.send_up))?);
        }
        if let Some(down) = self.down {
            ex.recv_down = Some(comm.irecv(down, TAG_UP, std::mem::take(&mut self.recv_down))?);
            self.send_down.copy_from_slice(&old[(n - 1) * cols..]);
            ex.send_down = Some(comm.isend(down, TAG_DOWN, std::mem::take(&mut self.send_down))?);
        }
        Ok(ex)
    }
}

fn wait_into(req: Option<Request<f64>>, slot: &mut Vec<f64>) -> Result<(), CommError> {
    if let Some(req) = req {
        *slot = req.wait()?;
    }
    Ok(())
}

/// One rank's part of the grid and what it needs to update it.
struct Block {
    cols: usize,
    old: NodeVec<f64>,
    new: NodeVec<f64>,
    halo: Halo,
    hot: Vec<f64>,
    cold: Vec<f64>,
    /// Rows per task, and the place of each interior task (its rows' node).
    chunk_rows: usize,
    places: Vec<Place>,
}

impl Block {
    fn new(rank: &Rank, rows: usize, cols: usize) -> Result<Block, String> {
        let (me, size) = (rank.rank(), rank.size());
        let mine = split_rows(rows, size, me).map_err(|e| e.to_string())?;
        let n = mine.len();
        let pool = rank.pool();
        let topology = pool.topology();
        let nodes: NodeSet = topology.nodes().iter().map(|n| n.id().os_index()).collect();
        let alloc = || {
            pool.node_vec(n * cols, Placement::Blocked(nodes.clone()), |_| 0.0)
                .map_err(|e| format!("placing the block: {e}"))
        };
        let (old, new) = (alloc()?, alloc()?);
        let threads = pool.current_num_threads();
        let chunk_rows = (n / (4 * threads)).clamp(1, 64);
        let interior = n.saturating_sub(2);
        let places = (0..interior.div_ceil(chunk_rows))
            .map(|k| {
                let first = (1 + k * chunk_rows) * cols;
                old.node_of(first)
                    .and_then(|id| topology.node_index(id))
                    .and_then(|i| pool.node(i).ok())
                    .unwrap_or_else(Place::anywhere)
            })
            .collect();
        let row = || vec![0.0; cols];
        Ok(Block {
            cols,
            old,
            new,
            halo: Halo {
                up: me.checked_sub(1),
                down: (me + 1 < size).then_some(me + 1),
                recv_up: row(),
                recv_down: row(),
                send_up: row(),
                send_down: row(),
            },
            hot: vec![HOT; cols],
            cold: row(),
            chunk_rows,
            places,
        })
    }

    /// One Jacobi step: post the exchange, update the interior while the
    /// halos travel (or, without overlap, after they arrived), then the
    /// two boundary rows.
    fn step(&mut self, comm: &Comm, overlap: bool) -> Result<(), CommError> {
        let cols = self.cols;
        let n = self.old.len() / cols;
        let exchange = self.halo.post(comm, &self.old, cols)?;
        let Exchange {
            recv_up,
            recv_down,
            send_up,
            send_down,
        } = exchange;
        let old: &[f64] = &self.old;
        let (first, rest) = self.new.split_at_mut(cols);
        let (interior, last) = rest.split_at_mut(n.saturating_sub(2) * cols);
        let halo = &mut self.halo;
        let (chunk_rows, places) = (self.chunk_rows, &self.places);
        let mut recvs = Some((recv_up, recv_down));
        let mut wait_halos = |halo: &mut Halo| match recvs.take() {
            Some((up, down)) => {
                wait_into(up, &mut halo.recv_up).and_then(|()| wait_into(down, &mut halo.recv_down))
            }
            None => Ok(()),
        };
        let mut result = Ok(());
        if !overlap {
            result = wait_halos(halo);
        }
        terroir::scope(|s| {
            for (k, rows) in interior.chunks_mut(chunk_rows * cols).enumerate() {
                s.spawn_on(&places[k], move |_| {
                    let i0 = 1 + k * chunk_rows;
                    for (r, out) in rows.chunks_mut(cols).enumerate() {
                        let i = i0 + r;
                        stencil_row(
                            &old[(i - 1) * cols..i * cols],
                            &old[i * cols..(i + 1) * cols],
                            &old[(i + 1) * cols..(i + 2) * cols],
                            out,
                        );
                    }
                });
            }
            if overlap {
                // This task waits for the halos by running the interior
                // tasks (and any other work) meanwhile.
                result = wait_halos(halo);
            }
            if result.is_err() {
                return;
            }
            let up = if halo.up.is_some() {
                &halo.recv_up
            } else {
                &self.hot
            };
            let down = if halo.down.is_some() {
                &halo.recv_down
            } else {
                &self.cold
            };
            if n == 1 {
                stencil_row(up, &old[..cols], down, first);
            } else {
                stencil_row(up, &old[..cols], &old[cols..2 * cols], first);
                stencil_row(
                    &old[(n - 2) * cols..(n - 1) * cols],
                    &old[(n - 1) * cols..],
                    down,
                    last,
                );
            }
        });
        result?;
        wait_into(send_up, &mut halo.send_up)?;
        wait_into(send_down, &mut halo.send_down)?;
        std::mem::swap(&mut self.old, &mut self.new);
        Ok(())
    }
}

/// Sends every block to rank 0; the whole grid there, `None` elsewhere.
fn gather(
    comm: &Comm,
    block: &[f64],
    rows: usize,
    cols: usize,
) -> Result<Option<Vec<f64>>, CommError> {
    if comm.rank() != 0 {
        comm.isend(0, TAG_GATHER, block.to_vec())?.wait()?;
        return Ok(None);
    }
    let mut grid = block.to_vec();
    let requests = (1..comm.size())
        .map(|r| {
            let len = split_rows(rows, comm.size(), r).map_or(0, |b| b.len()) * cols;
            comm.irecv(r, TAG_GATHER, vec![0.0; len])
        })
        .collect::<Result<Vec<_>, _>>()?;
    for part in terroir_mpi::wait_all(requests)? {
        grid.extend_from_slice(&part);
    }
    Ok(Some(grid))
}

/// Gathers the ranks' recordings; rank 0 writes the job's report into
/// `dir` and prints one line. Collective.
#[cfg(feature = "report")]
fn write_report(
    rank: &Rank,
    recording: Option<&terroir_mpi::report::RankRecording>,
    dir: &std::path::Path,
) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(job) = terroir_mpi::report::JobRecording::gather(rank, recording)? {
        job.write_all(dir)?;
        let tasks: usize = job.ranks.iter().map(|r| r.tasks.len()).sum();
        println!(
            "report: ranks={} tasks={tasks} dir={}",
            job.ranks.len(),
            dir.display()
        );
    }
    Ok(())
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("heat: {e}");
        exit(2);
    });
    let rank = terroir_mpi::init().unwrap_or_else(|e| {
        eprintln!("heat: {e}");
        exit(1);
    });
    let mut block = match Block::new(&rank, args.rows, args.cols) {
        Ok(b) => b,
        Err(e) => {
            if rank.rank() == 0 {
                eprintln!("heat: {e}");
            }
            drop(rank);
            exit(1);
        }
    };
    rank.world().barrier();
    let start = Instant::now();
    let steps = |comm: &Comm| (0..args.steps).try_for_each(|_| block.step(comm, args.overlap));
    #[cfg(feature = "report")]
    let (stepped, recording) = if args.report.is_some() {
        let (stepped, recording) = rank.run_recorded(steps);
        (stepped, Some(recording))
    } else {
        (rank.run(steps), None)
    };
    #[cfg(not(feature = "report"))]
    let stepped = rank.run(steps);
    rank.world().barrier();
    let time_s = start.elapsed().as_secs_f64();
    if let Err(e) = stepped {
        eprintln!("heat: rank {}: {e}", rank.rank());
        drop(rank);
        exit(1);
    }
    #[cfg(feature = "report")]
    if let Some(dir) = &args.report {
        if let Err(e) = write_report(&rank, recording.as_ref(), dir) {
            eprintln!("heat: rank {}: {e}", rank.rank());
            drop(rank);
            exit(1);
        }
    }
    let verified = if args.verify {
        let grid = rank.run(|comm| gather(comm, &block.old, args.rows, args.cols));
        match grid {
            Ok(Some(grid)) => {
                let want = sequential(args.rows, args.cols, args.steps);
                Some(
                    grid.len() == want.len()
                        && grid
                            .iter()
                            .zip(&want)
                            .all(|(a, b)| a.to_bits() == b.to_bits()),
                )
            }
            Ok(None) => None,
            Err(e) => {
                eprintln!("heat: rank {}: gathering: {e}", rank.rank());
                drop(rank);
                exit(1);
            }
        }
    } else {
        None
    };
    if rank.rank() == 0 {
        println!(
            "heat ranks={} threads={} size={}x{} steps={} overlap={} time_s={:.3} verified={}",
            rank.size(),
            rank.pool().current_num_threads(),
            args.rows,
            args.cols,
            args.steps,
            if args.overlap { "on" } else { "off" },
            time_s,
            verified.map_or("skipped".to_owned(), |v| v.to_string())
        );
        if verified == Some(false) {
            drop(rank);
            exit(1);
        }
    }
}
