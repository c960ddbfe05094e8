//! Parallel sorts on `join`: the stable one sorts the two halves in
//! parallel and merges them with the standard library's stable sort (which
//! finds the two sorted runs and merges them in one pass); the unstable one
//! is a quicksort: a pivot (the median of three), one branchless two-way
//! partition pass (less; not less), both parts sorted in parallel (a part
//! whose pivot equals the pivot before it first takes the elements equal
//! to it out, as pdqsort does, so many equal keys cost little), the
//! standard library's unstable sort below [`SEQUENTIAL`] elements or
//! beyond a depth of twice the length's logarithm (so never quadratic).
//! Both first look for a slice already in order, or in strictly reverse
//! order (one pass; reversed in place), as rayon's sorts notice such runs.
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
    if v.len() > SEQUENTIAL && presorted(v, cmp) {
        return;
    }
    stable_parts(v, cmp);
}

fn stable_parts<T, F>(v: &mut [T], cmp: &F)
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
    crate::join(|| stable_parts(left, cmp), || stable_parts(right, cmp));
    if cmp(&v[mid - 1], &v[mid]) != Ordering::Greater {
        return; // already in order
    }
    // Two sorted runs: one linear merge.
    seq(v, cmp, |v, c| v.sort_by(c));
}

/// Whether `v` is in order by `cmp` already, after reversing it if it was
/// in strictly decreasing order (a stable reversal: no two elements are
/// equal). One pass, which stops at the first pair that is neither.
fn presorted<T, F>(v: &mut [T], cmp: &F) -> bool
where
    F: Fn(&T, &T) -> Ordering,
{
    let mut ascending = true;
    let mut descending = true;
    for w in v.windows(2) {
        match cmp(&w[0], &w[1]) {
            Ordering::Greater => ascending = false,
            Ordering::Less => descending = false,
            Ordering::Equal => descending = false,
        }
        if !ascending && !descending {
            return false;
        }
    }
    if !ascending {
        v.reverse();
    }
    true
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
    if presorted(v, cmp) {
        return;
    }
    let depth = 2 * (usize::BITS - v.len().leading_zeros());
    quick(v, cmp, depth, None);
}

/// The quicksort behind [`unstable`] (see the module docs), `depth` levels
/// of partitioning left. `pred`: the pivot of the partition that made `v`
/// (every element of `v` is at least it), if `v` is a right part.
fn quick<T, F>(mut v: &mut [T], cmp: &F, depth: u32, pred: Option<&mut T>)
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    loop {
        if v.len() <= SEQUENTIAL || depth == 0 {
            seq(v, cmp, |v, c| v.sort_unstable_by(c));
            return;
        }
        pivot_first(v, cmp);
        if let Some(p) = pred.as_deref() {
            if cmp(p, &v[0]) != Ordering::Less {
                // The pivot equals the one before (nothing in `v` is less):
                // the elements equal to it go first and are done; the rest
                // (all greater) is partitioned again. Many equal keys cost
                // a pass each, not a level each.
                let eq = partition(v, |x, p| cmp(p, x) != Ordering::Less);
                v = &mut v[eq..];
                continue;
            }
        }
        break;
    }
    let lt = partition(v, |x, p| cmp(x, p) == Ordering::Less);
    let (left, rest) = v.split_at_mut(lt - 1);
    let (pivot, right) = rest.split_first_mut().expect("the pivot");
    crate::join(
        || quick(left, cmp, depth - 1, pred),
        || quick(right, cmp, depth - 1, Some(pivot)),
    );
}

/// Moves the median of three of `v`'s elements (at least 3) to `v[0]`.
fn pivot_first<T, F>(v: &mut [T], cmp: &F)
where
    F: Fn(&T, &T) -> Ordering,
{
    let n = v.len();
    let (a, b, c) = (n / 4, n / 2, 3 * n / 4);
    let median = if cmp(&v[a], &v[b]) == Ordering::Less {
        if cmp(&v[b], &v[c]) == Ordering::Less {
            b
        } else if cmp(&v[a], &v[c]) == Ordering::Less {
            c
        } else {
            a
        }
    } else if cmp(&v[a], &v[c]) == Ordering::Less {
        a
    } else if cmp(&v[b], &v[c]) == Ordering::Less {
        c
    } else {
        b
    };
    v.swap(0, median);
}

/// Partitions `v[1..]` around the pivot `v[0]` by `goes_first(x, pivot)`,
/// then puts the pivot after the elements that go first: returns the end
/// of those elements with the pivot (`v[..k-1]` go first, `v[k-1]` is the
/// pivot, `v[k..]` do not). One branchless pass (every element is swapped,
/// the count moves by the comparison's answer), so its time does not
/// depend on how the answers fall (Hoare's pass, which swaps fewer large
/// elements, measured no faster on 32-byte ones). Safe for any comparator: every index
/// stays in bounds whatever it answers (a comparator that is not a total
/// order leaves the parts unordered, every element still in `v`).
fn partition<T>(v: &mut [T], goes_first: impl Fn(&T, &T) -> bool) -> usize {
    let (pivot, rest) = v.split_first_mut().expect("a pivot");
    // rest[..k]: go first; rest[k..i]: do not.
    let mut k = 0;
    for i in 0..rest.len() {
        let first = goes_first(&rest[i], pivot);
        rest.swap(k, i);
        k += usize::from(first);
    }
    v.swap(0, k);
    k + 1
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

    /// Many equal keys cost a pass each, not a partition level each: 2^18
    /// elements of four keys take fewer than 24 comparisons per element
    /// (without the pass for a pivot equal to the one before, each level
    /// takes one element out, down to the depth limit: about 40).
    #[test]
    fn few_keys_sort_in_few_passes() {
        let n = 1usize << 18;
        let mut v: Vec<u64> = (0..n as u64).map(|i| (i * 2_654_435_761) % 4).collect();
        let count = AtomicU64::new(0);
        v.par_sort_unstable_by(|a, b| {
            count.fetch_add(1, AtomicOrdering::Relaxed);
            a.cmp(b)
        });
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
        let per = count.load(AtomicOrdering::Relaxed) as f64 / n as f64;
        assert!(per < 24.0, "{per:.1} comparisons per element");
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
                // Large elements (more bytes moved per swap).
                let big: Vec<[u64; 8]> = v.iter().map(|&k| [k, 0, 0, 0, 0, 0, 0, k]).collect();
                let mut got = big.clone();
                got.par_sort_unstable();
                let mut want = big;
                want.sort_unstable();
                assert_eq!(
                    got, want,
                    "par_sort_unstable of 64-byte elements, {name}, {len}"
                );
            }
        }
    }
}
