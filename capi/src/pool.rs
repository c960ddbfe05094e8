//! Pools: create, destroy, the global pool, queries, and `terroir_join`.

use std::ffi::{c_int, c_void};
use std::mem::{offset_of, size_of};
use std::ptr;
use std::sync::{Arc, Mutex, OnceLock};

use super::error::{call, call_infallible, Error, TerroirError};
use super::handle::{HandleTable, LocalFree};
use super::sized::{read_sized, SizedStruct};
use super::task::CTask;
use terroir::__capi::{
    current_pool_tag, install_carrying_frame, set_pool_tag, with_current_pool, Worker,
};
use terroir::{Pinning, Policy, ThreadPool, ThreadPoolBuilder};

/// An opaque pool handle. A `terroir_pool *` is a key into terroir's
/// handle table, never dereferenced, so a destroyed or garbage handle is
/// reported (`TERROIR_ERROR_INVALID_HANDLE`), not undefined behaviour.
/// Where a function takes a pool, NULL means the pool of the calling
/// worker thread, or the global pool on a thread outside every pool.
pub struct TerroirPool {
    _opaque: [u8; 0],
}

/// A C task: `void f(void *arg)`. It must not unwind (no C++ exception or
/// `longjmp` may leave it).
pub type TerroirTaskFn = Option<unsafe extern "C" fn(arg: *mut c_void)>;

/// The stealing policy of a pool (`terroir_pool_config.policy`); see the
/// crate's `Policy`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TerroirPolicy {
    /// `TERROIR_POLICY` from the environment if set, else `LOCALITY`.
    Default = 0,
    /// Random victims, topology ignored (the rayon-like baseline); place
    /// hints ignored, strict places honoured.
    Flat = 1,
    /// Own deque, then L3 neighbours, own node, other nodes nearest first;
    /// place hints ignored, strict places honoured.
    Hierarchical = 2,
    /// Hierarchical stealing; places are hints, strict places strict.
    Locality = 3,
    /// Every node or worker place is strict.
    StrictLocality = 4,
}

/// Whether a pool pins its workers (`terroir_pool_config.pin`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TerroirPin {
    /// terroir's default (`TERROIR_PIN` may override it): pinned, each
    /// worker to the processing units sharing its PU's L3 cache, within its
    /// node.
    Default = 0,
    /// Pin each worker, to its PU's L3 cache group (or as `TERROIR_PIN`
    /// says: `pu`, `cache` or `node`).
    On = 1,
    /// Do not pin.
    Off = 2,
    /// Pin each worker to its processing unit alone. A thread outside the
    /// pool running on that PU competes with the worker, which cannot move
    /// away.
    Pu = 3,
    /// Pin each worker to the processing units sharing its PU's L3 cache,
    /// within its node.
    Cache = 4,
    /// Pin each worker to its node's processing units.
    Node = 5,
}

/// How to build a pool. Set `size` to `sizeof(terroir_pool_config)` (or
/// start from `TERROIR_POOL_CONFIG_INIT`); every other field's zero is its
/// default (a NULL config pointer is the defaults too).
///
/// The struct can grow: later versions add fields at its end, and the
/// library reads only the caller's `size` bytes, giving the fields a
/// caller does not know their defaults; fields of a newer header that this
/// library does not know must be zero. A `size` below this first
/// version's is `TERROIR_ERROR_INVALID_ARGUMENT` naming `config->size`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TerroirPoolConfig {
    /// `sizeof(terroir_pool_config)` as the caller's header declares it.
    pub size: usize,
    /// Number of workers; 0: `TERROIR_NUM_THREADS` if set, else one per
    /// processing unit this process may use.
    pub num_threads: usize,
    /// A `terroir_policy` value.
    pub policy: u32,
    /// A `terroir_pin` value.
    pub pin: u32,
}

// SAFETY: `#[repr(C)]`, `size: usize` first, integer fields only; zero is
// the default of each.
unsafe impl SizedStruct for TerroirPoolConfig {
    const C_NAME: &'static str = "terroir_pool_config";
    const ARG: &'static str = "config";
    // The first version ends with `pin`: this must not change when fields
    // are added.
    const MIN_SIZE: usize = offset_of!(TerroirPoolConfig, pin) + size_of::<u32>();
    fn zeroed() -> Self {
        TerroirPoolConfig::default()
    }
}

/// A live pool: what a pool handle stands for.
pub(crate) struct PoolEntry {
    pub(crate) pool: ThreadPool,
    /// Its handle (the global pool's too).
    pub(crate) handle: usize,
    global: bool,
}

thread_local!(static FREE_POOL_SLOTS: LocalFree = const { LocalFree::new() });
pub(crate) static POOLS: HandleTable<PoolEntry> = HandleTable::new("pool", &FREE_POOL_SLOTS);
static GLOBAL: OnceLock<Arc<PoolEntry>> = OnceLock::new();
static GLOBAL_INIT: Mutex<()> = Mutex::new(());

pub(crate) fn handle_ptr<T>(handle: usize) -> *mut T {
    // A key, not an address: it must never be dereferenced.
    ptr::without_provenance_mut(handle)
}

fn builder(config: Option<TerroirPoolConfig>, global: bool) -> Result<ThreadPoolBuilder, Error> {
    let config = config.unwrap_or_default();
    let mut b = ThreadPoolBuilder::new()
        .num_threads(config.num_threads)
        .thread_name(move |i| {
            if global {
                format!("terroir-global-{i}")
            } else {
                format!("terroir-{i}")
            }
        })
        // C tasks do not unwind, so a panic in a spawned job is a terroir
        // bug: report it rather than abort the C program.
        .panic_handler(|_| eprintln!("terroir: a task of a C pool panicked (a terroir bug)"));
    b = match config.policy {
        p if p == TerroirPolicy::Default as u32 => b,
        p if p == TerroirPolicy::Flat as u32 => b.policy(Policy::Flat),
        p if p == TerroirPolicy::Hierarchical as u32 => b.policy(Policy::Hierarchical),
        p if p == TerroirPolicy::Locality as u32 => b.policy(Policy::Locality),
        p if p == TerroirPolicy::StrictLocality as u32 => b.policy(Policy::StrictLocality),
        p => {
            return Err(Error::invalid(format!(
                "config->policy = {p} is not a terroir_policy (0 to 4)"
            )))
        }
    };
    b = match config.pin {
        p if p == TerroirPin::Default as u32 => b,
        p if p == TerroirPin::On as u32 => b.pin(true),
        p if p == TerroirPin::Off as u32 => b.pin(false),
        p if p == TerroirPin::Pu as u32 => b.pinning(Pinning::Pu),
        p if p == TerroirPin::Cache as u32 => b.pinning(Pinning::Cache),
        p if p == TerroirPin::Node as u32 => b.pinning(Pinning::Node),
        p => {
            return Err(Error::invalid(format!(
                "config->pin = {p} is not a terroir_pin (0 to 5)"
            )))
        }
    };
    Ok(b)
}

fn register(pool: ThreadPool, global: bool) -> Result<Arc<PoolEntry>, Error> {
    // Tagged with its handle: a worker of the pool knows it without a
    // lookup (a handle argument naming the caller's own pool).
    let handle = POOLS.insert(|handle| {
        set_pool_tag(&pool, handle);
        PoolEntry {
            pool,
            handle,
            global,
        }
    })?;
    POOLS.get(handle)
}

/// Builds the global pool (with `config`) unless it exists.
fn init_global(config: Option<TerroirPoolConfig>) -> Result<Arc<PoolEntry>, Error> {
    let _guard = GLOBAL_INIT.lock().unwrap_or_else(|e| e.into_inner());
    if GLOBAL.get().is_some() {
        return Err(Error::new(
            TerroirError::GlobalAlreadyInitialized,
            "the global pool exists already (built by an earlier terroir_pool_global_init, or \
             with the defaults by the first use of the global pool)",
        ));
    }
    let entry = register(builder(config, true)?.build()?, true)?;
    Ok(Arc::clone(GLOBAL.get_or_init(|| entry)))
}

/// The global pool, built with the defaults on first use.
pub(crate) fn global_pool() -> Result<Arc<PoolEntry>, Error> {
    match GLOBAL.get() {
        Some(g) => Ok(Arc::clone(g)),
        None => match init_global(None) {
            Err(e) if e.code == TerroirError::GlobalAlreadyInitialized => {
                Ok(Arc::clone(GLOBAL.get().expect("initialized")))
            }
            r => r,
        },
    }
}

/// Runs `f` with the pool `pool` stands for: NULL is the calling worker's
/// pool, or the global pool on a thread outside every pool; the handle of
/// the calling worker's own pool needs no lookup.
pub(crate) fn with_pool<R>(
    pool: *mut TerroirPool,
    f: impl FnOnce(&ThreadPool) -> Result<R, Error>,
) -> Result<R, Error> {
    match current_pool_tag() {
        Some(tag) if pool.is_null() || tag == pool.addr() => {
            with_current_pool(f).expect("the calling thread is a worker")
        }
        _ if pool.is_null() => f(&global_pool()?.pool),
        _ => f(&POOLS.get(pool.addr())?.pool),
    }
}

pub(crate) fn write<T>(out: *mut T, name: &str, value: T) -> Result<(), Error> {
    if out.is_null() {
        return Err(Error::null(name));
    }
    // SAFETY: non-null, and the C caller promises it points to writable
    // storage for a `T`.
    unsafe { out.write(value) };
    Ok(())
}

/// Builds a pool.
///
/// `config` may be NULL (the defaults). On success `*out` is the new
/// pool's handle. Errors: `TERROIR_ERROR_NULL_POINTER` (`out`),
/// `TERROIR_ERROR_INVALID_ARGUMENT` (`config->size` not set, or a nonzero
/// field this library does not know; a policy or pin value out of range),
/// `TERROIR_ERROR_POOL_BUILD` (topology discovery, pinning, thread start,
/// or a bad `TERROIR_NUM_THREADS`/`TERROIR_POLICY`).
///
/// # Safety
/// `config` is NULL or points to a `terroir_pool_config` of
/// `config->size` bytes; `out` is NULL or
/// points to writable storage for a pointer.
#[no_mangle]
pub unsafe extern "C" fn terroir_pool_create(
    config: *const TerroirPoolConfig,
    out: *mut *mut TerroirPool,
) -> c_int {
    call("terroir_pool_create", || {
        if out.is_null() {
            return Err(Error::null("out"));
        }
        // SAFETY: NULL or a config of `config->size` bytes (the caller's
        // promise).
        let config = unsafe { read_sized(config) }?;
        let entry = register(builder(config, false)?.build()?, false)?;
        write(out, "out", handle_ptr(entry.handle))
    })
}

/// Destroys a pool handle. The pool's workers finish the work already
/// queued and exit once nothing uses the pool any more (groups created on
/// it keep it alive until they are destroyed; a call running on it keeps
/// it alive until it returns).
///
/// Errors: `TERROIR_ERROR_NULL_POINTER`; `TERROIR_ERROR_INVALID_HANDLE` for
/// a handle destroyed already (a double destroy) or never returned by
/// terroir; `TERROIR_ERROR_INVALID_ARGUMENT` for the global pool, which
/// lives as long as the process.
///
/// # Safety
/// Any pointer value is accepted: handles are never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn terroir_pool_destroy(pool: *mut TerroirPool) -> c_int {
    call("terroir_pool_destroy", || {
        if pool.is_null() {
            return Err(Error::null("pool"));
        }
        if POOLS.get(pool.addr())?.global {
            return Err(Error::invalid(
                "the global pool cannot be destroyed (it lives as long as the process)",
            ));
        }
        drop(POOLS.remove(pool.addr())?);
        Ok(())
    })
}

/// Builds the process-wide global pool with `config` (NULL: the defaults).
/// Call it before anything uses the global pool.
///
/// The global pool lives in the terroir library: every object of the
/// process that links `libterroir.so` shares it. (Each copy of the static
/// library linked into a different shared object can have a pool of its
/// own: see the README.)
///
/// Errors: `TERROIR_ERROR_GLOBAL_ALREADY_INITIALIZED` when the global pool
/// exists (initialized already, or built with the defaults by a first
/// use); as `terroir_pool_create` otherwise.
///
/// # Safety
/// `config` is NULL or points to a `terroir_pool_config` of
/// `config->size` bytes.
#[no_mangle]
pub unsafe extern "C" fn terroir_pool_global_init(config: *const TerroirPoolConfig) -> c_int {
    call("terroir_pool_global_init", || {
        // SAFETY: NULL or a config of `config->size` bytes (the caller's
        // promise).
        init_global(unsafe { read_sized(config) }?).map(drop)
    })
}

/// `*out` = the handle of the global pool (built with the defaults if this
/// is its first use). It cannot be destroyed.
///
/// Errors: `TERROIR_ERROR_NULL_POINTER`; `TERROIR_ERROR_POOL_BUILD` if the
/// default pool cannot be built.
///
/// # Safety
/// `out` is NULL or points to writable storage for a pointer.
#[no_mangle]
pub unsafe extern "C" fn terroir_pool_global(out: *mut *mut TerroirPool) -> c_int {
    call("terroir_pool_global", || {
        if out.is_null() {
            return Err(Error::null("out"));
        }
        write(out, "out", handle_ptr(global_pool()?.handle))
    })
}

/// `*out` = the number of workers of `pool` (NULL: the current pool).
///
/// # Safety
/// `out` is NULL or points to writable storage for a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn terroir_pool_num_workers(
    pool: *mut TerroirPool,
    out: *mut usize,
) -> c_int {
    call("terroir_pool_num_workers", || {
        if out.is_null() {
            return Err(Error::null("out"));
        }
        let n = with_pool(pool, |p| Ok(p.current_num_threads()))?;
        write(out, "out", n)
    })
}

/// `*out` = the number of NUMA nodes of `pool`'s topology (NULL: the
/// current pool).
///
/// # Safety
/// `out` is NULL or points to writable storage for a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn terroir_pool_num_nodes(pool: *mut TerroirPool, out: *mut usize) -> c_int {
    call("terroir_pool_num_nodes", || {
        if out.is_null() {
            return Err(Error::null("out"));
        }
        let n = with_pool(pool, |p| Ok(p.topology().nodes().len()))?;
        write(out, "out", n)
    })
}

/// `*out` = the OS number of node `index` (0 to `num_nodes - 1`) of
/// `pool`'s topology: the number that places and the memory functions
/// take. Errors: `TERROIR_ERROR_INVALID_NODE` for an index out of range.
///
/// # Safety
/// `out` is NULL or points to writable storage for a `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn terroir_pool_node_id(
    pool: *mut TerroirPool,
    index: usize,
    out: *mut u32,
) -> c_int {
    call("terroir_pool_node_id", || {
        if out.is_null() {
            return Err(Error::null("out"));
        }
        let id = with_pool(pool, |p| {
            let nodes = p.topology().nodes();
            let node = nodes.get(index).ok_or_else(|| {
                Error::new(
                    TerroirError::InvalidNode,
                    format!(
                        "node index {index} is out of range: the pool's topology has {} node(s)",
                        nodes.len()
                    ),
                )
            })?;
            Ok(node.id().os_index())
        })?;
        write(out, "out", id)
    })
}

/// `*out` = the OS number of the node of worker `worker` of `pool`.
/// Errors: `TERROIR_ERROR_INVALID_WORKER` for an index out of range.
///
/// # Safety
/// `out` is NULL or points to writable storage for a `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn terroir_pool_worker_node(
    pool: *mut TerroirPool,
    worker: usize,
    out: *mut u32,
) -> c_int {
    call("terroir_pool_worker_node", || {
        if out.is_null() {
            return Err(Error::null("out"));
        }
        let id = with_pool(pool, |p| {
            let index = p.worker_node_index(worker).ok_or_else(|| {
                Error::new(
                    TerroirError::InvalidWorker,
                    format!(
                        "worker index {worker} is out of range: the pool has {} worker(s)",
                        p.current_num_threads()
                    ),
                )
            })?;
            Ok(p.topology().nodes()[index].id().os_index())
        })?;
        write(out, "out", id)
    })
}

/// `*out` = the index of the calling thread among its pool's workers.
/// Errors: `TERROIR_ERROR_NOT_IN_POOL` on a thread that is not a worker.
///
/// # Safety
/// `out` is NULL or points to writable storage for a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn terroir_current_worker(out: *mut usize) -> c_int {
    call("terroir_current_worker", || {
        if out.is_null() {
            return Err(Error::null("out"));
        }
        let index = terroir::current_thread_index().ok_or_else(|| {
            Error::new(
                TerroirError::NotInPool,
                "the calling thread is not a worker of a terroir pool",
            )
        })?;
        write(out, "out", index)
    })
}

/// Runs `fa(a)` and `fb(b)`, potentially in parallel, and returns when
/// both are done: the C face of `terroir::join` (fork-join; `fb` is stolen
/// only when a worker is idle, so a join costs a few nanoseconds).
///
/// `pool` NULL runs the join in the pool of the calling worker, or in the
/// global pool when called from a thread outside every pool (which then
/// blocks until both are done). Nested calls from inside tasks should pass
/// NULL (or the same pool: no lookup either).
///
/// Errors: `TERROIR_ERROR_NULL_POINTER` (`fa` or `fb`; `a` and `b` may be
/// NULL), `TERROIR_ERROR_INVALID_HANDLE`.
///
/// # Safety
/// `fa` and `fb` must be safe to call with `a` and `b` from any thread,
/// at the same time, until this function returns.
#[no_mangle]
pub unsafe extern "C" fn terroir_join(
    pool: *mut TerroirPool,
    fa: TerroirTaskFn,
    a: *mut c_void,
    fb: TerroirTaskFn,
    b: *mut c_void,
) -> c_int {
    // The fast path, kept free of `Result` plumbing: on a worker, NULL or
    // the handle of the worker's own pool is a plain join there. One
    // thread-local read finds the worker (and, in it, the caller's frame).
    let tag = (!pool.is_null()).then(|| pool.addr());
    if let (Some(wt), Some(fa), Some(fb)) = (Worker::current(tag), fa, fb) {
        // The closures capture one reference each: a closure state of one
        // or two words is passed to `join` in registers, where a larger one
        // would go through memory and be copied out again at once (a
        // store-to-load forwarding stall on every join).
        let (ta, tb) = (&CTask::new(fa, a), &CTask::new(fb, b));
        return call_infallible("terroir_join", || {
            wt.join(move || ta.run(), move || tb.run())
        });
    }
    join_slow(pool, fa, a, fb, b)
}

/// `terroir_join` entering a pool from outside, or failing: out of line,
/// so that the fast path keeps a small stack frame.
#[cold]
#[inline(never)]
fn join_slow(
    pool: *mut TerroirPool,
    fa: TerroirTaskFn,
    a: *mut c_void,
    fb: TerroirTaskFn,
    b: *mut c_void,
) -> c_int {
    call("terroir_join", || {
        let fa = fa.ok_or_else(|| Error::null("fa"))?;
        let fb = fb.ok_or_else(|| Error::null("fb"))?;
        let (ta, tb) = (&CTask::new(fa, a), &CTask::new(fb, b));
        with_pool(pool, |p| {
            install_carrying_frame(p, || {
                let wt = Worker::current(None).expect("installed on a worker");
                wt.join(move || ta.run(), move || tb.run());
            });
            Ok(())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each `terroir_pin` value builds the pool it names; others are refused.
    #[test]
    fn pin_values_name_their_pinning() {
        let config = |pin| TerroirPoolConfig {
            size: size_of::<TerroirPoolConfig>(),
            num_threads: 1,
            policy: 0,
            pin,
        };
        for (pin, pinning) in [
            (TerroirPin::Off, None),
            (TerroirPin::Pu, Some(Pinning::Pu)),
            (TerroirPin::Cache, Some(Pinning::Cache)),
            (TerroirPin::Node, Some(Pinning::Node)),
        ] {
            let pool = builder(Some(config(pin as u32)), false)
                .and_then(|b| b.build().map_err(Error::from))
                .unwrap_or_else(|e| panic!("{pin:?}: {e:?}"));
            assert_eq!(pool.pinning(), pinning, "{pin:?}");
        }
        let err = builder(Some(config(6)), false).expect_err("pin = 6 is refused");
        assert!(format!("{err:?}").contains("config->pin = 6"), "{err:?}");
    }
}
