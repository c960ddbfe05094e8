//! `TERROIR_NUM_THREADS` and `TERROIR_POLICY`: they override the defaults,
//! explicit builder settings override them, and bad values are typed errors
//! naming the variable and the value. One test, because the environment is
//! process-wide.

use terroir::{Policy, ThreadPoolBuildError, ThreadPoolBuilder};

#[test]
fn environment_overrides_and_errors() {
    let topo = || {
        terroir::numa::Topology::builder()
            .nodes(2)
            .pus_per_l3(3)
            .build()
            .unwrap()
    };
    let build = || ThreadPoolBuilder::new().topology(topo()).pin(false).build();

    std::env::remove_var("TERROIR_NUM_THREADS");
    std::env::remove_var("TERROIR_POLICY");
    let pool = build().unwrap();
    assert_eq!(pool.current_num_threads(), 6, "default: one worker per PU");
    assert_eq!(pool.policy(), Policy::Hierarchical);

    std::env::set_var("TERROIR_NUM_THREADS", "3");
    std::env::set_var("TERROIR_POLICY", "flat");
    let pool = build().unwrap();
    assert_eq!(pool.current_num_threads(), 3);
    assert_eq!(pool.policy(), Policy::Flat);
    assert_eq!(pool.install(terroir::current_num_threads), 3);

    // Explicit settings win over the environment.
    let pool = ThreadPoolBuilder::new()
        .topology(topo())
        .pin(false)
        .num_threads(5)
        .policy(Policy::Hierarchical)
        .build()
        .unwrap();
    assert_eq!(pool.current_num_threads(), 5);
    assert_eq!(pool.policy(), Policy::Hierarchical);

    // 0 means "the default", as in rayon.
    std::env::set_var("TERROIR_NUM_THREADS", "0");
    assert_eq!(build().unwrap().current_num_threads(), 6);

    std::env::set_var("TERROIR_NUM_THREADS", "many");
    match build().unwrap_err() {
        ThreadPoolBuildError::InvalidEnv { var, value, .. } => {
            assert_eq!(var, "TERROIR_NUM_THREADS");
            assert_eq!(value, "many");
        }
        other => panic!("{other:?}"),
    }
    std::env::set_var("TERROIR_NUM_THREADS", "2");

    std::env::set_var("TERROIR_POLICY", "nearest-first-please");
    let err = build().unwrap_err();
    let msg = err.to_string();
    match err {
        ThreadPoolBuildError::InvalidEnv { var, value, .. } => {
            assert_eq!(var, "TERROIR_POLICY");
            assert_eq!(value, "nearest-first-please");
        }
        other => panic!("{other:?}"),
    }
    assert!(msg.contains("hierarchical"), "lists the valid names: {msg}");

    std::env::remove_var("TERROIR_NUM_THREADS");
    std::env::remove_var("TERROIR_POLICY");
}
