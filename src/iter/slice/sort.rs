//! The unstable parallel sort, on `join`: a quicksort, as rayon's is
//! (pdqsort), with the standard library's sorts below it.
//!
//! - First a look at the slice's shape ([`survey`]): samples of adjacent
//!   pairs; a slice in order is left alone, one in descending order (or
//!   mostly so) is reversed first.
//! - A pivot (the median of three, or of three medians of three), one
//!   partition pass (less; not less), both parts sorted in parallel. A part
//!   whose pivot equals the pivot before it first takes the elements equal
//!   to it out, as pdqsort does, so many equal keys cost little.
//! - Random input: a branchless partition pass (Hoare's for elements over
//!   [`BIG`] bytes), and the standard library's unstable sort below
//!   [`SEQUENTIAL`] elements.
//! - Mostly sorted input: Hoare's partition pass (few elements move) and
//!   pdqsort's partial insertion sort on parts that look sorted, down to
//!   [`SMALL`] elements: about 10 comparisons per element on rayon-demo's
//!   "mostly ascending" input, as rayon's, against 16 for the standard
//!   library's sort (which looks for order only at the start).
//! - Beyond a depth of twice the length's logarithm the standard library's
//!   sort takes over (so never quadratic).
//!
//! The stable sort (a merge sort) is in `merge.rs`; it also looks for a
//! slice already in order, or in strictly reverse order (one pass; reversed
//! in place).
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
use crate::iter::engine::clock;
use crate::iter::{IndexedParallelIterator, IntoParallelRefMutIterator, ParallelIterator};
use crate::sched::WorkerThread;

/// Below this many elements a part is sorted sequentially.
pub(super) const SEQUENTIAL: usize = 1 << 12;

/// Whether `v` is in order by `cmp` already, after reversing it if it was
/// in strictly decreasing order (a stable reversal: no two elements are
/// equal). One pass, which stops at the first pair that is neither.
pub(super) fn presorted<T, F>(v: &mut [T], cmp: &F) -> bool
where
    F: Fn(&T, &T) -> Ordering,
{
    // Two tight loops (one for each direction) rather than one that keeps
    // both answers: the one loop took twice the standard library's time
    // on sorted input.
    let n = v.len();
    let mut i = 1;
    while i < n && cmp(&v[i - 1], &v[i]) != Ordering::Greater {
        i += 1;
    }
    if i == n {
        return true;
    }
    if i > 1 {
        return false; // in order at first, then not: neither
    }
    while i < n && cmp(&v[i - 1], &v[i]) == Ordering::Greater {
        i += 1;
    }
    if i < n {
        return false;
    }
    v.reverse();
    true
}

/// Parts of at most this many elements are sorted by the standard
/// library's unstable sort even in a mostly sorted slice.
const SMALL: usize = 20;

/// Unstable parallel sort of `v` by `cmp`.
pub(super) fn unstable<T, F>(v: &mut [T], cmp: &F)
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    if size_of::<T>() == 0 {
        return; // nothing to order (as in the standard library and rayon)
    }
    if v.len() <= SEQUENTIAL {
        seq(v, cmp, false, false);
        return;
    }
    let poll = slow_comparator(v, cmp);
    let mostly = match survey(v, cmp) {
        Shape::Sorted => return,
        Shape::Mostly => true,
        Shape::Other => false,
    };
    let depth = 2 * (usize::BITS - v.len().leading_zeros());
    quick(v, cmp, poll, depth, None, mostly, Flags::FRESH);
}

/// Elements larger than this (bytes) are partitioned by Hoare's pass,
/// which moves only the elements on the wrong side, in pairs: the
/// branchless pass swaps every element. rayon-demo's sort of 50 000
/// 128-byte elements: 2.39–2.64 ms with Hoare's pass, 2.74–2.84 ms with
/// the branchless one (rayon 1.6–2.1 ms); 32-byte elements measured no
/// faster with Hoare's.
const BIG: usize = 64;

/// What [`survey`] found.
#[derive(Debug, PartialEq)]
enum Shape {
    /// In order (now).
    Sorted,
    /// Out of order at no more than one adjacent pair in [`MOSTLY`].
    Mostly,
    /// Neither.
    Other,
}

/// A slice is mostly sorted (for [`survey`]) when at most one adjacent
/// pair in this many is out of order: rayon-demo's "mostly ascending"
/// input (√n random swaps) has about one descent in 110 at 50 000
/// elements, random input one in two.
const MOSTLY: usize = 32;

/// [`survey`] looks at this many runs of [`SAMPLE_RUN`] adjacent pairs,
/// spread over the slice.
const SAMPLES: usize = 32;

/// Adjacent pairs per sample of [`survey`].
const SAMPLE_RUN: usize = 32;

/// Guesses `v`'s shape (at least `SAMPLES * SAMPLE_RUN` elements) from
/// samples of adjacent pairs, and reverses it if it is in descending order
/// or mostly so (an unstable sort may reverse equal elements). Only when
/// the samples hold no descent, or no ascent, does it look at every pair
/// ([`presorted`], to return [`Shape::Sorted`]), stopping at the first
/// pair that rules out both directions.
fn survey<T, F>(v: &mut [T], cmp: &F) -> Shape
where
    F: Fn(&T, &T) -> Ordering,
{
    let n = v.len();
    let (mut descents, mut ascents) = (0, 0);
    for s in 0..SAMPLES {
        let start = s * (n - SAMPLE_RUN - 1) / (SAMPLES - 1);
        for w in v[start..=start + SAMPLE_RUN].windows(2) {
            match cmp(&w[0], &w[1]) {
                Ordering::Greater => descents += 1,
                Ordering::Less => ascents += 1,
                Ordering::Equal => {}
            }
        }
    }
    if (descents == 0 || ascents == 0) && presorted(v, cmp) {
        return Shape::Sorted;
    }
    let budget = SAMPLES * SAMPLE_RUN / MOSTLY;
    if descents <= budget {
        Shape::Mostly
    } else if ascents <= budget {
        v.reverse();
        Shape::Mostly
    } else {
        Shape::Other
    }
}

/// What the partition that made a part found (for [`quick`]).
#[derive(Clone, Copy)]
struct Flags {
    /// Neither part was shorter than an eighth.
    balanced: bool,
    /// The part was partitioned already: nothing moved.
    untouched: bool,
}

impl Flags {
    /// For a slice no partition made (and, as in pdqsort, for the shorter
    /// part of a partition, sorted by recursion).
    const FRESH: Flags = Flags {
        balanced: true,
        untouched: true,
    };
}

/// The quicksort behind [`unstable`] (see the module docs), `depth` levels
/// of partitioning left. `pred`: the pivot of the partition that made `v`
/// (every element of `v` is at least it), if `v` is a right part.
/// `mostly`: the slice was mostly sorted ([`survey`]), so parts go on
/// being partitioned here down to [`SMALL`] elements rather than handed to
/// the standard library's sort (which does not look for order inside a
/// slice) below [`SEQUENTIAL`]. `poll`: the comparator is slow
/// ([`slow_comparator`]): the standard library's sorts count its calls and
/// serve thieves ([`polled`]). `last`: what the partition that made `v`
/// found. After an unbalanced one, a few elements are swapped around
/// first ([`break_patterns`]), so that a periodic or adversarial input does
/// not give bad pivots level after level. After a balanced one that moved
/// nothing, if the pivot's samples are in order too, `v` may be sorted but
/// for a few elements, and pdqsort's partial insertion sort is tried first.
fn quick<'a, T, F>(
    mut v: &'a mut [T],
    cmp: &F,
    poll: bool,
    mut depth: u32,
    mut pred: Option<&'a mut T>,
    mut mostly: bool,
    mut last: Flags,
) where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    loop {
        let n = v.len();
        if depth == 0 || n <= SMALL || (n <= SEQUENTIAL && !mostly) {
            seq(v, cmp, false, poll);
            return;
        }
        if !last.balanced {
            break_patterns(v);
        }
        let (pivot, in_order) = choose_pivot(v, cmp);
        if last.balanced && last.untouched && in_order && partial_insertion_sort(v, cmp) {
            return;
        }
        v.swap(0, pivot);
        if let Some(p) = pred.as_deref() {
            if cmp(p, &v[0]) != Ordering::Less {
                // The pivot equals the one before (nothing in `v` is less):
                // the elements equal to it go first and are done; the rest
                // (all greater) is partitioned again. Many equal keys cost
                // a pass each, not a level each.
                let hoare = mostly || size_of::<T>() > BIG;
                let (eq, _) = partition(v, hoare, |x, p| cmp(p, x) != Ordering::Less);
                v = &mut v[eq..];
                continue;
            }
        }
        let hoare = mostly || size_of::<T>() > BIG;
        let (lt, moved) = partition(v, hoare, |x, p| cmp(x, p) == Ordering::Less);
        let found = Flags {
            balanced: lt.min(n - lt) >= n / 8,
            untouched: moved == Moved::None,
        };
        // A part of a mostly sorted slice that had many elements on the
        // wrong side is not (its parts are sorted as random ones are).
        mostly = match moved {
            Moved::None => mostly,
            Moved::Pairs(p) => mostly && p <= n / MOSTLY,
            Moved::All => false,
        };
        let (left, rest) = std::mem::take(&mut v).split_at_mut(lt - 1);
        let (pivot, right) = rest.split_first_mut().expect("the pivot");
        depth -= 1;
        // Parts sorted by recursion start afresh, as in pdqsort, but for
        // an unbalanced partition (which pdqsort's parallel version forgets
        // at its parallel levels).
        let child = Flags {
            balanced: found.balanced,
            untouched: true,
        };
        if n > SEQUENTIAL {
            crate::join(
                || quick(left, cmp, poll, depth, pred, mostly, child),
                || quick(right, cmp, poll, depth, Some(pivot), mostly, child),
            );
            return;
        }
        // The shorter part by recursion, the longer one by the loop (the
        // stack stays logarithmic).
        if left.len() < right.len() {
            quick(left, cmp, poll, depth, pred, mostly, child);
            (v, pred) = (right, Some(pivot));
        } else {
            quick(right, cmp, poll, depth, Some(pivot), mostly, child);
            v = left;
        }
        last = found;
    }
}

/// Swaps the elements at and next to the three places where
/// [`choose_pivot`] samples `v` (at least [`SMALL`] elements) with
/// elements at pseudo-random places (a xorshift seeded by the length), as
/// pdqsort does after an unbalanced partition.
fn break_patterns<T>(v: &mut [T]) {
    let n = v.len();
    let mut seed = (n as u64) | 1;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    for center in [n / 4, n / 2, 3 * n / 4] {
        for at in center - 1..=center + 1 {
            v.swap(at, next());
        }
    }
}

/// The index of a median of `v`'s elements (at least [`SMALL`]): of
/// three, or of the medians of three triples from 50 elements on
/// (Tukey's ninther); and whether every triple was in order already (a
/// hint that `v` is).
fn choose_pivot<T, F>(v: &[T], cmp: &F) -> (usize, bool)
where
    F: Fn(&T, &T) -> Ordering,
{
    let n = v.len();
    let (a, b, c) = (n / 4, n / 2, 3 * n / 4);
    if n < 50 {
        return median3(v, cmp, a, b, c);
    }
    let (a, a_sorted) = median3(v, cmp, a - 1, a, a + 1);
    let (b, b_sorted) = median3(v, cmp, b - 1, b, b + 1);
    let (c, c_sorted) = median3(v, cmp, c - 1, c, c + 1);
    let (m, sorted) = median3(v, cmp, a, b, c);
    (m, sorted && a_sorted && b_sorted && c_sorted)
}

/// The index of the median of `v[a]`, `v[b]` and `v[c]`, and whether they
/// were in that order already.
fn median3<T, F>(v: &[T], cmp: &F, a: usize, b: usize, c: usize) -> (usize, bool)
where
    F: Fn(&T, &T) -> Ordering,
{
    let ab = cmp(&v[a], &v[b]) != Ordering::Greater;
    let bc = cmp(&v[b], &v[c]) != Ordering::Greater;
    if ab && bc {
        return (b, true);
    }
    let ac = cmp(&v[a], &v[c]) != Ordering::Greater;
    let median = match (ab, bc, ac) {
        (true, _, true) => c,      // a <= c < b
        (true, _, false) => a,     // c < a <= b
        (false, true, true) => a,  // b < a <= c
        (false, true, false) => c, // b <= c < a
        (false, false, _) => b,    // c < b < a
    };
    (median, false)
}

/// pdqsort's partial insertion sort, as rayon runs it: a few times, finds
/// the next adjacent pair out of order, swaps it and moves the smaller
/// element left into place (the larger one moves on one place per pair
/// found). Whether `v` is sorted after that; `v` is left a permutation of
/// itself either way (any comparator).
fn partial_insertion_sort<T, F>(v: &mut [T], cmp: &F) -> bool
where
    F: Fn(&T, &T) -> Ordering,
{
    /// Pairs fixed at most.
    const MAX_STEPS: usize = 5;
    /// Shorter slices are not fixed (only checked), as in pdqsort.
    const SHORTEST_SHIFTING: usize = 50;
    let n = v.len();
    let mut i = 1;
    for _ in 0..MAX_STEPS {
        while i < n && cmp(&v[i], &v[i - 1]) != Ordering::Less {
            i += 1;
        }
        if i == n {
            return true;
        }
        if n < SHORTEST_SHIFTING {
            return false;
        }
        v.swap(i - 1, i);
        let x = i - 1;
        let mut j = x;
        while j > 0 && cmp(&v[x], &v[j - 1]) == Ordering::Less {
            j -= 1;
        }
        v[j..=x].rotate_right(1);
    }
    false
}

/// Partitions `v[1..]` around the pivot `v[0]` by `goes_first(x, pivot)`,
/// then puts the pivot after the elements that go first: returns the end
/// of those elements with the pivot (`v[..k-1]` go first, `v[k-1]` is the
/// pivot, `v[k..]` do not), and what it moved.
///
/// After skipping the elements already in place at either end, one pass:
/// - by default branchless (every element is swapped, the count moves by
///   the comparison's answer), so its time does not depend on how the
///   answers fall;
/// - if `hoare`, Hoare's (only the elements on the wrong side move, in
///   pairs): for a mostly sorted slice, whose branches are then
///   predictable (the branchless pass moves many elements a little out of
///   order, and the parts it leaves took twice as many comparisons to
///   finish: a simulation of rayon-demo's "mostly ascending" input, 20 per
///   element against 10), and for large elements ([`BIG`]).
///
/// Safe for any comparator: every index stays in bounds whatever it
/// answers (a comparator that is not a total order leaves the parts
/// unordered, every element still in `v`).
fn partition<T>(v: &mut [T], hoare: bool, goes_first: impl Fn(&T, &T) -> bool) -> (usize, Moved) {
    let calls = Cell::new(0);
    let goes_first = |x: &T, p: &T| {
        polled(&calls);
        goes_first(x, p)
    };
    let (pivot, rest) = v.split_first_mut().expect("a pivot");
    let n = rest.len();
    let mut l = 0;
    while l < n && goes_first(&rest[l], pivot) {
        l += 1;
    }
    let mut r = n;
    while r > l && !goes_first(&rest[r - 1], pivot) {
        r -= 1;
    }
    let mut moved = if l == r { Moved::None } else { Moved::Pairs(0) };
    let k = if hoare {
        // rest[..l]: go first; rest[r..]: do not.
        while l < r {
            r -= 1;
            rest.swap(l, r);
            if let Moved::Pairs(p) = &mut moved {
                *p += 1;
            }
            l += 1;
            while l < r && goes_first(&rest[l], pivot) {
                l += 1;
            }
            while l < r && !goes_first(&rest[r - 1], pivot) {
                r -= 1;
            }
        }
        l
    } else {
        // rest[..k]: go first; rest[k..i]: do not.
        let mut k = l;
        for i in l..r {
            let first = goes_first(&rest[i], pivot);
            rest.swap(k, i);
            k += usize::from(first);
        }
        k
    };
    if !hoare && l < r {
        moved = Moved::All;
    }
    v.swap(0, k);
    (k + 1, moved)
}

/// What [`partition`] moved.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Moved {
    /// Nothing: the slice was partitioned already.
    None,
    /// Hoare's pass: this many pairs swapped.
    Pairs(usize),
    /// The branchless pass: every element between the first and the last
    /// on the wrong side.
    All,
}

/// A worker that runs a comparison-bound loop of a sort (a partition, a
/// merge, with a slow comparator the standard library's sort of a part)
/// serves thieves every this many comparisons: its pending `join`
/// continuations become stealable only when it polls (see
/// `src/sched/README.md` §1), and with an expensive comparator
/// (rayon-demo's takes two cosines and two atomic operations) a part of
/// 4096 elements takes milliseconds: rayon-demo's sort of 50 000 `u64`s
/// by that comparator took 2.0 times rayon's time without these polls.
const POLL_EVERY: u32 = 256;

/// A comparator slower than this (ns per call) is slow for
/// [`slow_comparator`].
const SLOW_NS: u64 = 10;

/// Whether `cmp` takes more than [`SLOW_NS`] per call, timed on the 32
/// pairs of adjacent elements at the start of `v` (at least 33), the
/// second time round (the first brings them into the cache: timed cold,
/// `u64`s spread over 8 MB took 100 ns per call).
pub(super) fn slow_comparator<T, F>(v: &[T], cmp: &F) -> bool
where
    F: Fn(&T, &T) -> Ordering,
{
    const PAIRS: usize = 32;
    let pairs = || {
        for w in v[..=PAIRS].windows(2) {
            std::hint::black_box(cmp(&w[0], &w[1]));
        }
    };
    pairs();
    let start = clock::now();
    pairs();
    let ticks = clock::now().saturating_sub(start);
    ticks * 1000 > SLOW_NS * PAIRS as u64 * clock::ticks_per_us()
}

/// Counts a comparison in `calls`; every [`POLL_EVERY`]th serves a thief
/// that asked this worker for work (promotes its oldest continuation).
#[inline(always)]
pub(super) fn polled(calls: &Cell<u32>) {
    let c = calls.get() + 1;
    if c == POLL_EVERY {
        calls.set(0);
        poll_thieves();
    } else {
        calls.set(c);
    }
}

#[cold]
#[inline(never)]
fn poll_thieves() {
    if let Some(wt) = WorkerThread::current() {
        wt.poll();
    }
}

/// Sorts `v` by `cmp` with the standard library's stable sort (`stable`)
/// or its unstable one: a panic of `cmp` propagates, one of the standard library about `cmp` not being a total
/// order is swallowed (the elements are all still in `v`, in some order).
pub(super) fn seq<T, F>(v: &mut [T], cmp: &F, stable: bool, poll: bool)
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
    let c = |a: &T, b: &T| {
        let guard = Unwinding(&user_panicked);
        let r = cmp(a, b);
        std::mem::forget(guard);
        r
    };
    let calls = Cell::new(0);
    let polling = |a: &T, b: &T| {
        // Under the guard too: a panic of the poll (a runtime bug) must
        // propagate, not pass for the standard library's complaint.
        let guard = Unwinding(&user_panicked);
        polled(&calls);
        std::mem::forget(guard);
        c(a, b)
    };
    // The sorts see the comparator's own type (not a `dyn` one), so that
    // it is inlined: through a `dyn FnMut` the unstable sort of a million
    // `u64`s took as long as the standard library's sequential sort. Only
    // a slow comparator is counted for polls ([`slow_comparator`]): the
    // count alone made that sort 1.5 times slower.
    let sorted = panic::catch_unwind(AssertUnwindSafe(|| match (stable, poll) {
        (true, false) => v.sort_by(c),
        (true, true) => v.sort_by(polling),
        (false, false) => v.sort_unstable_by(c),
        (false, true) => v.sort_unstable_by(polling),
    }));
    if let Err(p) = sorted {
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
mod tests;
