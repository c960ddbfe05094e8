//! A program's first parallel loop builds the global pool even when it is
//! too short to split and runs on the calling thread (as rayon's does): a
//! later `build_global` is refused. One test per file: the global pool is
//! the process's.

use terroir::prelude::*;
use terroir::{ThreadPoolBuildError, ThreadPoolBuilder};

#[test]
fn a_loop_that_runs_inline_still_builds_the_global_pool() {
    let ran_here = (0..1)
        .into_par_iter()
        .map(|_| terroir::current_thread_index())
        .collect::<Vec<_>>();
    assert_eq!(ran_here, [None], "the loop ran on the calling thread");
    match ThreadPoolBuilder::new().num_threads(1).build_global() {
        Err(ThreadPoolBuildError::GlobalPoolAlreadyInitialized) => {}
        other => panic!("the first loop did not build the global pool: {other:?}"),
    }
}
