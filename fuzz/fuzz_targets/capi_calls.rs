//! Sequences of C API calls, through the real `extern "C"` functions: the
//! sources of terroir-capi (capi/src/) compiled into this target as a
//! module, as capi/examples/terroir.rs does for the C tests, so that they
//! carry the fuzzer's coverage instrumentation and the library's packaging
//! stays as it is (a cdylib and a staticlib).
//!
//! The input decodes into a few dozen calls: pools created with odd
//! configurations (a wrong `size`, zero or absurd `num_threads`, unknown
//! policies and pin values, a tail a newer header would have), groups
//! created, spawned into (at places good and bad: NULL data with a length,
//! huge lengths, ranges past the end of the address space, unknown kinds,
//! workers and nodes the pool does not have), waited for and destroyed,
//! joins and parallel loops (with bad options), queries, error strings,
//! and every handle argument NULL, live, destroyed (a double destroy, a
//! stale handle) or garbage. Tasks join, spawn into their own group, wait
//! for it (refused: it could never end), run groups and loops of their
//! own, and pass garbage handles. Every call's code must be one the header
//! documents for it, and exactly `TERROIR_ERROR_OK` when every argument is
//! good; a join or loop must have run every part exactly once. A crash, an
//! abort, a failed check (a panic), a leak or a hang (libFuzzer's
//! `-timeout`) is a finding. Pools are kept tiny (one or two workers) and
//! tasks few, so an input runs in milliseconds.
#![no_main]

use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Once;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[allow(dead_code, unused_imports, unreachable_pub, missing_docs)]
#[path = "../../capi/src/lib.rs"]
mod capi;

use capi::*;

#[path = "capi_calls/args.rs"]
mod args;
#[path = "capi_calls/check.rs"]
mod check;
#[path = "capi_calls/tasks.rs"]
mod tasks;

use args::*;
use check::*;
use tasks::*;

#[derive(Arbitrary, Debug)]
enum Op {
    PoolCreate(PoolCfg),
    GlobalInit(PoolCfg),
    PoolDestroy(PoolSel),
    PoolQuery {
        pool: PoolSel,
        which: u8,
        index: u8,
        null_out: bool,
    },
    GroupCreate {
        pool: PoolSel,
        null_out: bool,
    },
    GroupSpawn {
        group: GroupSel,
        task: TaskKind,
        place: PlaceSel,
        strict: bool,
        null_fn: bool,
    },
    GroupWait(GroupSel),
    GroupDestroy(GroupSel),
    Join {
        pool: PoolSel,
        a: TaskKind,
        b: TaskKind,
        null_fa: bool,
        null_fb: bool,
    },
    Loop {
        pool: PoolSel,
        begin: u8,
        len: i16,
        grain: u8,
        null_fn: bool,
        opts: LoopOpts,
    },
    Strings(i32),
    CurrentWorker {
        null_out: bool,
    },
}

/// A pool of the model: its handle and what it has.
#[derive(Clone, Copy)]
struct PoolInfo {
    handle: usize,
    workers: usize,
    node0: u32,
}

/// The state of one input: live and destroyed handles, the task arena.
struct State {
    pools: Vec<PoolInfo>,
    dead_pools: Vec<usize>,
    /// Live groups and the pool each is on.
    groups: Vec<(usize, PoolInfo)>,
    dead_groups: Vec<usize>,
    global: PoolInfo,
    tasks: usize,
    arena: Vec<Box<TaskCtx>>,
    count: Box<AtomicUsize>,
    buffer: Box<[u8; 4096]>,
}

fn info(handle: usize) -> PoolInfo {
    let p = handle as *mut TerroirPool;
    let (mut workers, mut nodes, mut node0) = (0usize, 0usize, u32::MAX);
    // SAFETY: the outputs are writable.
    unsafe {
        expect(
            "terroir_pool_num_workers",
            terroir_pool_num_workers(p, &mut workers),
            &[OK],
        );
        expect(
            "terroir_pool_num_nodes",
            terroir_pool_num_nodes(p, &mut nodes),
            &[OK],
        );
        expect(
            "terroir_pool_node_id",
            terroir_pool_node_id(p, 0, &mut node0),
            &[OK],
        );
    }
    assert!(workers >= 1 && nodes >= 1);
    PoolInfo {
        handle,
        workers,
        node0,
    }
}

impl State {
    fn live_handles(&self) -> impl Iterator<Item = usize> + '_ {
        self.pools
            .iter()
            .map(|p| p.handle)
            .chain(self.groups.iter().map(|g| g.0))
            .chain([self.global.handle])
    }

    /// A pool argument and, when it stands for a pool, that pool; `None`
    /// when the selection cannot be made (skip the call).
    fn pool(&self, sel: PoolSel) -> Option<(*mut TerroirPool, Option<PoolInfo>)> {
        Some(match sel {
            // The main thread is outside every pool: NULL is the global pool.
            PoolSel::Null => (std::ptr::null_mut(), Some(self.global)),
            PoolSel::Global => (self.global.handle as *mut _, Some(self.global)),
            PoolSel::Live(i) => {
                let p = *self.pools.get(usize::from(i) % self.pools.len().max(1))?;
                (p.handle as *mut _, Some(p))
            }
            PoolSel::Destroyed(i) => {
                let h = *self
                    .dead_pools
                    .get(usize::from(i) % self.dead_pools.len().max(1))?;
                (h as *mut _, None)
            }
            PoolSel::Garbage(g) => {
                let g = g as usize;
                if g == 0 || self.live_handles().any(|h| h == g) {
                    return None;
                }
                (g as *mut _, None)
            }
        })
    }

    fn group(&self, sel: GroupSel) -> Option<(*mut TerroirGroup, Option<(usize, PoolInfo)>)> {
        Some(match sel {
            GroupSel::Null => (std::ptr::null_mut(), None),
            GroupSel::Live(i) => {
                let g = *self.groups.get(usize::from(i) % self.groups.len().max(1))?;
                (g.0 as *mut _, Some(g))
            }
            GroupSel::Destroyed(i) => {
                let h = *self
                    .dead_groups
                    .get(usize::from(i) % self.dead_groups.len().max(1))?;
                (h as *mut _, None)
            }
            GroupSel::Garbage(g) => {
                let g = g as usize;
                if g == 0 || self.live_handles().any(|h| h == g) {
                    return None;
                }
                (g as *mut _, None)
            }
        })
    }

    /// A place and the errors it brings on `pool`.
    fn place(
        &self,
        sel: PlaceSel,
        strict: bool,
        pool: &PoolInfo,
    ) -> (Option<TerroirPlace>, Vec<(bool, c_int)>) {
        let mut p = TerroirPlace {
            kind: TerroirPlaceKind::Any as u32,
            node: 0,
            worker: 0,
            data: std::ptr::null(),
            len: 0,
            strict,
        };
        let mut errors = Vec::new();
        match sel {
            PlaceSel::None => return (None, errors),
            PlaceSel::Any => {}
            PlaceSel::Node(n) => {
                p.kind = TerroirPlaceKind::Node as u32;
                // The pool's first node, or a node it may not have.
                p.node = if n % 2 == 0 {
                    pool.node0
                } else {
                    u32::from(n) << 16
                };
                errors.push((p.node != pool.node0, INVALID_NODE));
            }
            PlaceSel::Worker(w) => {
                p.kind = TerroirPlaceKind::Worker as u32;
                p.worker = if w >= 128 {
                    usize::MAX - usize::from(w)
                } else {
                    usize::from(w % 4)
                };
                errors.push((p.worker >= pool.workers, INVALID_WORKER));
            }
            PlaceSel::Data(len) => {
                p.kind = TerroirPlaceKind::Data as u32;
                p.data = self.buffer.as_ptr().cast();
                p.len = usize::from(len) % (self.buffer.len() + 1);
                errors.push((p.len == 0, ZERO_SIZE));
            }
            PlaceSel::NullData(len) => {
                p.kind = TerroirPlaceKind::Data as u32;
                p.len = usize::from(len);
                errors.push((true, NULL_POINTER));
                errors.push((p.len == 0, ZERO_SIZE));
            }
            PlaceSel::HugeLen => {
                p.kind = TerroirPlaceKind::Data as u32;
                p.data = self.buffer.as_ptr().cast();
                p.len = isize::MAX as usize + 1;
                errors.push((true, INVALID_ARGUMENT));
            }
            PlaceSel::PastEnd => {
                p.kind = TerroirPlaceKind::Data as u32;
                p.data = std::ptr::without_provenance(usize::MAX - 4095);
                p.len = 8192;
                errors.push((true, INVALID_ARGUMENT));
            }
            PlaceSel::UnknownKind(k) => {
                p.kind = 4 + k % 1000;
                errors.push((true, INVALID_ARGUMENT));
            }
        }
        (Some(p), errors)
    }

    fn ctx(&mut self, kind: TaskKind, group: usize) -> *mut c_void {
        let count: *const AtomicUsize = &*self.count;
        let ctx = Box::new(TaskCtx { kind, group, count });
        let p: *const TaskCtx = &*ctx;
        self.arena.push(ctx);
        p as *mut c_void
    }

    fn step(&mut self, op: Op) {
        match op {
            Op::PoolCreate(cfg) => {
                if self.pools.len() >= MAX_POOLS {
                    return;
                }
                let (config, bad) = pool_config(&cfg);
                let mut out: *mut TerroirPool = std::ptr::null_mut();
                let cp = config
                    .as_ref()
                    .map_or(std::ptr::null(), |c| &c.value as *const _);
                let op: *mut *mut TerroirPool = if cfg.null_out {
                    std::ptr::null_mut()
                } else {
                    &mut out
                };
                // SAFETY: `cp` is NULL or a config of its `size` bytes (or
                // a refused size), `op` NULL or writable.
                let code = unsafe { terroir_pool_create(cp, op) };
                let errors = [
                    (cfg.null_out, NULL_POINTER),
                    (bad.0, INVALID_ARGUMENT),
                    (bad.1, POOL_BUILD),
                ];
                expect("terroir_pool_create", code, &allowed(&errors));
                if code == OK {
                    let p = info(out as usize);
                    assert!(p.workers <= 2, "a pool of {} workers", p.workers);
                    self.pools.push(p);
                }
            }
            Op::GlobalInit(cfg) => {
                let (config, bad) = pool_config(&cfg);
                let cp = config
                    .as_ref()
                    .map_or(std::ptr::null(), |c| &c.value as *const _);
                // SAFETY: as for terroir_pool_create.
                let code = unsafe { terroir_pool_global_init(cp) };
                // The global pool exists (the first input made it); a
                // config that cannot be read is refused first.
                let mut want = vec![GLOBAL_ALREADY];
                if bad.0 && !cfg.null_config {
                    want.push(INVALID_ARGUMENT);
                }
                expect("terroir_pool_global_init", code, &want);
            }
            Op::PoolDestroy(sel) => {
                let Some((p, live)) = self.pool(sel) else {
                    return;
                };
                let code = pool_destroy(p);
                let want = match (sel, live) {
                    (PoolSel::Null, _) => NULL_POINTER,
                    (PoolSel::Global, _) => INVALID_ARGUMENT,
                    (_, Some(_)) => OK,
                    (_, None) => INVALID_HANDLE,
                };
                expect("terroir_pool_destroy", code, &[want]);
                if code == OK {
                    let h = p as usize;
                    self.pools.retain(|q| q.handle != h);
                    self.dead_pools.push(h);
                }
            }
            Op::PoolQuery {
                pool,
                which,
                index,
                null_out,
            } => {
                let Some((p, live)) = self.pool(pool) else {
                    return;
                };
                let index = usize::from(index % 4);
                let mut out = 0usize;
                let mut out32 = 0u32;
                let (o, o32) = if null_out {
                    (std::ptr::null_mut(), std::ptr::null_mut())
                } else {
                    (&mut out as *mut usize, &mut out32 as *mut u32)
                };
                let gone = live.is_none();
                // SAFETY: the outputs are NULL or writable.
                let (name, code, extra) = unsafe {
                    match which % 4 {
                        0 => (
                            "terroir_pool_num_workers",
                            terroir_pool_num_workers(p, o),
                            None,
                        ),
                        1 => ("terroir_pool_num_nodes", terroir_pool_num_nodes(p, o), None),
                        2 => (
                            "terroir_pool_node_id",
                            terroir_pool_node_id(p, index, o32),
                            Some((index >= 1, INVALID_NODE)),
                        ),
                        _ => (
                            "terroir_pool_worker_node",
                            terroir_pool_worker_node(p, index, o32),
                            Some((live.is_some_and(|l| index >= l.workers), INVALID_WORKER)),
                        ),
                    }
                };
                let mut errors = vec![(null_out, NULL_POINTER), (gone, INVALID_HANDLE)];
                // (One node on the machines this runs on; on more, a
                // node index of 1 is good too.)
                if let Some(e) = extra {
                    errors.push(e);
                }
                let mut allowed = allowed(&errors);
                if which % 4 == 2 && index >= 1 && !null_out && !gone {
                    allowed.push(OK);
                }
                expect(name, code, &allowed);
                if code == OK && which % 4 == 0 {
                    assert_eq!(out, live.unwrap().workers);
                }
            }
            Op::GroupCreate { pool, null_out } => {
                if self.groups.len() >= MAX_GROUPS {
                    return;
                }
                let Some((p, live)) = self.pool(pool) else {
                    return;
                };
                let mut out: *mut TerroirGroup = std::ptr::null_mut();
                let op: *mut *mut TerroirGroup = if null_out {
                    std::ptr::null_mut()
                } else {
                    &mut out
                };
                // SAFETY: `op` is NULL or writable.
                let code = unsafe { terroir_group_create(p, op) };
                expect(
                    "terroir_group_create",
                    code,
                    &allowed(&[(null_out, NULL_POINTER), (live.is_none(), INVALID_HANDLE)]),
                );
                if code == OK {
                    self.groups.push((out as usize, live.unwrap()));
                }
            }
            Op::GroupSpawn {
                group,
                task,
                place,
                strict,
                null_fn,
            } => {
                if self.tasks >= MAX_TASKS {
                    return;
                }
                let Some((g, live)) = self.group(group) else {
                    return;
                };
                let mut errors = vec![
                    (g.is_null(), NULL_POINTER),
                    (live.is_none() && !g.is_null(), INVALID_HANDLE),
                    (null_fn, NULL_POINTER),
                ];
                // The place's errors, judged on the group's pool (a place
                // is converted only for a live group).
                let pool = live.map_or(self.global, |l| l.1);
                let (pl, perr) = self.place(place, strict, &pool);
                if live.is_some() {
                    errors.extend(perr);
                } else if pl.is_some() {
                    // Checked or not before the handle: either code.
                    errors.extend(perr.into_iter().map(|e| (false, e.1)));
                }
                let arg = self.ctx(task, g as usize);
                let f: TerroirTaskFn = if null_fn { None } else { Some(ctx_task) };
                let pp = pl
                    .as_ref()
                    .map_or(std::ptr::null(), |p| p as *const TerroirPlace);
                // SAFETY: the task is safe on any thread until its group
                // is waited for (its argument lives in the arena); a data
                // place is within the input's buffer or refused.
                let code = unsafe { terroir_group_spawn(g, f, arg, pp) };
                expect("terroir_group_spawn", code, &allowed(&errors));
                if code == OK {
                    self.tasks += 1;
                }
            }
            Op::GroupWait(sel) => {
                let Some((g, live)) = self.group(sel) else {
                    return;
                };
                let code = group_wait(g);
                let want = if g.is_null() {
                    NULL_POINTER
                } else if live.is_some() {
                    OK
                } else {
                    INVALID_HANDLE
                };
                expect("terroir_group_wait", code, &[want]);
            }
            Op::GroupDestroy(sel) => {
                let Some((g, live)) = self.group(sel) else {
                    return;
                };
                let code = group_destroy(g);
                let want = if g.is_null() {
                    NULL_POINTER
                } else if live.is_some() {
                    OK
                } else {
                    INVALID_HANDLE
                };
                expect("terroir_group_destroy", code, &[want]);
                if code == OK {
                    let h = g as usize;
                    self.groups.retain(|x| x.0 != h);
                    self.dead_groups.push(h);
                }
            }
            Op::Join {
                pool,
                a,
                b,
                null_fa,
                null_fb,
            } => {
                let Some((p, live)) = self.pool(pool) else {
                    return;
                };
                let (ca, cb) = (self.ctx(a, 0), self.ctx(b, 0));
                let fa: TerroirTaskFn = if null_fa { None } else { Some(ctx_task) };
                let fb: TerroirTaskFn = if null_fb { None } else { Some(ctx_task) };
                // SAFETY: the tasks are safe on any thread, at once.
                let code = unsafe { terroir_join(p, fa, ca, fb, cb) };
                let errors = [
                    (null_fa || null_fb, NULL_POINTER),
                    (live.is_none(), INVALID_HANDLE),
                ];
                expect("terroir_join", code, &allowed(&errors));
            }
            Op::Loop {
                pool,
                begin,
                len,
                grain,
                null_fn,
                opts,
            } => {
                let Some((p, live)) = self.pool(pool) else {
                    return;
                };
                let begin = usize::from(begin);
                let end = begin.wrapping_add_signed(isize::from(len)).min(4096);
                let mut errors = vec![(live.is_none(), INVALID_HANDLE)];
                let options = opts
                    .options
                    .map(|(size, schedule, strict, max_len, place)| {
                        let mut o = TerroirForOptions {
                            size: 0,
                            schedule: u32::from(schedule % 3),
                            strict: u32::from(strict),
                            max_len: usize::from(max_len % 64),
                            data: std::ptr::null(),
                            data_len: 0,
                        };
                        errors.push((o.schedule > 1, INVALID_ARGUMENT));
                        let pool = live.unwrap_or(self.global);
                        let (pl, perr) = self.place(place, false, &pool);
                        // A data range (the other places mean none here):
                        // NULL with a length, a length of 0, or a range past
                        // the end of the address space is refused.
                        if let Some(pl) = pl {
                            if pl.kind == TerroirPlaceKind::Data as u32 {
                                o.data = pl.data;
                                o.data_len = pl.len;
                                errors.push((o.data.is_null() && o.data_len != 0, NULL_POINTER));
                                errors.push((!o.data.is_null() && o.data_len == 0, ZERO_SIZE));
                                errors.extend(perr.into_iter().filter(|e| e.1 == INVALID_ARGUMENT));
                            }
                        }
                        let min = std::mem::offset_of!(TerroirForOptions, data_len) + 8;
                        let (padded, bad) = Padded::new(o, |o, s| o.size = s, min, size);
                        errors.push((bad, INVALID_ARGUMENT));
                        padded
                    });
                // A refused handle may be found before or after the
                // options: any of the codes that apply.
                let op = options
                    .as_ref()
                    .map_or(std::ptr::null(), |o| &o.value as *const _);
                run_loop(p, begin, end, usize::from(grain % 8), op, &errors, null_fn);
            }
            Op::Strings(code) => {
                let s = strerror(code);
                assert!(!s.is_empty());
                let _ = last_error();
                let v = terroir_version();
                // SAFETY: documented: a static NUL-terminated string.
                let vs = unsafe { CStr::from_ptr(terroir_version_string()) }
                    .to_str()
                    .unwrap();
                assert_eq!(v, TERROIR_VERSION);
                // (Compiled into this package, the string is its
                // CARGO_PKG_VERSION, not terroir-capi's: capi's own tests
                // compare the two. Here: a NUL-terminated version.)
                assert_eq!(vs.split('.').count(), 3, "terroir_version_string: {vs}");
            }
            Op::CurrentWorker { null_out } => {
                let mut out = 0usize;
                let op: *mut usize = if null_out {
                    std::ptr::null_mut()
                } else {
                    &mut out
                };
                // SAFETY: NULL or writable.
                let code = unsafe { terroir_current_worker(op) };
                // The main thread is no worker.
                expect("terroir_current_worker", code, &[NULL_POINTER, NOT_IN_POOL]);
            }
        }
    }

    /// Destroys every live group (waiting for its tasks) and pool.
    fn finish(&mut self) {
        for (g, _) in std::mem::take(&mut self.groups) {
            expect(
                "terroir_group_destroy (end)",
                group_destroy(g as *mut _),
                &[OK],
            );
        }
        for p in std::mem::take(&mut self.pools) {
            expect(
                "terroir_pool_destroy (end)",
                pool_destroy(p.handle as *mut _),
                &[OK],
            );
        }
    }
}

static INIT: Once = Once::new();

/// When the current input started (`now_ms`; 0
/// between inputs), for the watchdog.
static INPUT_START_MS: AtomicU64 = AtomicU64::new(0);

/// An input that runs this long hangs: the watchdog aborts, and libFuzzer
/// writes the input as a crash. (libFuzzer's own `-timeout` alarm is a
/// process signal, which a pool's worker thread may take instead of the
/// fuzzing thread, and then it is ignored.)
const HANG_MS: u64 = 30_000;

/// Milliseconds on the monotonic clock since the first call, plus one (0
/// means no input runs). Not the wall clock: a step of the system clock
/// must not look like a hang.
fn now_ms() -> u64 {
    static BASE: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    BASE.get_or_init(std::time::Instant::now)
        .elapsed()
        .as_millis() as u64
        + 1
}

/// The threads of this process now (`/proc/self/task`).
fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .count()
}

/// How long the workers of an input's destroyed pools may take to exit.
const EXIT_MS: u64 = 10_000;

/// Waits until the workers of the pools this input created and destroyed
/// have exited: the process has no more threads than when the input
/// started. A destroyed pool's workers exit on their own, after the call
/// that destroyed it returns; one still exiting when the next leak check
/// runs holds the pool's last reference in thread-local state that
/// LeakSanitizer no longer scans, and the pool is reported as leaked,
/// blamed on whichever input runs then. Waiting here makes the check
/// exact and checks that the workers do exit (a worker left behind fails
/// the input).
fn wait_for_exited_workers(threads_at_start: usize) {
    let start = now_ms();
    loop {
        let now = thread_count();
        if now <= threads_at_start {
            return;
        }
        if now_ms() - start > EXIT_MS {
            panic!(
                "{} threads {EXIT_MS} ms after the input's pools were destroyed, \
                 {threads_at_start} when it started: a destroyed pool's workers did not exit",
                now
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Aborts the process when an input has run for [`HANG_MS`].
fn watchdog() {
    loop {
        std::thread::sleep(std::time::Duration::from_millis(500));
        let start = INPUT_START_MS.load(Ordering::Relaxed);
        if start != 0 && now_ms().saturating_sub(start) > HANG_MS {
            eprintln!("capi_calls: an input has run for {HANG_MS} ms: a hang");
            std::process::abort();
        }
    }
}

fuzz_target!(|ops: Vec<Op>| {
    INIT.call_once(|| {
        // A NULL config or zero workers: two workers, whatever the machine.
        std::env::set_var("TERROIR_NUM_THREADS", "2");
        let config = TerroirPoolConfig {
            size: std::mem::size_of::<TerroirPoolConfig>(),
            num_threads: 2,
            policy: 0,
            pin: TerroirPin::Off as u32,
        };
        // SAFETY: a config of its size.
        let code = unsafe { terroir_pool_global_init(&config) };
        expect("terroir_pool_global_init (first)", code, &[OK]);
        std::thread::Builder::new()
            .name("capi_calls-watchdog".into())
            .spawn(watchdog)
            .expect("the watchdog thread");
    });
    // CAPI_CALLS_DEBUG=1: print the calls an input decodes to (to read a
    // crash's input).
    if std::env::var_os("CAPI_CALLS_DEBUG").is_some() {
        eprintln!("{ops:#?}");
    }
    INPUT_START_MS.store(now_ms(), Ordering::Relaxed);
    let mut global: *mut TerroirPool = std::ptr::null_mut();
    // SAFETY: writable.
    expect(
        "terroir_pool_global",
        unsafe { terroir_pool_global(&mut global) },
        &[OK],
    );
    let threads_at_start = thread_count();
    let mut state = State {
        pools: Vec::new(),
        dead_pools: Vec::new(),
        groups: Vec::new(),
        dead_groups: Vec::new(),
        global: info(global as usize),
        tasks: 0,
        arena: Vec::new(),
        count: Box::new(AtomicUsize::new(0)),
        buffer: Box::new([0u8; 4096]),
    };
    for op in ops.into_iter().take(MAX_OPS) {
        state.step(op);
    }
    state.finish();
    // Every task is done: the arena and the counter may go.
    drop(state);
    wait_for_exited_workers(threads_at_start);
    INPUT_START_MS.store(0, Ordering::Relaxed);
});
