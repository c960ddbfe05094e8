//! Tests of the parallel sorts: comparison counts on few keys, mostly
//! sorted and sawtooth input, the slow-comparator probe, zero-sized
//! elements, comparators that lie or panic, and every input shape against
//! the standard library's sorts.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use crate::iter::slice::ParallelSliceMut;

/// Sorts `v` (stably or not) with a comparator that counts its calls;
/// checks the result is in order and returns the comparisons per element.
fn comparisons_per_element(v: &mut [u64], stable: bool) -> f64 {
    let count = AtomicU64::new(0);
    let cmp = |a: &u64, b: &u64| {
        count.fetch_add(1, AtomicOrdering::Relaxed);
        a.cmp(b)
    };
    if stable {
        v.par_sort_by(cmp);
    } else {
        v.par_sort_unstable_by(cmp);
    }
    assert!(v.windows(2).all(|w| w[0] <= w[1]), "not sorted");
    count.load(AtomicOrdering::Relaxed) as f64 / v.len() as f64
}

/// Many equal keys cost a pass each, not a partition level each: 2^18
/// elements of four keys take fewer than 24 comparisons per element
/// (without the pass for a pivot equal to the one before, each level
/// takes one element out, down to the depth limit: about 40).
#[test]
fn few_keys_sort_in_few_passes() {
    let n = 1usize << 18;
    let mut v: Vec<u64> = (0..n as u64).map(|i| (i * 2_654_435_761) % 4).collect();
    let per = comparisons_per_element(&mut v, false);
    assert!(per < 24.0, "{per:.1} comparisons per element");
}

/// A mostly sorted slice (rayon-demo's "mostly ascending": √n random
/// swaps) is sorted in about 10 comparisons per element, as rayon's
/// pdqsort does: by Hoare partitions and partial insertion sorts. With
/// the branchless partition it takes 20; handed to the standard
/// library's sort below 4096 elements, 16. Mostly descending input is
/// reversed first and costs the same.
#[test]
fn mostly_sorted_input_takes_few_comparisons() {
    let n = 50_000usize;
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    let mut ascending: Vec<u64> = (0..n as u64).collect();
    for _ in 0..223 {
        let (a, b) = (rnd(), rnd());
        ascending.swap(a, b);
    }
    let descending: Vec<u64> = ascending.iter().rev().copied().collect();
    for (name, data) in [("ascending", ascending), ("descending", descending)] {
        let mut v = data.clone();
        let per = comparisons_per_element(&mut v, false);
        assert!(v.iter().copied().eq(0..n as u64), "mostly {name}");
        assert!(
            per < 12.0,
            "mostly {name}: {per:.1} comparisons per element"
        );
    }
}

/// A comparator that spins for a microsecond is slow (its sorts poll
/// for thieves); in a release build `u64`'s is not, in one of five
/// tries at least (a preemption inside the 32 timed calls could make
/// one try slow).
#[test]
fn slow_comparators_are_told_apart() {
    let v: Vec<u64> = (0..64).rev().collect();
    let spin = |a: &u64, b: &u64| {
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_micros(1) {}
        a.cmp(b)
    };
    assert!(super::slow_comparator(&v, &spin));
    // Unoptimised, a call of `u64::cmp` through the wrapper takes
    // longer than the threshold: release builds only.
    if !cfg!(debug_assertions) {
        assert!((0..5).any(|_| !super::slow_comparator(&v, &u64::cmp)));
    }
}

/// Zero-sized elements have no order to find: even 2^60 of them
/// return at once (the shape survey's sample index overflowed).
#[test]
fn zero_sized_elements_return_at_once() {
    let mut v = [(); 1 << 60];
    v.par_sort_unstable();
    v.par_sort();
    v.par_sort_by(|a, b| a.cmp(b));
    assert_eq!(v.len(), 1 << 60);
}

/// Periodic input (a sawtooth) does not give bad pivots level after
/// level: after an unbalanced partition a few elements are swapped
/// around first, as in pdqsort (2^20 elements of period 1024: 14.5
/// comparisons per element; 31.5 without).
#[test]
fn sawtooth_input_takes_few_comparisons() {
    let n = 1usize << 20;
    for period in [1_000u64, 1_024] {
        let mut v: Vec<u64> = (0..n as u64).map(|i| i % period).collect();
        let per = comparisons_per_element(&mut v, false);
        assert!(
            per < 18.0,
            "period {period}: {per:.1} comparisons per element"
        );
    }
}

/// The stable sort merges its sorted halves in one pass each (not by
/// the standard library's sort of the two runs, which first looks for
/// them: 20 comparisons per element on random input).
#[test]
fn stable_sort_merges_in_one_pass() {
    let n = 50_000u64;
    let mut v: Vec<u64> = (0..n).map(|i| (i * 2_654_435_761) % n).collect();
    let per = comparisons_per_element(&mut v, true);
    assert!(v.iter().copied().eq(0..n));
    assert!(per < 17.5, "{per:.1} comparisons per element");
}

/// A comparator that answers at random (rayon's test): no panic, every
/// element still there, and a later sort by a true order sorts.
#[test]
fn random_comparator_does_not_panic() {
    let seed = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    let random = |_: &u32, _: &u32| {
        let x = seed.fetch_add(0x9E37_79B9_7F4A_7C15, AtomicOrdering::Relaxed);
        let x = (x ^ (x >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        [Ordering::Less, Ordering::Equal, Ordering::Greater][(x >> 60) as usize % 3]
    };
    for len in [2usize, 20, 100, 1_000, 10_000] {
        for stable in [true, false] {
            let mut v: Vec<u32> = (0..len as u32).collect();
            for _ in 0..4 {
                if stable {
                    v.par_sort_by(random);
                } else {
                    v.par_sort_unstable_by(random);
                }
            }
            v.par_sort_by(|a, b| a.cmp(b));
            assert_eq!(
                v,
                (0..len as u32).collect::<Vec<_>>(),
                "len {len} stable {stable}"
            );
        }
    }
    // One that lies once in 64 answers, on mostly sorted input: the
    // unstable sort takes its mostly sorted path (Hoare partitions,
    // partial insertion sorts) and meets the lies there.
    let lies = |a: &u32, b: &u32| {
        let x = seed.fetch_add(0x9E37_79B9_7F4A_7C15, AtomicOrdering::Relaxed);
        if (x >> 58) == 0 {
            Ordering::Greater
        } else {
            a.cmp(b)
        }
    };
    let mut v: Vec<u32> = (0..50_000).collect();
    for i in (0..50_000).step_by(101) {
        v.swap(i, (i * 7_919) % 50_000);
    }
    for _ in 0..4 {
        v.par_sort_unstable_by(lies);
        v.par_sort_by(lies);
    }
    v.par_sort_unstable();
    assert!(v.into_iter().eq(0..50_000), "a permutation after lies");
}

/// A comparator's own panic still propagates.
#[test]
fn comparator_panic_propagates() {
    for stable in [true, false] {
        // Shuffled (a multiplicative permutation of 0..10_000), so that
        // the panic comes from inside the parallel sort, not from the
        // first pass that looks for sorted input.
        let mut v: Vec<u32> = (0..10_000u32).map(|i| (i * 7_919) % 10_000).collect();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let cmp = |a: &u32, b: &u32| {
                if *a == 77 || *b == 77 {
                    panic!("comparator says no");
                }
                a.cmp(b)
            };
            if stable {
                v.par_sort_by(cmp);
            } else {
                v.par_sort_unstable_by(cmp);
            }
        }));
        let p = r.expect_err("the comparator's panic propagates");
        assert_eq!(p.downcast_ref::<&str>(), Some(&"comparator says no"));
        v.sort();
        assert_eq!(v, (0..10_000).collect::<Vec<_>>());
    }
}

/// The inputs whose shape the sorts look for (in order, reversed,
/// nearly so, all equal, few distinct keys) and random ones, on both
/// sides of the sequential cut-off: the same order as the standard
/// library's sorts, stable where asked.
#[test]
fn patterns_sort_as_std_does() {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for len in [3usize, 4_000, 5_000, 50_000, 200_000] {
        let random: Vec<u64> = (0..len).map(|_| rnd()).collect();
        let mut nearly: Vec<u64> = (0..len as u64).collect();
        for i in (0..len).step_by(97) {
            nearly.swap(i, (i * 7919) % len);
        }
        let patterns: Vec<(&str, Vec<u64>)> = vec![
            ("ascending", (0..len as u64).collect()),
            ("descending", (0..len as u64).rev().collect()),
            (
                "descending with ties",
                (0..len as u64).rev().map(|k| k / 3).collect(),
            ),
            ("all equal", vec![7; len]),
            ("nearly ascending", nearly.clone()),
            ("nearly descending", nearly.iter().rev().copied().collect()),
            ("sawtooth", (0..len as u64).map(|k| k % 1000).collect()),
            ("few keys", random.iter().map(|k| k % 4).collect()),
            ("random", random),
        ];
        for (name, v) in patterns {
            // Each value tagged with its position: a stable sort by the
            // value keeps the tags of equal values in order.
            let tagged: Vec<(u64, usize)> = v.iter().copied().zip(0..).collect();
            let mut want = tagged.clone();
            want.sort_by_key(|t| t.0);
            let mut got = tagged.clone();
            got.par_sort_by_key(|t| t.0);
            assert_eq!(got, want, "par_sort_by_key, {name}, {len}");
            let mut got = tagged.clone();
            got.par_sort_unstable_by_key(|t| t.0);
            assert!(
                got.iter().map(|t| t.0).eq(want.iter().map(|t| t.0)),
                "par_sort_unstable_by_key, {name}, {len}"
            );
            let mut sorted = got.iter().map(|t| t.1).collect::<Vec<_>>();
            sorted.sort_unstable();
            assert!(
                sorted.into_iter().eq(0..len),
                "a permutation, {name}, {len}"
            );
            let mut got = v.clone();
            got.par_sort_unstable();
            let mut want = v.clone();
            want.sort_unstable();
            assert_eq!(got, want, "par_sort_unstable, {name}, {len}");
            // Large elements (72 bytes: partitioned by Hoare's pass).
            let big: Vec<[u64; 9]> = v.iter().map(|&k| [k, 0, 0, 0, 0, 0, 0, 0, k]).collect();
            let mut got = big.clone();
            got.par_sort_unstable();
            let mut want = big;
            want.sort_unstable();
            assert_eq!(
                got, want,
                "par_sort_unstable of 72-byte elements, {name}, {len}"
            );
        }
    }
}
