//! The rayon items added after the first set: char ranges, slice and
//! string odds and ends, `Either`, multizip, `split`, `walk_tree*`,
//! `interleave*`, `intersperse`, `fold_chunks*`, `by_*_blocks`. Each
//! against `std` under the pools of the parent module.

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use terroir::prelude::*;

use super::{case, data, pools};

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn char_ranges_match_std((p, len, min) in case(), from in 0xD000u32..0xE100) {
        let (name, pool) = &pools()[p];
        // Ranges across (and next to) the surrogate gap, and up to char::MAX.
        let lo = char::from_u32(from).unwrap_or('\u{E000}');
        let hi = char::from_u32(from.saturating_add(len as u32)).unwrap_or('\u{E000}');
        pool.install(|| {
            for (lo, hi) in [(lo, hi), ('\u{10FF00}', char::MAX)] {
                let got: Vec<char> = (lo..hi).into_par_iter().with_min_len(min).collect();
                prop_assert_eq!(&got, &(lo..hi).collect::<Vec<_>>(), "{}", name);
                prop_assert_eq!((lo..hi).into_par_iter().len(), (lo..hi).count());
                let got: Vec<char> = (lo..=hi).into_par_iter().rev().collect();
                prop_assert_eq!(got, (lo..=hi).rev().collect::<Vec<_>>(), "{}", name);
                prop_assert_eq!((lo..=hi).into_par_iter().len(), (lo..=hi).count());
            }
            Ok(())
        })?;
    }

    #[test]
    fn slice_and_string_odds_and_ends((p, len, _min) in case(), size in 1usize..40) {
        let (name, pool) = &pools()[p];
        let v = data(len);
        pool.install(|| {
            // Clones of the chunk iterators yield what the originals do.
            let c = v.par_chunks(size);
            prop_assert_eq!(c.clone().collect::<Vec<_>>(), c.collect::<Vec<_>>());
            let c = v.par_rchunks_exact(size);
            prop_assert_eq!(c.clone().collect::<Vec<_>>(), v.rchunks_exact(size).collect::<Vec<_>>());
            // The remainders of the exact `_mut` forms, for the slice's lifetime.
            let mut w = v.clone();
            let mut want = v.clone();
            let rem = w.par_chunks_exact_mut(size).into_remainder();
            rem.iter_mut().for_each(|x| *x = u64::MAX);
            want.chunks_exact_mut(size).into_remainder().iter_mut().for_each(|x| *x = u64::MAX);
            prop_assert_eq!(&w, &want, "into_remainder {}", name);
            let rem = w.par_rchunks_exact_mut(size).into_remainder();
            rem.iter_mut().for_each(|x| *x = 7);
            want.rchunks_exact_mut(size).into_remainder().iter_mut().for_each(|x| *x = 7);
            prop_assert_eq!(&w, &want, "rchunks into_remainder {}", name);
            // String::par_drain, on char boundaries.
            let s: String = v.iter().map(|&x| char::from_u32(0x60 + (x % 0x400) as u32).unwrap()).collect();
            let cut = s.char_indices().map(|(i, _)| i).nth(len / 3).unwrap_or(s.len());
            let (mut a, mut b) = (s.clone(), s.clone());
            let got: String = a.par_drain(cut..).collect();
            let want: String = b.drain(cut..).collect();
            prop_assert_eq!((got, a), (want, b), "par_drain {}", name);
            // OsString from &OsStr, OsString and Cow<OsStr>, in order.
            let words: Vec<String> = v.iter().map(|x| format!("{x},")).collect();
            let want: OsString = words.iter().map(OsStr::new).collect();
            let got: OsString = words.par_iter().map(OsStr::new).collect();
            prop_assert_eq!(&got, &want);
            let got: OsString = words.par_iter().map(OsString::from).collect();
            prop_assert_eq!(&got, &want);
            let got: Cow<'_, OsStr> = words.par_iter().map(|w| Cow::Borrowed(OsStr::new(w))).collect();
            prop_assert_eq!(&*got, want.as_os_str());
            Ok(())
        })?;
    }
}

#[test]
#[should_panic(expected = "is not a char boundary")]
fn string_par_drain_off_a_boundary_panics() {
    let mut s = String::from("é");
    let _ = s.par_drain(1..);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn either_runs_its_side_and_partition_map_keeps_order((p, len, min) in case()) {
        use std::collections::BTreeSet;
        use terroir::iter::Either;
        let (name, pool) = &pools()[p];
        let v = data(len);
        pool.install(|| {
            // Either side, indexed (enumerate, rev) and not (filter).
            for left in [true, false] {
                let e: Either<_, _> = if left {
                    Either::Left(v.par_iter().with_min_len(min).copied())
                } else {
                    Either::Right(v.par_iter().copied().rev().rev())
                };
                prop_assert_eq!(e.len(), len);
                let got: Vec<(usize, u64)> = e.clone().enumerate().rev().collect();
                let want: Vec<(usize, u64)> = v.iter().copied().enumerate().rev().collect();
                prop_assert_eq!(got, want, "indexed {} {}", left, name);
                let got: Vec<u64> = e.filter(|x| x % 3 == 0).collect();
                prop_assert_eq!(got, v.iter().copied().filter(|x| x % 3 == 0).collect::<Vec<_>>());
            }
            // partition_map and the unzip of Eithers, against std.
            let side = |x: &u64| if x % 3 == 0 { Either::Left(*x) } else { Either::Right(x.to_string()) };
            let (a, b): (Vec<u64>, Vec<String>) = v.par_iter().with_min_len(min).partition_map(side);
            let (wa, wb): (Vec<u64>, Vec<String>) = v.iter().partition_map_std(side);
            prop_assert_eq!(&a, &wa, "partition_map {}", name);
            prop_assert_eq!(&b, &wb, "partition_map {}", name);
            let (a, b): (Vec<u64>, Vec<String>) = v.par_iter().map(side).collect();
            prop_assert_eq!((&a, &b), (&wa, &wb), "collect of Eithers {}", name);
            // Extending either side.
            let mut e: Either<Vec<u64>, BTreeSet<u64>> = Either::Left(vec![1]);
            e.par_extend(v.par_iter().copied());
            let mut want = vec![1];
            want.extend(&v);
            prop_assert_eq!(e, Either::Left(want));
            let mut e: Either<Vec<u64>, BTreeSet<u64>> = Either::Right(BTreeSet::new());
            e.par_extend(v.par_iter().copied());
            prop_assert_eq!(e, Either::Right(v.iter().copied().collect()));
            Ok(())
        })?;
    }
}

/// `Iterator::partition` into two types, the sequential reference of
/// `partition_map`.
trait PartitionMapStd: Iterator + Sized {
    fn partition_map_std<L, R, F>(self, f: F) -> (Vec<L>, Vec<R>)
    where
        F: Fn(Self::Item) -> terroir::iter::Either<L, R>,
    {
        let (mut ls, mut rs) = (Vec::new(), Vec::new());
        for x in self {
            match f(x) {
                terroir::iter::Either::Left(l) => ls.push(l),
                terroir::iter::Either::Right(r) => rs.push(r),
            }
        }
        (ls, rs)
    }
}
impl<I: Iterator> PartitionMapStd for I {}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn multizip_of_one_to_twelve((p, len, _min) in case(), cut in 0usize..50) {
        let (name, pool) = &pools()[p];
        let v = data(len);
        let w = data(len.saturating_sub(cut)); // shorter: the shortest wins
        pool.install(|| {
            let got: Vec<(&u64,)> = (&v,).into_par_iter().collect();
            prop_assert_eq!(got, v.iter().map(|x| (x,)).collect::<Vec<_>>(), "1 {}", name);
            let got: Vec<u64> = (&v, &w, &v, &v, &v, &v, &w)
                .into_par_iter()
                .map(|(a, b, c, d, e, f, g)| a ^ b ^ c ^ d ^ e ^ f ^ g)
                .collect();
            let want: Vec<u64> = v.iter().zip(&w).map(|(a, b)| a ^ b ^ a ^ a ^ a ^ a ^ b).collect();
            prop_assert_eq!(got, want, "7 {}", name);
            let t = (&v, &v, &v, &v, &v, &v, &v, &v, &v, &v, &v, &w);
            let got: Vec<(usize, u64)> = t
                .into_par_iter()
                .map(|(a, _, _, _, _, _, _, _, _, _, k, l)| (*a as usize, k + l))
                .rev()
                .collect();
            let want: Vec<(usize, u64)> = v.iter().zip(&w).map(|(a, l)| (*a as usize, a + l)).rev().collect();
            prop_assert_eq!(got, want, "12 {}", name);
            // References to tuples of collections.
            let mut pair = (v.clone(), w.clone());
            let got: Vec<(&u64, &u64)> = (&pair).into_par_iter().collect();
            prop_assert_eq!(got, v.iter().zip(&w).collect::<Vec<_>>());
            (&mut pair).into_par_iter().for_each(|(a, b)| std::mem::swap(a, b));
            let n = w.len();
            prop_assert_eq!(&pair.0[..n], &w[..]);
            prop_assert_eq!(&pair.1[..], &v[..n]);
            Ok(())
        })?;
    }
}

/// A tree on nodes `0..len`, node 0 the root and node `i > 0` a child of
/// an earlier node picked by `shape`: random (shallow), a chain (deep) or
/// a star (wide). Children lists in increasing order.
fn tree(len: usize, shape: u8) -> Vec<Vec<usize>> {
    let v = data(len);
    let mut children = vec![Vec::new(); len];
    for (i, &x) in v.iter().enumerate().skip(1) {
        let parent = match shape % 3 {
            0 => x as usize % i,
            1 => i - 1,
            _ => 0,
        };
        children[parent].push(i);
    }
    children
}

fn prefix_std(t: &[Vec<usize>], n: usize, out: &mut Vec<usize>) {
    let mut stack = vec![n];
    while let Some(n) = stack.pop() {
        out.push(n);
        stack.extend(t[n].iter().rev());
    }
}

fn postfix_std(t: &[Vec<usize>], n: usize, out: &mut Vec<usize>) {
    // (node, children entered so far)
    let mut stack = vec![(n, 0)];
    while let Some((n, i)) = stack.pop() {
        if let Some(&c) = t[n].get(i) {
            stack.push((n, i + 1));
            stack.push((c, 0));
        } else {
            out.push(n);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn split_yields_the_splitters_pieces_in_order((p, len, min) in case()) {
        let (name, pool) = &pools()[p];
        let min = min.max(1);
        let halves = |r: std::ops::Range<usize>| {
            if r.len() <= min {
                (r, None)
            } else {
                let mid = r.start + r.len() / 2;
                (r.start..mid, Some(mid..r.end))
            }
        };
        pool.install(|| {
            let pieces: Vec<std::ops::Range<usize>> = terroir::iter::split(0..len, halves).collect();
            prop_assert!(pieces.iter().all(|r| !r.is_empty() || len == 0), "{}", name);
            let flat: Vec<usize> = pieces.into_iter().flatten().collect();
            prop_assert_eq!(flat, (0..len).collect::<Vec<_>>(), "split {}", name);
            let sum: usize = terroir::iter::split(0..len, halves).map(|r| r.sum::<usize>()).sum();
            prop_assert_eq!(sum, (0..len).sum::<usize>());
            let want = (0..len).find(|x| x % 97 == 96);
            let got = terroir::iter::split(0..len, halves).flat_map_iter(|r| r).find_first(|x| x % 97 == 96);
            prop_assert_eq!(got, want, "find_first {}", name);
            let want = (0..len).rev().find(|x| x % 97 == 5);
            let got = terroir::iter::split(0..len, halves).flat_map_iter(|r| r).find_last(|x| x % 97 == 5);
            prop_assert_eq!(got, want, "find_last {}", name);
            Ok(())
        })?;
    }

    #[test]
    fn tree_walks_match_a_sequential_walk((p, len, _min) in case(), shape in 0u8..3) {
        use terroir::iter::{walk_tree, walk_tree_postfix, walk_tree_prefix};
        let (name, pool) = &pools()[p];
        let len = len.max(1);
        let t = tree(len, shape);
        let kids = |&n: &usize| t[n].iter().copied();
        let (mut pre, mut post) = (Vec::new(), Vec::new());
        prefix_std(&t, 0, &mut pre);
        postfix_std(&t, 0, &mut post);
        pool.install(|| {
            let got: Vec<usize> = walk_tree_prefix(0, kids).collect();
            prop_assert_eq!(&got, &pre, "prefix {} shape {}", name, shape);
            let got: Vec<usize> = walk_tree_postfix(0, kids).collect();
            prop_assert_eq!(&got, &post, "postfix {} shape {}", name, shape);
            let mut got: Vec<usize> = walk_tree(0, kids).collect();
            got.sort_unstable();
            prop_assert_eq!(got, (0..len).collect::<Vec<_>>(), "walk_tree {}", name);
            // Searches skip parts, and still find the first / last match.
            let hit = |n: &usize| n % 13 == 12;
            prop_assert_eq!(walk_tree_prefix(0, kids).find_first(hit), pre.iter().copied().find(hit));
            prop_assert_eq!(walk_tree_postfix(0, kids).find_last(hit), post.iter().copied().rev().find(hit));
            prop_assert_eq!(walk_tree_postfix(0, kids).count(), len);
            Ok(())
        })?;
    }
}

/// A chain far deeper than any stack could recurse.
#[test]
fn tree_walks_of_a_deep_chain() {
    use terroir::iter::{walk_tree_postfix, walk_tree_prefix};
    const N: u32 = 1_000_000;
    let next = |&n: &u32| (n + 1 < N).then_some(n + 1);
    assert!(walk_tree_prefix(0, next)
        .collect::<Vec<_>>()
        .into_iter()
        .eq(0..N));
    assert!(walk_tree_postfix(0, next)
        .collect::<Vec<_>>()
        .into_iter()
        .eq((0..N).rev()));
}

/// `a` and `b` in turns; `shortest`: stop when the side whose turn it is
/// has none left.
fn interleave_std(a: &[u64], b: &[u64], shortest: bool) -> Vec<u64> {
    let (mut i, mut j, mut out) = (a.iter(), b.iter(), Vec::new());
    loop {
        match i.next() {
            Some(&x) => out.push(x),
            None if shortest => return out,
            None => {
                out.extend(j);
                return out;
            }
        }
        match j.next() {
            Some(&y) => out.push(y),
            None if shortest => return out,
            None => {
                out.extend(i);
                return out;
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn interleave_matches_std((p, len, min) in case(), other in 0usize..300) {
        let (name, pool) = &pools()[p];
        let a = data(len);
        let b: Vec<u64> = data(other).into_iter().map(|x| x + (1 << 30)).collect();
        pool.install(|| {
            for (x, y) in [(&a, &b), (&b, &a)] {
                for shortest in [false, true] {
                    let want = interleave_std(x, y, shortest);
                    let it = || {
                        let (x, y) = (x.par_iter().copied(), y.par_iter().copied());
                        if shortest {
                            terroir::iter::Either::Left(x.interleave_shortest(y))
                        } else {
                            terroir::iter::Either::Right(x.interleave(y))
                        }
                    };
                    prop_assert_eq!(it().len(), want.len());
                    let got: Vec<u64> = it().with_min_len(min).collect();
                    prop_assert_eq!(&got, &want, "{} shortest {}", name, shortest);
                    let got: Vec<u64> = it().rev().collect();
                    prop_assert_eq!(got, want.iter().rev().copied().collect::<Vec<_>>(), "rev {}", name);
                    // Zipped and enumerated: split at any unit.
                    let got: Vec<(usize, u64)> = it().enumerate().zip(0..want.len()).map(|(e, _)| e).collect();
                    prop_assert_eq!(got, want.iter().copied().enumerate().collect::<Vec<_>>());
                    let skip = want.len() / 3;
                    let got: Vec<u64> = it().skip(skip).rev().take(5).collect();
                    prop_assert_eq!(got, want[skip..].iter().rev().take(5).copied().collect::<Vec<_>>());
                }
            }
            Ok(())
        })?;
    }
}

/// `sep` between every two items of `v`.
fn intersperse_std<T: Clone>(v: &[T], sep: T) -> Vec<T> {
    let mut out = Vec::new();
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            out.push(sep.clone());
        }
        out.push(x.clone());
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn intersperse_matches_std((p, len, min) in case()) {
        let (name, pool) = &pools()[p];
        let v = data(len);
        let sep = u64::MAX;
        let want = intersperse_std(&v, sep);
        pool.install(|| {
            // Indexed: collect (exact positions), len, rev, zip, skip/take.
            let it = || v.par_iter().copied().with_min_len(min).intersperse(sep);
            prop_assert_eq!(it().len(), want.len());
            prop_assert_eq!(it().opt_len(), Some(want.len()));
            prop_assert_eq!(&it().collect::<Vec<_>>(), &want, "collect {}", name);
            let mut into = Vec::new();
            it().collect_into_vec(&mut into);
            prop_assert_eq!(&into, &want, "collect_into_vec {}", name);
            prop_assert_eq!(it().rev().collect::<Vec<_>>(), want.iter().rev().copied().collect::<Vec<_>>(), "rev {}", name);
            let got: Vec<(u64, usize)> = it().zip(0..want.len()).collect();
            prop_assert_eq!(got, want.iter().copied().zip(0..).collect::<Vec<_>>(), "zip {}", name);
            let skip = want.len() / 3;
            let got: Vec<u64> = it().skip(skip).rev().skip(1).collect();
            let want_sr: Vec<u64> = want[skip..].iter().rev().skip(1).copied().collect();
            prop_assert_eq!(got, want_sr, "skip rev {}", name);
            // Twice (the outer one over an indexed inner one).
            let twice: Vec<u64> = it().intersperse(7).collect();
            prop_assert_eq!(&twice, &intersperse_std(&want, 7), "twice {}", name);
            // Unindexed: runs hold their first item back.
            let odd: Vec<u64> = v.iter().copied().filter(|x| x % 2 == 1).collect();
            let got: Vec<u64> = v.par_iter().copied().filter(|x| x % 2 == 1).intersperse(sep).collect();
            prop_assert_eq!(&got, &intersperse_std(&odd, sep), "filtered {}", name);
            let got: Vec<u64> = v.par_iter().copied().filter(|x| x % 2 == 1).intersperse(sep).intersperse(3).collect();
            prop_assert_eq!(&got, &intersperse_std(&intersperse_std(&odd, sep), 3), "filtered twice {}", name);
            let got = v.par_iter().copied().filter(|x| x % 2 == 1).intersperse(sep).count();
            prop_assert_eq!(got, intersperse_std(&odd, sep).len());
            let s: String = v.iter().map(|x| (x % 1000).to_string()).collect::<Vec<_>>().join(",");
            let got: String = s.par_split(',').intersperse(";").collect();
            prop_assert_eq!(got, s.replace(',', ";"), "strings {}", name);
            // Searches over interspersed items.
            let pos = |want: &[u64]| want.iter().position(|&x| x == sep);
            prop_assert_eq!(it().position_first(|x| x == sep), pos(&want));
            Ok(())
        })?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn blocks_keep_order_and_run_one_after_another((p, len, min) in case(), size in 1usize..500) {
        let (name, pool) = &pools()[p];
        let v = data(len);
        pool.install(|| {
            let got: Vec<u64> = v.par_iter().copied().with_min_len(min).by_uniform_blocks(size).collect();
            prop_assert_eq!(&got, &v, "uniform {}", name);
            let got: Vec<u64> = v.par_iter().copied().by_exponential_blocks().filter(|x| x % 3 == 0).collect();
            prop_assert_eq!(got, v.iter().copied().filter(|x| x % 3 == 0).collect::<Vec<_>>(), "exponential {}", name);
            prop_assert_eq!(v.par_iter().by_exponential_blocks().count(), len);
            let hit = |x: &&u64| **x % 101 == 7;
            prop_assert_eq!(v.par_iter().by_uniform_blocks(size).find_first(hit), v.iter().find(hit));
            prop_assert_eq!(v.par_iter().by_exponential_blocks().find_last(hit), v.iter().rev().find(hit));
            // Every block ends before the next starts: the order in which
            // items ran is increasing from block to block.
            let clock = AtomicUsize::new(0);
            let ran: Vec<usize> = v
                .par_iter()
                .map(|_| clock.fetch_add(1, Ordering::Relaxed))
                .by_uniform_blocks(size)
                .collect();
            let blocks: Vec<(usize, usize)> = ran
                .chunks(size)
                .map(|b| (*b.iter().min().unwrap(), *b.iter().max().unwrap()))
                .collect();
            prop_assert!(blocks.windows(2).all(|w| w[0].1 < w[1].0), "blocks overlap {}", name);
            Ok(())
        })?;
    }
}

/// A search in blocks does not run the blocks after the one holding its
/// match.
#[test]
fn exponential_blocks_stop_after_the_match() {
    let ran = AtomicUsize::new(0);
    let first = (0..1_000_000u64)
        .into_par_iter()
        .inspect(|_| {
            ran.fetch_add(1, Ordering::Relaxed);
        })
        .by_exponential_blocks()
        .find_first(|&x| x == 100);
    assert_eq!(first, Some(100));
    // The block holding 100 ends at most at 2 * 100 + the first block.
    assert!(ran.into_inner() <= 2 * 101 + 2 * terroir::current_num_threads());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn fold_chunks_match_std((p, len, min) in case(), size in 1usize..300) {
        let (name, pool) = &pools()[p];
        let v = data(len);
        let want: Vec<u64> = v.chunks(size).map(|c| c.iter().fold(1, |a, x| a ^ x.wrapping_mul(31))).collect();
        pool.install(|| {
            let f = |a: u64, x: &u64| a ^ x.wrapping_mul(31);
            let got: Vec<u64> = v.par_iter().with_min_len(min).fold_chunks(size, || 1, f).collect();
            prop_assert_eq!(&got, &want, "fold_chunks {}", name);
            prop_assert_eq!(v.par_iter().fold_chunks(size, || 1, f).len(), want.len());
            let got: Vec<u64> = v.par_iter().fold_chunks_with(size, 1, f).rev().collect();
            prop_assert_eq!(got, want.iter().rev().copied().collect::<Vec<_>>(), "fold_chunks_with rev {}", name);
            let got: Vec<(u64, usize)> = v.par_iter().fold_chunks_with(size, 1, f).zip(0..want.len()).collect();
            prop_assert_eq!(got, want.iter().copied().zip(0..).collect::<Vec<_>>());
            Ok(())
        })?;
    }
}
