//! The consumers behind `for_each`, `count`, `reduce`, `sum`, `product`,
//! the `find_*` family and the `try_*` reductions.

use std::convert::Infallible;
use std::iter::{Product, Sum};
use std::marker::PhantomData;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::engine::{Consumer, Folder, Options};
use super::ParallelIterator;

mod sealed {
    pub trait Sealed {}
}

/// What the `try_*` methods accept: `Result`, `Option` and `ControlFlow`
/// (rayon's private `Try`, as `std::ops::Try` is not stable). Sealed.
pub trait Try: sealed::Sealed {
    /// The value when it succeeds.
    type Output;
    /// What it keeps when it fails.
    type Residual;
    /// A success.
    fn from_output(output: Self::Output) -> Self;
    /// A failure.
    fn from_residual(residual: Self::Residual) -> Self;
    /// Success or failure.
    fn branch(self) -> ControlFlow<Self::Residual, Self::Output>;
    /// Whether it is a failure.
    fn failed(&self) -> bool;
}

impl<T> sealed::Sealed for Option<T> {}
impl<T> Try for Option<T> {
    type Output = T;
    type Residual = Option<Infallible>;
    fn from_output(output: T) -> Self {
        Some(output)
    }
    fn from_residual(_: Option<Infallible>) -> Self {
        None
    }
    fn branch(self) -> ControlFlow<Option<Infallible>, T> {
        match self {
            Some(v) => ControlFlow::Continue(v),
            None => ControlFlow::Break(None),
        }
    }
    fn failed(&self) -> bool {
        self.is_none()
    }
}

impl<T, E> sealed::Sealed for Result<T, E> {}
impl<T, E> Try for Result<T, E> {
    type Output = T;
    type Residual = Result<Infallible, E>;
    fn from_output(output: T) -> Self {
        Ok(output)
    }
    fn from_residual(residual: Result<Infallible, E>) -> Self {
        match residual {
            Err(e) => Err(e),
            Ok(never) => match never {},
        }
    }
    fn branch(self) -> ControlFlow<Result<Infallible, E>, T> {
        match self {
            Ok(v) => ControlFlow::Continue(v),
            Err(e) => ControlFlow::Break(Err(e)),
        }
    }
    fn failed(&self) -> bool {
        self.is_err()
    }
}

impl<B, C> sealed::Sealed for ControlFlow<B, C> {}
impl<B, C> Try for ControlFlow<B, C> {
    type Output = C;
    type Residual = ControlFlow<B, Infallible>;
    fn from_output(output: C) -> Self {
        ControlFlow::Continue(output)
    }
    fn from_residual(residual: ControlFlow<B, Infallible>) -> Self {
        match residual {
            ControlFlow::Break(b) => ControlFlow::Break(b),
            ControlFlow::Continue(never) => match never {},
        }
    }
    fn branch(self) -> ControlFlow<ControlFlow<B, Infallible>, C> {
        match self {
            ControlFlow::Continue(c) => ControlFlow::Continue(c),
            ControlFlow::Break(b) => ControlFlow::Break(ControlFlow::Break(b)),
        }
    }
    fn failed(&self) -> bool {
        self.is_break()
    }
}

/// A consumer whose folders are the whole story: `reduce`, `stop` and
/// `options` trivial.
macro_rules! plain_consumer {
    () => {
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
    };
}

/// `for_each`.
pub(crate) struct ForEach<'f, OP> {
    pub(crate) op: &'f OP,
}

impl<'f, T, OP> Consumer<T> for ForEach<'f, OP>
where
    OP: Fn(T) + Sync,
{
    type Folder = ForEach<'f, OP>;
    type Result = ();
    fn folder(&self) -> Self::Folder {
        ForEach { op: self.op }
    }
    fn reduce(&self, (): (), (): ()) {}
    plain_consumer!();
}

impl<T, OP> Folder<T> for ForEach<'_, OP>
where
    OP: Fn(T) + Sync,
{
    type Result = ();
    fn consume<I: Iterator<Item = T>>(self, _start: usize, items: I) -> Self {
        items.for_each(self.op);
        self
    }
    fn complete(self) {}
}

/// `count`.
pub(crate) struct Count;

impl<T> Consumer<T> for Count {
    type Folder = CountFolder;
    type Result = usize;
    fn folder(&self) -> CountFolder {
        CountFolder(0)
    }
    fn reduce(&self, left: usize, right: usize) -> usize {
        left + right
    }
    plain_consumer!();
}

pub(crate) struct CountFolder(usize);

impl<T> Folder<T> for CountFolder {
    type Result = usize;
    fn consume<I: Iterator<Item = T>>(self, _start: usize, items: I) -> Self {
        CountFolder(self.0 + items.count())
    }
    fn complete(self) -> usize {
        self.0
    }
}

/// `reduce`.
pub(crate) struct Reduce<'f, ID, OP> {
    pub(crate) identity: &'f ID,
    pub(crate) op: &'f OP,
}

impl<'f, T, ID, OP> Consumer<T> for Reduce<'f, ID, OP>
where
    T: Send,
    ID: Fn() -> T + Sync,
    OP: Fn(T, T) -> T + Sync,
{
    type Folder = ReduceFolder<'f, T, OP>;
    type Result = T;
    fn folder(&self) -> Self::Folder {
        ReduceFolder {
            acc: (self.identity)(),
            op: self.op,
        }
    }
    fn reduce(&self, left: T, right: T) -> T {
        (self.op)(left, right)
    }
    plain_consumer!();
}

pub(crate) struct ReduceFolder<'f, T, OP> {
    acc: T,
    op: &'f OP,
}

impl<T, OP> Folder<T> for ReduceFolder<'_, T, OP>
where
    OP: Fn(T, T) -> T + Sync,
{
    type Result = T;
    fn consume<I: Iterator<Item = T>>(self, _start: usize, items: I) -> Self {
        ReduceFolder {
            acc: items.fold(self.acc, self.op),
            op: self.op,
        }
    }
    fn complete(self) -> T {
        self.acc
    }
}

/// `reduce_with`.
pub(crate) struct ReduceWith<'f, OP> {
    pub(crate) op: &'f OP,
}

impl<'f, T, OP> Consumer<T> for ReduceWith<'f, OP>
where
    T: Send,
    OP: Fn(T, T) -> T + Sync,
{
    type Folder = ReduceWithFolder<'f, T, OP>;
    type Result = Option<T>;
    fn folder(&self) -> Self::Folder {
        ReduceWithFolder {
            acc: None,
            op: self.op,
        }
    }
    fn reduce(&self, left: Option<T>, right: Option<T>) -> Option<T> {
        match (left, right) {
            (Some(a), Some(b)) => Some((self.op)(a, b)),
            (a, b) => a.or(b),
        }
    }
    plain_consumer!();
}

pub(crate) struct ReduceWithFolder<'f, T, OP> {
    acc: Option<T>,
    op: &'f OP,
}

impl<T, OP> Folder<T> for ReduceWithFolder<'_, T, OP>
where
    OP: Fn(T, T) -> T + Sync,
{
    type Result = Option<T>;
    fn consume<I: Iterator<Item = T>>(self, _start: usize, mut items: I) -> Self {
        let op = self.op;
        let acc = match self.acc {
            Some(a) => Some(items.fold(a, op)),
            None => items.next().map(|first| items.fold(first, op)),
        };
        ReduceWithFolder { acc, op }
    }
    fn complete(self) -> Option<T> {
        self.acc
    }
}

/// `sum`.
pub(crate) struct SumC<S>(PhantomData<fn() -> S>);

impl<S> SumC<S> {
    pub(crate) fn new() -> Self {
        SumC(PhantomData)
    }
}

impl<T, S> Consumer<T> for SumC<S>
where
    S: Send + Sum<T> + Sum<S>,
{
    type Folder = SumFolder<S>;
    type Result = S;
    fn folder(&self) -> SumFolder<S> {
        SumFolder(std::iter::empty::<S>().sum())
    }
    fn reduce(&self, left: S, right: S) -> S {
        [left, right].into_iter().sum()
    }
    plain_consumer!();
}

pub(crate) struct SumFolder<S>(S);

impl<T, S> Folder<T> for SumFolder<S>
where
    S: Sum<T> + Sum<S>,
{
    type Result = S;
    fn consume<I: Iterator<Item = T>>(self, _start: usize, items: I) -> Self {
        SumFolder([self.0, items.sum::<S>()].into_iter().sum())
    }
    fn complete(self) -> S {
        self.0
    }
}

/// `product`.
pub(crate) struct ProductC<P>(PhantomData<fn() -> P>);

impl<P> ProductC<P> {
    pub(crate) fn new() -> Self {
        ProductC(PhantomData)
    }
}

impl<T, P> Consumer<T> for ProductC<P>
where
    P: Send + Product<T> + Product<P>,
{
    type Folder = ProductFolder<P>;
    type Result = P;
    fn folder(&self) -> ProductFolder<P> {
        ProductFolder(std::iter::empty::<P>().product())
    }
    fn reduce(&self, left: P, right: P) -> P {
        [left, right].into_iter().product()
    }
    plain_consumer!();
}

pub(crate) struct ProductFolder<P>(P);

impl<T, P> Folder<T> for ProductFolder<P>
where
    P: Product<T> + Product<P>,
{
    type Result = P;
    fn consume<I: Iterator<Item = T>>(self, _start: usize, items: I) -> Self {
        ProductFolder([self.0, items.product::<P>()].into_iter().product())
    }
    fn complete(self) -> P {
        self.0
    }
}

/// `find_any`: every piece stops once one found a match.
pub(crate) fn find_any<I, P>(iter: I, predicate: &P) -> Option<I::Item>
where
    I: ParallelIterator,
    P: Fn(&I::Item) -> bool + Sync,
{
    let found = AtomicBool::new(false);
    iter.drive_engine(FindAny {
        predicate,
        found: &found,
    })
}

pub(crate) struct FindAny<'f, P> {
    predicate: &'f P,
    found: &'f AtomicBool,
}

impl<'f, T, P> Consumer<T> for FindAny<'f, P>
where
    T: Send,
    P: Fn(&T) -> bool + Sync,
{
    type Folder = FindAnyFolder<'f, T, P>;
    type Result = Option<T>;
    fn folder(&self) -> Self::Folder {
        FindAnyFolder {
            predicate: self.predicate,
            found: self.found,
            item: None,
        }
    }
    fn reduce(&self, left: Option<T>, right: Option<T>) -> Option<T> {
        left.or(right)
    }
    fn stop(&self, _start: usize, _end: usize) -> bool {
        self.found.load(Ordering::Relaxed)
    }
    fn options(&self) -> Options {
        Options::default()
    }
    fn eager(&self) -> bool {
        true
    }
    fn done(&self, result: &Option<T>) -> bool {
        result.is_some()
    }
}

pub(crate) struct FindAnyFolder<'f, T, P> {
    predicate: &'f P,
    found: &'f AtomicBool,
    item: Option<T>,
}

impl<T, P> Folder<T> for FindAnyFolder<'_, T, P>
where
    P: Fn(&T) -> bool + Sync,
{
    type Result = Option<T>;
    fn consume<I: Iterator<Item = T>>(mut self, _start: usize, mut items: I) -> Self {
        if self.item.is_none() {
            let (found, predicate) = (self.found, self.predicate);
            // Look at the flag every item: other pieces may have found one.
            self.item = items
                .try_fold((), |(), x| {
                    if predicate(&x) {
                        ControlFlow::Break(Some(x))
                    } else if found.load(Ordering::Relaxed) {
                        ControlFlow::Break(None)
                    } else {
                        ControlFlow::Continue(())
                    }
                })
                .break_value()
                .flatten();
            if self.item.is_some() {
                found.store(true, Ordering::Relaxed);
            }
        }
        self
    }
    fn full(&self) -> bool {
        self.item.is_some() || self.found.load(Ordering::Relaxed)
    }
    fn complete(self) -> Option<T> {
        self.item
    }
}

/// `find_first`: the leftmost match. `best` holds the start of the
/// leftmost batch that found one; pieces whose units all lie after it
/// stop (any unit after a batch start that found a match is after that
/// match, or in the same batch).
pub(crate) fn find_first<I, P>(iter: I, predicate: &P) -> Option<I::Item>
where
    I: ParallelIterator,
    P: Fn(&I::Item) -> bool + Sync,
{
    let best = AtomicUsize::new(usize::MAX);
    iter.drive_engine(FindFirst {
        predicate,
        best: &best,
    })
}

pub(crate) struct FindFirst<'f, P> {
    predicate: &'f P,
    best: &'f AtomicUsize,
}

impl<'f, T, P> Consumer<T> for FindFirst<'f, P>
where
    T: Send,
    P: Fn(&T) -> bool + Sync,
{
    type Folder = FindFirstFolder<'f, T, P>;
    type Result = Option<T>;
    fn folder(&self) -> Self::Folder {
        FindFirstFolder {
            predicate: self.predicate,
            best: self.best,
            item: None,
        }
    }
    fn reduce(&self, left: Option<T>, right: Option<T>) -> Option<T> {
        left.or(right)
    }
    fn stop(&self, start: usize, _end: usize) -> bool {
        start > self.best.load(Ordering::Relaxed)
    }
    fn options(&self) -> Options {
        Options::default()
    }
    fn eager(&self) -> bool {
        true
    }
    fn done(&self, result: &Option<T>) -> bool {
        result.is_some()
    }
}

pub(crate) struct FindFirstFolder<'f, T, P> {
    predicate: &'f P,
    best: &'f AtomicUsize,
    item: Option<T>,
}

impl<T, P> Folder<T> for FindFirstFolder<'_, T, P>
where
    P: Fn(&T) -> bool + Sync,
{
    type Result = Option<T>;
    fn consume<I: Iterator<Item = T>>(mut self, start: usize, mut items: I) -> Self {
        if self.item.is_none() && start <= self.best.load(Ordering::Relaxed) {
            self.item = items.find(self.predicate);
            if self.item.is_some() {
                self.best.fetch_min(start, Ordering::Relaxed);
            }
        }
        self
    }
    fn full(&self) -> bool {
        self.item.is_some()
    }
    fn complete(self) -> Option<T> {
        self.item
    }
}

/// `find_last`: the rightmost match. The driver runs the loop back to
/// front when every adaptor in front allows it ([`Consumer::REVERSIBLE`]):
/// then this is `find_first` over the reversed units (positions from the
/// back), and a search in a huge range ends as soon as the last match is
/// found (through `flat_map`s too: see `flat.rs`). Otherwise (a `fold`
/// or `chain` in front) it runs front to
/// back: `best` holds one past the start of the rightmost batch that found
/// one, and pieces whose units all lie before that batch stop.
pub(crate) fn find_last<I, P>(iter: I, predicate: &P) -> Option<I::Item>
where
    I: ParallelIterator,
    P: Fn(&I::Item) -> bool + Sync,
{
    let best = AtomicUsize::new(0);
    let reversed = AtomicBool::new(false);
    iter.drive_engine(FindLast {
        predicate,
        best: &best,
        reversed: &reversed,
    })
}

pub(crate) struct FindLast<'f, P> {
    predicate: &'f P,
    /// Front to back: one past the start of the rightmost batch that found
    /// a match (0: none yet). Back to front: the start (from the back) of
    /// the first batch that found one (`usize::MAX`: none yet).
    best: &'f AtomicUsize,
    /// Whether the driver runs the loop back to front (set by `reverse`
    /// before any folder exists).
    reversed: &'f AtomicBool,
}

impl<'f, T, P> Consumer<T> for FindLast<'f, P>
where
    T: Send,
    P: Fn(&T) -> bool + Sync,
{
    type Folder = FindLastFolder<'f, T, P>;
    type Result = Option<T>;
    fn folder(&self) -> Self::Folder {
        FindLastFolder {
            predicate: self.predicate,
            best: self.best,
            reversed: self.reversed.load(Ordering::Relaxed),
            item: None,
        }
    }
    fn reduce(&self, left: Option<T>, right: Option<T>) -> Option<T> {
        if self.reversed.load(Ordering::Relaxed) {
            // `left` comes later in the original order.
            left.or(right)
        } else {
            right.or(left)
        }
    }
    fn stop(&self, start: usize, end: usize) -> bool {
        let best = self.best.load(Ordering::Relaxed);
        if self.reversed.load(Ordering::Relaxed) {
            start > best
        } else {
            best > 0 && end < best
        }
    }
    fn options(&self) -> Options {
        Options::default()
    }
    fn eager(&self) -> bool {
        true
    }
    fn done(&self, result: &Option<T>) -> bool {
        self.reversed.load(Ordering::Relaxed) && result.is_some()
    }
    const REVERSIBLE: bool = true;
    fn reverse(&self) {
        self.best.store(usize::MAX, Ordering::Relaxed);
        self.reversed.store(true, Ordering::Relaxed);
    }
}

pub(crate) struct FindLastFolder<'f, T, P> {
    predicate: &'f P,
    best: &'f AtomicUsize,
    reversed: bool,
    item: Option<T>,
}

impl<T, P> Folder<T> for FindLastFolder<'_, T, P>
where
    P: Fn(&T) -> bool + Sync,
{
    type Result = Option<T>;
    fn consume<I: Iterator<Item = T>>(mut self, start: usize, mut items: I) -> Self {
        if self.reversed {
            // Items last first: the first match is the batch's last one.
            if self.item.is_none() && start <= self.best.load(Ordering::Relaxed) {
                self.item = items.find(self.predicate);
                if self.item.is_some() {
                    self.best.fetch_min(start, Ordering::Relaxed);
                }
            }
        } else if let Some(x) = items.filter(self.predicate).last() {
            self.item = Some(x);
            self.best
                .fetch_max(start.saturating_add(1), Ordering::Relaxed);
        }
        self
    }
    fn full(&self) -> bool {
        self.reversed && self.item.is_some()
    }
    fn complete(self) -> Option<T> {
        self.item
    }
}

/// `try_reduce` and `try_reduce_with`: the first failure seen stops every
/// piece and is the result. `None`: no item (`try_reduce_with` only).
pub(crate) fn try_reduce<I, T, ID, OP>(iter: I, identity: Option<&ID>, op: &OP) -> Option<I::Item>
where
    I: ParallelIterator,
    I::Item: Try<Output = T>,
    ID: Fn() -> T + Sync,
    OP: Fn(T, T) -> I::Item + Sync,
{
    let failed = AtomicBool::new(false);
    iter.drive_engine(TryReduce {
        identity,
        op,
        failed: &failed,
    })
}

pub(crate) struct TryReduce<'f, ID, OP> {
    /// `None` for `try_reduce_with`.
    identity: Option<&'f ID>,
    op: &'f OP,
    failed: &'f AtomicBool,
}

impl<ID, OP> Clone for TryReduce<'_, ID, OP> {
    fn clone(&self) -> Self {
        TryReduce {
            identity: self.identity,
            op: self.op,
            failed: self.failed,
        }
    }
}

impl<'f, R, T, ID, OP> Consumer<R> for TryReduce<'f, ID, OP>
where
    R: Try<Output = T> + Send,
    ID: Fn() -> T + Sync,
    OP: Fn(T, T) -> R + Sync,
{
    type Folder = TryReduceFolder<'f, R, ID, OP>;
    type Result = Option<R>;
    fn folder(&self) -> Self::Folder {
        TryReduceFolder {
            acc: ControlFlow::Continue(self.identity.map(|id| id())),
            c: self.clone(),
        }
    }
    fn reduce(&self, left: Option<R>, right: Option<R>) -> Option<R> {
        let (a, b) = match (left, right) {
            (Some(a), Some(b)) => (a, b),
            (a, b) => return a.or(b),
        };
        match (a.branch(), b.branch()) {
            (ControlFlow::Break(e), _) | (_, ControlFlow::Break(e)) => Some(R::from_residual(e)),
            (ControlFlow::Continue(x), ControlFlow::Continue(y)) => {
                let r = (self.op)(x, y);
                // Seen as failed by other pieces at their next batch.
                match r.branch() {
                    ControlFlow::Continue(v) => Some(R::from_output(v)),
                    ControlFlow::Break(e) => {
                        self.failed.store(true, Ordering::Relaxed);
                        Some(R::from_residual(e))
                    }
                }
            }
        }
    }
    fn stop(&self, _start: usize, _end: usize) -> bool {
        self.failed.load(Ordering::Relaxed)
    }
    fn options(&self) -> Options {
        Options::default()
    }
    fn eager(&self) -> bool {
        true
    }
    fn done(&self, result: &Option<R>) -> bool {
        matches!(result, Some(r) if r.failed())
    }
}

/// A run's state: failed, or the value so far (`None`: no item yet, for
/// `try_reduce_with`).
type TryAcc<R> = ControlFlow<<R as Try>::Residual, Option<<R as Try>::Output>>;

pub(crate) struct TryReduceFolder<'f, R: Try, ID, OP> {
    acc: TryAcc<R>,
    c: TryReduce<'f, ID, OP>,
}

impl<R, T, ID, OP> Folder<R> for TryReduceFolder<'_, R, ID, OP>
where
    R: Try<Output = T>,
    OP: Fn(T, T) -> R + Sync,
{
    type Result = Option<R>;
    fn consume<I: Iterator<Item = R>>(mut self, _start: usize, items: I) -> Self {
        let (op, failed) = (self.c.op, self.c.failed);
        for item in items {
            let ControlFlow::Continue(acc) = self.acc else {
                break;
            };
            let next = match acc {
                None => item.branch(),
                Some(a) => match item.branch() {
                    ControlFlow::Continue(v) => op(a, v).branch(),
                    ControlFlow::Break(e) => ControlFlow::Break(e),
                },
            };
            self.acc = match next {
                ControlFlow::Continue(v) => ControlFlow::Continue(Some(v)),
                ControlFlow::Break(e) => {
                    failed.store(true, Ordering::Relaxed);
                    ControlFlow::Break(e)
                }
            };
            if failed.load(Ordering::Relaxed) {
                break;
            }
        }
        self
    }
    fn full(&self) -> bool {
        self.acc.is_break() || self.c.failed.load(Ordering::Relaxed)
    }
    fn complete(self) -> Option<R> {
        match self.acc {
            ControlFlow::Break(e) => Some(R::from_residual(e)),
            ControlFlow::Continue(v) => v.map(R::from_output),
        }
    }
}
