//! rayon's iterator type names, with rayon's generic parameters, name
//! the types terroir's methods return: code that spells them out (in a
//! function's return type, a struct's field) compiles with only the crate
//! name changed. Each function below would fail to compile if a name were
//! missing, had other parameters, or named another type than the method
//! returns; the test then checks what the iterators yield.

use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet, LinkedList, VecDeque};

use rayon::prelude::*;
use terroir as rayon;

fn array(a: [u8; 3]) -> rayon::array::IntoIter<u8, 3> {
    a.into_par_iter()
}

fn result_names(r: &mut Result<u8, ()>) -> (rayon::result::Iter<'_, u8>, usize) {
    let n = {
        let m: rayon::result::IterMut<'_, u8> = r.par_iter_mut();
        m.count()
    };
    let owned: rayon::result::IntoIter<u8> = (*r).into_par_iter();
    assert_eq!(owned.collect::<Vec<_>>(), [7]);
    (r.par_iter(), n)
}

fn option_names(o: &mut Option<u8>) -> rayon::option::Iter<'_, u8> {
    let m: rayon::option::IterMut<'_, u8> = o.par_iter_mut();
    m.for_each(|x| *x += 1);
    o.par_iter()
}

fn str_names(s: &str) -> Vec<usize> {
    let chars: rayon::str::Chars<'_> = s.par_chars();
    let indices: rayon::str::CharIndices<'_> = s.par_char_indices();
    let bytes: rayon::str::Bytes<'_> = s.par_bytes();
    let utf16: rayon::str::EncodeUtf16<'_> = s.par_encode_utf16();
    let split: rayon::str::Split<'_, char> = s.par_split(' ');
    let inclusive: rayon::str::SplitInclusive<'_, char> = s.par_split_inclusive(' ');
    let terminated: rayon::str::SplitTerminator<'_, char> = s.par_split_terminator('\n');
    let lines: rayon::str::Lines<'_> = s.par_lines();
    let words: rayon::str::SplitWhitespace<'_> = s.par_split_whitespace();
    let ascii: rayon::str::SplitAsciiWhitespace<'_> = s.par_split_ascii_whitespace();
    let matches: rayon::str::Matches<'_, char> = s.par_matches('b');
    let at: rayon::str::MatchIndices<'_, char> = s.par_match_indices('b');
    vec![
        chars.count(),
        indices.count(),
        bytes.count(),
        utf16.count(),
        split.count(),
        inclusive.count(),
        terminated.count(),
        lines.count(),
        words.count(),
        ascii.count(),
        matches.count(),
        at.map(|(i, _)| i).sum(),
    ]
}

fn slice_names(v: &mut [u8]) -> Vec<usize> {
    let odd = |x: &u8| x % 2 == 1;
    let same = |a: &u8, b: &u8| a == b;
    let counts = {
        let split: rayon::slice::Split<'_, u8, _> = v.par_split(odd);
        let inclusive: rayon::slice::SplitInclusive<'_, u8, _> = v.par_split_inclusive(odd);
        let runs: rayon::slice::ChunkBy<'_, u8, _> = v.par_chunk_by(same);
        vec![split.count(), inclusive.count(), runs.count()]
    };
    let split: rayon::slice::SplitMut<'_, u8, _> = v.par_split_mut(odd);
    let a = split.count();
    let inclusive: rayon::slice::SplitInclusiveMut<'_, u8, _> = v.par_split_inclusive_mut(odd);
    let b = inclusive.count();
    let runs: rayon::slice::ChunkByMut<'_, u8, _> = v.par_chunk_by_mut(same);
    let c = runs.count();
    [counts, vec![a, b, c]].concat()
}

#[test]
fn arrays_options_and_results() {
    assert_eq!(array([1, 2, 3]).sum::<u8>(), 6);
    let mut r = Ok(7);
    let (it, n) = result_names(&mut r);
    assert_eq!((it.copied().collect::<Vec<_>>(), n), (vec![7], 1));
    let mut o = Some(1);
    assert_eq!(option_names(&mut o).copied().collect::<Vec<_>>(), [2]);
}

#[test]
fn strings() {
    let s = "ab b\nbé";
    // chars 7, char indices 7, bytes 8, UTF-16 units 7, " "-split 2,
    // inclusive 2, "\n"-terminated 2, lines 2, words 3, ASCII words 3,
    // "b" matches 3 at 1 + 3 + 5.
    assert_eq!(str_names(s), [7, 7, 8, 7, 2, 2, 2, 2, 3, 3, 3, 9]);
    let mut owned = String::from("héllo");
    let d: rayon::string::Drain<'_> = owned.par_drain(..3);
    assert_eq!(d.collect::<String>(), "hé");
}

#[test]
fn slices() {
    let mut v = [2, 1, 4, 4, 3, 6];
    // Split at odd 1 and 3: [2], [4, 4], [6]; inclusive [2, 1], [4, 4, 3],
    // [6]; runs of equal values: 2 | 1 | 4 4 | 3 | 6.
    assert_eq!(slice_names(&mut v), [3, 3, 5, 3, 3, 5]);
}

#[test]
fn collections() {
    use rayon::collections::*;
    let mut map: HashMap<u8, u8> = (0..4).map(|k| (k, k)).collect();
    {
        let it: hash_map::IterMut<'_, u8, u8> = map.par_iter_mut();
        it.for_each(|(_, v)| *v *= 10);
    }
    let it: hash_map::Iter<'_, u8, u8> = map.par_iter();
    assert_eq!(it.map(|(_, v)| u32::from(*v)).sum::<u32>(), 60);
    let it: hash_map::Drain<'_, u8, u8> = map.par_drain();
    assert_eq!(it.count(), 4);
    let it: hash_map::IntoIter<u8, u8> = map.into_par_iter();
    assert_eq!(it.count(), 0);

    let mut set: HashSet<u8> = (0..3).collect();
    let it: hash_set::Iter<'_, u8> = set.par_iter();
    assert_eq!(it.count(), 3);
    let it: hash_set::Drain<'_, u8> = set.par_drain();
    assert_eq!(it.count(), 3);
    let it: hash_set::IntoIter<u8> = set.into_par_iter();
    assert_eq!(it.count(), 0);

    let mut bmap: BTreeMap<u8, u8> = (0..3).map(|k| (k, k)).collect();
    let it: btree_map::IterMut<'_, u8, u8> = bmap.par_iter_mut();
    it.for_each(|(_, v)| *v += 1);
    let it: btree_map::Iter<'_, u8, u8> = bmap.par_iter();
    assert_eq!(it.map(|(_, v)| *v).collect::<Vec<_>>(), [1, 2, 3]);
    let it: btree_map::IntoIter<u8, u8> = bmap.into_par_iter();
    assert_eq!(it.count(), 3);

    let bset: BTreeSet<u8> = (0..3).collect();
    let it: btree_set::Iter<'_, u8> = bset.par_iter();
    assert_eq!(it.copied().collect::<Vec<_>>(), [0, 1, 2]);
    let it: btree_set::IntoIter<u8> = bset.into_par_iter();
    assert_eq!(it.count(), 3);

    let mut list: LinkedList<u8> = (0..3).collect();
    let it: linked_list::IterMut<'_, u8> = list.par_iter_mut();
    it.for_each(|x| *x *= 2);
    let it: linked_list::Iter<'_, u8> = list.par_iter();
    assert_eq!(it.copied().collect::<Vec<_>>(), [0, 2, 4]);
    let it: linked_list::IntoIter<u8> = list.into_par_iter();
    assert_eq!(it.count(), 3);

    let mut deque: VecDeque<u8> = (0..4).collect();
    let it: vec_deque::IterMut<'_, u8> = deque.par_iter_mut();
    it.for_each(|x| *x += 1);
    let it: vec_deque::Iter<'_, u8> = deque.par_iter();
    assert_eq!(it.copied().collect::<Vec<_>>(), [1, 2, 3, 4]);
    let it: vec_deque::Drain<'_, u8> = deque.par_drain(..2);
    assert_eq!(it.collect::<Vec<_>>(), [1, 2]);
    let it: vec_deque::IntoIter<u8> = deque.into_par_iter();
    assert_eq!(it.collect::<Vec<_>>(), [3, 4]);

    let mut heap: BinaryHeap<u8> = (0..3).collect();
    let it: binary_heap::Iter<'_, u8> = heap.par_iter();
    assert_eq!(it.count(), 3);
    let it: binary_heap::Drain<'_, u8> = heap.par_drain();
    assert_eq!(it.count(), 3);
    let it: binary_heap::IntoIter<u8> = heap.into_par_iter();
    assert_eq!(it.count(), 0);
}
