//! The global pool is built lazily on first use and honours
//! `TERROIR_NUM_THREADS`; `build_global` afterwards is a typed error. Its own
//! test binary, since the global pool lives as long as the process.

use terroir::{ThreadPoolBuildError, ThreadPoolBuilder};

#[test]
fn lazy_global_pool_reads_the_environment() {
    std::env::set_var("TERROIR_NUM_THREADS", "3");
    std::env::set_var("TERROIR_POLICY", "flat");
    // First use builds it.
    assert_eq!(terroir::current_num_threads(), 3);
    let (a, b) = terroir::join(|| 20, || 22);
    assert_eq!(a + b, 42);
    let err = ThreadPoolBuilder::new().build_global().unwrap_err();
    assert!(matches!(
        err,
        ThreadPoolBuildError::GlobalPoolAlreadyInitialized
    ));
    assert!(err.to_string().contains("already"));
}
