//! The adaptors with per-run state: `map_with` (a clone of the caller's
//! value per run) and `map_init` (a value made by `init` per run). Each
//! works on the consumer side and, over an indexed iterator, as a
//! [`Piece`] too (see `map.rs` for the stateless ones).

use std::sync::Mutex;

use super::engine::{forward_consumer, forward_piece, forward_reverse, Consumer, Folder, Piece};
use super::map::adaptor;
use super::{IndexedParallelIterator, ParallelIterator};
/// A batch of a piece with per-run state: `f(&mut state, item)`.
pub struct StateMap<'s, S, T, F> {
    items: S,
    state: &'s mut T,
    f: &'s F,
}

impl<S, T, F, R> Iterator for StateMap<'_, S, T, F>
where
    S: Iterator,
    F: Fn(&mut T, S::Item) -> R,
{
    type Item = R;
    fn next(&mut self) -> Option<R> {
        let x = self.items.next()?;
        Some((self.f)(self.state, x))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.items.size_hint()
    }
    fn fold<B, G>(self, init: B, mut g: G) -> B
    where
        G: FnMut(B, R) -> B,
    {
        let (state, f) = (self.state, self.f);
        self.items.fold(init, |acc, x| g(acc, f(state, x)))
    }
}

adaptor! {
    /// [`ParallelIterator::map_with`]'s iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v: Vec<u32> = (0..3u32).into_par_iter().map_with(10u32, |k, x| x + *k).collect();
    /// assert_eq!(v, [10, 11, 12]);
    /// ```
    MapWith<I, T, F> { base: I, item: T, map_op: F }
}

impl<I, T, F, R> ParallelIterator for MapWith<I, T, F>
where
    I: ParallelIterator,
    T: Send + Clone,
    F: Fn(&mut T, I::Item) -> R + Sync + Send,
    R: Send,
{
    type Item = R;
    fn drive_engine<C: Consumer<R>>(self, consumer: C) -> C::Result {
        let MapWith { base, item, map_op } = self;
        // A lock, so that `T` need not be `Sync`: taken once per run, to
        // clone the value.
        let item = Mutex::new(item);
        base.drive_engine(MapWithConsumer {
            base: consumer,
            item: &item,
            f: &map_op,
        })
    }
    fn opt_len(&self) -> Option<usize> {
        self.base.opt_len()
    }
}

impl<I, T, F, R> IndexedParallelIterator for MapWith<I, T, F>
where
    I: IndexedParallelIterator,
    T: Send + Clone,
    F: Fn(&mut T, I::Item) -> R + Sync + Send,
    R: Send,
{
    type Piece<'a>
        = MapWithPiece<'a, I::Piece<'a>, T, F>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        MapWithPiece {
            base: self.base.piece(),
            item: self.item.clone(),
            f: &self.map_op,
        }
    }
    fn len(&self) -> usize {
        self.base.len()
    }
}

struct MapWithConsumer<'f, C, T, F> {
    base: C,
    item: &'f Mutex<T>,
    f: &'f F,
}

impl<'f, X, R, C, T, F> Consumer<X> for MapWithConsumer<'f, C, T, F>
where
    C: Consumer<R>,
    T: Send + Clone,
    F: Fn(&mut T, X) -> R + Sync,
{
    type Folder = StateFolder<'f, C::Folder, T, F>;
    type Result = C::Result;
    fn folder(&self) -> Self::Folder {
        let item = self.item.lock().unwrap_or_else(|e| e.into_inner()).clone();
        StateFolder {
            base: self.base.folder(),
            state: item,
            f: self.f,
        }
    }
    forward_consumer!();
    forward_reverse!(C, R);
}

/// The folder of `map_with` and `map_init`: the run's state.
struct StateFolder<'f, FO, T, F> {
    base: FO,
    state: T,
    f: &'f F,
}

impl<X, R, FO, T, F> Folder<X> for StateFolder<'_, FO, T, F>
where
    FO: Folder<R>,
    F: Fn(&mut T, X) -> R,
{
    type Result = FO::Result;
    fn consume<I: Iterator<Item = X>>(self, start: usize, items: I) -> Self {
        let StateFolder { base, mut state, f } = self;
        let base = base.consume(start, items.map(|x| f(&mut state, x)));
        StateFolder { base, state, f }
    }
    fn full(&self) -> bool {
        self.base.full()
    }
    fn complete(self) -> FO::Result {
        self.base.complete()
    }
}

/// [`MapWith`]'s piece: a split gives the second half a clone.
pub struct MapWithPiece<'f, P, T, F> {
    base: P,
    item: T,
    f: &'f F,
}

impl<'f, P, T, F, R> Piece for MapWithPiece<'f, P, T, F>
where
    P: Piece,
    T: Send + Clone,
    F: Fn(&mut T, P::Item) -> R + Sync,
{
    type Item = R;
    type Seq<'s>
        = StateMap<'s, P::Seq<'s>, T, F>
    where
        Self: 's;
    type RevSeq<'s>
        = StateMap<'s, P::RevSeq<'s>, T, F>
    where
        Self: 's;
    forward_piece!();
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (a, b) = self.base.split_at(mid);
        let item = self.item.clone();
        (
            MapWithPiece {
                base: a,
                item: self.item,
                f: self.f,
            },
            MapWithPiece {
                base: b,
                item,
                f: self.f,
            },
        )
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        StateMap {
            items: self.base.front(n),
            state: &mut self.item,
            f: self.f,
        }
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        StateMap {
            items: self.base.back_rev(n),
            state: &mut self.item,
            f: self.f,
        }
    }
}

adaptor! {
    /// [`ParallelIterator::map_init`]'s iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v: Vec<usize> = (0..3usize).into_par_iter().map_init(|| 5usize, |k, x| x * *k).collect();
    /// assert_eq!(v, [0, 5, 10]);
    /// ```
    MapInit<I, INIT, F> { base: I, init: INIT, map_op: F }
}

impl<I, INIT, T, F, R> ParallelIterator for MapInit<I, INIT, F>
where
    I: ParallelIterator,
    INIT: Fn() -> T + Sync + Send,
    F: Fn(&mut T, I::Item) -> R + Sync + Send,
    R: Send,
{
    type Item = R;
    fn drive_engine<C: Consumer<R>>(self, consumer: C) -> C::Result {
        let MapInit { base, init, map_op } = self;
        base.drive_engine(MapInitConsumer {
            base: consumer,
            init: &init,
            f: &map_op,
        })
    }
    fn opt_len(&self) -> Option<usize> {
        self.base.opt_len()
    }
}

impl<I, INIT, T, F, R> IndexedParallelIterator for MapInit<I, INIT, F>
where
    I: IndexedParallelIterator,
    INIT: Fn() -> T + Sync + Send,
    F: Fn(&mut T, I::Item) -> R + Sync + Send,
    R: Send,
{
    type Piece<'a>
        = MapInitPiece<'a, I::Piece<'a>, T, INIT, F>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        MapInitPiece {
            base: self.base.piece(),
            state: None,
            init: &self.init,
            f: &self.map_op,
        }
    }
    fn len(&self) -> usize {
        self.base.len()
    }
}

struct MapInitConsumer<'f, C, INIT, F> {
    base: C,
    init: &'f INIT,
    f: &'f F,
}

impl<'f, X, R, C, INIT, T, F> Consumer<X> for MapInitConsumer<'f, C, INIT, F>
where
    C: Consumer<R>,
    INIT: Fn() -> T + Sync,
    F: Fn(&mut T, X) -> R + Sync,
{
    type Folder = StateFolder<'f, C::Folder, T, F>;
    type Result = C::Result;
    fn folder(&self) -> Self::Folder {
        StateFolder {
            base: self.base.folder(),
            state: (self.init)(),
            f: self.f,
        }
    }
    forward_consumer!();
    forward_reverse!(C, R);
}

/// [`MapInit`]'s piece: the state is made by the first batch of a run and
/// dropped when the piece is split (both halves make their own), so a
/// piece that holds a state never leaves its thread.
pub struct MapInitPiece<'f, P, T, INIT, F> {
    base: P,
    state: Option<T>,
    init: &'f INIT,
    f: &'f F,
}

// SAFETY: `state` is `Some` only on the thread that runs the piece: it is
// made by `front`/`back_rev` there, and `split_at` (after which the driver
// may hand a half to another thread) drops it first. The driver moves a
// piece to another thread only before its first batch (the whole loop,
// or a node or static share cut before anything ran) or as a half of a
// split, so the `T` (which need not be `Send`, as in rayon) never moves.
unsafe impl<P: Send, T, INIT: Sync, F: Sync> Send for MapInitPiece<'_, P, T, INIT, F> {}

impl<'f, P, T, INIT, F, R> Piece for MapInitPiece<'f, P, T, INIT, F>
where
    P: Piece,
    INIT: Fn() -> T + Sync,
    F: Fn(&mut T, P::Item) -> R + Sync,
{
    type Item = R;
    type Seq<'s>
        = StateMap<'s, P::Seq<'s>, T, F>
    where
        Self: 's;
    type RevSeq<'s>
        = StateMap<'s, P::RevSeq<'s>, T, F>
    where
        Self: 's;
    forward_piece!();
    fn split_at(self, mid: usize) -> (Self, Self) {
        let MapInitPiece { base, init, f, .. } = self;
        let (a, b) = base.split_at(mid);
        let half = |base| MapInitPiece {
            base,
            state: None,
            init,
            f,
        };
        (half(a), half(b))
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        let init = self.init;
        StateMap {
            items: self.base.front(n),
            state: self.state.get_or_insert_with(init),
            f: self.f,
        }
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        let init = self.init;
        StateMap {
            items: self.base.back_rev(n),
            state: self.state.get_or_insert_with(init),
            f: self.f,
        }
    }
}
