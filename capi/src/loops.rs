//! `terroir_parallel_for`: OpenMP's `parallel for` as one call, the C face
//! of [`terroir::iter::parallel_for`]. The C function gets sub-ranges
//! (`fn(begin, end, arg)`), one call per batch of indices, never one per
//! index; the schedule is adaptive (split only when a worker is idle) or
//! static (worker `k` always gets share `k`: first touch through the
//! loop); an optional data range places the loop where its data lives.

use std::ffi::{c_int, c_void};
use std::mem::{offset_of, size_of};

use super::error::{call, Error, TerroirError};
use super::group::{to_place, TerroirPlace, TerroirPlaceKind};
use super::memory::check_range;
use super::pool::{with_pool, TerroirPool};
use super::sized::{read_sized, SizedStruct};
use terroir::__capi::install_carrying_frame;
use terroir::iter::{parallel_for, ForOptions, Schedule};

/// The body of a `terroir_parallel_for`: called with `begin < end`, a
/// sub-range of the loop's range, and the loop's `arg`, on any worker,
/// several at a time. It must not unwind (no C++ exception or `longjmp`
/// may leave it).
pub type TerroirRangeFn = Option<unsafe extern "C" fn(begin: usize, end: usize, arg: *mut c_void)>;

/// How `terroir_parallel_for` splits its range (the `schedule` field of
/// `terroir_for_options`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TerroirSchedule {
    /// Adaptive (the default): the calling worker runs batch after batch
    /// and gives half of what is left to a worker that is idle; a loop on
    /// a busy pool costs about a sequential loop.
    Adaptive = 0,
    /// OpenMP's `schedule(static)`: one contiguous share per worker
    /// (workers in node order, or each node's share of the data range over
    /// that node's workers), worker `k` always running share `k` of a loop
    /// of the same length, so that a loop that first touches memory and a
    /// later loop over it touch the same pages from the same workers.
    Static = 1,
}

/// Options of `terroir_parallel_for` (NULL: the defaults, an adaptive
/// loop placed nowhere in particular). A struct that can grow: start from
/// `TERROIR_FOR_OPTIONS_INIT`, which sets `size`, then set fields.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TerroirForOptions {
    /// `sizeof(terroir_for_options)` as the caller's header declares it.
    pub size: usize,
    /// A `terroir_schedule` value.
    pub schedule: u32,
    /// Nonzero: run each node's share of the data range only on that
    /// node's workers (under every policy); zero: a hint, which the
    /// `LOCALITY` policies honour.
    pub strict: u32,
    /// Poll for split requests at least every `max_len` indices (0: no
    /// bound).
    pub max_len: usize,
    /// The data the loop walks (NULL: none), index `begin` to `end` mapped
    /// linearly onto its `data_len` bytes. An allocation of
    /// `terroir_alloc_*` (the whole of it) is placed without a system
    /// call, a blocked one share by share on its nodes; other memory is
    /// placed on the node holding most of it (one page-location query).
    pub data: *const c_void,
    /// The length of `data` in bytes.
    pub data_len: usize,
}

impl Default for TerroirForOptions {
    fn default() -> Self {
        TerroirForOptions {
            size: 0,
            schedule: 0,
            strict: 0,
            max_len: 0,
            data: std::ptr::null(),
            data_len: 0,
        }
    }
}

// SAFETY: `#[repr(C)]`, `size: usize` first, integer and raw pointer
// fields only (every bit pattern is valid); zero is the default of each.
unsafe impl SizedStruct for TerroirForOptions {
    const C_NAME: &'static str = "terroir_for_options";
    const ARG: &'static str = "options";
    // The first version ends with `data_len`: this must not change when
    // fields are added.
    const MIN_SIZE: usize = offset_of!(TerroirForOptions, data_len) + size_of::<usize>();
    fn zeroed() -> Self {
        TerroirForOptions::default()
    }
}

/// The C function and its argument, shared by the workers.
#[derive(Clone, Copy)]
struct Body {
    f: unsafe extern "C" fn(usize, usize, *mut c_void),
    arg: *mut c_void,
}

// SAFETY: the C caller promises that `f` may be called with `arg` from
// any thread, several at a time, until `terroir_parallel_for` returns (its
// documented contract); terroir never touches `arg` itself.
unsafe impl Send for Body {}
// SAFETY: as above; terroir shares only the two pointer values.
unsafe impl Sync for Body {}

/// Calls `fn(begin, end, arg)` for sub-ranges that together cover
/// `begin .. end` exactly once, in parallel on `pool`, and returns when
/// all are done: OpenMP's `parallel for` (`schedule(static)` with
/// `TERROIR_SCHEDULE_STATIC`). Each call gets a batch of indices (at
/// least `grain` of them, unless fewer are left; about ten microseconds
/// of work or more under the adaptive schedule), so the function is
/// called once per batch, not once per index.
///
/// `pool` NULL is the pool of the calling worker, or the global pool on a
/// thread outside every pool (which then blocks until the loop is done).
/// `grain` 0 means automatic. `begin == end` calls nothing. `options` may
/// be NULL (adaptive, no data range).
///
/// Errors: `TERROIR_ERROR_NULL_POINTER` (`fn`; `options->data` NULL with a
/// nonzero `options->data_len`), `TERROIR_ERROR_INVALID_ARGUMENT`
/// (`begin > end`, `options->size` or `options->schedule` out of range, a
/// data range past the end of the address space),
/// `TERROIR_ERROR_ZERO_SIZE` (`options->data` with `data_len` 0),
/// `TERROIR_ERROR_INVALID_HANDLE` (`pool`).
///
/// # Safety
/// `fn` must be safe to call with `arg` and any sub-range from any thread,
/// several at a time, until this function returns; `options` is NULL or
/// points to a `terroir_for_options` of `options->size` bytes;
/// `options->data` (when not NULL) is `data_len` bytes of memory of this
/// process.
#[no_mangle]
pub unsafe extern "C" fn terroir_parallel_for(
    pool: *mut TerroirPool,
    begin: usize,
    end: usize,
    grain: usize,
    r#fn: TerroirRangeFn,
    arg: *mut c_void,
    options: *const TerroirForOptions,
) -> c_int {
    call("terroir_parallel_for", || {
        let f = r#fn.ok_or_else(|| Error::null("fn"))?;
        if begin > end {
            return Err(Error::invalid(format!(
                "begin = {begin} is greater than end = {end}: the range is empty only when \
                 begin == end"
            )));
        }
        // SAFETY: the caller's promise on `options`.
        let o = unsafe { read_sized(options) }?.unwrap_or_default();
        let schedule = match o.schedule {
            s if s == TerroirSchedule::Adaptive as u32 => Schedule::Adaptive,
            s if s == TerroirSchedule::Static as u32 => Schedule::Static,
            s => {
                return Err(Error::invalid(format!(
                    "options->schedule = {s} is not a terroir_schedule (0 to 1)"
                )))
            }
        };
        if o.data.is_null() && o.data_len != 0 {
            return Err(Error::null("options->data"));
        }
        if !o.data.is_null() && o.data_len == 0 {
            return Err(Error::new(
                TerroirError::ZeroSize,
                "options->data_len is 0 with options->data set",
            ));
        }
        if !o.data.is_null() {
            check_range(o.data, o.data_len, "options->data", "options->data_len")?;
        }
        let body = Body { f, arg };
        with_pool(pool, |p| {
            let mut opts = ForOptions::new().schedule(schedule);
            if grain > 0 {
                opts = opts.grain(grain);
            }
            if o.max_len > 0 {
                opts = opts.max_len(o.max_len);
            }
            if o.strict != 0 {
                opts = opts.strict();
            }
            if !o.data.is_null() {
                let place = TerroirPlace {
                    kind: TerroirPlaceKind::Data as u32,
                    node: 0,
                    worker: 0,
                    data: o.data,
                    len: o.data_len,
                    strict: false,
                };
                opts = opts.place(to_place(p, Some(&place))?);
            }
            if begin == end {
                return Ok(());
            }
            install_carrying_frame(p, || {
                parallel_for(begin..end, &opts, move |r| {
                    let body = body;
                    // SAFETY: the caller's promise: `f` may be called with
                    // `arg` and any sub-range, from any thread, until
                    // this function returns (it has not: the loop is
                    // still running).
                    unsafe { (body.f)(r.start, r.end, body.arg) }
                })
            });
            Ok(())
        })
    })
}
