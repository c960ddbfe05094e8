//! Adaptors that change how many items a unit yields, or that only pass
//! options down: `filter`, `filter_map`, `flat_map`, `flat_map_iter`,
//! `flatten`, `flatten_iter`, `chain`, `panic_fuse`, `schedule`, `strict`.
//! They work on the consumer side: each batch's iterator gets the matching
//! `std` adaptor. (`fold` and the `*_any` family are in `fold.rs`.)

use std::sync::atomic::{AtomicBool, Ordering};

use super::engine::{
    forward_consumer, forward_reverse, Consumer, Extent, Folder, Hints, Options, Piece, Schedule,
};
use super::indexed_adaptors::HintPiece;
use super::{IndexedParallelIterator, ParallelIterator};

pub use super::flat::{FlatMap, Flatten, FlattenIter};
pub use super::fold::{
    Fold, FoldWith, SkipAny, SkipAnyWhile, TakeAny, TakeAnyWhile, TryFold, TryFoldWith, WhileSome,
};

/// Declares an adaptor whose consumer applies `Iterator::$method(op)` to
/// every batch: the struct, its `ParallelIterator` impl (with
/// `$item`/`$bounds`), and its consumer and folder.
macro_rules! batch_adaptor {
    (
        $(#[$doc:meta])*
        $name:ident, $consumer:ident, $folder:ident, $method:ident, reversible $rev:literal,
        impl<$($p:ident),*> item $item:ty, where [$($bounds:tt)*],
        consumer<$t:ident $(, $x:ident)*> down $down:ty, where [$($cbounds:tt)*]
    ) => {
        $(#[$doc])*
        #[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
        #[derive(Clone)]
        pub struct $name<I, F> {
            base: I,
            op: F,
        }

        impl<I: std::fmt::Debug, F> std::fmt::Debug for $name<I, F> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("base", &self.base)
                    .finish_non_exhaustive()
            }
        }

        impl<I, F> $name<I, F> {
            pub(crate) fn new(base: I, op: F) -> Self {
                $name { base, op }
            }
        }

        impl<I, F, $($p),*> ParallelIterator for $name<I, F>
        where
            I: ParallelIterator,
            F: Sync + Send,
            $($bounds)*
        {
            type Item = $item;
            fn drive_engine<C: Consumer<$item>>(self, consumer: C) -> C::Result {
                let $name { base, op } = self;
                base.drive_engine($consumer { base: consumer, op: &op })
            }
        }

        struct $consumer<'f, C, F> {
            base: C,
            op: &'f F,
        }

        impl<'f, C, F, $t $(, $x)*> Consumer<$t> for $consumer<'f, C, F>
        where
            C: Consumer<$down>,
            F: Sync,
            $($cbounds)*
        {
            type Folder = $folder<'f, C::Folder, F>;
            type Result = C::Result;
            fn folder(&self) -> Self::Folder {
                $folder { base: self.base.folder(), op: self.op }
            }
            forward_consumer!();
            const REVERSIBLE: bool = $rev && C::REVERSIBLE;
            fn reverse(&self) {
                self.base.reverse()
            }
        }

        struct $folder<'f, FO, F> {
            base: FO,
            op: &'f F,
        }

        impl<'f, FO, F, $t $(, $x)*> Folder<$t> for $folder<'f, FO, F>
        where
            FO: Folder<$down>,
            $($cbounds)*
        {
            type Result = FO::Result;
            fn consume<It: Iterator<Item = $t>>(self, start: usize, items: It) -> Self {
                $folder { base: self.base.consume(start, items.$method(self.op)), op: self.op }
            }
            fn full(&self) -> bool {
                self.base.full()
            }
            fn complete(self) -> FO::Result {
                self.base.complete()
            }
        }
    };
}

batch_adaptor! {
    /// [`ParallelIterator::filter`]'s iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let f: terroir::iter::Filter<_, _> = (0..10).into_par_iter().filter(|x| x % 5 == 0);
    /// assert_eq!(f.collect::<Vec<_>>(), [0, 5]);
    /// ```
    Filter, FilterConsumer, FilterFolder, filter, reversible true,
    impl<> item I::Item, where [F: Fn(&I::Item) -> bool],
    consumer<T> down T, where [F: Fn(&T) -> bool]
}

batch_adaptor! {
    /// [`ParallelIterator::filter_map`]'s iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let f: terroir::iter::FilterMap<_, _> = ["1", "x", "3"].par_iter().filter_map(|s| s.parse::<i32>().ok());
    /// assert_eq!(f.collect::<Vec<_>>(), [1, 3]);
    /// ```
    FilterMap, FilterMapConsumer, FilterMapFolder, filter_map, reversible true,
    impl<R> item R, where [F: Fn(I::Item) -> Option<R>, R: Send],
    consumer<T, U> down U, where [F: Fn(T) -> Option<U>]
}

batch_adaptor! {
    /// [`ParallelIterator::flat_map_iter`]'s iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let f: terroir::iter::FlatMapIter<_, _> = (0..3).into_par_iter().flat_map_iter(|i| 0..i);
    /// assert_eq!(f.collect::<Vec<_>>(), [0, 0, 1]);
    /// ```
    FlatMapIter, FlatMapIterConsumer, FlatMapIterFolder, flat_map, reversible false,
    impl<SI> item SI::Item, where [F: Fn(I::Item) -> SI, SI: IntoIterator<Item: Send>],
    consumer<T, SI> down SI::Item, where [F: Fn(T) -> SI, SI: IntoIterator]
}

/// A consumer passing everything to `base` with positions moved by `by`
/// (the second iterator of a `chain`).
pub(crate) struct Shift<'c, C> {
    pub(crate) base: &'c C,
    pub(crate) by: usize,
}

impl<T, C: Consumer<T>> Consumer<T> for Shift<'_, C> {
    type Folder = ShiftFolder<C::Folder>;
    type Result = C::Result;
    fn folder(&self) -> Self::Folder {
        ShiftFolder {
            base: self.base.folder(),
            by: self.by,
        }
    }
    fn reduce(&self, left: C::Result, right: C::Result) -> C::Result {
        self.base.reduce(left, right)
    }
    fn stop(&self, start: usize, end: usize) -> bool {
        self.base
            .stop(start.saturating_add(self.by), end.saturating_add(self.by))
    }
    fn options(&self) -> Options {
        self.base.options()
    }
    fn eager(&self) -> bool {
        self.base.eager()
    }
    fn done(&self, result: &Self::Result) -> bool {
        self.base.done(result)
    }
}

pub(crate) struct ShiftFolder<FO> {
    base: FO,
    by: usize,
}

impl<T, FO: Folder<T>> Folder<T> for ShiftFolder<FO> {
    type Result = FO::Result;
    fn consume<I: Iterator<Item = T>>(self, start: usize, items: I) -> Self {
        ShiftFolder {
            base: self.base.consume(start.saturating_add(self.by), items),
            by: self.by,
        }
    }
    fn full(&self) -> bool {
        self.base.full()
    }
    fn complete(self) -> FO::Result {
        self.base.complete()
    }
}

/// [`ParallelIterator::chain`]'s iterator: the two loops run side by side
/// (the second one is a `join` continuation), the results in order.
///
/// ```
/// use terroir::prelude::*;
/// let c: terroir::iter::Chain<_, _> = (0..2).into_par_iter().chain(5..7);
/// assert_eq!(c.collect::<Vec<_>>(), [0, 1, 5, 6]);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct Chain<A, B> {
    a: A,
    b: B,
}

impl<A, B> Chain<A, B> {
    pub(crate) fn new(a: A, b: B) -> Self {
        Chain { a, b }
    }
}

impl<A, B> ParallelIterator for Chain<A, B>
where
    A: ParallelIterator,
    B: ParallelIterator<Item = A::Item>,
{
    type Item = A::Item;
    fn drive_engine<C: Consumer<A::Item>>(self, consumer: C) -> C::Result {
        let Chain { a, b } = self;
        // Positions of `b` come after all of `a`'s: exactly when `a`'s
        // length is known, else far enough.
        let by = a.opt_len().unwrap_or(usize::MAX / 2);
        let c = &consumer;
        let (ra, rb) = crate::join(
            || a.drive_engine(Shift { base: c, by: 0 }),
            || b.drive_engine(Shift { base: c, by }),
        );
        consumer.reduce(ra, rb)
    }
    fn opt_len(&self) -> Option<usize> {
        self.a.opt_len()?.checked_add(self.b.opt_len()?)
    }
}

impl<A, B> IndexedParallelIterator for Chain<A, B>
where
    A: IndexedParallelIterator,
    B: IndexedParallelIterator<Item = A::Item>,
{
    type Piece<'a>
        = ChainPiece<A::Piece<'a>, B::Piece<'a>>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        ChainPiece {
            a: self.a.piece(),
            b: self.b.piece(),
        }
    }
    fn len(&self) -> usize {
        self.a.len() + self.b.len()
    }
}

/// [`Chain`]'s piece: `a`'s units, then `b`'s.
pub struct ChainPiece<A, B> {
    a: A,
    b: B,
}

impl<A: Piece, B: Piece<Item = A::Item>> Piece for ChainPiece<A, B> {
    fn pure(&self) -> bool {
        self.a.pure() && self.b.pure()
    }
    type Item = A::Item;
    type Seq<'s>
        = std::iter::Chain<A::Seq<'s>, B::Seq<'s>>
    where
        Self: 's;
    type RevSeq<'s>
        = std::iter::Chain<B::RevSeq<'s>, A::RevSeq<'s>>
    where
        Self: 's;
    fn units(&self) -> usize {
        self.a.units() + self.b.units()
    }
    fn hints(&self) -> Hints {
        self.a.hints().and(self.b.hints())
    }
    fn layout(&self, out: &mut Vec<Extent>) {
        self.a.layout(out);
        let shift = self.a.units();
        let mut mine = Vec::new();
        self.b.layout(&mut mine);
        out.extend(mine.into_iter().map(|e| Extent {
            start: e.start + shift,
            end: e.end + shift,
            ..e
        }));
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let na = self.a.units();
        let (a1, a2) = self.a.split_at(mid.min(na));
        let (b1, b2) = self.b.split_at(mid.saturating_sub(na));
        (ChainPiece { a: a1, b: b1 }, ChainPiece { a: a2, b: b2 })
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        let na = n.min(self.a.units());
        self.a.front(na).chain(self.b.front(n - na))
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        let nb = n.min(self.b.units());
        self.b.back_rev(nb).chain(self.a.back_rev(n - nb))
    }
}

/// [`ParallelIterator::panic_fuse`]'s iterator: once a closure panics,
/// the other pieces stop at their next item (the panic still reaches the
/// caller when they have stopped).
///
/// ```
/// use terroir::prelude::*;
/// let p: terroir::iter::PanicFuse<_> = (0..4).into_par_iter().panic_fuse();
/// assert_eq!(p.sum::<i32>(), 6);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Debug)]
pub struct PanicFuse<I> {
    base: I,
    panicked: AtomicBool,
}

impl<I: Clone> Clone for PanicFuse<I> {
    fn clone(&self) -> Self {
        PanicFuse::new(self.base.clone())
    }
}

impl<I> PanicFuse<I> {
    pub(crate) fn new(base: I) -> Self {
        PanicFuse {
            base,
            panicked: AtomicBool::new(false),
        }
    }
}

/// Sets the flag if dropped while the thread panics.
struct FuseGuard<'a>(&'a AtomicBool);

impl Drop for FuseGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

impl<I: ParallelIterator> ParallelIterator for PanicFuse<I> {
    type Item = I::Item;
    fn drive_engine<C: Consumer<I::Item>>(self, consumer: C) -> C::Result {
        let PanicFuse { base, panicked } = self;
        base.drive_engine(FuseConsumer {
            base: consumer,
            panicked: &panicked,
        })
    }
    fn opt_len(&self) -> Option<usize> {
        self.base.opt_len()
    }
}

impl<I: IndexedParallelIterator> IndexedParallelIterator for PanicFuse<I> {
    type Piece<'a>
        = FusePiece<'a, I::Piece<'a>>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        FusePiece {
            base: self.base.piece(),
            panicked: &self.panicked,
        }
    }
    fn len(&self) -> usize {
        self.base.len()
    }
}

struct FuseConsumer<'f, C> {
    base: C,
    panicked: &'f AtomicBool,
}

impl<'f, T, C: Consumer<T>> Consumer<T> for FuseConsumer<'f, C> {
    type Folder = FuseFolder<'f, C::Folder>;
    type Result = C::Result;
    fn folder(&self) -> Self::Folder {
        FuseFolder {
            base: self.base.folder(),
            panicked: self.panicked,
        }
    }
    fn reduce(&self, left: C::Result, right: C::Result) -> C::Result {
        self.base.reduce(left, right)
    }
    fn stop(&self, start: usize, end: usize) -> bool {
        self.panicked.load(Ordering::Relaxed) || self.base.stop(start, end)
    }
    fn options(&self) -> Options {
        self.base.options()
    }
    fn eager(&self) -> bool {
        self.base.eager()
    }
    fn done(&self, result: &Self::Result) -> bool {
        self.base.done(result)
    }
    forward_reverse!(C, T);
}

struct FuseFolder<'f, FO> {
    base: FO,
    panicked: &'f AtomicBool,
}

impl<T, FO: Folder<T>> Folder<T> for FuseFolder<'_, FO> {
    type Result = FO::Result;
    fn consume<I: Iterator<Item = T>>(self, start: usize, items: I) -> Self {
        let panicked = self.panicked;
        let guard = FuseGuard(panicked);
        let base = self.base.consume(
            start,
            items.take_while(|_| !panicked.load(Ordering::Relaxed)),
        );
        drop(guard);
        FuseFolder { base, panicked }
    }
    fn full(&self) -> bool {
        self.panicked.load(Ordering::Relaxed) || self.base.full()
    }
    fn complete(self) -> FO::Result {
        self.base.complete()
    }
}

/// [`PanicFuse`]'s piece: no units left once a panic was seen.
pub struct FusePiece<'a, P> {
    base: P,
    panicked: &'a AtomicBool,
}

/// A batch of a [`FusePiece`]: ends once a panic was seen, and records
/// one that unwinds through it.
pub struct FuseSeq<'a, S> {
    items: S,
    panicked: &'a AtomicBool,
}

impl<S: Iterator> Iterator for FuseSeq<'_, S> {
    type Item = S::Item;
    fn next(&mut self) -> Option<S::Item> {
        if self.panicked.load(Ordering::Relaxed) {
            return None;
        }
        self.items.next()
    }
}

impl<S> Drop for FuseSeq<'_, S> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.panicked.store(true, Ordering::Relaxed);
        }
    }
}

impl<'a, P: Piece> Piece for FusePiece<'a, P> {
    fn pure(&self) -> bool {
        self.base.pure()
    }
    fn split_cheap(&self) -> bool {
        self.base.split_cheap()
    }
    type Item = P::Item;
    type Seq<'s>
        = FuseSeq<'a, P::Seq<'s>>
    where
        Self: 's;
    type RevSeq<'s>
        = FuseSeq<'a, P::RevSeq<'s>>
    where
        Self: 's;
    fn units(&self) -> usize {
        if self.panicked.load(Ordering::Relaxed) {
            0
        } else {
            self.base.units()
        }
    }
    fn hints(&self) -> Hints {
        self.base.hints()
    }
    fn layout(&self, out: &mut Vec<Extent>) {
        self.base.layout(out)
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let mid = mid.min(self.base.units());
        let (a, b) = self.base.split_at(mid);
        (
            FusePiece {
                base: a,
                panicked: self.panicked,
            },
            FusePiece {
                base: b,
                panicked: self.panicked,
            },
        )
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        FuseSeq {
            items: self.base.front(n),
            panicked: self.panicked,
        }
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        FuseSeq {
            items: self.base.back_rev(n),
            panicked: self.panicked,
        }
    }
}

/// The iterator of [`ParallelIterator::schedule`] and
/// [`ParallelIterator::strict`]: the same items, with the loop options
/// set; indexed when its base is. Zipped, either side's options apply.
///
/// ```
/// use terroir::prelude::*;
/// use terroir::iter::Schedule;
/// let s: terroir::iter::Scheduled<_> = (0..100).into_par_iter().schedule(Schedule::Static);
/// assert_eq!(s.map(|x| x * 2).collect::<Vec<_>>()[99], 198);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct Scheduled<I> {
    base: I,
    options: Options,
}

impl<I> Scheduled<I> {
    pub(crate) fn new(base: I, schedule: Option<Schedule>, strict: bool) -> Self {
        Scheduled {
            base,
            options: Options { schedule, strict },
        }
    }
}

impl<I: ParallelIterator> ParallelIterator for Scheduled<I> {
    type Item = I::Item;
    fn drive_engine<C: Consumer<I::Item>>(self, consumer: C) -> C::Result {
        self.base.drive_engine(WithOptions {
            base: consumer,
            options: self.options,
        })
    }
    fn opt_len(&self) -> Option<usize> {
        self.base.opt_len()
    }
}

impl<I: IndexedParallelIterator> IndexedParallelIterator for Scheduled<I> {
    type Piece<'a>
        = HintPiece<I::Piece<'a>>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        HintPiece {
            base: self.base.piece(),
            hints: Hints {
                options: self.options,
                ..Hints::NONE
            },
        }
    }
    fn len(&self) -> usize {
        self.base.len()
    }
}

/// A consumer that adds loop options.
struct WithOptions<C> {
    base: C,
    options: Options,
}

impl<T, C: Consumer<T>> Consumer<T> for WithOptions<C> {
    type Folder = C::Folder;
    type Result = C::Result;
    fn folder(&self) -> C::Folder {
        self.base.folder()
    }
    fn reduce(&self, left: C::Result, right: C::Result) -> C::Result {
        self.base.reduce(left, right)
    }
    fn stop(&self, start: usize, end: usize) -> bool {
        self.base.stop(start, end)
    }
    fn options(&self) -> Options {
        self.options.or(self.base.options())
    }
    fn eager(&self) -> bool {
        self.base.eager()
    }
    fn done(&self, result: &Self::Result) -> bool {
        self.base.done(result)
    }
    forward_reverse!(C, T);
}
