//! Every parallel-iterator adaptor and consumer against `std::iter` on
//! random lengths (0, 1, primes, up to 100 000) and random
//! `with_min_len`, under every policy and both deque orders, on this
//! machine (2 workers) and on a described 2-node machine (5 unpinned
//! workers, oversubscribed). Every loop here splits after every batch
//! (`set_split_stress`), as if idle workers always asked.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use proptest::prelude::*;
use terroir::numa::Topology;
use terroir::prelude::*;
use terroir::{DequeOrder, Policy, ThreadPool, ThreadPoolBuilder};

/// The pools: every policy × deque order, here and described.
fn pools() -> &'static [(String, ThreadPool)] {
    static POOLS: OnceLock<Vec<(String, ThreadPool)>> = OnceLock::new();
    POOLS.get_or_init(|| {
        // Split wherever possible: results must not depend on the splits.
        terroir::iter::set_split_stress(true);
        let mut out = Vec::new();
        for &policy in Policy::ALL {
            for order in [DequeOrder::Lifo, DequeOrder::Fifo] {
                let here = ThreadPoolBuilder::new()
                    .num_threads(2)
                    .policy(policy)
                    .deque_order(order)
                    .build()
                    .unwrap();
                out.push((format!("here/{}/{order:?}", policy.name()), here));
                let two = Topology::builder().nodes(2).pus_per_l3(3).build().unwrap();
                let described = ThreadPoolBuilder::new()
                    .topology(two)
                    .num_threads(5)
                    .pin(false)
                    .policy(policy)
                    .deque_order(order)
                    .build()
                    .unwrap();
                out.push((format!("2-node/{}/{order:?}", policy.name()), described));
            }
        }
        out
    })
}

/// Lengths that matter: empty, one, primes around batch sizes, large.
fn length() -> impl Strategy<Value = usize> {
    prop_oneof![
        Just(0usize),
        Just(1),
        Just(2),
        prop::sample::select(vec![3usize, 7, 31, 127, 1021, 4093, 8191, 65_521]),
        0usize..100_000,
    ]
}

/// A pool, a length and a `with_min_len` (0 allowed: taken as 1).
fn case() -> impl Strategy<Value = (usize, usize, usize)> {
    (0..pools().len(), length()).prop_flat_map(|(p, len)| (Just(p), Just(len), 0..=len + 1))
}

fn data(len: usize) -> Vec<u64> {
    (0..len as u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn maps_filters_and_collects_keep_order((p, len, min) in case()) {
        let (name, pool) = &pools()[p];
        let v = data(len);
        pool.install(|| {
            let got: Vec<u64> = v.par_iter().with_min_len(min).map(|x| x * 3 + 1).collect();
            let want: Vec<u64> = v.iter().map(|x| x * 3 + 1).collect();
            prop_assert_eq!(&got, &want, "map {}", name);
            let got: Vec<u64> = v.par_iter().with_min_len(min).copied().filter(|x| x % 3 == 0).collect();
            let want: Vec<u64> = v.iter().copied().filter(|x| x % 3 == 0).collect();
            prop_assert_eq!(&got, &want, "filter {}", name);
            let got: Vec<u64> = v.par_iter().filter_map(|&x| (x % 5 == 1).then_some(x / 5)).collect();
            let want: Vec<u64> = v.iter().filter_map(|&x| (x % 5 == 1).then_some(x / 5)).collect();
            prop_assert_eq!(&got, &want, "filter_map {}", name);
            let got: Vec<u64> = v.par_iter().flat_map_iter(|&x| 0..x % 4).collect();
            let want: Vec<u64> = v.iter().flat_map(|&x| 0..x % 4).collect();
            prop_assert_eq!(&got, &want, "flat_map_iter {}", name);
            let got: Vec<u64> = v.par_iter().with_min_len(min).flat_map(|&x| (0..x % 3).into_par_iter()).collect();
            prop_assert_eq!(&got, &want_flat(&v), "flat_map {}", name);
            let nested: Vec<Vec<u64>> = v.iter().map(|&x| vec![x; (x % 3) as usize]).collect();
            let got: Vec<u64> = nested.par_iter().flatten().copied().collect();
            let want: Vec<u64> = nested.iter().flatten().copied().collect();
            prop_assert_eq!(&got, &want, "flatten {}", name);
            let got: Vec<u64> = nested.clone().into_par_iter().flatten_iter().collect();
            prop_assert_eq!(&got, &want, "flatten_iter {}", name);
            let mut into = vec![7; 3];
            v.par_iter().with_min_len(min).map(|x| x ^ 1).collect_into_vec(&mut into);
            prop_assert_eq!(into, v.iter().map(|x| x ^ 1).collect::<Vec<_>>(), "collect_into_vec {}", name);
            let mut ext = vec![1u64, 2];
            ext.par_extend(v.par_iter().copied().filter(|x| x % 2 == 0));
            let mut want = vec![1u64, 2];
            want.extend(v.iter().copied().filter(|x| x % 2 == 0));
            prop_assert_eq!(ext, want, "par_extend {}", name);
            Ok(())
        })?;
    }

    #[test]
    fn reductions_match_std((p, len, min) in case()) {
        let (name, pool) = &pools()[p];
        let v = data(len);
        pool.install(|| {
            prop_assert_eq!(v.par_iter().with_min_len(min).sum::<u64>(), v.iter().sum::<u64>(), "sum {}", name);
            let small: Vec<u64> = v.iter().map(|x| x % 3 + 1).take(30).collect();
            prop_assert_eq!(small.par_iter().product::<u64>(), small.iter().product::<u64>(), "product {}", name);
            prop_assert_eq!(v.par_iter().with_min_len(min).count(), len, "count {}", name);
            prop_assert_eq!(v.par_iter().filter(|&&x| x % 7 == 0).count(), v.iter().filter(|&&x| x % 7 == 0).count());
            prop_assert_eq!(v.par_iter().with_min_len(min).min(), v.iter().min(), "min {}", name);
            prop_assert_eq!(v.par_iter().max(), v.iter().max(), "max {}", name);
            // Ties: min_by_key keeps the first, max_by_key the last (as std).
            let key = |x: &&u64| **x % 16;
            prop_assert_eq!(
                v.par_iter().enumerate().min_by_key(|(_, x)| key(x)),
                v.iter().enumerate().min_by_key(|(_, x)| key(x)),
                "min_by_key {}", name
            );
            prop_assert_eq!(
                v.par_iter().enumerate().max_by_key(|(_, x)| key(x)),
                v.iter().enumerate().max_by_key(|(_, x)| key(x)),
                "max_by_key {}", name
            );
            prop_assert_eq!(
                v.par_iter().with_min_len(min).min_by(|a, b| (*a % 9).cmp(&(*b % 9))),
                v.iter().min_by(|a, b| (*a % 9).cmp(&(*b % 9)))
            );
            prop_assert_eq!(v.par_iter().copied().reduce(|| 0, u64::wrapping_add), v.iter().copied().fold(0, u64::wrapping_add));
            prop_assert_eq!(v.par_iter().copied().reduce_with(u64::max), v.iter().copied().max());
            let folded: u64 = v.par_iter().with_min_len(min).fold(|| 0u64, |a, &x| a + x).sum();
            prop_assert_eq!(folded, v.iter().sum::<u64>(), "fold {}", name);
            let folded: u64 = v.par_iter().fold_with(0u64, |a, &x| a + x).reduce(|| 0, |a, b| a + b);
            prop_assert_eq!(folded, v.iter().sum::<u64>(), "fold_with {}", name);
            // Concatenating per-piece strings in order gives the sequence.
            let s: String = v.par_iter().take(500).fold(String::new, |mut s, x| { s.push_str(&x.to_string()); s.push(','); s }).collect();
            let want: String = v.iter().take(500).map(|x| format!("{x},")).collect();
            prop_assert_eq!(s, want, "fold order {}", name);
            Ok(())
        })?;
    }

    #[test]
    fn indexed_adaptors_match_std((p, len, min) in case(), other in length(), k in 1usize..40) {
        let (name, pool) = &pools()[p];
        let v = data(len);
        let w = data(other);
        pool.install(|| {
            let got: Vec<(usize, u64)> = v.par_iter().copied().with_min_len(min).enumerate().collect();
            prop_assert_eq!(got, v.iter().copied().enumerate().collect::<Vec<_>>(), "enumerate {}", name);
            let got: Vec<(u64, u64)> = v.par_iter().copied().zip(w.par_iter().copied()).with_min_len(min).collect();
            prop_assert_eq!(got, v.iter().copied().zip(w.iter().copied()).collect::<Vec<_>>(), "zip {}", name);
            let got: Vec<u64> = v.par_iter().copied().rev().collect();
            prop_assert_eq!(got, v.iter().copied().rev().collect::<Vec<_>>(), "rev {}", name);
            let got: Vec<(usize, u64)> = v.par_iter().copied().enumerate().rev().skip(k).collect();
            prop_assert_eq!(got, v.iter().copied().enumerate().rev().skip(k).collect::<Vec<_>>(), "enumerate rev skip {}", name);
            let got: Vec<u64> = v.par_iter().copied().skip(k).take(len / 2).collect();
            prop_assert_eq!(got, v.iter().copied().skip(k).take(len / 2).collect::<Vec<_>>(), "skip take {}", name);
            // As in rayon, a `map` before `skip` still runs on the skipped items.
            let seen = AtomicUsize::new(0);
            let got: Vec<u64> = v.par_iter().map(|&x| { seen.fetch_add(1, Ordering::Relaxed); x }).skip(k).collect();
            prop_assert_eq!(got, v.iter().copied().skip(k).collect::<Vec<_>>(), "map skip {}", name);
            prop_assert_eq!(seen.load(Ordering::Relaxed), len, "map skip runs the skipped items {}", name);
            let got: Vec<u64> = v.par_iter().copied().step_by(k).collect();
            prop_assert_eq!(got, v.iter().copied().step_by(k).collect::<Vec<_>>(), "step_by {}", name);
            let got: Vec<u64> = v.par_iter().copied().step_by(k).rev().collect();
            prop_assert_eq!(got, v.iter().copied().step_by(k).rev().collect::<Vec<_>>(), "step_by rev {}", name);
            let got: Vec<Vec<u64>> = v.par_iter().copied().chunks(k).collect();
            let want: Vec<Vec<u64>> = v.chunks(k).map(<[u64]>::to_vec).collect();
            prop_assert_eq!(&got, &want, "chunks {}", name);
            let got: Vec<Vec<u64>> = v.par_iter().copied().chunks(k).rev().collect();
            let want_rev: Vec<Vec<u64>> = want.iter().rev().cloned().collect();
            prop_assert_eq!(got, want_rev, "chunks rev {}", name);
            let got: Vec<u64> = v.par_iter().copied().chain(w.par_iter().copied()).with_min_len(min).collect();
            prop_assert_eq!(got, v.iter().chain(&w).copied().collect::<Vec<_>>(), "chain {}", name);
            let got: Vec<u64> = v.par_iter().copied().filter(|x| x % 2 == 0).chain(w.par_iter().copied()).collect();
            prop_assert_eq!(got, v.iter().copied().filter(|x| x % 2 == 0).chain(w.iter().copied()).collect::<Vec<_>>());
            prop_assert_eq!(v.par_iter().zip(&w).len(), len.min(other));
            prop_assert_eq!(v.par_iter().cmp(&w), v.iter().cmp(&w), "cmp {}", name);
            prop_assert_eq!(v.par_iter().eq(&v), true);
            let got: Vec<usize> = v.par_iter().positions(|x| x % 11 == 0).collect();
            prop_assert_eq!(got, v.iter().enumerate().filter(|(_, x)| *x % 11 == 0).map(|(i, _)| i).collect::<Vec<_>>());
            Ok(())
        })?;
    }

    #[test]
    fn searches_match_std((p, len, min) in case(), target in any::<u64>()) {
        let (name, pool) = &pools()[p];
        let v = data(len);
        let m = target % 64 + 1;
        pool.install(|| {
            prop_assert_eq!(v.par_iter().with_min_len(min).find_first(|&&x| x % m == 0), v.iter().find(|&&x| x % m == 0), "find_first {}", name);
            prop_assert_eq!(v.par_iter().find_last(|&&x| x % m == 0), v.iter().rev().find(|&&x| x % m == 0), "find_last {}", name);
            // Back to front through per-item adaptors and flat_map, front to
            // back through order-dependent ones (flat_map_iter, fold, chain).
            prop_assert_eq!(
                v.par_iter().with_min_len(min).map(|x| x / 2).filter(|x| x % 3 != 1).find_last(|x| x % m == 0),
                v.iter().map(|x| x / 2).filter(|x| x % 3 != 1).rev().find(|x| x % m == 0),
                "map filter find_last {}", name
            );
            prop_assert_eq!(
                v.par_iter().panic_fuse().strict().find_last(|&&x| x % m == 0),
                v.iter().rev().find(|&&x| x % m == 0),
                "panic_fuse strict find_last {}", name
            );
            prop_assert_eq!(
                v.par_iter().enumerate().filter_map(|(i, x)| (x % m == 0).then_some(i)).find_last(|_| true),
                v.iter().rposition(|x| x % m == 0),
                "enumerate filter_map find_last {}", name
            );
            prop_assert_eq!(
                v.par_iter().flat_map(|&x| vec![x, x + m]).find_last(|x| x % m == 0),
                v.iter().flat_map(|&x| [x, x + m]).rev().find(|x| x % m == 0),
                "flat_map find_last {}", name
            );
            prop_assert_eq!(
                v.par_iter().flat_map_iter(|&x| [x, x + m]).find_last(|x| x % m == 0),
                v.iter().flat_map(|&x| [x, x + m]).rev().find(|x| x % m == 0),
                "flat_map_iter find_last {}", name
            );
            prop_assert_eq!(
                v.par_iter().copied().chain(v.par_iter().map(|x| x + 1)).rev().find_last(|x| x % m == 0),
                v.iter().copied().chain(v.iter().map(|x| x + 1)).find(|x| x % m == 0),
                "chain rev find_last {}", name
            );
            prop_assert_eq!(
                v.par_iter().fold(Vec::new, |mut a, &x| { a.push(x); a }).find_last(|a| a.iter().any(|x| x % m == 0)).map(|a| *a.iter().rev().find(|x| *x % m == 0).unwrap()),
                v.iter().rev().find(|&&x| x % m == 0).copied(),
                "fold find_last {}", name
            );
            prop_assert_eq!(v.par_iter().position_first(|&x| x % m == 0), v.iter().position(|&x| x % m == 0));
            prop_assert_eq!(v.par_iter().position_last(|&x| x % m == 0), v.iter().rposition(|&x| x % m == 0));
            match v.par_iter().with_min_len(min).find_any(|&&x| x % m == 0) {
                Some(x) => prop_assert!(x % m == 0),
                None => prop_assert!(v.iter().all(|x| x % m != 0)),
            }
            match v.par_iter().position_any(|&x| x % m == 0) {
                Some(i) => prop_assert!(v[i] % m == 0),
                None => prop_assert!(v.iter().all(|x| x % m != 0)),
            }
            prop_assert_eq!(v.par_iter().any(|&x| x % m == 0), v.iter().any(|&x| x % m == 0));
            prop_assert_eq!(v.par_iter().all(|&x| x % m != 0), v.iter().all(|&x| x % m != 0));
            prop_assert_eq!(
                v.par_iter().find_map_first(|&x| (x % m == 0).then_some(x * 2)),
                v.iter().find_map(|&x| (x % m == 0).then_some(x * 2))
            );
            Ok(())
        })?;
    }

    #[test]
    fn sources_and_collections_match_std((p, len, min) in case(), k in 1usize..40) {
        let (name, pool) = &pools()[p];
        let v = data(len);
        pool.install(|| {
            let owned: Vec<String> = v.iter().map(|x| x.to_string()).collect();
            let got: Vec<String> = owned.clone().into_par_iter().with_min_len(min).map(|s| s + "!").collect();
            prop_assert_eq!(got, owned.iter().map(|s| format!("{s}!")).collect::<Vec<_>>(), "vec into_par_iter {}", name);
            let got: Vec<&[u64]> = v.par_chunks(k).collect();
            prop_assert_eq!(got, v.chunks(k).collect::<Vec<_>>(), "par_chunks {}", name);
            let got: Vec<&[u64]> = v.par_chunks_exact(k).rev().collect();
            prop_assert_eq!(got, v.chunks_exact(k).rev().collect::<Vec<_>>(), "par_chunks_exact {}", name);
            let got: Vec<&[u64]> = v.par_rchunks(k).collect();
            prop_assert_eq!(got, v.rchunks(k).collect::<Vec<_>>(), "par_rchunks {}", name);
            let got: Vec<&[u64]> = v.par_rchunks_exact(k).rev().collect();
            prop_assert_eq!(got, v.rchunks_exact(k).rev().collect::<Vec<_>>(), "par_rchunks_exact {}", name);
            let got: Vec<&[u64]> = v.par_windows(k).collect();
            prop_assert_eq!(got, v.windows(k).collect::<Vec<_>>(), "par_windows {}", name);
            let got: Vec<&[u64]> = v.par_windows(k).rev().collect();
            prop_assert_eq!(got, v.windows(k).rev().collect::<Vec<_>>(), "par_windows rev {}", name);
            let mut m = v.clone();
            m.par_chunks_mut(k).enumerate().for_each(|(i, c)| c.iter_mut().for_each(|x| *x += i as u64));
            let mut want = v.clone();
            want.chunks_mut(k).enumerate().for_each(|(i, c)| c.iter_mut().for_each(|x| *x += i as u64));
            prop_assert_eq!(&m, &want, "par_chunks_mut {}", name);
            m.par_rchunks_exact_mut(k).for_each(|c| c.reverse());
            want.rchunks_exact_mut(k).for_each(|c| c.reverse());
            prop_assert_eq!(&m, &want, "par_rchunks_exact_mut {}", name);
            let n = len as u32;
            prop_assert_eq!((0..n).into_par_iter().with_min_len(min).map(u64::from).sum::<u64>(), (0..n).map(u64::from).sum::<u64>());
            prop_assert_eq!((0..=n).into_par_iter().rev().collect::<Vec<_>>(), (0..=n).rev().collect::<Vec<_>>());
            prop_assert_eq!((-(n as i64)..n as i64).into_par_iter().map(|x| x * 3).collect::<Vec<_>>(), (-(n as i64)..n as i64).map(|x| x * 3).collect::<Vec<_>>());
            let set: HashSet<u64> = v.par_iter().map(|x| x % 97).collect();
            prop_assert_eq!(set, v.iter().map(|x| x % 97).collect::<HashSet<_>>());
            let map: HashMap<u64, usize> = v.par_iter().enumerate().map(|(i, &x)| (x, i)).collect();
            prop_assert_eq!(map.len(), v.iter().collect::<HashSet<_>>().len());
            let tree: BTreeMap<u64, u64> = v.par_iter().map(|&x| (x % 50, x)).collect();
            prop_assert_eq!(tree.keys().copied().collect::<Vec<_>>(), v.iter().map(|x| x % 50).collect::<BTreeSet<_>>().into_iter().collect::<Vec<_>>());
            prop_assert_eq!(tree.par_iter().map(|(k, _)| *k).sum::<u64>(), tree.keys().sum::<u64>());
            let (even, odd): (Vec<u64>, Vec<u64>) = v.par_iter().partition(|&&x| x % 2 == 0);
            prop_assert_eq!(even, v.iter().copied().filter(|x| x % 2 == 0).collect::<Vec<_>>());
            prop_assert_eq!(odd, v.iter().copied().filter(|x| x % 2 == 1).collect::<Vec<_>>());
            let (a, b): (Vec<u64>, Vec<usize>) = v.par_iter().enumerate().map(|(i, &x)| (x, i)).unzip();
            prop_assert_eq!(a, v.clone());
            prop_assert_eq!(b, (0..len).collect::<Vec<_>>());
            let s: String = v.par_iter().take(200).map(|x| char::from(b'a' + (x % 26) as u8)).collect();
            prop_assert_eq!(s, v.iter().take(200).map(|x| char::from(b'a' + (x % 26) as u8)).collect::<String>());
            let text: String = v.iter().take(300).map(|x| if x % 5 == 0 { " ".to_string() } else { format!("é{}", x % 10) }).collect();
            prop_assert_eq!(text.par_chars().collect::<String>(), text.clone());
            prop_assert_eq!(text.par_char_indices().collect::<Vec<_>>(), text.char_indices().collect::<Vec<_>>());
            prop_assert_eq!(text.par_split_whitespace().collect::<Vec<_>>(), text.split_whitespace().collect::<Vec<_>>());
            prop_assert_eq!(text.par_split(' ').collect::<Vec<_>>(), text.split(' ').collect::<Vec<_>>());
            let ok: Result<Vec<u64>, u64> = v.par_iter().map(|&x| Ok::<u64, u64>(x)).collect();
            prop_assert_eq!(ok, Ok(v.clone()));
            let err: Result<Vec<u64>, u64> = v.par_iter().map(|&x| if x % 3 == 2 { Err(x) } else { Ok(x) }).collect();
            match err {
                Ok(got) => prop_assert_eq!(got, v.clone()),
                Err(x) => prop_assert!(x % 3 == 2),
            }
            let none: Option<Vec<u64>> = v.par_iter().map(|&x| (x % 4 != 3).then_some(x)).collect();
            prop_assert_eq!(none.is_some(), v.iter().all(|x| x % 4 != 3));
            Ok(())
        })?;
    }

    /// Every string splitter gives std's pieces, in order, on text with
    /// multi-byte characters, runs of separators and separators at both
    /// ends (split stress cuts the text between every batch).
    #[test]
    fn string_splitters_match_std((p, _len, _min) in case(), picks in proptest::collection::vec(0usize..10, 0..1500)) {
        let (name, pool) = &pools()[p];
        const ALPHABET: [char; 10] = ['a', 'b', ',', ' ', '\n', '\r', 'é', '日', '\t', ';'];
        let text: String = picks.iter().map(|&i| ALPHABET[i]).collect();
        let text = text.as_str();
        pool.install(|| {
            prop_assert_eq!(text.par_split(',').collect::<Vec<_>>(), text.split(',').collect::<Vec<_>>(), "split {}", name);
            prop_assert_eq!(text.par_split('日').collect::<Vec<_>>(), text.split('日').collect::<Vec<_>>(), "split 日 {}", name);
            let set: &[char] = &[' ', '\t', 'é'];
            prop_assert_eq!(text.par_split(set).collect::<Vec<_>>(), text.split(set).collect::<Vec<_>>());
            prop_assert_eq!(text.par_split([',', ';']).collect::<Vec<_>>(), text.split([',', ';']).collect::<Vec<_>>());
            prop_assert_eq!(text.par_split(&[',', ';']).collect::<Vec<_>>(), text.split(&[',', ';']).collect::<Vec<_>>());
            prop_assert_eq!(text.par_split(|c: char| c.is_ascii_digit() || c == 'b').collect::<Vec<_>>(), text.split(|c: char| c.is_ascii_digit() || c == 'b').collect::<Vec<_>>());
            prop_assert_eq!(text.par_split_inclusive(',').collect::<Vec<_>>(), text.split_inclusive(',').collect::<Vec<_>>(), "inclusive {}", name);
            prop_assert_eq!(text.par_split_terminator(';').collect::<Vec<_>>(), text.split_terminator(';').collect::<Vec<_>>(), "terminator {}", name);
            prop_assert_eq!(text.par_lines().collect::<Vec<_>>(), text.lines().collect::<Vec<_>>(), "lines {}", name);
            prop_assert_eq!(text.par_split_whitespace().collect::<Vec<_>>(), text.split_whitespace().collect::<Vec<_>>());
            prop_assert_eq!(text.par_split_ascii_whitespace().collect::<Vec<_>>(), text.split_ascii_whitespace().collect::<Vec<_>>());
            prop_assert_eq!(text.par_matches('é').collect::<Vec<_>>(), text.matches('é').collect::<Vec<_>>());
            prop_assert_eq!(text.par_match_indices([',', '日']).collect::<Vec<_>>(), text.match_indices([',', '日']).collect::<Vec<_>>(), "match_indices {}", name);
            prop_assert_eq!(text.par_split(' ').count(), text.split(' ').count());
            // Searches skip parts and still find the first / last piece.
            let hit = |w: &&str| w.len() == 2;
            prop_assert_eq!(text.par_split(',').find_first(hit), text.split(',').find(hit));
            prop_assert_eq!(text.par_split(',').find_last(hit), text.split(',').rev().find(hit));
            Ok(())
        })?;
    }

    #[test]
    fn sorts_match_std((p, len, _min) in case()) {
        let (name, pool) = &pools()[p];
        let v: Vec<(u64, usize)> = data(len).into_iter().map(|x| x % 100).zip(0..).collect();
        pool.install(|| {
            let mut a = v.clone();
            a.par_sort_by_key(|x| x.0);
            let mut b = v.clone();
            b.sort_by_key(|x| x.0);
            prop_assert_eq!(&a, &b, "par_sort_by_key (stable) {}", name);
            let mut a = v.clone();
            a.par_sort_by_cached_key(|x| x.0);
            prop_assert_eq!(&a, &b, "par_sort_by_cached_key {}", name);
            let mut a = v.clone();
            a.par_sort_unstable();
            let mut b = v.clone();
            b.sort_unstable();
            prop_assert_eq!(&a, &b, "par_sort_unstable {}", name);
            Ok(())
        })?;
    }
}

fn want_flat(v: &[u64]) -> Vec<u64> {
    v.iter().flat_map(|&x| 0..x % 3).collect()
}

#[test]
fn per_piece_state_is_made_once_per_piece() {
    for (name, pool) in pools() {
        let inits = AtomicUsize::new(0);
        let out: Vec<u64> = pool.install(|| {
            (0..10_000u64)
                .into_par_iter()
                .map_init(
                    || {
                        inits.fetch_add(1, Ordering::Relaxed);
                        0u64
                    },
                    |count, x| {
                        *count += 1;
                        x
                    },
                )
                .collect()
        });
        assert_eq!(out, (0..10_000).collect::<Vec<_>>(), "{name}");
        let made = inits.into_inner();
        assert!(
            (2..=10_000).contains(&made),
            "{name}: init ran {made} times (split stress splits)"
        );
        // map_with: every piece starts from a clone.
        let total: usize = pool.install(|| {
            (0..1000)
                .into_par_iter()
                .map_with(5usize, |k, x: usize| x + *k)
                .sum()
        });
        assert_eq!(total, (0..1000).map(|x| x + 5).sum::<usize>(), "{name}");
        // Indexed map_init under zip and rev.
        let v: Vec<(u32, u32)> = pool.install(|| {
            (0..500u32)
                .into_par_iter()
                .map_init(|| 1u32, |one, x| x + *one)
                .zip((0..500u32).into_par_iter().rev())
                .rev()
                .collect()
        });
        let want: Vec<(u32, u32)> = (1..501u32).zip((0..500).rev()).rev().collect();
        assert_eq!(v, want, "{name}");
    }
}

#[test]
fn with_max_len_and_try_forms() {
    for (name, pool) in pools() {
        pool.install(|| {
            let r: Result<(), u32> = (0..1000u32)
                .into_par_iter()
                .with_max_len(1)
                .try_for_each(|x| if x == 700 { Err(x) } else { Ok(()) });
            assert_eq!(r, Err(700), "{name}");
            let r: Option<u32> = (0..100u32)
                .into_par_iter()
                .map(Some)
                .try_reduce(|| 0, |a, b| a.checked_add(b));
            assert_eq!(r, Some(4950), "{name}");
            let r: Option<u8> = (0..100u8)
                .into_par_iter()
                .map(Some)
                .try_reduce(|| 0, |a, b| a.checked_add(b));
            assert_eq!(r, None, "{name}: overflow is an error");
            let r: Option<Option<u32>> = (0..0u32)
                .into_par_iter()
                .map(Some)
                .try_reduce_with(|a, b| Some(a + b));
            assert_eq!(r, None, "{name}");
            let sum: Result<u64, String> = (1..=50u64)
                .into_par_iter()
                .try_fold(|| 0u64, |a, x| Ok(a + x))
                .try_reduce(|| 0, |a, b| Ok(a + b));
            assert_eq!(sum, Ok(1275), "{name}");
            let v: Vec<u32> = (0..100u32)
                .into_par_iter()
                .map(|x| (x < 60).then_some(x))
                .while_some()
                .collect();
            assert!(v.iter().all(|&x| x < 60), "{name}");
            assert_eq!((0..1000).into_par_iter().take_any(17).count(), 17, "{name}");
            assert_eq!(
                (0..1000).into_par_iter().skip_any(17).count(),
                983,
                "{name}"
            );
            let mut seen = (0..1000)
                .into_par_iter()
                .skip_any_while(|&x| x < 500)
                .collect::<Vec<i32>>();
            seen.sort();
            assert!(seen.contains(&999), "{name}");
        });
    }
}

/// `find_last` runs back to front when only per-item adaptors stand in
/// front: a search over 10^27 values (rayon's test) ends at once rather
/// than after walking the range from its start.
#[test]
fn find_last_in_a_huge_range_ends() {
    const OCT: u128 = 1_000_000_000_000_000_000_000_000_000;
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    pool.install(|| {
        assert_eq!((0..OCT).into_par_iter().find_last(|_| true), Some(OCT - 1));
        assert_eq!((0..=OCT).into_par_iter().find_last(|_| true), Some(OCT));
        let x = (0..OCT)
            .into_par_iter()
            .map(|x| x / 2)
            .filter(|x| x % 3 == 0)
            .find_last(|_| true);
        assert_eq!(x, Some((OCT - 1) / 2 / 3 * 3));
        assert_eq!(
            (0..OCT)
                .into_par_iter()
                .find_map_last(|x| (x % 5 == 1).then_some(x)),
            Some(OCT - 4)
        );
    });
}

/// The rayon items added after the first set (issue 17's gaps).
#[path = "iter/gaps.rs"]
mod gaps;
