//! Parallel sorts on `join`: the stable one sorts the two halves in
//! parallel and merges them with the standard library's stable sort (which
//! finds the two sorted runs and merges them in one pass); the unstable one
//! splits at the median (`select_nth_unstable_by`) and sorts both sides in
//! parallel.

use std::cmp::Ordering;

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
        v.sort_by(cmp);
        return;
    }
    let mid = v.len() / 2;
    let (left, right) = v.split_at_mut(mid);
    crate::join(|| stable(left, cmp), || stable(right, cmp));
    if cmp(&v[mid - 1], &v[mid]) != Ordering::Greater {
        return; // already in order
    }
    // Two sorted runs: one linear merge.
    v.sort_by(cmp);
}

/// Unstable parallel sort of `v` by `cmp`.
pub(super) fn unstable<T, F>(v: &mut [T], cmp: &F)
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    if v.len() <= SEQUENTIAL {
        v.sort_unstable_by(cmp);
        return;
    }
    let mid = v.len() / 2;
    let (left, _, right) = v.select_nth_unstable_by(mid, cmp);
    crate::join(|| unstable(left, cmp), || unstable(right, cmp));
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
