//! The stable parallel sort: a merge sort on `join`. Parts of about an
//! eighth of the slice per worker ([`LEAVES_PER_THREAD`]; at least
//! [`SEQUENTIAL`] elements) are sorted by the standard library's stable
//! sort; two sorted halves are merged into a buffer, the merge itself
//! split in parallel (the longer run cut at its middle, the other at the
//! matching place found by binary search), then copied back.
//!
//! Every element is moved by bitwise copies only: a merge reads the two
//! runs in `v` and writes each of their elements exactly once into the
//! buffer (uninitialised slots, never dropped from there); only once the
//! whole merge has returned does the buffer overwrite `v`'s range, without
//! dropping what it overwrites (the same elements). A comparator that
//! panics, or that is not a total order, therefore leaves `v` holding every
//! element exactly once: a panic before the copy back leaves that range as
//! it was, and a merge writes each slot once whatever the comparator says.

use std::cell::Cell;
use std::cmp::Ordering;
use std::mem::MaybeUninit;
use std::ptr;

use super::sort::{polled, presorted, seq, slow_comparator, SEQUENTIAL};

/// The stable sort cuts a slice into about this many parts per worker
/// (of at least [`SEQUENTIAL`] elements) for the standard library's sort:
/// enough to balance the load, few enough that few merge passes remain
/// (the standard library's sort is faster per element than a merge pass
/// here).
const LEAVES_PER_THREAD: usize = 8;

/// Below this many elements (both runs together) a merge is sequential.
const MERGE_SEQUENTIAL: usize = 1 << 12;

/// Above this many elements a copy back is split in two (in parallel).
const COPY_SEQUENTIAL: usize = 1 << 16;

/// Stable parallel sort of `v` by `cmp`.
pub(super) fn stable<T, F>(v: &mut [T], cmp: &F)
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    if size_of::<T>() == 0 {
        return; // nothing to order (as in the standard library and rayon)
    }
    if v.len() <= SEQUENTIAL {
        seq(v, cmp, true, false);
        return;
    }
    if presorted(v, cmp) {
        return;
    }
    let leaf = SEQUENTIAL.max(v.len() / (LEAVES_PER_THREAD * crate::current_num_threads()));
    let mut buf: Vec<T> = Vec::with_capacity(v.len());
    // The buffer's slots are only ever written and copied out of: `buf`
    // keeps length 0, so it never drops what they hold.
    let poll = slow_comparator(v, cmp);
    sort(v, &mut buf.spare_capacity_mut()[..v.len()], cmp, leaf, poll);
}

/// Sorts `v` (stably), `buf` (as long) as scratch space, parts of at most
/// `leaf` elements by the standard library's sort (which serves thieves
/// if `poll`: the comparator is slow).
fn sort<T, F>(v: &mut [T], buf: &mut [MaybeUninit<T>], cmp: &F, leaf: usize, poll: bool)
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    if v.len() <= leaf {
        seq(v, cmp, true, poll);
        return;
    }
    let mid = v.len() / 2;
    {
        let (left, right) = v.split_at_mut(mid);
        let (bl, br) = buf.split_at_mut(mid);
        crate::join(
            || sort(left, bl, cmp, leaf, poll),
            || sort(right, br, cmp, leaf, poll),
        );
    }
    if cmp(&v[mid - 1], &v[mid]) != Ordering::Greater {
        return; // the halves are in order already
    }
    let (left, right) = v.split_at_mut(mid);
    merge(left, right, buf, cmp);
    // SAFETY: `merge` returned, so it filled `buf` from the two halves that
    // make up `v`, untouched since.
    unsafe { copy_back(buf, v) };
}

/// Merges the sorted runs `left` and `right` (`left` first among equals)
/// into `dest` (exactly as long as both): every slot of `dest` gets a
/// bitwise copy of one element, each element copied exactly once, for any
/// comparator (one that is not a total order makes the order unspecified).
fn merge<T, F>(left: &mut [T], right: &mut [T], dest: &mut [MaybeUninit<T>], cmp: &F)
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    debug_assert_eq!(left.len() + right.len(), dest.len());
    if dest.len() <= MERGE_SEQUENTIAL || left.is_empty() || right.is_empty() {
        merge_seq(left, right, dest, cmp);
        return;
    }
    // Cut the longer run at its middle and the other where that element
    // goes, keeping equal elements of `left` before those of `right`: the
    // elements of `right` less than `left[i]`, or those of `left` not
    // greater than `right[j]`. Both pieces are shorter than `dest`.
    let (i, j) = if left.len() >= right.len() {
        let i = left.len() / 2;
        let pivot = &left[i];
        (
            i,
            right.partition_point(|x| cmp(x, pivot) == Ordering::Less),
        )
    } else {
        let j = right.len() / 2;
        let pivot = &right[j];
        (
            left.partition_point(|x| cmp(x, pivot) != Ordering::Greater),
            j,
        )
    };
    let (l1, l2) = left.split_at_mut(i);
    let (r1, r2) = right.split_at_mut(j);
    let (d1, d2) = dest.split_at_mut(i + j);
    crate::join(|| merge(l1, r1, d1, cmp), || merge(l2, r2, d2, cmp));
}

/// [`merge`], on one thread: one slot after another, each from the run
/// whose next element goes first (`left`'s among equals).
pub(super) fn merge_seq<T, F>(left: &[T], right: &[T], dest: &mut [MaybeUninit<T>], cmp: &F)
where
    F: Fn(&T, &T) -> Ordering,
{
    assert_eq!(left.len() + right.len(), dest.len(), "merge lengths");
    let calls = Cell::new(0);
    let (mut i, mut j) = (0, 0);
    for slot in dest.iter_mut() {
        polled(&calls);
        // i + j slots are written, fewer than both runs hold: one of the
        // two has an element left.
        let from_right =
            i == left.len() || (j < right.len() && cmp(&right[j], &left[i]) == Ordering::Less);
        let src: *const T = if from_right {
            j += 1;
            &right[j - 1]
        } else {
            i += 1;
            &left[i - 1]
        };
        // SAFETY: `src` points at a live element of a run, read once (the
        // index moved past it, and it is not compared again). The copy goes
        // into a `MaybeUninit` slot, which never drops it; the run keeps
        // owning the element until `copy_back` overwrites the run's range
        // with the copies without dropping (see the module docs).
        slot.write(unsafe { ptr::read(src) });
    }
}

/// Moves the merged elements in `buf` back over `v` (as long), which
/// holds the same elements in their old order: overwritten, not dropped.
///
/// # Safety
///
/// `buf` must have been filled by [`merge`] (or [`merge_seq`], returned
/// without a panic) from the two runs that make up `v`, which nothing has
/// touched since.
pub(super) unsafe fn copy_back<T: Send>(buf: &mut [MaybeUninit<T>], v: &mut [T]) {
    assert_eq!(buf.len(), v.len(), "copy back lengths");
    if v.len() > COPY_SEQUENTIAL {
        let mid = v.len() / 2;
        let (b1, b2) = buf.split_at_mut(mid);
        let (v1, v2) = v.split_at_mut(mid);
        // SAFETY: the two halves (split at the same place, neither can
        // panic) together copy all of `buf` over all of `v`, which the
        // caller's promise allows; the split only divides the copying.
        let first = || unsafe { copy_back(b1, v1) };
        // SAFETY: the other half of the same copy.
        let second = || unsafe { copy_back(b2, v2) };
        crate::join(first, second);
        return;
    }
    // SAFETY: the merge wrote every slot of `buf` with a bitwise copy of a
    // distinct element of `v` (a permutation of them); overwriting `v`
    // without dropping hands each element back to `v` exactly once, and
    // `buf`'s slots are `MaybeUninit`, never dropped. The two do not
    // overlap (`buf` is a separate allocation).
    unsafe { ptr::copy_nonoverlapping(buf.as_ptr().cast::<T>(), v.as_mut_ptr(), v.len()) }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::cmp::Ordering;
    use std::mem::MaybeUninit;
    use std::panic::{self, AssertUnwindSafe};
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    use super::{copy_back, merge_seq};

    /// Counts its drops, so that a double drop or a lost element shows.
    struct Counted<'a>(u32, &'a AtomicUsize);

    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.1.fetch_add(1, Relaxed);
        }
    }

    /// Merges `a` and `b` (both sorted) as the sort does, returning the
    /// merged keys; `cmp` may panic.
    fn merge_keys(
        a: &[u32],
        b: &[u32],
        cmp: impl Fn(&Counted<'_>, &Counted<'_>) -> Ordering,
    ) -> (Result<(), ()>, Vec<u32>, usize) {
        let drops = AtomicUsize::new(0);
        let mut v: Vec<Counted<'_>> = a.iter().chain(b).map(|&k| Counted(k, &drops)).collect();
        let mut buf: Vec<Counted<'_>> = Vec::with_capacity(v.len());
        let r = panic::catch_unwind(AssertUnwindSafe(|| {
            let dest: &mut [MaybeUninit<Counted<'_>>] = &mut buf.spare_capacity_mut()[..v.len()];
            let (left, right) = v.split_at(a.len());
            merge_seq(left, right, dest, &cmp);
            // SAFETY: `merge_seq` returned: `dest` holds the two runs of `v`.
            unsafe { copy_back(dest, &mut v) };
        }))
        .map_err(|_| ());
        let keys = v.iter().map(|c| c.0).collect();
        drop(v);
        drop(buf);
        (r, keys, drops.load(Relaxed))
    }

    /// A merge keeps every element once, in order, `left`'s first among
    /// equals (stable): keys carry their run in the low bit.
    #[test]
    fn merge_is_stable_and_loses_nothing() {
        for (a, b) in [
            (vec![], vec![1u32, 3]),
            (vec![0u32, 2], vec![]),
            (vec![0, 4, 4, 8], vec![1, 5, 5, 9, 13]),
            (vec![20, 22], vec![1, 3, 5]),
            (vec![0, 0, 0], vec![1, 1, 1]),
        ] {
            let by_key = |x: &Counted<'_>, y: &Counted<'_>| (x.0 >> 1).cmp(&(y.0 >> 1));
            let (r, keys, drops) = merge_keys(&a, &b, by_key);
            assert!(r.is_ok());
            let mut want: Vec<u32> = a.iter().chain(&b).copied().collect();
            want.sort_by_key(|k| k >> 1); // std's stable sort: the same order
            assert_eq!(keys, want, "{a:?} {b:?}");
            assert_eq!(drops, a.len() + b.len(), "each element dropped once");
        }
    }

    /// A comparator that panics midway leaves the range as it was, each
    /// element dropped once; one that answers at random still yields every
    /// element once.
    #[test]
    fn merge_survives_bad_comparators() {
        let a: Vec<u32> = (0..40).step_by(2).collect();
        let b: Vec<u32> = (1..40).step_by(2).collect();
        let calls = Cell::new(0u32);
        let (r, keys, drops) = merge_keys(&a, &b, |x, y| {
            calls.set(calls.get() + 1);
            assert!(calls.get() < 17, "comparator gives up");
            x.0.cmp(&y.0)
        });
        assert!(r.is_err());
        let before: Vec<u32> = a.iter().chain(&b).copied().collect();
        assert_eq!(keys, before, "untouched after a panic");
        assert_eq!(drops, 40);

        let seed = Cell::new(0x9E37_79B9u32);
        let (r, keys, drops) = merge_keys(&a, &b, |_, _| {
            seed.set(seed.get().wrapping_mul(1_103_515_245).wrapping_add(12_345));
            [Ordering::Less, Ordering::Equal, Ordering::Greater][(seed.get() >> 16) as usize % 3]
        });
        assert!(r.is_ok());
        let mut sorted = keys;
        sorted.sort_unstable();
        assert_eq!(sorted, (0..40).collect::<Vec<_>>(), "a permutation");
        assert_eq!(drops, 40);
    }
}
