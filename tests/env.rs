//! `TERROIR_NUM_THREADS` (or else `RAYON_NUM_THREADS`), `TERROIR_POLICY`
//! and `TERROIR_PIN`: they override the defaults, explicit builder settings
//! override them, and bad values are typed errors naming the variable and
//! the value. One test, because the environment is process-wide.

use terroir::{Pinning, Policy, ThreadPoolBuildError, ThreadPoolBuilder};

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
    std::env::remove_var("TERROIR_PIN");
    std::env::remove_var("RAYON_NUM_THREADS");
    let pool = build().unwrap();
    assert_eq!(pool.current_num_threads(), 6, "default: one worker per PU");
    assert_eq!(pool.policy(), Policy::Locality);

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

    std::env::remove_var("TERROIR_POLICY");

    // RAYON_NUM_THREADS counts when TERROIR_NUM_THREADS is unset, and a
    // bad value is an error naming it (rayon-core ignores a bad value).
    std::env::remove_var("TERROIR_NUM_THREADS");
    std::env::set_var("RAYON_NUM_THREADS", "4");
    assert_eq!(build().unwrap().current_num_threads(), 4);
    std::env::set_var("TERROIR_NUM_THREADS", "2");
    assert_eq!(build().unwrap().current_num_threads(), 2, "terroir's wins");
    std::env::remove_var("TERROIR_NUM_THREADS");
    std::env::set_var("RAYON_NUM_THREADS", "0");
    assert_eq!(build().unwrap().current_num_threads(), 6, "0: the default");
    std::env::set_var("RAYON_NUM_THREADS", "four");
    match build().unwrap_err() {
        ThreadPoolBuildError::InvalidEnv { var, value, .. } => {
            assert_eq!((var, value.as_str()), ("RAYON_NUM_THREADS", "four"));
        }
        other => panic!("{other:?}"),
    }
    std::env::set_var("RAYON_NUM_THREADS", "70000");
    let err = build().unwrap_err();
    assert!(err.to_string().contains("max_num_threads"), "{err}");
    std::env::set_var("TERROIR_NUM_THREADS", "three");
    match build().unwrap_err() {
        ThreadPoolBuildError::InvalidEnv { var, .. } => assert_eq!(var, "TERROIR_NUM_THREADS"),
        other => panic!("{other:?}"),
    }
    std::env::remove_var("TERROIR_NUM_THREADS");
    std::env::remove_var("RAYON_NUM_THREADS");

    // TERROIR_PIN overrides the default (unpinned, for a described
    // topology), not an explicit `pin`.
    let unpinned_by_default = || ThreadPoolBuilder::new().topology(topo()).build();
    assert!(!unpinned_by_default().unwrap().is_pinned());
    std::env::set_var("TERROIR_PIN", "0");
    let here = ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    assert!(
        !here.is_pinned(),
        "TERROIR_PIN=0 unpins this machine's pool"
    );
    std::env::set_var("TERROIR_PIN", "1");
    assert!(ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .is_pinned());
    assert!(!build().unwrap().is_pinned(), "an explicit pin(false) wins");
    let here = || ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    assert_eq!(
        here().pinning(),
        Some(Pinning::Cache),
        "TERROIR_PIN=1: the default granularity"
    );
    for (value, pinning) in [
        ("pu", Pinning::Pu),
        ("cache", Pinning::Cache),
        ("node", Pinning::Node),
    ] {
        std::env::set_var("TERROIR_PIN", value);
        assert_eq!(here().pinning(), Some(pinning), "TERROIR_PIN={value}");
        let asked = ThreadPoolBuilder::new()
            .num_threads(1)
            .pin(true)
            .build()
            .unwrap();
        assert_eq!(
            asked.pinning(),
            Some(pinning),
            "pin(true) pins as TERROIR_PIN={value} says"
        );
        let explicit = ThreadPoolBuilder::new()
            .num_threads(1)
            .pinning(Pinning::Pu)
            .build()
            .unwrap();
        assert_eq!(
            explicit.pinning(),
            Some(Pinning::Pu),
            "an explicit pinning wins over {value}"
        );
        let unpinned = ThreadPoolBuilder::new()
            .num_threads(1)
            .pin(false)
            .build()
            .unwrap();
        assert_eq!(
            unpinned.pinning(),
            None,
            "an explicit pin(false) wins over {value}"
        );
    }
    std::env::set_var("TERROIR_PIN", "yes");
    match ThreadPoolBuilder::new().num_threads(1).build().unwrap_err() {
        ThreadPoolBuildError::InvalidEnv { var, value, .. } => {
            assert_eq!((var, value.as_str()), ("TERROIR_PIN", "yes"));
        }
        other => panic!("{other:?}"),
    }
    std::env::remove_var("TERROIR_PIN");
}
