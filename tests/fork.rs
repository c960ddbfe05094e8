//! `fork()` with `NodeLocalAlloc` as the process allocator: a child forked
//! while other threads hold the slab pool's locks must still be able to
//! allocate. The child has only the forking thread; a lock another thread
//! held at the fork stays locked in the child forever, unless the pool's
//! fork handlers (`pthread_atfork`) take every lock before the fork and
//! release them on both sides.
//!
//! Its own test binary: the allocator is the whole process's.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use terroir::pool::NodeLocalAlloc;

#[global_allocator]
static ALLOC: NodeLocalAlloc = NodeLocalAlloc;

/// Block sizes of every slab class (16 B .. 64 KiB) and a large block.
const SIZES: [usize; 14] = [
    16,
    32,
    64,
    128,
    256,
    512,
    1024,
    2048,
    4096,
    8192,
    16384,
    32768,
    65536,
    1 << 20,
];

/// Allocates and frees without pause, and sends half of its blocks to
/// `tx`'s thread to free: refills, give-backs and remote magazines, each a
/// moment under a lock of the shared lists. Classes of 32 and 64 KiB have
/// batches of 2, so every other operation on them takes a lock.
fn churn(stop: &AtomicBool, tx: &mpsc::SyncSender<Vec<Vec<u8>>>, seed: usize) {
    let mut rng = seed.wrapping_mul(0x9e37_79b9) | 1;
    let mut held: Vec<Vec<u8>> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let size = SIZES[rng % 13].min(16 + rng % 70_000);
        held.push(vec![rng as u8; size]);
        if held.len() >= 64 {
            let other = held.split_off(32);
            // The receiver may have stopped: then drop them here.
            let _ = tx.try_send(other);
            held.truncate(8);
        }
    }
}

/// Waits for `pid` for at most `limit`; its exit status, or `None` if it
/// is still running (then it is killed and reaped).
fn wait_for(pid: libc::pid_t, limit: Duration) -> Option<libc::c_int> {
    let start = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: `status` is writable; `pid` is our child.
        let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        assert!(rc >= 0, "waitpid: {}", std::io::Error::last_os_error());
        if rc == pid {
            return Some(status);
        }
        if start.elapsed() > limit {
            // SAFETY: our child, not yet reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return None;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// In the child: allocate more of every class than a thread caches (two
/// batches), so that each class's shared list, and its lock, is needed,
/// and a large block. The blocks are not touched: allocating is the point.
fn child_allocates() -> usize {
    let mut keep: Vec<Vec<u8>> = Vec::with_capacity(SIZES.len() * 70);
    for size in SIZES {
        let n = if size > 65536 { 2 } else { 70 };
        for _ in 0..n {
            keep.push(Vec::with_capacity(size));
        }
    }
    keep.iter().map(Vec::capacity).sum()
}

#[test]
fn a_child_forked_while_threads_allocate_can_allocate() {
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for t in 0..3 {
        let (tx, rx) = mpsc::sync_channel::<Vec<Vec<u8>>>(4);
        let stop2 = Arc::clone(&stop);
        workers.push(thread::spawn(move || churn(&stop2, &tx, t + 1)));
        // The freeing side: every block it frees was allocated by another
        // thread.
        workers.push(thread::spawn(move || for _batch in rx {}));
    }
    thread::sleep(Duration::from_millis(50));
    let forks = 1000;
    let mut hung = Vec::new();
    for round in 0..forks {
        // SAFETY: the child only allocates, frees and calls _exit: it never
        // returns into the test harness nor touches its other threads.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            let ok = std::panic::catch_unwind(child_allocates).is_ok_and(|n| n > 0);
            // SAFETY: leaves the child at once, without running the
            // parent's atexit handlers or destructors.
            unsafe { libc::_exit(if ok { 0 } else { 2 }) };
        }
        match wait_for(pid, Duration::from_secs(10)) {
            Some(status) => assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "child of fork {round} failed: wait status {status:#x}"
            ),
            None => {
                hung.push(round);
                break;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    assert!(
        hung.is_empty(),
        "the child of fork {hung:?} (of {forks}) did not exit within 10 s: it \
         deadlocked on a slab lock held by another thread at the fork"
    );
}
