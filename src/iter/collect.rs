//! Collecting: [`FromParallelIterator`] and [`ParallelExtend`] for the
//! standard collections, `collect_into_vec`, `unzip` and `partition`.
//!
//! An iterator that knows its length (`opt_len`) is collected straight
//! into the vector's spare capacity: every run writes its own slots (its
//! unit positions), and the runs' written ranges are checked to join up
//! into the whole. Others collect a vector per run and concatenate them in
//! order (one copy, none when the loop was not split).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet, LinkedList, VecDeque};
use std::ffi::{OsStr, OsString};
use std::hash::{BuildHasher, Hash};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::engine::{Consumer, Folder, Options, SendPtr};
use super::{
    FromParallelIterator, IndexedParallelIterator, IntoParallelIterator, ParallelExtend,
    ParallelIterator,
};

/// Collects the items into one vector per run, in order.
pub(crate) struct VecList;

impl<T: Send> Consumer<T> for VecList {
    type Folder = Vec<T>;
    type Result = Vec<Vec<T>>;
    fn folder(&self) -> Vec<T> {
        Vec::new()
    }
    fn reduce(&self, mut left: Vec<Vec<T>>, right: Vec<Vec<T>>) -> Vec<Vec<T>> {
        left.extend(right);
        left
    }
    fn stop(&self, _start: usize, _end: usize) -> bool {
        false
    }
    fn options(&self) -> Options {
        Options::default()
    }
    fn eager(&self) -> bool {
        false
    }
    fn done(&self, _result: &Self::Result) -> bool {
        false
    }
}

impl<T> Folder<T> for Vec<T> {
    type Result = Vec<Vec<T>>;
    fn consume<I: Iterator<Item = T>>(mut self, _start: usize, items: I) -> Self {
        self.extend(items);
        self
    }
    fn complete(self) -> Vec<Vec<T>> {
        if self.is_empty() {
            Vec::new()
        } else {
            vec![self]
        }
    }
}

/// The items of `iter`, one vector per run.
fn vec_list<I: ParallelIterator>(iter: I) -> Vec<Vec<I::Item>> {
    iter.drive_engine(VecList)
}

/// Concatenates a list of vectors (no copy for a single one).
fn concat<T>(mut list: Vec<Vec<T>>) -> Vec<T> {
    match list.len() {
        0 => Vec::new(),
        1 => list.pop().expect("one vector"),
        _ => {
            let mut out = Vec::with_capacity(list.iter().map(Vec::len).sum());
            for mut v in list {
                out.append(&mut v);
            }
            out
        }
    }
}

/// Writes the items of an iterator of known length `len` at their
/// positions from `ptr`.
struct CollectConsumer<T> {
    ptr: SendPtr<T>,
    len: usize,
}

/// The slots `start..start + len` a run wrote; dropping it drops them
/// (when the loop does not finish, e.g. on a panic).
struct Written<T> {
    ptr: SendPtr<T>,
    start: usize,
    len: usize,
}

impl<T> Drop for Written<T> {
    fn drop(&mut self) {
        // SAFETY: slots start..start + len were written by this run and are
        // owned by nobody else (the vector's length does not cover them
        // until every run finished and the ranges joined up).
        unsafe {
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(
                self.ptr.0.add(self.start),
                self.len,
            ))
        };
    }
}

impl<T: Send> Consumer<T> for CollectConsumer<T> {
    type Folder = CollectFolder<T>;
    type Result = Written<T>;
    fn folder(&self) -> CollectFolder<T> {
        CollectFolder {
            written: Written {
                ptr: self.ptr,
                start: 0,
                len: 0,
            },
            total: self.len,
        }
    }
    fn reduce(&self, left: Written<T>, right: Written<T>) -> Written<T> {
        if right.len == 0 {
            return left;
        }
        if left.len == 0 {
            return right;
        }
        if left.start + left.len != right.start {
            // Not contiguous (cannot happen for a correct indexed
            // iterator): keep the left part, the check in
            // `collect_exact` reports the shortfall.
            return left;
        }
        let merged = Written {
            ptr: left.ptr,
            start: left.start,
            len: left.len + right.len,
        };
        std::mem::forget(left);
        std::mem::forget(right);
        merged
    }
    fn stop(&self, _start: usize, _end: usize) -> bool {
        false
    }
    fn options(&self) -> Options {
        Options::default()
    }
    fn eager(&self) -> bool {
        false
    }
    fn done(&self, _result: &Self::Result) -> bool {
        false
    }
}

struct CollectFolder<T> {
    written: Written<T>,
    total: usize,
}

impl<T> Folder<T> for CollectFolder<T> {
    type Result = Written<T>;
    fn consume<I: Iterator<Item = T>>(mut self, start: usize, items: I) -> Self {
        let w = &mut self.written;
        if w.len == 0 {
            w.start = start;
        }
        assert_eq!(
            start,
            w.start + w.len,
            "a run of a collect must cover consecutive positions"
        );
        let total = self.total;
        items.for_each(|x| {
            let pos = w.start + w.len;
            assert!(pos < total, "too many values pushed to consumer");
            // SAFETY: pos < total, the capacity reserved from `ptr`; no
            // other run writes this slot (runs cover disjoint positions,
            // checked by the assertions above and in `reduce`).
            unsafe { w.ptr.0.add(pos).write(x) };
            w.len += 1;
        });
        self
    }
    fn complete(self) -> Written<T> {
        self.written
    }
}

/// Appends the `len` items of `iter` (whose `opt_len` is `Some(len)`) to
/// `v`, in order.
///
/// # Panics
/// When the runs did not write exactly `len` items (rayon's message), or
/// when an item's closure panicked (after dropping what was written).
fn collect_exact<I: ParallelIterator>(iter: I, v: &mut Vec<I::Item>, len: usize) {
    v.reserve(len);
    let old = v.len();
    // SAFETY: in bounds of the reservation just made.
    let ptr = SendPtr(unsafe { v.as_mut_ptr().add(old) });
    let written = iter.drive_engine(CollectConsumer { ptr, len });
    let got = if written.start == 0 || written.len == 0 {
        written.len
    } else {
        0
    };
    assert!(
        got == len,
        "expected {len} total writes, but got {}",
        written.len
    );
    std::mem::forget(written);
    // SAFETY: slots old..old + len are initialised (checked above) and
    // within the capacity.
    unsafe { v.set_len(old + len) };
}

/// `IndexedParallelIterator::collect_into_vec`.
pub(crate) fn collect_into_vec<I: IndexedParallelIterator>(iter: I, target: &mut Vec<I::Item>) {
    target.clear();
    let len = iter.len();
    collect_exact(iter, target, len);
}

/// `IndexedParallelIterator::unzip_into_vecs`.
pub(crate) fn unzip_into<I, A, B>(iter: I, left: &mut Vec<A>, right: &mut Vec<B>)
where
    I: IndexedParallelIterator<Item = (A, B)>,
    A: Send,
    B: Send,
{
    let pairs: Vec<(A, B)> = iter.collect();
    left.reserve(pairs.len());
    right.reserve(pairs.len());
    for (a, b) in pairs {
        left.push(a);
        right.push(b);
    }
}

/// `ParallelIterator::partition`.
pub(crate) fn partition<I, A, B, P>(iter: I, predicate: P) -> (A, B)
where
    I: ParallelIterator,
    A: Default + Send + ParallelExtend<I::Item>,
    B: Default + Send + ParallelExtend<I::Item>,
    P: Fn(&I::Item) -> bool + Sync + Send,
{
    let sides = iter.map(|x| (predicate(&x), x)).drive_engine(SidesList);
    let (yes, no): Lists<I::Item> = sides.into_iter().map(|s| (s.0, s.1)).unzip();
    let mut a = A::default();
    let mut b = B::default();
    a.par_extend(concat(yes));
    b.par_extend(concat(no));
    (a, b)
}

/// The runs' vectors of each side.
type Lists<T> = (Vec<Vec<T>>, Vec<Vec<T>>);

/// Items sorted to the side their flag says (`true`: first), per run.
struct SidesList;

/// One run's items of each side.
struct Sides<T>(Vec<T>, Vec<T>);

impl<T: Send> Consumer<(bool, T)> for SidesList {
    type Folder = Sides<T>;
    type Result = Vec<Sides<T>>;
    fn folder(&self) -> Sides<T> {
        Sides(Vec::new(), Vec::new())
    }
    fn reduce(&self, mut left: Vec<Sides<T>>, right: Vec<Sides<T>>) -> Vec<Sides<T>> {
        left.extend(right);
        left
    }
    fn stop(&self, _start: usize, _end: usize) -> bool {
        false
    }
    fn options(&self) -> Options {
        Options::default()
    }
    fn eager(&self) -> bool {
        false
    }
    fn done(&self, _result: &Self::Result) -> bool {
        false
    }
}

impl<T> Folder<(bool, T)> for Sides<T> {
    type Result = Vec<Sides<T>>;
    fn consume<I: Iterator<Item = (bool, T)>>(mut self, _start: usize, items: I) -> Self {
        for (yes, x) in items {
            if yes {
                self.0.push(x);
            } else {
                self.1.push(x);
            }
        }
        self
    }
    fn complete(self) -> Vec<Sides<T>> {
        vec![self]
    }
}

/// Collects pairs into a pair of vectors per run, in order.
struct PairList;

impl<A: Send, B: Send> Consumer<(A, B)> for PairList {
    type Folder = (Vec<A>, Vec<B>);
    type Result = Vec<(Vec<A>, Vec<B>)>;
    fn folder(&self) -> Self::Folder {
        (Vec::new(), Vec::new())
    }
    fn reduce(&self, mut left: Self::Result, right: Self::Result) -> Self::Result {
        left.extend(right);
        left
    }
    fn stop(&self, _start: usize, _end: usize) -> bool {
        false
    }
    fn options(&self) -> Options {
        Options::default()
    }
    fn eager(&self) -> bool {
        false
    }
    fn done(&self, _result: &Self::Result) -> bool {
        false
    }
}

impl<A, B> Folder<(A, B)> for (Vec<A>, Vec<B>) {
    type Result = Vec<(Vec<A>, Vec<B>)>;
    fn consume<I: Iterator<Item = (A, B)>>(mut self, _start: usize, items: I) -> Self {
        for (a, b) in items {
            self.0.push(a);
            self.1.push(b);
        }
        self
    }
    fn complete(self) -> Self::Result {
        vec![self]
    }
}

impl<T: Send> FromParallelIterator<T> for Vec<T> {
    fn from_par_iter<I>(par_iter: I) -> Self
    where
        I: IntoParallelIterator<Item = T>,
    {
        let iter = par_iter.into_par_iter();
        match iter.opt_len() {
            Some(len) => {
                let mut v = Vec::new();
                collect_exact(iter, &mut v, len);
                v
            }
            None => concat(vec_list(iter)),
        }
    }
}

impl<T: Send> ParallelExtend<T> for Vec<T> {
    fn par_extend<I>(&mut self, par_iter: I)
    where
        I: IntoParallelIterator<Item = T>,
    {
        let iter = par_iter.into_par_iter();
        match iter.opt_len() {
            Some(len) => collect_exact(iter, self, len),
            None => {
                let list = vec_list(iter);
                self.reserve(list.iter().map(Vec::len).sum());
                for mut v in list {
                    self.append(&mut v);
                }
            }
        }
    }
}

impl<'a, T: 'a + Copy + Send + Sync> ParallelExtend<&'a T> for Vec<T> {
    fn par_extend<I>(&mut self, par_iter: I)
    where
        I: IntoParallelIterator<Item = &'a T>,
    {
        self.par_extend(par_iter.into_par_iter().copied())
    }
}

/// `FromParallelIterator` and `ParallelExtend` for a collection built by
/// `Extend` from the vectors of the runs, in order.
macro_rules! by_extend {
    ($(impl<$($g:ident),*> $coll:ty, $item:ty, where [$($bounds:tt)*];)*) => {$(
        impl<$($g),*> FromParallelIterator<$item> for $coll
        where
            $($bounds)*
        {
            fn from_par_iter<I>(par_iter: I) -> Self
            where
                I: IntoParallelIterator<Item = $item>,
            {
                let mut c = Self::default();
                c.par_extend(par_iter);
                c
            }
        }

        impl<$($g),*> ParallelExtend<$item> for $coll
        where
            $($bounds)*
        {
            fn par_extend<I>(&mut self, par_iter: I)
            where
                I: IntoParallelIterator<Item = $item>,
            {
                for v in vec_list(par_iter.into_par_iter()) {
                    self.extend(v);
                }
            }
        }
    )*};
}

by_extend! {
    impl<T> VecDeque<T>, T, where [T: Send];
    impl<T> LinkedList<T>, T, where [T: Send];
    impl<T> BinaryHeap<T>, T, where [T: Ord + Send];
    impl<T> BTreeSet<T>, T, where [T: Ord + Send];
    impl<K, V> BTreeMap<K, V>, (K, V), where [K: Ord + Send, V: Send];
    impl<T, S> HashSet<T, S>, T, where [T: Eq + Hash + Send, S: BuildHasher + Default + Send];
    impl<K, V, S> HashMap<K, V, S>, (K, V), where [K: Eq + Hash + Send, V: Send, S: BuildHasher + Default + Send];
    impl<> String, char, where [];
    impl<> String, String, where [];
    impl<> String, Box<str>, where [];
}

/// `ParallelExtend<&T>` for collections of `Copy` elements.
macro_rules! by_copy {
    ($(impl<$($g:ident),*> $coll:ty, $item:ty, $owned:ty, where [$($bounds:tt)*];)*) => {$(
        impl<'a, $($g),*> ParallelExtend<$item> for $coll
        where
            $($bounds)*
        {
            fn par_extend<I>(&mut self, par_iter: I)
            where
                I: IntoParallelIterator<Item = $item>,
            {
                let owned = par_iter.into_par_iter().map(|x| -> $owned { copy(x) });
                ParallelExtend::<$owned>::par_extend(self, owned)
            }
        }
    )*};
}

/// Copies a `Copy` value, or a pair of them.
trait CopyOut<T> {
    fn copy_out(self) -> T;
}
impl<T: Copy> CopyOut<T> for &T {
    fn copy_out(self) -> T {
        *self
    }
}
impl<K: Copy, V: Copy> CopyOut<(K, V)> for (&K, &V) {
    fn copy_out(self) -> (K, V) {
        (*self.0, *self.1)
    }
}
fn copy<X: CopyOut<T>, T>(x: X) -> T {
    x.copy_out()
}

by_copy! {
    impl<T> VecDeque<T>, &'a T, T, where [T: 'a + Copy + Send + Sync];
    impl<T> LinkedList<T>, &'a T, T, where [T: 'a + Copy + Send + Sync];
    impl<T> BinaryHeap<T>, &'a T, T, where [T: 'a + Copy + Ord + Send + Sync];
    impl<T> BTreeSet<T>, &'a T, T, where [T: 'a + Copy + Ord + Send + Sync];
    impl<K, V> BTreeMap<K, V>, (&'a K, &'a V), (K, V), where [K: 'a + Copy + Ord + Send + Sync, V: 'a + Copy + Send + Sync];
    impl<T, S> HashSet<T, S>, &'a T, T, where [T: 'a + Copy + Eq + Hash + Send + Sync, S: BuildHasher + Default + Send];
    impl<K, V, S> HashMap<K, V, S>, (&'a K, &'a V), (K, V), where [K: 'a + Copy + Eq + Hash + Send + Sync, V: 'a + Copy + Send + Sync, S: BuildHasher + Default + Send];
    impl<> String, &'a char, char, where [];
}

impl<'a> FromParallelIterator<&'a char> for String {
    fn from_par_iter<I>(par_iter: I) -> Self
    where
        I: IntoParallelIterator<Item = &'a char>,
    {
        par_iter.into_par_iter().copied().collect()
    }
}

impl<'a> FromParallelIterator<&'a str> for String {
    fn from_par_iter<I>(par_iter: I) -> Self
    where
        I: IntoParallelIterator<Item = &'a str>,
    {
        let mut s = String::new();
        s.par_extend(par_iter);
        s
    }
}

impl<'a> ParallelExtend<&'a str> for String {
    fn par_extend<I>(&mut self, par_iter: I)
    where
        I: IntoParallelIterator<Item = &'a str>,
    {
        for v in vec_list(par_iter.into_par_iter()) {
            self.extend(v);
        }
    }
}

impl<'a> FromParallelIterator<Cow<'a, str>> for String {
    fn from_par_iter<I>(par_iter: I) -> Self
    where
        I: IntoParallelIterator<Item = Cow<'a, str>>,
    {
        let mut s = String::new();
        s.par_extend(par_iter);
        s
    }
}

impl<'a> ParallelExtend<Cow<'a, str>> for String {
    fn par_extend<I>(&mut self, par_iter: I)
    where
        I: IntoParallelIterator<Item = Cow<'a, str>>,
    {
        for v in vec_list(par_iter.into_par_iter()) {
            self.extend(v);
        }
    }
}

/// `FromParallelIterator` and `ParallelExtend` for `OsString`, from
/// `&OsStr`, `OsString` and `Cow<OsStr>` (concatenated in order).
macro_rules! os_string {
    ($($item:ty),*) => {$(
        impl<'a> FromParallelIterator<$item> for OsString {
            fn from_par_iter<I>(par_iter: I) -> Self
            where
                I: IntoParallelIterator<Item = $item>,
            {
                let mut s = OsString::new();
                s.par_extend(par_iter);
                s
            }
        }

        impl<'a> ParallelExtend<$item> for OsString {
            fn par_extend<I>(&mut self, par_iter: I)
            where
                I: IntoParallelIterator<Item = $item>,
            {
                for v in vec_list(par_iter.into_par_iter()) {
                    self.extend(v);
                }
            }
        }
    )*};
}
os_string!(&'a OsStr, OsString, Cow<'a, OsStr>);

impl<T: Send> FromParallelIterator<T> for Box<[T]> {
    fn from_par_iter<I>(par_iter: I) -> Self
    where
        I: IntoParallelIterator<Item = T>,
    {
        Vec::from_par_iter(par_iter).into_boxed_slice()
    }
}

impl<T: Send> FromParallelIterator<T> for Rc<[T]> {
    fn from_par_iter<I>(par_iter: I) -> Self
    where
        I: IntoParallelIterator<Item = T>,
    {
        Vec::from_par_iter(par_iter).into()
    }
}

impl<T: Send> FromParallelIterator<T> for Arc<[T]> {
    fn from_par_iter<I>(par_iter: I) -> Self
    where
        I: IntoParallelIterator<Item = T>,
    {
        Vec::from_par_iter(par_iter).into()
    }
}

impl<'a, C, T> FromParallelIterator<T> for Cow<'a, C>
where
    C: ToOwned<Owned: FromParallelIterator<T>> + ?Sized,
    T: Send,
{
    fn from_par_iter<I>(par_iter: I) -> Self
    where
        I: IntoParallelIterator<Item = T>,
    {
        Cow::Owned(C::Owned::from_par_iter(par_iter))
    }
}

impl FromParallelIterator<()> for () {
    fn from_par_iter<I>(par_iter: I) -> Self
    where
        I: IntoParallelIterator<Item = ()>,
    {
        par_iter.into_par_iter().for_each(|()| ())
    }
}

impl ParallelExtend<()> for () {
    fn par_extend<I>(&mut self, par_iter: I)
    where
        I: IntoParallelIterator<Item = ()>,
    {
        par_iter.into_par_iter().for_each(|()| ())
    }
}

impl<C, T, E> FromParallelIterator<Result<T, E>> for Result<C, E>
where
    C: FromParallelIterator<T>,
    T: Send,
    E: Send,
{
    fn from_par_iter<I>(par_iter: I) -> Self
    where
        I: IntoParallelIterator<Item = Result<T, E>>,
    {
        let error = Mutex::new(None);
        let c = par_iter
            .into_par_iter()
            .map(|r| match r {
                Ok(t) => Some(t),
                Err(e) => {
                    let mut slot = error.lock().unwrap_or_else(|p| p.into_inner());
                    if slot.is_none() {
                        *slot = Some(e);
                    }
                    None
                }
            })
            .while_some()
            .collect();
        match error.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(c),
        }
    }
}

impl<C, T> FromParallelIterator<Option<T>> for Option<C>
where
    C: FromParallelIterator<T>,
    T: Send,
{
    fn from_par_iter<I>(par_iter: I) -> Self
    where
        I: IntoParallelIterator<Item = Option<T>>,
    {
        let none = AtomicBool::new(false);
        let c = par_iter
            .into_par_iter()
            .map(|x| {
                if x.is_none() {
                    none.store(true, Ordering::Relaxed);
                }
                x
            })
            .while_some()
            .collect();
        (!none.into_inner()).then_some(c)
    }
}

impl<A, B, FromA, FromB> FromParallelIterator<(A, B)> for (FromA, FromB)
where
    A: Send,
    B: Send,
    FromA: Send + FromParallelIterator<A>,
    FromB: Send + FromParallelIterator<B>,
{
    fn from_par_iter<I>(par_iter: I) -> Self
    where
        I: IntoParallelIterator<Item = (A, B)>,
    {
        let (a, b) = unzip_lists(par_iter.into_par_iter().drive_engine(PairList));
        (FromA::from_par_iter(a), FromB::from_par_iter(b))
    }
}

impl<A, B, FromA, FromB> ParallelExtend<(A, B)> for (FromA, FromB)
where
    A: Send,
    B: Send,
    FromA: Send + ParallelExtend<A>,
    FromB: Send + ParallelExtend<B>,
{
    fn par_extend<I>(&mut self, par_iter: I)
    where
        I: IntoParallelIterator<Item = (A, B)>,
    {
        let (a, b) = unzip_lists(par_iter.into_par_iter().drive_engine(PairList));
        self.0.par_extend(a);
        self.1.par_extend(b);
    }
}

/// The runs' pairs of vectors, each side concatenated.
fn unzip_lists<A, B>(list: Vec<(Vec<A>, Vec<B>)>) -> (Vec<A>, Vec<B>) {
    let (a, b): (Vec<Vec<A>>, Vec<Vec<B>>) = list.into_iter().unzip();
    (concat(a), concat(b))
}
