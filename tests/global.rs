//! The global pool: `build_global` configures it once; a second call is a
//! typed error; free functions (`join`, `spawn`, `current_num_threads`) use
//! it. Its own test binary, since the global pool lives as long as the
//! process.

use terroir::{Policy, ThreadPoolBuildError, ThreadPoolBuilder};

#[test]
fn build_global_once_then_use_it() {
    ThreadPoolBuilder::new()
        .num_threads(3)
        .policy(Policy::Flat)
        .thread_name(|i| format!("global-{i}"))
        .build_global()
        .unwrap();
    let again = ThreadPoolBuilder::new().num_threads(2).build_global();
    assert!(matches!(
        again,
        Err(ThreadPoolBuildError::GlobalPoolAlreadyInitialized)
    ));
    assert_eq!(terroir::current_num_threads(), 3);
    let (name, idx) = terroir::join(
        || std::thread::current().name().map(str::to_owned),
        terroir::current_thread_index,
    );
    assert!(name.unwrap().starts_with("global-"));
    assert!(idx.unwrap() < 3);
    let (tx, rx) = std::sync::mpsc::channel();
    terroir::spawn(move || tx.send(terroir::current_num_threads()).unwrap());
    assert_eq!(rx.recv().unwrap(), 3);
}
