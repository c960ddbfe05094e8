//! Parallel iterators over the standard collections: `HashMap`, `HashSet`,
//! `BTreeMap`, `BTreeSet`, `VecDeque`, `LinkedList` and `BinaryHeap`, by
//! value, by reference and (where the collection allows) by mutable
//! reference, and `par_drain` on those rayon drains. The elements (or
//! references to them) are first gathered into a `Vec` sequentially, as
//! rayon does for the hashed and tree collections; the loop over them is
//! then an ordinary indexed one.
//!
//! ```
//! use std::collections::{BTreeMap, HashSet};
//! use terroir::prelude::*;
//! let m: BTreeMap<u32, u32> = (0..10).map(|i| (i, i * i)).collect();
//! assert_eq!(m.par_iter().map(|(_, v)| v).sum::<u32>(), 285);
//! let s: HashSet<u32> = m.into_par_iter().map(|(k, _)| k % 3).collect();
//! assert_eq!(s.len(), 3);
//! ```

use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet, LinkedList, VecDeque};
use std::hash::{BuildHasher, Hash};
use std::ops::RangeBounds;

use super::vec::{check_range, IntoIter};
use super::{IntoParallelIterator, ParallelDrainFull, ParallelDrainRange};

/// `IntoParallelIterator` for a collection (by value, `&`, `&mut`) through
/// a `Vec` of its items.
macro_rules! through_vec {
    ($(impl<$($g:ident),*> $coll:ty { $($kind:tt)* } where [$($bounds:tt)*];)*) => {$(
        through_vec!(@each [$($g),*] $coll, [$($bounds)*], $($kind)*);
    )*};
    (@each $g:tt $coll:ty, $b:tt, ) => {};
    (@each [$($g:ident),*] $coll:ty, [$($bounds:tt)*], value $item:ty, $($rest:tt)*) => {
        impl<$($g),*> IntoParallelIterator for $coll where $($bounds)* {
            type Iter = IntoIter<$item>;
            type Item = $item;
            fn into_par_iter(self) -> IntoIter<$item> {
                IntoIter::new(self.into_iter().collect())
            }
        }
        through_vec!(@each [$($g),*] $coll, [$($bounds)*], $($rest)*);
    };
    (@each [$($g:ident),*] $coll:ty, [$($bounds:tt)*], ref $item:ty, $($rest:tt)*) => {
        impl<'a, $($g),*> IntoParallelIterator for &'a $coll where $($bounds)* {
            type Iter = IntoIter<$item>;
            type Item = $item;
            fn into_par_iter(self) -> IntoIter<$item> {
                IntoIter::new(self.iter().collect())
            }
        }
        through_vec!(@each [$($g),*] $coll, [$($bounds)*], $($rest)*);
    };
    (@each [$($g:ident),*] $coll:ty, [$($bounds:tt)*], mut $item:ty, $($rest:tt)*) => {
        impl<'a, $($g),*> IntoParallelIterator for &'a mut $coll where $($bounds)* {
            type Iter = IntoIter<$item>;
            type Item = $item;
            fn into_par_iter(self) -> IntoIter<$item> {
                IntoIter::new(self.iter_mut().collect())
            }
        }
        through_vec!(@each [$($g),*] $coll, [$($bounds)*], $($rest)*);
    };
}

through_vec! {
    impl<K, V, S> HashMap<K, V, S> { value (K, V), ref (&'a K, &'a V), mut (&'a K, &'a mut V), }
        where [K: Send + Sync + Eq + Hash, V: Send + Sync, S: BuildHasher];
    impl<T, S> HashSet<T, S> { value T, ref &'a T, } where [T: Send + Sync + Eq + Hash, S: BuildHasher];
    impl<K, V> BTreeMap<K, V> { value (K, V), ref (&'a K, &'a V), mut (&'a K, &'a mut V), }
        where [K: Send + Sync + Ord, V: Send + Sync];
    impl<T> BTreeSet<T> { value T, ref &'a T, } where [T: Send + Sync + Ord];
    impl<T> VecDeque<T> { value T, ref &'a T, mut &'a mut T, } where [T: Send + Sync];
    impl<T> LinkedList<T> { value T, ref &'a T, mut &'a mut T, } where [T: Send + Sync];
    impl<T> BinaryHeap<T> { value T, ref &'a T, } where [T: Send + Sync + Ord];
}

impl<K, V, S> ParallelDrainFull for &mut HashMap<K, V, S>
where
    K: Send + Eq + Hash,
    V: Send,
    S: BuildHasher,
{
    type Iter = IntoIter<(K, V)>;
    type Item = (K, V);
    fn par_drain(self) -> Self::Iter {
        IntoIter::new(self.drain().collect())
    }
}

impl<T, S> ParallelDrainFull for &mut HashSet<T, S>
where
    T: Send + Eq + Hash,
    S: BuildHasher,
{
    type Iter = IntoIter<T>;
    type Item = T;
    fn par_drain(self) -> Self::Iter {
        IntoIter::new(self.drain().collect())
    }
}

impl<T: Send + Ord> ParallelDrainFull for &mut BinaryHeap<T> {
    type Iter = IntoIter<T>;
    type Item = T;
    fn par_drain(self) -> Self::Iter {
        IntoIter::new(self.drain().collect())
    }
}

impl<T: Send> ParallelDrainRange<usize> for &mut VecDeque<T> {
    type Iter = IntoIter<T>;
    type Item = T;
    #[track_caller]
    fn par_drain<R: RangeBounds<usize>>(self, range: R) -> Self::Iter {
        let range = check_range(range, self.len());
        IntoIter::new(self.drain(range).collect())
    }
}

/// rayon's `collections::*` type names for the iterators above (type
/// aliases with rayon's parameters: each is a [`vec::IntoIter`](IntoIter)
/// of the items).
macro_rules! collection_names {
    ($($(#[$doc:meta])* $module:ident { $($(#[$tdoc:meta])* $name:ident <$($p:tt),*> = $item:ty;)* })*) => {$(
        $(#[$doc])*
        pub mod $module {
            $(
                $(#[$tdoc])*
                pub type $name<$($p),*> = super::IntoIter<$item>;
            )*
        }
    )*};
}

collection_names! {
    /// rayon's `collections::binary_heap`: the iterators of `BinaryHeap`.
    binary_heap {
        /// `BinaryHeap<T>`'s `into_par_iter()`.
        IntoIter<T> = T;
        /// `&BinaryHeap<T>`'s `into_par_iter()` (`par_iter()`).
        Iter<'a, T> = &'a T;
        /// `&mut BinaryHeap<T>`'s `par_drain()`.
        Drain<'a, T> = T;
    }
    /// rayon's `collections::btree_map`: the iterators of `BTreeMap`.
    btree_map {
        /// `BTreeMap<K, V>`'s `into_par_iter()`.
        IntoIter<K, V> = (K, V);
        /// `&BTreeMap<K, V>`'s `into_par_iter()` (`par_iter()`).
        Iter<'a, K, V> = (&'a K, &'a V);
        /// `&mut BTreeMap<K, V>`'s `into_par_iter()` (`par_iter_mut()`).
        IterMut<'a, K, V> = (&'a K, &'a mut V);
    }
    /// rayon's `collections::btree_set`: the iterators of `BTreeSet`.
    btree_set {
        /// `BTreeSet<T>`'s `into_par_iter()`.
        IntoIter<T> = T;
        /// `&BTreeSet<T>`'s `into_par_iter()` (`par_iter()`).
        Iter<'a, T> = &'a T;
    }
    /// rayon's `collections::hash_map`: the iterators of `HashMap`.
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use terroir::prelude::*;
    /// fn values<'a>(m: &'a HashMap<u32, u32>) -> terroir::collections::hash_map::Iter<'a, u32, u32> {
    ///     m.par_iter()
    /// }
    /// let m: HashMap<u32, u32> = (0..4).map(|k| (k, 10 * k)).collect();
    /// assert_eq!(values(&m).map(|(_, v)| v).sum::<u32>(), 60);
    /// ```
    hash_map {
        /// `HashMap<K, V>`'s `into_par_iter()`.
        IntoIter<K, V> = (K, V);
        /// `&HashMap<K, V>`'s `into_par_iter()` (`par_iter()`).
        Iter<'a, K, V> = (&'a K, &'a V);
        /// `&mut HashMap<K, V>`'s `into_par_iter()` (`par_iter_mut()`).
        IterMut<'a, K, V> = (&'a K, &'a mut V);
        /// `&mut HashMap<K, V>`'s `par_drain()`.
        Drain<'a, K, V> = (K, V);
    }
    /// rayon's `collections::hash_set`: the iterators of `HashSet`.
    hash_set {
        /// `HashSet<T>`'s `into_par_iter()`.
        IntoIter<T> = T;
        /// `&HashSet<T>`'s `into_par_iter()` (`par_iter()`).
        Iter<'a, T> = &'a T;
        /// `&mut HashSet<T>`'s `par_drain()`.
        Drain<'a, T> = T;
    }
    /// rayon's `collections::linked_list`: the iterators of `LinkedList`.
    linked_list {
        /// `LinkedList<T>`'s `into_par_iter()`.
        IntoIter<T> = T;
        /// `&LinkedList<T>`'s `into_par_iter()` (`par_iter()`).
        Iter<'a, T> = &'a T;
        /// `&mut LinkedList<T>`'s `into_par_iter()` (`par_iter_mut()`).
        IterMut<'a, T> = &'a mut T;
    }
    /// rayon's `collections::vec_deque`: the iterators of `VecDeque`.
    vec_deque {
        /// `VecDeque<T>`'s `into_par_iter()`.
        IntoIter<T> = T;
        /// `&VecDeque<T>`'s `into_par_iter()` (`par_iter()`).
        Iter<'a, T> = &'a T;
        /// `&mut VecDeque<T>`'s `into_par_iter()` (`par_iter_mut()`).
        IterMut<'a, T> = &'a mut T;
        /// `&mut VecDeque<T>`'s `par_drain(range)`.
        Drain<'a, T> = T;
    }
}
