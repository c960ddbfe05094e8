//! sort: cilksort, a parallel merge sort of `n` random `u64`s, after BOTS
//! (`sort`, Duran et al. 2009, itself from Cilk's `cilksort`).
//!
//! As in BOTS: the array is split in four quarters, sorted in parallel
//! (recursively); then the quarters are merged in pairs into a temporary
//! buffer, the two merges in parallel; then the two halves are merged back
//! into the array. Each merge is parallel above [`MERGE_CUTOFF`] elements:
//! the middle element of the longer run is found in the shorter one by
//! binary search, it goes straight to its final place, and the two sides
//! are merged in parallel. Below [`SORT_CUTOFF`] elements a quarter is
//! sorted by a sequential quicksort (median of three) that hands ranges
//! shorter than [`INSERTION_CUTOFF`] to insertion sort. The cutoffs are
//! BOTS' defaults (2048, 2048, 20 elements). Sequential sorts and merges
//! run as `sort-leaf` labelled tasks (tens of microseconds each).
//!
//! Size parameter: the element count `n`. Presets: Small 20,000, Default
//! 4,194,304 (4 Mi, 32 MiB of input and as much of temporary buffer;
//! about 0.4 s sequentially on the reference 2-core machine), Large 33,554,432 (32 Mi, 256 MiB). The input is drawn once from
//! [`Rng`]; `setup` copies it into the working array before every run. The
//! result is the sorted array (checksummed whole, which is part of each
//! run's time).
//!
//! Kind of program: memory-bound at the Default and Large sizes (every
//! merge level streams the whole array through memory twice), with a
//! compute-bound base (the quicksorts) and a balanced task tree.

use std::sync::Mutex;

use super::fib::{Joiner, Rayon, Seq, Terroir};
use super::{checksum, Rng, Size, Workload};
use terroir::numa::Topology;
use terroir::ThreadPool;

/// Arrays shorter than this are sorted sequentially (BOTS: 2048).
pub const SORT_CUTOFF: usize = 2048;
/// Merges of fewer elements than this are sequential (BOTS: 2048).
pub const MERGE_CUTOFF: usize = 2048;
/// The quicksort hands ranges shorter than this to insertion sort
/// (BOTS: 20).
pub const INSERTION_CUTOFF: usize = 20;

/// Insertion sort.
fn insertion_sort(a: &mut [u64]) {
    for i in 1..a.len() {
        let x = a[i];
        let mut j = i;
        while j > 0 && a[j - 1] > x {
            a[j] = a[j - 1];
            j -= 1;
        }
        a[j] = x;
    }
}

/// BOTS' `seqquick`: quicksort with a median-of-three pivot, recursing on
/// the shorter side and looping on the longer, insertion sort below
/// [`INSERTION_CUTOFF`].
fn seq_quick(mut a: &mut [u64]) {
    while a.len() >= INSERTION_CUTOFF {
        let last = a.len() - 1;
        let mid = last / 2;
        // Median of three, moved to the end as the pivot.
        if a[mid] < a[0] {
            a.swap(mid, 0);
        }
        if a[last] < a[0] {
            a.swap(last, 0);
        }
        if a[mid] < a[last] {
            a.swap(mid, last);
        }
        let pivot = a[last];
        // Lomuto-style partition: a[..store] < pivot <= a[store..last].
        let mut store = 0;
        for i in 0..last {
            if a[i] < pivot {
                a.swap(i, store);
                store += 1;
            }
        }
        a.swap(store, last);
        let (left, right) = a.split_at_mut(store);
        let right = &mut right[1..];
        if left.len() < right.len() {
            seq_quick(left);
            a = right;
        } else {
            seq_quick(right);
            a = left;
        }
    }
    insertion_sort(a);
}

/// BOTS' `seqmerge`: merges the sorted runs `a` and `b` into `dest`
/// (`dest.len() == a.len() + b.len()`).
fn seq_merge(a: &[u64], b: &[u64], dest: &mut [u64]) {
    debug_assert_eq!(dest.len(), a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    for d in dest.iter_mut() {
        if j == b.len() || (i < a.len() && a[i] <= b[j]) {
            *d = a[i];
            i += 1;
        } else {
            *d = b[j];
            j += 1;
        }
    }
}

/// BOTS' `cilkmerge`: merges the sorted runs `a` and `b` into `dest`, in
/// parallel above [`MERGE_CUTOFF`] elements.
fn merge<J: Joiner>(a: &[u64], b: &[u64], dest: &mut [u64]) {
    // `a` is the longer run.
    let (a, b) = if a.len() < b.len() { (b, a) } else { (a, b) };
    if b.is_empty() {
        dest.copy_from_slice(a);
        return;
    }
    if a.len() + b.len() < MERGE_CUTOFF {
        J::leaf("sort-leaf", || seq_merge(a, b, dest));
        return;
    }
    // The middle of the longer run, and where it falls in the shorter one
    // (BOTS' `binsplit`: the elements of `b` below it go left).
    let split_a = a.len() / 2;
    let pivot = a[split_a];
    let split_b = b.partition_point(|&x| x < pivot);
    let low = split_a + split_b;
    let (dest_low, rest) = dest.split_at_mut(low);
    let (dest_pivot, dest_high) = rest.split_at_mut(1);
    dest_pivot[0] = pivot;
    J::join(
        || merge::<J>(&a[..split_a], &b[..split_b], dest_low),
        || merge::<J>(&a[split_a + 1..], &b[split_b..], dest_high),
    );
}

/// BOTS' `cilksort`: sorts `data`, using `tmp` (as long) as scratch space.
fn cilksort<J: Joiner>(data: &mut [u64], tmp: &mut [u64]) {
    let n = data.len();
    if n < SORT_CUTOFF {
        J::leaf("sort-leaf", || seq_quick(data));
        return;
    }
    let quarter = n / 4;
    let (a, rest) = data.split_at_mut(quarter);
    let (b, rest) = rest.split_at_mut(quarter);
    let (c, d) = rest.split_at_mut(quarter);
    let (ta, rest) = tmp.split_at_mut(quarter);
    let (tb, rest) = rest.split_at_mut(quarter);
    let (tc, td) = rest.split_at_mut(quarter);
    J::join(
        || J::join(|| cilksort::<J>(a, ta), || cilksort::<J>(b, tb)),
        || J::join(|| cilksort::<J>(c, tc), || cilksort::<J>(d, td)),
    );
    let (tmp_low, tmp_high) = tmp.split_at_mut(2 * quarter);
    {
        let (a, rest) = data.split_at(quarter);
        let (b, rest) = rest.split_at(quarter);
        let (c, d) = rest.split_at(quarter);
        J::join(|| merge::<J>(a, b, tmp_low), || merge::<J>(c, d, tmp_high));
    }
    merge::<J>(tmp_low, tmp_high, data);
}

/// The working arrays: the array being sorted and its scratch buffer.
struct Buffers {
    /// The array to sort (a copy of the input after `setup`).
    data: Vec<u64>,
    /// Scratch space, as long as `data`.
    tmp: Vec<u64>,
}

/// The sort workload.
struct Sort {
    /// The random input, drawn once.
    input: Vec<u64>,
    /// The working arrays (locked for a run; the lock is uncontended).
    buffers: Mutex<Buffers>,
}

impl Sort {
    /// Sorts the working array with the joins of `J` and checksums it.
    fn run<J: Joiner>(&self) -> u64 {
        let mut guard = self.buffers.lock().unwrap_or_else(|e| e.into_inner());
        let Buffers { data, tmp } = &mut *guard;
        cilksort::<J>(data, tmp);
        checksum(data.iter().copied())
    }
}

impl Workload for Sort {
    fn name(&self) -> &'static str {
        "sort"
    }

    fn describe(&self) -> String {
        format!(
            "{} u64, cutoffs sort {SORT_CUTOFF} / merge {MERGE_CUTOFF} / insertion {INSERTION_CUTOFF}",
            self.input.len()
        )
    }

    fn setup(&self) {
        let mut guard = self.buffers.lock().unwrap_or_else(|e| e.into_inner());
        guard.data.copy_from_slice(&self.input);
    }

    fn sequential(&self) -> u64 {
        self.run::<Seq>()
    }

    fn terroir(&self, pool: &ThreadPool) -> u64 {
        pool.install(|| self.run::<Terroir>())
    }

    fn rayon(&self, pool: &rayon::ThreadPool) -> Option<u64> {
        Some(pool.install(|| self.run::<Rayon>()))
    }
}

/// Builds sort for `size` (element count: 20,000 / 4 Mi / 32 Mi).
pub fn new(size: Size, topology: &Topology) -> Result<Box<dyn Workload>, String> {
    let _ = topology;
    let n = size.pick(20_000, 4 << 20, 32 << 20);
    let mut rng = Rng(0x5eed_5027);
    let input: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
    let buffers = Buffers {
        data: input.clone(),
        tmp: vec![0; n],
    };
    Ok(Box::new(Sort {
        input,
        buffers: Mutex::new(buffers),
    }))
}
