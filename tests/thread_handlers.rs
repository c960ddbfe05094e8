//! How a pool starts and stops its threads, with rayon-core's builder
//! methods: start and exit handlers, custom spawn handlers
//! (`spawn_handler`, `build_scoped`), `use_current_thread`, and what each
//! does with bad input (a panicking handler or name closure, a failing
//! spawn, a spawn handler that never runs its worker, an impossible stack
//! size, too many threads).

use std::cell::Cell;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use terroir::numa;
use terroir::{ThreadPoolBuildError, ThreadPoolBuilder};

/// Waits (up to a minute) until `count` reaches `want`.
fn wait_for(count: &AtomicUsize, want: usize) {
    let start = Instant::now();
    while count.load(Ordering::SeqCst) < want {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "count stuck at {} (want {want})",
            count.load(Ordering::SeqCst)
        );
        thread::sleep(Duration::from_millis(1));
    }
}

/// Keeps panics raised on purpose out of the output (the hook is
/// process-wide, so it is replaced once and never restored).
fn quiet_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let on_purpose = info
                .payload()
                .downcast_ref::<&str>()
                .is_some_and(|m| m.starts_with("on purpose"));
            if !on_purpose {
                default(info);
            }
        }));
    });
}

#[test]
fn start_and_exit_handlers_run_once_per_worker_with_its_index() {
    let (start_tx, started) = mpsc::channel();
    let (exit_tx, exited) = mpsc::channel();
    let start_tx = Mutex::new(start_tx);
    let exit_tx = Mutex::new(exit_tx);
    let pool = ThreadPoolBuilder::new()
        .num_threads(5)
        .start_handler(move |i| {
            // Runs on the worker itself.
            assert_eq!(terroir::current_thread_index(), Some(i));
            start_tx.lock().unwrap().send(i).unwrap();
        })
        .exit_handler(move |i| {
            assert_eq!(terroir::current_thread_index(), Some(i));
            exit_tx.lock().unwrap().send(i).unwrap();
        })
        .build()
        .unwrap();
    let mut got: Vec<usize> = started.iter().take(5).collect();
    got.sort_unstable();
    assert_eq!(got, [0, 1, 2, 3, 4]);
    assert!(
        exited.try_recv().is_err(),
        "no worker exits while the pool lives"
    );
    drop(pool);
    // The channels close when the registry (holding the handlers) is freed.
    let mut got: Vec<usize> = exited.iter().collect();
    got.sort_unstable();
    assert_eq!(got, [0, 1, 2, 3, 4]);
    assert!(started.try_recv().is_err(), "no second start");
}

#[test]
fn a_start_handler_may_wait_for_the_builder() {
    // `build` returns before the start handlers finish, so a handler may
    // wait for the thread that builds the pool.
    let barrier = Arc::new(std::sync::Barrier::new(4));
    let b = Arc::clone(&barrier);
    let pool = ThreadPoolBuilder::new()
        .num_threads(3)
        .start_handler(move |_| {
            b.wait();
        })
        .build()
        .unwrap();
    barrier.wait();
    assert_eq!(pool.install(|| 6 * 7), 42);
}

#[test]
fn panicking_handlers_go_to_the_panic_handler_and_the_pool_still_works() {
    quiet_panics();
    let payloads = Arc::new(Mutex::new(Vec::new()));
    let p = Arc::clone(&payloads);
    let pool = ThreadPoolBuilder::new()
        .num_threads(4)
        .start_handler(|_| panic!("on purpose: start"))
        .exit_handler(|_| panic!("on purpose: exit"))
        .panic_handler(move |e| {
            let msg = *e.downcast_ref::<&str>().unwrap();
            p.lock().unwrap().push(msg);
        })
        .build()
        .unwrap();
    assert_eq!(pool.install(|| terroir::join(|| 1, || 2)), (1, 2));
    drop(pool);
    let start = Instant::now();
    while payloads.lock().unwrap().len() < 8 {
        assert!(start.elapsed() < Duration::from_secs(60));
        thread::sleep(Duration::from_millis(1));
    }
    let got = payloads.lock().unwrap().clone();
    assert_eq!(got.iter().filter(|m| **m == "on purpose: start").count(), 4);
    assert_eq!(got.iter().filter(|m| **m == "on purpose: exit").count(), 4);
}

#[test]
fn a_failing_spawn_handler_is_an_error_and_the_started_workers_exit() {
    let starts = Arc::new(AtomicUsize::new(0));
    let exits = Arc::new(AtomicUsize::new(0));
    let (s, e) = (Arc::clone(&starts), Arc::clone(&exits));
    let err = ThreadPoolBuilder::new()
        .num_threads(5)
        .start_handler(move |_| {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .exit_handler(move |_| {
            e.fetch_add(1, Ordering::SeqCst);
        })
        .spawn_handler(|thread| {
            if thread.index() == 2 {
                return Err(io::Error::other("no third thread today"));
            }
            thread::spawn(move || thread.run());
            Ok(())
        })
        .build()
        .unwrap_err();
    match &err {
        ThreadPoolBuildError::Spawn { worker, source } => {
            assert_eq!(*worker, 2);
            assert_eq!(source.to_string(), "no third thread today");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("worker thread 2"), "{err}");
    // Workers 0 and 1 started before the failure; the pool terminates, so
    // they exit.
    wait_for(&exits, 2);
    assert_eq!(starts.load(Ordering::SeqCst), 2);
}

#[test]
fn a_stack_no_thread_can_have_is_a_spawn_error() {
    let starts = Arc::new(AtomicUsize::new(0));
    let s = Arc::clone(&starts);
    let err = ThreadPoolBuilder::new()
        .num_threads(3)
        .stack_size(isize::MAX as usize)
        .start_handler(move |_| {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap_err();
    assert!(
        matches!(err, ThreadPoolBuildError::Spawn { worker: 0, .. }),
        "{err:?}"
    );
    thread::sleep(Duration::from_millis(50));
    assert_eq!(starts.load(Ordering::SeqCst), 0);
}

#[test]
fn a_panicking_thread_name_unwinds_build_after_the_workers_before_it_exit() {
    quiet_panics();
    let starts = Arc::new(AtomicUsize::new(0));
    let exits = Arc::new(AtomicUsize::new(0));
    let (s, e) = (Arc::clone(&starts), Arc::clone(&exits));
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        ThreadPoolBuilder::new()
            .num_threads(6)
            .start_handler(move |_| {
                s.fetch_add(1, Ordering::SeqCst);
            })
            .exit_handler(move |_| {
                e.fetch_add(1, Ordering::SeqCst);
            })
            .thread_name(|i| {
                if i == 3 {
                    panic!("on purpose: no name for 3");
                }
                format!("named-{i}")
            })
            .build()
    }));
    assert!(result.is_err(), "the panic propagates out of build");
    wait_for(&exits, 3);
    assert_eq!(starts.load(Ordering::SeqCst), 3);
    thread::sleep(Duration::from_millis(50));
    assert_eq!(exits.load(Ordering::SeqCst), 3, "workers 0 to 2 only");
}

#[test]
fn a_spawn_handler_that_drops_its_worker_is_an_error_not_a_hang() {
    let err = ThreadPoolBuilder::new()
        .num_threads(3)
        .spawn_handler(|thread| {
            if thread.index() != 1 {
                thread::spawn(move || thread.run());
            }
            Ok(())
        })
        .build()
        .unwrap_err();
    match err {
        ThreadPoolBuildError::Spawn { worker, source } => {
            assert_eq!(worker, 1);
            assert!(
                source.to_string().contains("without calling run()"),
                "{source}"
            );
        }
        other => panic!("{other:?}"),
    }
}

thread_local!(static SET_BY_HANDLER: Cell<usize> = const { Cell::new(0) });

#[test]
fn custom_spawned_workers_keep_their_thread_locals_names_and_leave_cleanly() {
    let mut handles = Vec::new();
    let pool = ThreadPoolBuilder::new()
        .num_threads(3)
        .thread_name(|i| format!("custom-{i}"))
        .spawn_handler(|thread| {
            let name = thread.name().unwrap().to_owned();
            assert_eq!(name, format!("custom-{}", thread.index()));
            assert_eq!(thread.stack_size(), None);
            let h = thread::Builder::new().name(name).spawn(move || {
                SET_BY_HANDLER.with(|c| c.set(100 + thread.index()));
                let before = numa::allowed_cpus().unwrap();
                thread.run();
                // No longer a worker, and its affinity is its own again.
                assert_eq!(terroir::current_thread_index(), None);
                assert_eq!(numa::allowed_cpus().unwrap(), before);
            })?;
            handles.push(h);
            Ok(())
        })
        .build()
        .unwrap();
    assert_eq!(handles.len(), 3);
    let seen = pool.install(|| {
        let i = terroir::current_thread_index().unwrap();
        let name = thread::current().name().unwrap().to_owned();
        (i, SET_BY_HANDLER.with(Cell::get), name)
    });
    assert_eq!(seen.1, 100 + seen.0);
    assert_eq!(seen.2, format!("custom-{}", seen.0));
    drop(pool);
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn custom_spawned_workers_are_pinned_like_any_other() {
    let here = ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    if !here.is_pinned() {
        return; // a described or unpinnable machine: nothing to compare
    }
    drop(here);
    let affinity = Arc::new(Mutex::new(Vec::new()));
    let a = Arc::clone(&affinity);
    let pool = ThreadPoolBuilder::new()
        .num_threads(3)
        .start_handler(move |i| {
            a.lock().unwrap().push((i, numa::allowed_cpus().unwrap()));
        })
        .spawn_handler(|thread| {
            thread::spawn(move || thread.run());
            Ok(())
        })
        .build()
        .unwrap();
    let start = Instant::now();
    while affinity.lock().unwrap().len() < 3 {
        assert!(start.elapsed() < Duration::from_secs(60));
        thread::sleep(Duration::from_millis(1));
    }
    for (i, cpus) in affinity.lock().unwrap().iter() {
        let cpu = pool.worker_cpu(*i).unwrap();
        assert_eq!(Some(cpus), pool.worker_cpus(*i).as_ref(), "worker {i}");
        assert!(
            cpus.contains(cpu),
            "worker {i}: its CPU {cpu} is one of {cpus}"
        );
        let node = pool.worker_node_index(*i).unwrap();
        let cpu_node = pool
            .topology()
            .pus()
            .iter()
            .find(|p| p.os_index() == cpu)
            .unwrap()
            .node_index();
        assert_eq!(node, cpu_node, "worker {i}'s node is its CPU's");
    }
}

thread_local!(static WRAPPED: Cell<u32> = const { Cell::new(0) });

#[test]
fn build_scoped_workers_borrow_from_the_caller() {
    let config = String::from("from the caller's stack");
    let wrapped = AtomicUsize::new(0);
    let (len, count) = ThreadPoolBuilder::new()
        .num_threads(2)
        .build_scoped(
            |thread| {
                wrapped.fetch_add(1, Ordering::SeqCst);
                WRAPPED.with(|w| w.set(config.len() as u32));
                thread.run()
            },
            |pool| {
                let len = pool.install(|| WRAPPED.with(Cell::get));
                (len, pool.current_num_threads())
            },
        )
        .unwrap();
    assert_eq!(len as usize, config.len());
    assert_eq!(count, 2);
    // Every worker thread has exited when build_scoped returns.
    assert_eq!(wrapped.load(Ordering::SeqCst), 2);
}

#[test]
fn use_current_thread_makes_the_caller_worker_zero() {
    // On its own thread: the caller stays a worker for the rest of its life.
    thread::spawn(|| {
        let spawned = AtomicUsize::new(0);
        let pool = ThreadPoolBuilder::new()
            .num_threads(3)
            .use_current_thread()
            .spawn_handler(|thread| {
                assert_ne!(thread.index(), 0);
                spawned.fetch_add(1, Ordering::SeqCst);
                thread::spawn(move || thread.run());
                Ok(())
            })
            .build()
            .unwrap();
        assert_eq!(
            spawned.load(Ordering::SeqCst),
            2,
            "only n - 1 threads started"
        );
        assert_eq!(terroir::current_thread_index(), Some(0));
        assert_eq!(pool.current_thread_index(), Some(0));

        let err = ThreadPoolBuilder::new()
            .num_threads(2)
            .use_current_thread()
            .build()
            .unwrap_err();
        assert!(matches!(
            err,
            ThreadPoolBuildError::CurrentThreadAlreadyInPool
        ));
        assert_eq!(
            err.to_string(),
            "The current thread is already part of another thread pool."
        );
        assert!(std::error::Error::source(&err).is_none());

        // Another worker runs a spawn while worker 0 blocks.
        let (tx, rx) = mpsc::channel();
        pool.spawn(move || tx.send(terroir::current_thread_index()).unwrap());
        let ran_on = rx.recv_timeout(Duration::from_secs(60)).unwrap();
        assert!(matches!(ran_on, Some(1 | 2)), "{ran_on:?}");

        // Joins from worker 0 run in the pool, and are shared.
        fn fib(n: u64) -> u64 {
            if n < 2 {
                return n;
            }
            let (a, b) = terroir::join(|| fib(n - 1), || fib(n - 2));
            a + b
        }
        assert_eq!(pool.install(|| fib(20)), 6765);
    })
    .join()
    .unwrap();
}

#[test]
fn too_many_threads_is_an_error_naming_the_count() {
    let n = terroir::max_num_threads() + 1;
    let err = ThreadPoolBuilder::new().num_threads(n).build().unwrap_err();
    match err {
        ThreadPoolBuildError::TooManyThreads { requested, max } => {
            assert_eq!((requested, max), (n, terroir::max_num_threads()));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(terroir::max_num_threads(), 65_535);
}

#[test]
fn the_builder_is_generic_and_keeps_terroirs_own_settings() {
    let topo = numa::Topology::builder()
        .nodes(2)
        .pus_per_l3(2)
        .build()
        .unwrap();
    let pool = ThreadPoolBuilder::new()
        .spawn_handler(|thread| {
            thread::spawn(move || thread.run());
            Ok(())
        })
        .topology(topo)
        .pin(false)
        .policy(terroir::Policy::StrictLocality)
        .distribution(terroir::Distribution::RoundRobin)
        .deque_order(terroir::DequeOrder::Fifo)
        .push_threshold(1)
        .build()
        .unwrap();
    assert_eq!(pool.current_num_threads(), 4);
    assert_eq!(pool.policy(), terroir::Policy::StrictLocality);
    assert_eq!(pool.topology().nodes().len(), 2);
    let text = format!("{:?}", ThreadPoolBuilder::new().num_threads(3));
    assert!(text.contains("num_threads: 3"), "{text}");
}
