//! `fold` and friends (one item per run of the loop), and the adaptors
//! that stop or skip across pieces: `while_some`, `take_any`, `skip_any`,
//! `take_any_while`, `skip_any_while`.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::consume::Try;
use super::engine::{forward_consumer, Consumer, Folder};
use super::ParallelIterator;

/// [`ParallelIterator::fold`]'s iterator: one item per run of consecutive
/// units that one worker ran (so as many as there were splits, plus one).
///
/// ```
/// use terroir::prelude::*;
/// let f: terroir::iter::Fold<_, _, _> = (1..=4).into_par_iter().fold(|| 0, |a, x| a + x);
/// assert_eq!(f.sum::<i32>(), 10);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone)]
pub struct Fold<I, ID, F> {
    base: I,
    identity: ID,
    fold_op: F,
}

impl<I, ID, F> std::fmt::Debug for Fold<I, ID, F>
where
    I: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fold")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl<I, ID, F> Fold<I, ID, F> {
    pub(crate) fn new(base: I, identity: ID, fold_op: F) -> Self {
        Fold {
            base,
            identity,
            fold_op,
        }
    }
}

impl<I, ID, F, T> ParallelIterator for Fold<I, ID, F>
where
    I: ParallelIterator,
    F: Fn(T, I::Item) -> T + Sync + Send,
    ID: Fn() -> T + Sync + Send,
    T: Send,
{
    type Item = T;
    fn drive_engine<C: Consumer<T>>(self, consumer: C) -> C::Result {
        let Fold {
            base,
            identity,
            fold_op,
        } = self;
        base.drive_engine(FoldConsumer {
            base: consumer,
            start: &identity,
            op: &fold_op,
            marker: std::marker::PhantomData,
        })
    }
}

/// Where a run's accumulator comes from.
trait Start<T>: Sync {
    fn start(&self) -> T;
}

impl<T, ID: Fn() -> T + Sync> Start<T> for ID {
    fn start(&self) -> T {
        self()
    }
}

/// `fold_with`'s start value (a lock, so that `T` need not be `Sync`).
struct CloneOf<T>(Mutex<T>);

impl<T: Clone + Send> Start<T> for CloneOf<T> {
    fn start(&self) -> T {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

struct FoldConsumer<'f, C, S, F, T> {
    base: C,
    start: &'f S,
    op: &'f F,
    marker: std::marker::PhantomData<fn() -> T>,
}

impl<'f, X, T, C, S, F> Consumer<X> for FoldConsumer<'f, C, S, F, T>
where
    C: Consumer<T>,
    S: Start<T>,
    F: Fn(T, X) -> T + Sync,
{
    type Folder = FoldFolder<'f, C::Folder, T, F>;
    type Result = C::Result;
    fn folder(&self) -> Self::Folder {
        FoldFolder {
            base: self.base.folder(),
            acc: self.start.start(),
            op: self.op,
            first: None,
        }
    }
    forward_consumer!();
}

struct FoldFolder<'f, FO, T, F> {
    base: FO,
    acc: T,
    op: &'f F,
    /// The run's first position.
    first: Option<usize>,
}

impl<X, T, FO, F> Folder<X> for FoldFolder<'_, FO, T, F>
where
    FO: Folder<T>,
    F: Fn(T, X) -> T,
{
    type Result = FO::Result;
    fn consume<I: Iterator<Item = X>>(self, start: usize, items: I) -> Self {
        FoldFolder {
            acc: items.fold(self.acc, self.op),
            first: self.first.or(Some(start)),
            ..self
        }
    }
    fn full(&self) -> bool {
        self.base.full()
    }
    fn complete(self) -> FO::Result {
        let at = self.first.unwrap_or(0);
        self.base.consume(at, std::iter::once(self.acc)).complete()
    }
}

/// [`ParallelIterator::fold_with`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let f: terroir::iter::FoldWith<_, _, _> = (1..=4).into_par_iter().fold_with(0, |a, x| a + x);
/// assert_eq!(f.sum::<i32>(), 10);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone)]
pub struct FoldWith<I, T, F> {
    base: I,
    item: T,
    fold_op: F,
}

impl<I, T, F> std::fmt::Debug for FoldWith<I, T, F>
where
    I: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FoldWith")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl<I, T, F> FoldWith<I, T, F> {
    pub(crate) fn new(base: I, item: T, fold_op: F) -> Self {
        FoldWith {
            base,
            item,
            fold_op,
        }
    }
}

impl<I, T, F> ParallelIterator for FoldWith<I, T, F>
where
    I: ParallelIterator,
    F: Fn(T, I::Item) -> T + Sync + Send,
    T: Send + Clone,
{
    type Item = T;
    fn drive_engine<C: Consumer<T>>(self, consumer: C) -> C::Result {
        let FoldWith {
            base,
            item,
            fold_op,
        } = self;
        base.drive_engine(FoldConsumer {
            base: consumer,
            start: &CloneOf(Mutex::new(item)),
            op: &fold_op,
            marker: std::marker::PhantomData,
        })
    }
}

/// [`ParallelIterator::try_fold`]'s iterator: one `Try` value per run,
/// the run stopping at its first failure.
///
/// ```
/// use terroir::prelude::*;
/// let total: Option<u32> = (1..=10u32).into_par_iter()
///     .try_fold(|| 0u32, |a, x| a.checked_add(x))
///     .try_reduce(|| 0, |a, b| a.checked_add(b));
/// assert_eq!(total, Some(55));
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone)]
pub struct TryFold<I, R, ID, F> {
    base: I,
    identity: ID,
    fold_op: F,
    marker: std::marker::PhantomData<fn() -> R>,
}

impl<I, R, ID, F> std::fmt::Debug for TryFold<I, R, ID, F>
where
    I: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TryFold")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl<I, R, ID, F> TryFold<I, R, ID, F> {
    pub(crate) fn new(base: I, identity: ID, fold_op: F) -> Self {
        TryFold {
            base,
            identity,
            fold_op,
            marker: std::marker::PhantomData,
        }
    }
}

impl<I, R, ID, F, T> ParallelIterator for TryFold<I, R, ID, F>
where
    I: ParallelIterator,
    F: Fn(T, I::Item) -> R + Sync + Send,
    ID: Fn() -> T + Sync + Send,
    R: Try<Output = T> + Send,
{
    type Item = R;
    fn drive_engine<C: Consumer<R>>(self, consumer: C) -> C::Result {
        let TryFold {
            base,
            identity,
            fold_op,
            ..
        } = self;
        base.drive_engine(TryFoldConsumer {
            base: consumer,
            start: &identity,
            op: &fold_op,
            marker: std::marker::PhantomData,
        })
    }
}

/// [`ParallelIterator::try_fold_with`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let r: Result<u32, ()> = (1..=3u32).into_par_iter()
///     .try_fold_with(0, |a, x| Ok(a + x))
///     .try_reduce(|| 0, |a, b| Ok(a + b));
/// assert_eq!(r, Ok(6));
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone)]
pub struct TryFoldWith<I, R: Try, F> {
    base: I,
    item: R::Output,
    fold_op: F,
}

impl<I: std::fmt::Debug, R: Try, F> std::fmt::Debug for TryFoldWith<I, R, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TryFoldWith")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl<I, R: Try, F> TryFoldWith<I, R, F> {
    pub(crate) fn new(base: I, item: R::Output, fold_op: F) -> Self {
        TryFoldWith {
            base,
            item,
            fold_op,
        }
    }
}

impl<I, R, F, T> ParallelIterator for TryFoldWith<I, R, F>
where
    I: ParallelIterator,
    F: Fn(T, I::Item) -> R + Sync + Send,
    R: Try<Output = T> + Send,
    T: Clone + Send,
{
    type Item = R;
    fn drive_engine<C: Consumer<R>>(self, consumer: C) -> C::Result {
        let TryFoldWith {
            base,
            item,
            fold_op,
        } = self;
        base.drive_engine(TryFoldConsumer {
            base: consumer,
            start: &CloneOf(Mutex::new(item)),
            op: &fold_op,
            marker: std::marker::PhantomData,
        })
    }
}

struct TryFoldConsumer<'f, C, S, F, R> {
    base: C,
    start: &'f S,
    op: &'f F,
    marker: std::marker::PhantomData<fn() -> R>,
}

impl<'f, X, T, R, C, S, F> Consumer<X> for TryFoldConsumer<'f, C, S, F, R>
where
    C: Consumer<R>,
    S: Start<T>,
    F: Fn(T, X) -> R + Sync,
    R: Try<Output = T>,
{
    type Folder = TryFoldFolder<'f, C::Folder, R, F>;
    type Result = C::Result;
    fn folder(&self) -> Self::Folder {
        TryFoldFolder {
            base: self.base.folder(),
            acc: ControlFlow::Continue(self.start.start()),
            op: self.op,
            first: None,
        }
    }
    forward_consumer!();
}

struct TryFoldFolder<'f, FO, R: Try, F> {
    base: FO,
    acc: ControlFlow<R::Residual, R::Output>,
    op: &'f F,
    first: Option<usize>,
}

impl<X, T, R, FO, F> Folder<X> for TryFoldFolder<'_, FO, R, F>
where
    FO: Folder<R>,
    F: Fn(T, X) -> R,
    R: Try<Output = T>,
{
    type Result = FO::Result;
    fn consume<I: Iterator<Item = X>>(self, start: usize, mut items: I) -> Self {
        let op = self.op;
        let acc = match self.acc {
            ControlFlow::Continue(t) => items.try_fold(t, |t, x| op(t, x).branch()),
            done => done,
        };
        TryFoldFolder {
            acc,
            first: self.first.or(Some(start)),
            ..self
        }
    }
    fn full(&self) -> bool {
        self.acc.is_break() || self.base.full()
    }
    fn complete(self) -> FO::Result {
        let at = self.first.unwrap_or(0);
        let r = match self.acc {
            ControlFlow::Continue(t) => R::from_output(t),
            ControlFlow::Break(e) => R::from_residual(e),
        };
        self.base.consume(at, std::iter::once(r)).complete()
    }
}

/// What a [`GateConsumer`] does to every batch: an adaptor over the
/// batch, with state shared by every piece of the loop.
trait Gate<T>: Copy + Send + Sync {
    /// The items it lets through.
    type Out;
    /// The batch as it passes the gate.
    fn apply<I: Iterator<Item = T>>(self, items: I) -> impl Iterator<Item = Self::Out>;
    /// Whether every piece may stop.
    fn stopped(self) -> bool;
}

struct GateConsumer<C, G> {
    base: C,
    gate: G,
}

impl<T, C, G> Consumer<T> for GateConsumer<C, G>
where
    G: Gate<T>,
    C: Consumer<G::Out>,
{
    type Folder = GateFolder<C::Folder, G>;
    type Result = C::Result;
    fn folder(&self) -> Self::Folder {
        GateFolder {
            base: self.base.folder(),
            gate: self.gate,
        }
    }
    fn reduce(&self, left: C::Result, right: C::Result) -> C::Result {
        self.base.reduce(left, right)
    }
    fn stop(&self, start: usize, end: usize) -> bool {
        self.gate.stopped() || self.base.stop(start, end)
    }
    fn options(&self) -> super::engine::Options {
        self.base.options()
    }
    fn eager(&self) -> bool {
        self.base.eager()
    }
    fn done(&self, result: &Self::Result) -> bool {
        self.base.done(result)
    }
}

struct GateFolder<FO, G> {
    base: FO,
    gate: G,
}

impl<T, FO, G> Folder<T> for GateFolder<FO, G>
where
    G: Gate<T>,
    FO: Folder<G::Out>,
{
    type Result = FO::Result;
    fn consume<I: Iterator<Item = T>>(self, start: usize, items: I) -> Self {
        GateFolder {
            base: self.base.consume(start, self.gate.apply(items)),
            gate: self.gate,
        }
    }
    fn full(&self) -> bool {
        self.gate.stopped() || self.base.full()
    }
    fn complete(self) -> FO::Result {
        self.base.complete()
    }
}

/// Takes one of `left`; false when none is left.
fn claim(left: &AtomicUsize) -> bool {
    left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |r| r.checked_sub(1))
        .is_ok()
}

/// [`ParallelIterator::while_some`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let w: terroir::iter::WhileSome<_> = (0..5).into_par_iter().map(Some).while_some();
/// assert_eq!(w.sum::<i32>(), 10);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct WhileSome<I> {
    base: I,
}

impl<I> WhileSome<I> {
    pub(crate) fn new(base: I) -> Self {
        WhileSome { base }
    }
}

#[derive(Clone, Copy)]
struct WhileSomeGate<'a>(&'a AtomicBool);

impl<T> Gate<Option<T>> for WhileSomeGate<'_> {
    type Out = T;
    fn apply<I: Iterator<Item = Option<T>>>(self, items: I) -> impl Iterator<Item = T> {
        items.map_while(move |x| {
            if self.0.load(Ordering::Relaxed) {
                return None;
            }
            if x.is_none() {
                self.0.store(true, Ordering::Relaxed);
            }
            x
        })
    }
    fn stopped(self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl<I, T> ParallelIterator for WhileSome<I>
where
    I: ParallelIterator<Item = Option<T>>,
    T: Send,
{
    type Item = T;
    fn drive_engine<C: Consumer<T>>(self, consumer: C) -> C::Result {
        let done = AtomicBool::new(false);
        self.base.drive_engine(GateConsumer {
            base: consumer,
            gate: WhileSomeGate(&done),
        })
    }
}

/// [`ParallelIterator::take_any`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let t: terroir::iter::TakeAny<_> = (0..100).into_par_iter().take_any(5);
/// assert_eq!(t.count(), 5);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct TakeAny<I> {
    base: I,
    n: usize,
}

impl<I> TakeAny<I> {
    pub(crate) fn new(base: I, n: usize) -> Self {
        TakeAny { base, n }
    }
}

#[derive(Clone, Copy)]
struct TakeAnyGate<'a>(&'a AtomicUsize);

impl<T> Gate<T> for TakeAnyGate<'_> {
    type Out = T;
    fn apply<I: Iterator<Item = T>>(self, items: I) -> impl Iterator<Item = T> {
        items.take_while(move |_| claim(self.0))
    }
    fn stopped(self) -> bool {
        self.0.load(Ordering::Relaxed) == 0
    }
}

impl<I: ParallelIterator> ParallelIterator for TakeAny<I> {
    type Item = I::Item;
    fn drive_engine<C: Consumer<I::Item>>(self, consumer: C) -> C::Result {
        let left = AtomicUsize::new(self.n);
        self.base.drive_engine(GateConsumer {
            base: consumer,
            gate: TakeAnyGate(&left),
        })
    }
}

/// [`ParallelIterator::skip_any`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let s: terroir::iter::SkipAny<_> = (0..100).into_par_iter().skip_any(5);
/// assert_eq!(s.count(), 95);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct SkipAny<I> {
    base: I,
    n: usize,
}

impl<I> SkipAny<I> {
    pub(crate) fn new(base: I, n: usize) -> Self {
        SkipAny { base, n }
    }
}

#[derive(Clone, Copy)]
struct SkipAnyGate<'a>(&'a AtomicUsize);

impl<T> Gate<T> for SkipAnyGate<'_> {
    type Out = T;
    fn apply<I: Iterator<Item = T>>(self, items: I) -> impl Iterator<Item = T> {
        items.filter(move |_| self.0.load(Ordering::Relaxed) == 0 || !claim(self.0))
    }
    fn stopped(self) -> bool {
        false
    }
}

impl<I: ParallelIterator> ParallelIterator for SkipAny<I> {
    type Item = I::Item;
    fn drive_engine<C: Consumer<I::Item>>(self, consumer: C) -> C::Result {
        let left = AtomicUsize::new(self.n);
        self.base.drive_engine(GateConsumer {
            base: consumer,
            gate: SkipAnyGate(&left),
        })
    }
}

/// [`ParallelIterator::take_any_while`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let v: Vec<i32> = (0..100).into_par_iter().take_any_while(|&x| x < 10).collect();
/// assert!(v.iter().all(|&x| x < 10));
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone)]
pub struct TakeAnyWhile<I, P> {
    base: I,
    predicate: P,
}

impl<I, P> std::fmt::Debug for TakeAnyWhile<I, P>
where
    I: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TakeAnyWhile")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl<I, P> TakeAnyWhile<I, P> {
    pub(crate) fn new(base: I, predicate: P) -> Self {
        TakeAnyWhile { base, predicate }
    }
}

struct PredicateGate<'a, P> {
    flag: &'a AtomicBool,
    predicate: &'a P,
}

impl<P> Clone for PredicateGate<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P> Copy for PredicateGate<'_, P> {}

/// `take_any_while`'s gate (the flag: some item failed).
struct TakeWhileGate<'a, P>(PredicateGate<'a, P>);
/// `skip_any_while`'s gate (the flag: some item failed, so skipping ended).
struct SkipWhileGate<'a, P>(PredicateGate<'a, P>);

impl<P> Clone for TakeWhileGate<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P> Copy for TakeWhileGate<'_, P> {}
impl<P> Clone for SkipWhileGate<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P> Copy for SkipWhileGate<'_, P> {}

impl<T, P: Fn(&T) -> bool + Sync> Gate<T> for TakeWhileGate<'_, P> {
    type Out = T;
    fn apply<I: Iterator<Item = T>>(self, items: I) -> impl Iterator<Item = T> {
        let PredicateGate { flag, predicate } = self.0;
        items.take_while(move |x| {
            if flag.load(Ordering::Relaxed) {
                return false;
            }
            let ok = predicate(x);
            if !ok {
                flag.store(true, Ordering::Relaxed);
            }
            ok
        })
    }
    fn stopped(self) -> bool {
        self.0.flag.load(Ordering::Relaxed)
    }
}

impl<T, P: Fn(&T) -> bool + Sync> Gate<T> for SkipWhileGate<'_, P> {
    type Out = T;
    fn apply<I: Iterator<Item = T>>(self, items: I) -> impl Iterator<Item = T> {
        let PredicateGate { flag, predicate } = self.0;
        items.filter(move |x| {
            if flag.load(Ordering::Relaxed) {
                return true;
            }
            let skip = predicate(x);
            if !skip {
                flag.store(true, Ordering::Relaxed);
            }
            !skip
        })
    }
    fn stopped(self) -> bool {
        false
    }
}

impl<I, P> ParallelIterator for TakeAnyWhile<I, P>
where
    I: ParallelIterator,
    P: Fn(&I::Item) -> bool + Sync + Send,
{
    type Item = I::Item;
    fn drive_engine<C: Consumer<I::Item>>(self, consumer: C) -> C::Result {
        let flag = AtomicBool::new(false);
        self.base.drive_engine(GateConsumer {
            base: consumer,
            gate: TakeWhileGate(PredicateGate {
                flag: &flag,
                predicate: &self.predicate,
            }),
        })
    }
}

/// [`ParallelIterator::skip_any_while`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let v: Vec<i32> = (0..10).into_par_iter().skip_any_while(|&x| x < 100).collect();
/// assert!(v.is_empty());
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone)]
pub struct SkipAnyWhile<I, P> {
    base: I,
    predicate: P,
}

impl<I, P> std::fmt::Debug for SkipAnyWhile<I, P>
where
    I: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkipAnyWhile")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl<I, P> SkipAnyWhile<I, P> {
    pub(crate) fn new(base: I, predicate: P) -> Self {
        SkipAnyWhile { base, predicate }
    }
}

impl<I, P> ParallelIterator for SkipAnyWhile<I, P>
where
    I: ParallelIterator,
    P: Fn(&I::Item) -> bool + Sync + Send,
{
    type Item = I::Item;
    fn drive_engine<C: Consumer<I::Item>>(self, consumer: C) -> C::Result {
        let flag = AtomicBool::new(false);
        self.base.drive_engine(GateConsumer {
            base: consumer,
            gate: SkipWhileGate(PredicateGate {
                flag: &flag,
                predicate: &self.predicate,
            }),
        })
    }
}
