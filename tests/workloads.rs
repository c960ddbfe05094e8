//! Every benchmark workload (`benches/workloads/`), at its small size,
//! gives the sequential result under every policy, with the spawned-task
//! deque in either order, and under rayon where it has a rayon version: a
//! wrong answer fails here before it could become a benchmark number.

#[path = "../benches/workloads/mod.rs"]
mod workloads;

use terroir::numa::Topology;
use terroir::{DequeOrder, Policy, ThreadPoolBuilder};
use workloads::{Size, LOOP_NAMES, NAMES, RAYON_NAMES};

fn check(name: &str) {
    let topo = Topology::detect().expect("topology");
    let w = workloads::make(name, Size::Small, &topo).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(w.name(), name);
    w.setup();
    let want = w.sequential();
    // Run twice per pool: `setup` must bring the state back.
    for &policy in Policy::ALL {
        for order in [DequeOrder::Lifo, DequeOrder::Fifo] {
            let pool = ThreadPoolBuilder::new()
                .num_threads(2)
                .policy(policy)
                .deque_order(order)
                .build()
                .unwrap();
            for run in 0..2 {
                w.setup();
                let got = w.terroir(&pool);
                assert_eq!(
                    got,
                    want,
                    "{name} ({}) under {policy:?}/{order:?}, run {run}: checksum differs",
                    w.describe()
                );
                w.setup();
                let got = w.terroir_iter(&pool);
                if LOOP_NAMES.contains(&name) {
                    assert_eq!(
                        got,
                        Some(want),
                        "{name} iterator version under {policy:?}/{order:?}, run {run}"
                    );
                } else {
                    assert_eq!(
                        got, None,
                        "{name} is not in LOOP_NAMES but has a loop version"
                    );
                }
            }
        }
    }
    let rayon = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    w.setup();
    let got = w.rayon_iter(&rayon);
    assert_eq!(
        got.is_some(),
        LOOP_NAMES.contains(&name),
        "{name}: a rayon iterator version exactly for LOOP_NAMES"
    );
    if let Some(got) = got {
        assert_eq!(got, want, "{name}: rayon iterator version");
    }
    w.setup();
    let got = w.rayon(&rayon);
    if RAYON_NAMES.contains(&name) {
        assert_eq!(got, Some(want), "{name}: rayon version");
    } else {
        assert_eq!(
            got, None,
            "{name} is not in RAYON_NAMES but has a rayon version"
        );
    }
}

macro_rules! workload_tests {
    ($($test:ident => $name:literal,)*) => {
        $(#[test] fn $test() { check($name); })*

        #[test]
        fn every_workload_has_a_test() {
            let tested = [$($name),*];
            assert_eq!(tested.len(), NAMES.len());
            for n in NAMES {
                assert!(tested.contains(&n), "{n} has no test");
            }
        }
    };
}

workload_tests! {
    fib => "fib",
    nqueens => "nqueens",
    sort => "sort",
    sparselu => "sparselu",
    strassen => "strassen",
    health => "health",
    uts => "uts",
    alignment => "alignment",
    heat => "heat",
    jacobi_2d => "jacobi-2d",
    seidel_2d => "seidel-2d",
    stream_triad => "stream-triad",
    reduction => "reduction",
    histogram => "histogram",
}

#[test]
fn sizes_parse() {
    assert_eq!(Size::parse("small"), Ok(Size::Small));
    assert_eq!(Size::parse("42"), Ok(Size::Param(42)));
    assert!(Size::parse("0").is_err());
    assert!(Size::parse("huge").unwrap_err().contains("huge"));
    let topo = Topology::detect().unwrap();
    assert!(workloads::make("nope", Size::Small, &topo)
        .err()
        .unwrap()
        .contains("fib"));
}
