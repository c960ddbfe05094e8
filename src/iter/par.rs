//! [`ParallelIterator`]: rayon's trait, its adaptors and consumers.

use std::cmp::Ordering;
use std::iter::{Product, Sum};

use super::consume::{self, Try};
use super::engine::{Consumer, Schedule};
use super::intersperse::Intersperse;
use super::map::{Cloned, Copied, Inspect, Map, Update};
use super::map_state::{MapInit, MapWith};
use super::unindexed::{
    Chain, Filter, FilterMap, FlatMap, FlatMapIter, Flatten, FlattenIter, Fold, FoldWith,
    PanicFuse, Scheduled, SkipAny, SkipAnyWhile, TakeAny, TakeAnyWhile, TryFold, TryFoldWith,
    WhileSome,
};
use super::{FromParallelIterator, IntoParallelIterator, ParallelExtend};

/// A parallel iterator: rayon's `ParallelIterator`, with the same methods,
/// bounds and results (see the [module docs](crate::iter) for how terroir
/// runs it, and what is not provided).
///
/// Adaptors (`map`, `filter`, …) are lazy; consumers (`for_each`, `sum`,
/// `collect`, …) run the loop on the current pool and return when it is
/// done.
///
/// ```
/// use terroir::prelude::*;
/// let words = ["apple", "bob", "kayak", "terroir"];
/// let palindromes: Vec<&str> = words
///     .par_iter()
///     .copied()
///     .filter(|w| w.chars().rev().collect::<String>() == *w)
///     .collect();
/// assert_eq!(palindromes, ["bob", "kayak"]);
/// ```
pub trait ParallelIterator: Sized + Send {
    /// The items.
    type Item: Send;

    /// Runs the loop with `consumer` (terroir's engine, not public).
    #[doc(hidden)]
    fn drive_engine<C>(self, consumer: C) -> C::Result
    where
        C: Consumer<Self::Item>;

    /// The number of items, when known in advance (for indexed iterators).
    fn opt_len(&self) -> Option<usize> {
        None
    }

    /// Calls `op` on every item, in parallel.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use terroir::prelude::*;
    /// let total = AtomicU64::new(0);
    /// (1..=100u64).into_par_iter().for_each(|i| { total.fetch_add(i, Ordering::Relaxed); });
    /// assert_eq!(total.into_inner(), 5050);
    /// ```
    fn for_each<OP>(self, op: OP)
    where
        OP: Fn(Self::Item) + Sync + Send,
    {
        self.drive_engine(consume::ForEach { op: &op })
    }

    /// [`for_each`](Self::for_each) with a clone of `init` per piece of
    /// the loop that runs on one worker, passed to `op` by `&mut`.
    ///
    /// ```
    /// use std::sync::mpsc::channel;
    /// use terroir::prelude::*;
    /// let (tx, rx) = channel();
    /// (0..5).into_par_iter().for_each_with(tx, |tx, i| tx.send(i).unwrap());
    /// let mut got: Vec<i32> = rx.iter().collect();
    /// got.sort();
    /// assert_eq!(got, [0, 1, 2, 3, 4]);
    /// ```
    fn for_each_with<OP, T>(self, init: T, op: OP)
    where
        OP: Fn(&mut T, Self::Item) + Sync + Send,
        T: Send + Clone,
    {
        self.map_with(init, op).for_each(|()| ())
    }

    /// [`for_each`](Self::for_each) with a value made by `init` per piece
    /// of the loop that runs on one worker (a buffer, a random generator).
    fn for_each_init<OP, INIT, T>(self, init: INIT, op: OP)
    where
        OP: Fn(&mut T, Self::Item) + Sync + Send,
        INIT: Fn() -> T + Sync + Send,
    {
        self.map_init(init, op).for_each(|()| ())
    }

    /// Calls `op` on every item until one returns an error (`Err`, `None`,
    /// `ControlFlow::Break`), which is returned (one of them, if several
    /// fail); items not yet started are skipped.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let r = (0..100).into_par_iter().try_for_each(|i| if i < 50 { Ok(()) } else { Err(i) });
    /// assert!(matches!(r, Err(i) if i >= 50));
    /// ```
    fn try_for_each<OP, R>(self, op: OP) -> R
    where
        OP: Fn(Self::Item) -> R + Sync + Send,
        R: Try<Output = ()> + Send,
    {
        self.map(op).try_reduce(|| (), |(), ()| R::from_output(()))
    }

    /// [`try_for_each`](Self::try_for_each) with a clone of `init` per
    /// piece.
    fn try_for_each_with<OP, T, R>(self, init: T, op: OP) -> R
    where
        OP: Fn(&mut T, Self::Item) -> R + Sync + Send,
        T: Send + Clone,
        R: Try<Output = ()> + Send,
    {
        self.map_with(init, op)
            .try_reduce(|| (), |(), ()| R::from_output(()))
    }

    /// [`try_for_each`](Self::try_for_each) with a value made by `init` per
    /// piece.
    fn try_for_each_init<OP, INIT, T, R>(self, init: INIT, op: OP) -> R
    where
        OP: Fn(&mut T, Self::Item) -> R + Sync + Send,
        INIT: Fn() -> T + Sync + Send,
        R: Try<Output = ()> + Send,
    {
        self.map_init(init, op)
            .try_reduce(|| (), |(), ()| R::from_output(()))
    }

    /// The number of items.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// assert_eq!((0..1000).into_par_iter().filter(|i| i % 7 == 0).count(), 143);
    /// ```
    fn count(self) -> usize {
        self.drive_engine(consume::Count)
    }

    /// Applies `map_op` to every item.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v: Vec<String> = (0..3).into_par_iter().map(|i| i.to_string()).collect();
    /// assert_eq!(v, ["0", "1", "2"]);
    /// ```
    fn map<F, R>(self, map_op: F) -> Map<Self, F>
    where
        F: Fn(Self::Item) -> R + Sync + Send,
        R: Send,
    {
        Map::new(self, map_op)
    }

    /// Applies `map_op` to every item with a clone of `init` per piece of
    /// the loop, passed by `&mut`.
    fn map_with<F, T, R>(self, init: T, map_op: F) -> MapWith<Self, T, F>
    where
        F: Fn(&mut T, Self::Item) -> R + Sync + Send,
        T: Send + Clone,
        R: Send,
    {
        MapWith::new(self, init, map_op)
    }

    /// Applies `map_op` to every item with a value made by `init` per piece
    /// of the loop, passed by `&mut`.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v: Vec<usize> = (0..100usize)
    ///     .into_par_iter()
    ///     .map_init(Vec::new, |buf, i| { buf.clear(); buf.extend(0..i % 5); buf.len() })
    ///     .collect();
    /// assert_eq!(v[7], 2);
    /// ```
    fn map_init<F, INIT, T, R>(self, init: INIT, map_op: F) -> MapInit<Self, INIT, F>
    where
        F: Fn(&mut T, Self::Item) -> R + Sync + Send,
        INIT: Fn() -> T + Sync + Send,
        R: Send,
    {
        MapInit::new(self, init, map_op)
    }

    /// Clones every item (an iterator of `&T` into one of `T`).
    fn cloned<'a, T>(self) -> Cloned<Self>
    where
        T: 'a + Clone + Send,
        Self: ParallelIterator<Item = &'a T>,
    {
        Cloned::new(self)
    }

    /// Copies every item (an iterator of `&T` into one of `T`).
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v = [1, 2, 3];
    /// let w: Vec<i32> = v.par_iter().copied().collect();
    /// assert_eq!(w, v);
    /// ```
    fn copied<'a, T>(self) -> Copied<Self>
    where
        T: 'a + Copy + Send,
        Self: ParallelIterator<Item = &'a T>,
    {
        Copied::new(self)
    }

    /// Calls `inspect_op` on a reference to every item before passing it on.
    fn inspect<OP>(self, inspect_op: OP) -> Inspect<Self, OP>
    where
        OP: Fn(&Self::Item) + Sync + Send,
    {
        Inspect::new(self, inspect_op)
    }

    /// Mutates every item in place before passing it on.
    fn update<F>(self, update_op: F) -> Update<Self, F>
    where
        F: Fn(&mut Self::Item) + Sync + Send,
    {
        Update::new(self, update_op)
    }

    /// Keeps the items for which `filter_op` is true.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let even: Vec<u32> = (0..10u32).into_par_iter().filter(|x| x % 2 == 0).collect();
    /// assert_eq!(even, [0, 2, 4, 6, 8]);
    /// ```
    fn filter<P>(self, filter_op: P) -> Filter<Self, P>
    where
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        Filter::new(self, filter_op)
    }

    /// Maps every item to an `Option` and keeps the `Some` values.
    fn filter_map<P, R>(self, filter_op: P) -> FilterMap<Self, P>
    where
        P: Fn(Self::Item) -> Option<R> + Sync + Send,
        R: Send,
    {
        FilterMap::new(self, filter_op)
    }

    /// Maps every item to a parallel iterator and yields their items in
    /// order; each inner iterator may be split too.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let pairs: Vec<(u32, u32)> = (0..3u32).into_par_iter().flat_map(|i| (0..i).into_par_iter().map(move |j| (i, j))).collect();
    /// assert_eq!(pairs, [(1, 0), (2, 0), (2, 1)]);
    /// ```
    fn flat_map<F, PI>(self, map_op: F) -> FlatMap<Self, F>
    where
        F: Fn(Self::Item) -> PI + Sync + Send,
        PI: IntoParallelIterator,
    {
        FlatMap::new(self, map_op)
    }

    /// Maps every item to a sequential iterator and yields their items in
    /// order.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v: Vec<u32> = (1..4u32).into_par_iter().flat_map_iter(|i| std::iter::repeat(i).take(i as usize)).collect();
    /// assert_eq!(v, [1, 2, 2, 3, 3, 3]);
    /// ```
    fn flat_map_iter<F, SI>(self, map_op: F) -> FlatMapIter<Self, F>
    where
        F: Fn(Self::Item) -> SI + Sync + Send,
        SI: IntoIterator<Item: Send>,
    {
        FlatMapIter::new(self, map_op)
    }

    /// Yields the items of items that are parallel iterators, in order.
    fn flatten(self) -> Flatten<Self>
    where
        Self::Item: IntoParallelIterator,
    {
        Flatten::new(self)
    }

    /// Yields the items of items that are sequential iterators, in order.
    fn flatten_iter(self) -> FlattenIter<Self>
    where
        Self::Item: IntoIterator<Item: Send>,
    {
        FlattenIter::new(self)
    }

    /// Reduces the items with `op`, starting every piece of the loop from
    /// `identity()` (so `op` should be associative, `identity()` neutral).
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let (min, max) = [3, 1, 4, 1, 5].par_iter()
    ///     .map(|&x| (x, x))
    ///     .reduce(|| (i32::MAX, i32::MIN), |a, b| (a.0.min(b.0), a.1.max(b.1)));
    /// assert_eq!((min, max), (1, 5));
    /// ```
    fn reduce<OP, ID>(self, identity: ID, op: OP) -> Self::Item
    where
        OP: Fn(Self::Item, Self::Item) -> Self::Item + Sync + Send,
        ID: Fn() -> Self::Item + Sync + Send,
    {
        self.drive_engine(consume::Reduce {
            identity: &identity,
            op: &op,
        })
    }

    /// Reduces the items with `op`; `None` when there are none.
    fn reduce_with<OP>(self, op: OP) -> Option<Self::Item>
    where
        OP: Fn(Self::Item, Self::Item) -> Self::Item + Sync + Send,
    {
        self.drive_engine(consume::ReduceWith { op: &op })
    }

    /// Reduces items that are `Result`s, `Option`s or `ControlFlow`s,
    /// stopping at the first error.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let sum = (1..=10u32).into_par_iter().map(Some).try_reduce(|| 0, |a, b| a.checked_add(b));
    /// assert_eq!(sum, Some(55));
    /// ```
    fn try_reduce<T, OP, ID>(self, identity: ID, op: OP) -> Self::Item
    where
        OP: Fn(T, T) -> Self::Item + Sync + Send,
        ID: Fn() -> T + Sync + Send,
        Self::Item: Try<Output = T>,
    {
        consume::try_reduce(self, Some(&identity), &op)
            .expect("try_reduce with an identity has a result")
    }

    /// [`try_reduce`](Self::try_reduce) without an identity; `None` when
    /// there are no items.
    fn try_reduce_with<T, OP>(self, op: OP) -> Option<Self::Item>
    where
        OP: Fn(T, T) -> Self::Item + Sync + Send,
        Self::Item: Try<Output = T>,
    {
        consume::try_reduce(self, None::<&fn() -> T>, &op)
    }

    /// Folds each piece of the loop that runs on one worker into one value
    /// (starting from `identity()`), and yields those values: combine them
    /// with [`reduce`](Self::reduce) or [`sum`](Self::sum).
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let s: String = ['a', 'b', 'c'].par_iter()
    ///     .fold(String::new, |mut s, c| { s.push(*c); s })
    ///     .reduce(String::new, |a, b| a + &b);
    /// assert_eq!(s, "abc");
    /// ```
    fn fold<T, ID, F>(self, identity: ID, fold_op: F) -> Fold<Self, ID, F>
    where
        F: Fn(T, Self::Item) -> T + Sync + Send,
        ID: Fn() -> T + Sync + Send,
        T: Send,
    {
        Fold::new(self, identity, fold_op)
    }

    /// [`fold`](Self::fold) starting each piece from a clone of `init`.
    fn fold_with<F, T>(self, init: T, fold_op: F) -> FoldWith<Self, T, F>
    where
        F: Fn(T, Self::Item) -> T + Sync + Send,
        T: Send + Clone,
    {
        FoldWith::new(self, init, fold_op)
    }

    /// [`fold`](Self::fold) with a fallible `fold_op`: a piece stops at its
    /// first error, which it yields.
    fn try_fold<T, R, ID, F>(self, identity: ID, fold_op: F) -> TryFold<Self, R, ID, F>
    where
        F: Fn(T, Self::Item) -> R + Sync + Send,
        ID: Fn() -> T + Sync + Send,
        R: Try<Output = T> + Send,
    {
        TryFold::new(self, identity, fold_op)
    }

    /// [`try_fold`](Self::try_fold) starting each piece from a clone of
    /// `init`.
    fn try_fold_with<F, T, R>(self, init: T, fold_op: F) -> TryFoldWith<Self, R, F>
    where
        F: Fn(T, Self::Item) -> R + Sync + Send,
        R: Try<Output = T> + Send,
        T: Clone + Send,
    {
        TryFoldWith::new(self, init, fold_op)
    }

    /// The sum of the items (pieces are summed, then the sums; for floats
    /// the result may differ from a sequential sum in the last bits).
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v: Vec<f64> = (0..1000).map(f64::from).collect();
    /// let s: f64 = v.par_iter().map(|x| x * 2.0).sum();
    /// assert_eq!(s, 999_000.0);
    /// ```
    fn sum<S>(self) -> S
    where
        S: Send + Sum<Self::Item> + Sum<S>,
    {
        self.drive_engine(consume::SumC::new())
    }

    /// The product of the items.
    fn product<P>(self) -> P
    where
        P: Send + Product<Self::Item> + Product<P>,
    {
        self.drive_engine(consume::ProductC::new())
    }

    /// The smallest item (the first of several equal ones is not promised
    /// to win: use [`min_by_key`](Self::min_by_key) with a key that tells
    /// them apart).
    ///
    /// ```
    /// use terroir::prelude::*;
    /// assert_eq!([3, 1, 2].par_iter().min(), Some(&1));
    /// assert_eq!(Vec::<i32>::new().par_iter().min(), None);
    /// ```
    fn min(self) -> Option<Self::Item>
    where
        Self::Item: Ord,
    {
        self.reduce_with(Ord::min)
    }

    /// The smallest item by `f`; the first of equally small ones.
    fn min_by<F>(self, f: F) -> Option<Self::Item>
    where
        F: Sync + Send + Fn(&Self::Item, &Self::Item) -> Ordering,
    {
        self.reduce_with(|a, b| match f(&a, &b) {
            Ordering::Greater => b,
            _ => a,
        })
    }

    /// The item with the smallest key; the first of those with equal keys.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v = [-3i32, 2, -2, 5];
    /// assert_eq!(v.par_iter().min_by_key(|x| x.abs()), Some(&2));
    /// ```
    fn min_by_key<K, F>(self, f: F) -> Option<Self::Item>
    where
        K: Ord + Send,
        F: Sync + Send + Fn(&Self::Item) -> K,
    {
        self.map(|x| (f(&x), x))
            .min_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, x)| x)
    }

    /// The largest item.
    fn max(self) -> Option<Self::Item>
    where
        Self::Item: Ord,
    {
        self.reduce_with(Ord::max)
    }

    /// The largest item by `f`; the last of equally large ones.
    fn max_by<F>(self, f: F) -> Option<Self::Item>
    where
        F: Sync + Send + Fn(&Self::Item, &Self::Item) -> Ordering,
    {
        self.reduce_with(|a, b| match f(&a, &b) {
            Ordering::Greater => a,
            _ => b,
        })
    }

    /// The item with the largest key; the last of those with equal keys.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v = [-3i32, 2, 3, -5, 5];
    /// assert_eq!(v.par_iter().max_by_key(|x| x.abs()), Some(&5));
    /// ```
    fn max_by_key<K, F>(self, f: F) -> Option<Self::Item>
    where
        K: Ord + Send,
        F: Sync + Send + Fn(&Self::Item) -> K,
    {
        self.map(|x| (f(&x), x))
            .max_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, x)| x)
    }

    /// The items of `self`, then those of `chain`.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v: Vec<i32> = (0..3).into_par_iter().chain(vec![7, 8]).collect();
    /// assert_eq!(v, [0, 1, 2, 7, 8]);
    /// ```
    fn chain<C>(self, chain: C) -> Chain<Self, C::Iter>
    where
        C: IntoParallelIterator<Item = Self::Item>,
    {
        Chain::new(self, chain.into_par_iter())
    }

    /// Some item matching `predicate` (any of them), stopping the loop
    /// early.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// assert_eq!((0..1_000_000u64).into_par_iter().find_any(|&x| x == 4242), Some(4242));
    /// ```
    fn find_any<P>(self, predicate: P) -> Option<Self::Item>
    where
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        consume::find_any(self, &predicate)
    }

    /// The first item (in order) matching `predicate`.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// assert_eq!((0..1_000_000u64).into_par_iter().find_first(|x| x % 1000 == 999), Some(999));
    /// ```
    fn find_first<P>(self, predicate: P) -> Option<Self::Item>
    where
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        consume::find_first(self, &predicate)
    }

    /// The last item (in order) matching `predicate`.
    ///
    /// When only per-item adaptors (`map`, `filter`, `filter_map`,
    /// `inspect`, …) and `flat_map`s stand between the source and the
    /// search, the loops run back to front, so they end soon after the last
    /// match however long the source; after a `fold`, a `chain` or a
    /// `flat_map_iter` the loop runs front to back and skips what lies
    /// before a match already found.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let huge = 1u128 << 100;
    /// assert_eq!((0..huge).into_par_iter().find_last(|x| x % 3 == 0), Some(huge - 1));
    /// ```
    fn find_last<P>(self, predicate: P) -> Option<Self::Item>
    where
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        consume::find_last(self, &predicate)
    }

    /// Some `Some` result of `predicate` (any of them).
    fn find_map_any<P, R>(self, predicate: P) -> Option<R>
    where
        P: Fn(Self::Item) -> Option<R> + Sync + Send,
        R: Send,
    {
        self.filter_map(predicate).find_any(|_| true)
    }

    /// The first `Some` result of `predicate`, in order.
    fn find_map_first<P, R>(self, predicate: P) -> Option<R>
    where
        P: Fn(Self::Item) -> Option<R> + Sync + Send,
        R: Send,
    {
        self.filter_map(predicate).find_first(|_| true)
    }

    /// The last `Some` result of `predicate`, in order.
    fn find_map_last<P, R>(self, predicate: P) -> Option<R>
    where
        P: Fn(Self::Item) -> Option<R> + Sync + Send,
        R: Send,
    {
        self.filter_map(predicate).find_last(|_| true)
    }

    /// rayon's deprecated name of [`find_any`](Self::find_any).
    #[doc(hidden)]
    #[deprecated(
        note = "parallel `find` does not search in order -- use `find_any`, `find_first`, or `find_last`"
    )]
    fn find<P>(self, predicate: P) -> Option<Self::Item>
    where
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        self.find_any(predicate)
    }

    /// Whether `predicate` holds for some item (stops early).
    ///
    /// ```
    /// use terroir::prelude::*;
    /// assert!((0..100).into_par_iter().any(|x| x == 42));
    /// assert!(!(0..100).into_par_iter().any(|x| x == 420));
    /// ```
    fn any<P>(self, predicate: P) -> bool
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.map(predicate).find_any(|&b| b).is_some()
    }

    /// Whether `predicate` holds for every item (stops early).
    ///
    /// ```
    /// use terroir::prelude::*;
    /// assert!((0..100).into_par_iter().all(|x| x < 100));
    /// ```
    fn all<P>(self, predicate: P) -> bool
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.map(predicate).find_any(|&b| !b).is_none()
    }

    /// The values of items up to the first `None` (pieces after a `None`
    /// stop; items before it in order may still be skipped if they had not
    /// run).
    fn while_some<T>(self) -> WhileSome<Self>
    where
        Self: ParallelIterator<Item = Option<T>>,
        T: Send,
    {
        WhileSome::new(self)
    }

    /// The same items; once a closure panics, other pieces stop early.
    fn panic_fuse(self) -> PanicFuse<Self> {
        PanicFuse::new(self)
    }

    /// Collects the items into a collection ([`FromParallelIterator`]);
    /// into a `Vec` in order.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v: Vec<u32> = (0..5u32).into_par_iter().map(|x| x * x).collect();
    /// assert_eq!(v, [0, 1, 4, 9, 16]);
    /// ```
    fn collect<C>(self) -> C
    where
        C: FromParallelIterator<Self::Item>,
    {
        C::from_par_iter(self)
    }

    /// Splits pairs into two collections.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let (a, b): (Vec<u32>, Vec<u32>) = (0..4u32).into_par_iter().map(|i| (i, i * 10)).unzip();
    /// assert_eq!((a, b), (vec![0, 1, 2, 3], vec![0, 10, 20, 30]));
    /// ```
    fn unzip<A, B, FromA, FromB>(self) -> (FromA, FromB)
    where
        Self: ParallelIterator<Item = (A, B)>,
        FromA: Default + Send + ParallelExtend<A>,
        FromB: Default + Send + ParallelExtend<B>,
        A: Send,
        B: Send,
    {
        let mut out = (FromA::default(), FromB::default());
        out.par_extend(self);
        out
    }

    /// Splits the items into those for which `predicate` holds and the
    /// others.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let (even, odd): (Vec<i32>, Vec<i32>) = (0..6).into_par_iter().partition(|x| x % 2 == 0);
    /// assert_eq!((even, odd), (vec![0, 2, 4], vec![1, 3, 5]));
    /// ```
    fn partition<A, B, P>(self, predicate: P) -> (A, B)
    where
        A: Default + Send + ParallelExtend<Self::Item>,
        B: Default + Send + ParallelExtend<Self::Item>,
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        super::collect::partition(self, predicate)
    }

    /// Maps every item to an [`Either`](super::Either) and collects the
    /// `Left` values into the first collection, the `Right` values into
    /// the second (each in order, for ordered collections).
    ///
    /// ```
    /// use terroir::iter::Either;
    /// use terroir::prelude::*;
    /// let (nums, words): (Vec<i32>, String) = "a 1 b 2 c".par_split_whitespace()
    ///     .partition_map(|s| s.parse::<i32>().map_or(Either::Right(s), Either::Left));
    /// assert_eq!((nums, words), (vec![1, 2], "abc".to_string()));
    /// ```
    fn partition_map<A, B, P, L, R>(self, predicate: P) -> (A, B)
    where
        A: Default + Send + ParallelExtend<L>,
        B: Default + Send + ParallelExtend<R>,
        P: Fn(Self::Item) -> super::Either<L, R> + Sync + Send,
        L: Send,
        R: Send,
    {
        super::either::partition_map(self, predicate)
    }

    /// A clone of `element` between every two items (indexed when `self`
    /// is: `len`, `rev`, `zip` work on the result).
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v: Vec<i32> = (1..4).into_par_iter().intersperse(-1).collect();
    /// assert_eq!(v, [1, -1, 2, -1, 3]);
    /// ```
    fn intersperse(self, element: Self::Item) -> Intersperse<Self>
    where
        Self::Item: Clone,
    {
        Intersperse::new(self, element)
    }

    /// At most `n` items, any of them (not necessarily the first).
    fn take_any(self, n: usize) -> TakeAny<Self> {
        TakeAny::new(self, n)
    }

    /// All items but `n` of them, any of them.
    fn skip_any(self, n: usize) -> SkipAny<Self> {
        SkipAny::new(self, n)
    }

    /// Items while `predicate` holds; once it fails for an item, pieces
    /// stop (what other pieces already yielded stays).
    fn take_any_while<P>(self, predicate: P) -> TakeAnyWhile<Self, P>
    where
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        TakeAnyWhile::new(self, predicate)
    }

    /// Skips items while `predicate` holds; once it fails for some item,
    /// every later item (in any piece) is yielded.
    fn skip_any_while<P>(self, predicate: P) -> SkipAnyWhile<Self, P>
    where
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        SkipAnyWhile::new(self, predicate)
    }

    /// The items as a list of vectors, one per piece, in order.
    fn collect_vec_list(self) -> std::collections::LinkedList<Vec<Self::Item>> {
        self.drive_engine(super::collect::VecList)
            .into_iter()
            .collect()
    }

    /// How the loop is scheduled: adaptively (the default) or statically,
    /// one contiguous share per worker (OpenMP's `schedule(static)`; see
    /// [`Schedule`]). A terroir extension; the last call wins.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// use terroir::iter::Schedule;
    /// let pool = terroir::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let who: Vec<usize> = pool.install(|| {
    ///     (0..8).into_par_iter().schedule(Schedule::Static)
    ///         .map(|_| terroir::current_thread_index().unwrap())
    ///         .collect()
    /// });
    /// assert_eq!(who, [0, 0, 0, 0, 1, 1, 1, 1]); // one worker's node: by index
    /// ```
    fn schedule(self, schedule: Schedule) -> Scheduled<Self> {
        Scheduled::new(self, Some(schedule), false)
    }

    /// Runs the node shares of a loop over placed data strictly on their
    /// nodes, whatever the pool's policy says about hints (under `Flat`
    /// and `Hierarchical`, which ignore places, it changes nothing). A
    /// terroir extension.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// use terroir::pool::NodeVec;
    /// let node = terroir::numa::NodeId::new(terroir::numa::mems_allowed().unwrap().iter().next().unwrap());
    /// let v = NodeVec::from_fn_on(10_000, node, |i| i as u64).unwrap();
    /// assert_eq!(v.par_iter().strict().sum::<u64>(), 49_995_000);
    /// ```
    fn strict(self) -> Scheduled<Self> {
        Scheduled::new(self, None, true)
    }
}
