//! Parallel sorts on `join`: the stable one sorts the two halves in
//! parallel and merges them with the standard library's stable sort (which
//! finds the two sorted runs and merges them in one pass); the unstable one
//! splits at the median (`select_nth_unstable_by`) and sorts both sides in
//! parallel.
//!
//! A comparator that is not a total order (rayon's tests sort with a
//! random one) does not make them panic: as in rayon, the elements are
//! then left in some order, all of them still in the slice. The standard
//! library's sorts may panic when they notice such a comparator; [`seq`]
//! catches that panic (the standard library prints its message first) and
//! rethrows only a panic of the comparator itself.

use std::cell::Cell;
use std::cmp::Ordering;
use std::panic::{self, AssertUnwindSafe};

use super::ParallelSliceMut;
use crate::iter::{IndexedParallelIterator, IntoParallelRefMutIterator, ParallelIterator};

/// Below this many elements a part is sorted sequentially.
const SEQUENTIAL: usize = 1 << 12;

/// Stable parallel sort of `v` by `cmp`.
pub(super) fn stable<T, F>(v: &mut [T], cmp: &F)
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    if v.len() <= SEQUENTIAL {
        seq(v, cmp, |v, c| v.sort_by(c));
        return;
    }
    let mid = v.len() / 2;
    let (left, right) = v.split_at_mut(mid);
    crate::join(|| stable(left, cmp), || stable(right, cmp));
    if cmp(&v[mid - 1], &v[mid]) != Ordering::Greater {
        return; // already in order
    }
    // Two sorted runs: one linear merge.
    seq(v, cmp, |v, c| v.sort_by(c));
}

/// Unstable parallel sort of `v` by `cmp`.
pub(super) fn unstable<T, F>(v: &mut [T], cmp: &F)
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    if v.len() <= SEQUENTIAL {
        seq(v, cmp, |v, c| v.sort_unstable_by(c));
        return;
    }
    let mid = v.len() / 2;
    seq(v, cmp, |v, c| {
        v.select_nth_unstable_by(mid, c);
    });
    let (left, right) = v.split_at_mut(mid);
    let right = &mut right[1..];
    crate::join(|| unstable(left, cmp), || unstable(right, cmp));
}

/// Runs the standard library's `sort` on `v` with `cmp`: a panic of `cmp`
/// propagates, one of the standard library about `cmp` not being a total
/// order is swallowed (the elements are all still in `v`, in some order).
fn seq<T, F>(v: &mut [T], cmp: &F, sort: impl FnOnce(&mut [T], &mut dyn FnMut(&T, &T) -> Ordering))
where
    F: Fn(&T, &T) -> Ordering,
{
    /// Marks the comparator's own panic while it unwinds out of a call.
    struct Unwinding<'a>(&'a Cell<bool>);
    impl Drop for Unwinding<'_> {
        fn drop(&mut self) {
            self.0.set(true);
        }
    }
    let user_panicked = Cell::new(false);
    let mut c = |a: &T, b: &T| {
        let guard = Unwinding(&user_panicked);
        let r = cmp(a, b);
        std::mem::forget(guard);
        r
    };
    if let Err(p) = panic::catch_unwind(AssertUnwindSafe(|| sort(v, &mut c))) {
        if user_panicked.get() {
            panic::resume_unwind(p);
        }
    }
}

/// Stable sort by a key computed once per element (in parallel).
pub(super) fn by_cached_key<T, K, F>(v: &mut [T], f: F)
where
    T: Send,
    K: Ord + Send,
    F: Fn(&T) -> K + Sync,
{
    if v.len() < 2 {
        return;
    }
    // Sorting (key, index) pairs keeps equal keys in order: stable.
    let mut keys: Vec<(K, usize)> = v
        .par_iter_mut()
        .map(|x| f(x))
        .enumerate()
        .map(|(i, k)| (k, i))
        .collect();
    keys.par_sort_unstable();
    // Apply the permutation in place (the standard library's cycle walk).
    for i in 0..v.len() {
        let mut index = keys[i].1;
        while index < i {
            index = keys[index].1;
        }
        keys[i].1 = index;
        v.swap(i, index);
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;
    use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

    use crate::iter::slice::ParallelSliceMut;

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
    }

    /// A comparator's own panic still propagates.
    #[test]
    fn comparator_panic_propagates() {
        for stable in [true, false] {
            let mut v: Vec<u32> = (0..10_000).rev().collect();
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
}
