//! `heat`: Cilk's heat diffusion (the `heat.cilk` example of Cilk-5, one
//! of the fork-join programs Olivier et al. ran on their NUMA schedulers).
//!
//! The explicit (forward Euler) scheme for the 2-D heat equation
//! `u_t = u_xx + u_yy` on `[0, π/2]²`, time `[0, 1e-7]`, with Cilk's
//! initial condition `u = sin x · sin y` and boundary values
//! `u(x, 0) = u(0, y) = 0`, `u(x, π/2) = e^(-2t) sin x`,
//! `u(π/2, y) = e^(-2t) sin y`. Each time step computes a new grid from
//! the old one (double-buffered; the buffers swap roles every step):
//!
//! ```text
//! new[i][j] = old[i][j] + dt/dx² (old[i+1][j] - 2 old[i][j] + old[i-1][j])
//!                       + dt/dy² (old[i][j+1] - 2 old[i][j] + old[i][j-1])
//! ```
//!
//! In parallel, each step is divide-and-conquer over the rows, as in Cilk:
//! the row range is halved with `join` until it has at most
//! [`LEAF_ROWS`] (10, Cilk's `leafmaxcol`) rows, and each leaf computes its
//! rows (label `heat-block`). The rayon version is the same recursion with
//! `rayon::join`; the sequential one computes all rows in one loop (every
//! cell is computed by the same expression, so the bits agree). The
//! parallel-iterator versions (terroir's and rayon's, the same code under
//! each prelude) loop over the rows:
//! `out.par_chunks_mut(ny).enumerate().for_each(..)`.
//!
//! **Size parameter:** the grid side `n` (an `n × n` grid, `n ≥ 4`).
//! Presets: small 32 (4 steps), default 1024 (40 steps, two grids of 8 MiB),
//! large 4096 (40 steps, two grids of 128 MiB). A numeric size gets 40
//! steps.
//!
//! **Data:** two ordinary `Vec<f64>` grids (not placed: this is the
//! locality-oblivious fork-join version, also run under rayon), first
//! touched by the building thread.
//!
//! **Kind:** a 5-point stencil, cache-bound while the two grids fit in the
//! last-level cache (default: 16 MiB) and memory-bandwidth-bound beyond
//! (large: 256 MiB), with fine-grained fork-join parallelism (leaves of 5
//! to 10 rows: 128 leaves per step at the default size) and a barrier per
//! step.

use std::sync::Mutex;

use super::{checksum, Size, Workload};
use terroir::numa::Topology;
use terroir::ThreadPool;

/// Rows per leaf: the row range is split while it has more (Cilk's
/// `leafmaxcol`).
pub const LEAF_ROWS: usize = 10;

/// Lower x bound (Cilk's `xu`).
const XU: f64 = 0.0;
/// Upper x bound (Cilk's `xo`, π/2).
const XO: f64 = std::f64::consts::FRAC_PI_2;
/// Lower y bound (`yu`).
const YU: f64 = 0.0;
/// Upper y bound (`yo`, π/2).
const YO: f64 = std::f64::consts::FRAC_PI_2;
/// Start time (`tu`).
const TU: f64 = 0.0;
/// End time (`to`).
const TO: f64 = 0.000_000_1;

/// The initial condition.
fn f(x: f64, y: f64) -> f64 {
    x.sin() * y.sin()
}

/// Boundary at `y = yu` (column 0).
fn randa(_x: f64, _t: f64) -> f64 {
    0.0
}

/// Boundary at `y = yo` (column `ny - 1`).
fn randb(x: f64, t: f64) -> f64 {
    (-2.0 * t).exp() * x.sin()
}

/// Boundary at `x = xu` (row 0).
fn randc(_y: f64, _t: f64) -> f64 {
    0.0
}

/// Boundary at `x = xo` (row `nx - 1`).
fn randd(y: f64, t: f64) -> f64 {
    (-2.0 * t).exp() * y.sin()
}

/// The two grids (row-major, `nx × ny`).
struct Grids {
    /// The grid read by odd steps and holding the initial condition.
    a: Vec<f64>,
    /// The grid written by odd steps.
    b: Vec<f64>,
}

/// The heat workload: grid geometry, the initial grid and the two buffers.
struct Heat {
    /// Rows.
    nx: usize,
    /// Columns.
    ny: usize,
    /// Time steps.
    nt: usize,
    /// Cell height.
    dx: f64,
    /// Cell width.
    dy: f64,
    /// Time step.
    dt: f64,
    /// `dt / dx²`.
    dtdxsq: f64,
    /// `dt / dy²`.
    dtdysq: f64,
    /// The initial condition, copied into the grids by `setup`.
    init: Vec<f64>,
    /// The double buffer; the lock is only taken by one run at a time.
    grids: Mutex<Grids>,
}

/// Builds the workload (see the module docs for the size parameter).
pub fn new(size: Size, topology: &Topology) -> Result<Box<dyn Workload>, String> {
    let _ = topology;
    let n = size.pick(32, 1024, 4096);
    if n < 4 {
        return Err(format!("heat: the grid side must be at least 4, not {n}"));
    }
    let nt = if size == Size::Small { 4 } else { 40 };
    let (nx, ny) = (n, n);
    let dx = (XO - XU) / (nx - 1) as f64;
    let dy = (YO - YU) / (ny - 1) as f64;
    let dt = (TO - TU) / nt as f64;
    let init: Vec<f64> = (0..nx * ny)
        .map(|k| f(XU + (k / ny) as f64 * dx, YU + (k % ny) as f64 * dy))
        .collect();
    Ok(Box::new(Heat {
        nx,
        ny,
        nt,
        dx,
        dy,
        dt,
        dtdxsq: dt / (dx * dx),
        dtdysq: dt / (dy * dy),
        grids: Mutex::new(Grids {
            a: init.clone(),
            b: vec![0.0; nx * ny],
        }),
        init,
    }))
}

impl Heat {
    /// Computes rows `lb..ub` of the new grid at time `t` into `out` (those
    /// rows only) from the whole `old` grid: Cilk's leaf.
    fn rows(&self, out: &mut [f64], lb: usize, ub: usize, old: &[f64], t: f64) {
        let (nx, ny) = (self.nx, self.ny);
        for (i, o) in (lb..ub).zip(out.chunks_exact_mut(ny)) {
            if i == 0 {
                for (j, v) in o.iter_mut().enumerate() {
                    *v = randc(YU + j as f64 * self.dy, t);
                }
            } else if i == nx - 1 {
                for (j, v) in o.iter_mut().enumerate() {
                    *v = randd(YU + j as f64 * self.dy, t);
                }
            } else {
                let up = &old[(i - 1) * ny..i * ny];
                let mid = &old[i * ny..(i + 1) * ny];
                let down = &old[(i + 1) * ny..(i + 2) * ny];
                o[0] = randa(XU + i as f64 * self.dx, t);
                for j in 1..ny - 1 {
                    o[j] = mid[j]
                        + self.dtdxsq * (down[j] - 2.0 * mid[j] + up[j])
                        + self.dtdysq * (mid[j + 1] - 2.0 * mid[j] + mid[j - 1]);
                }
                o[ny - 1] = randb(XU + i as f64 * self.dx, t);
            }
        }
    }

    /// Rows `lb..ub` (held in `out`) by divide and conquer with terroir's
    /// `join`.
    fn stripe_terroir(&self, out: &mut [f64], lb: usize, ub: usize, old: &[f64], t: f64) {
        if ub - lb > LEAF_ROWS {
            let mid = (lb + ub) / 2;
            let (lo, hi) = out.split_at_mut((mid - lb) * self.ny);
            terroir::join(
                || self.stripe_terroir(lo, lb, mid, old, t),
                || self.stripe_terroir(hi, mid, ub, old, t),
            );
        } else {
            terroir::label("heat-block", || self.rows(out, lb, ub, old, t));
        }
    }

    /// The same recursion with `rayon::join`.
    fn stripe_rayon(&self, out: &mut [f64], lb: usize, ub: usize, old: &[f64], t: f64) {
        if ub - lb > LEAF_ROWS {
            let mid = (lb + ub) / 2;
            let (lo, hi) = out.split_at_mut((mid - lb) * self.ny);
            rayon::join(
                || self.stripe_rayon(lo, lb, mid, old, t),
                || self.stripe_rayon(hi, mid, ub, old, t),
            );
        } else {
            self.rows(out, lb, ub, old, t);
        }
    }

    /// Runs the `nt` steps, computing each with `step(out, old, t)`, and
    /// returns the checksum of the final grid.
    fn run(&self, step: impl Fn(&mut [f64], &[f64], f64)) -> u64 {
        let mut guard = self.grids.lock().unwrap_or_else(|e| e.into_inner());
        let Grids { a, b } = &mut *guard;
        let (mut old, mut new) = (a, b);
        for c in 1..=self.nt {
            let t = TU + c as f64 * self.dt;
            step(new, old, t);
            std::mem::swap(&mut old, &mut new);
        }
        checksum(old.iter().map(|x| x.to_bits()))
    }
}

impl Workload for Heat {
    fn name(&self) -> &'static str {
        "heat"
    }

    fn describe(&self) -> String {
        format!(
            "{}x{} grid, {} steps, leaves of {} rows",
            self.nx, self.ny, self.nt, LEAF_ROWS
        )
    }

    fn setup(&self) {
        let mut g = self.grids.lock().unwrap_or_else(|e| e.into_inner());
        g.a.copy_from_slice(&self.init);
    }

    fn sequential(&self) -> u64 {
        self.run(|out, old, t| self.rows(out, 0, self.nx, old, t))
    }

    fn terroir(&self, pool: &ThreadPool) -> u64 {
        pool.install(|| self.run(|out, old, t| self.stripe_terroir(out, 0, self.nx, old, t)))
    }

    fn rayon(&self, pool: &rayon::ThreadPool) -> Option<u64> {
        Some(pool.install(|| self.run(|out, old, t| self.stripe_rayon(out, 0, self.nx, old, t))))
    }

    fn terroir_iter(&self, pool: &ThreadPool) -> Option<u64> {
        use terroir::prelude::*;
        Some(pool.install(|| {
            self.run(|out, old, t| {
                out.par_chunks_mut(self.ny)
                    .enumerate()
                    .for_each(|(i, row)| self.rows(row, i, i + 1, old, t))
            })
        }))
    }

    fn rayon_iter(&self, pool: &rayon::ThreadPool) -> Option<u64> {
        use rayon::prelude::*;
        Some(pool.install(|| {
            self.run(|out, old, t| {
                out.par_chunks_mut(self.ny)
                    .enumerate()
                    .for_each(|(i, row)| self.rows(row, i, i + 1, old, t))
            })
        }))
    }
}
