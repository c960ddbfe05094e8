//! The stateless one-item-per-item adaptors: `map`, `inspect`, `update`,
//! `cloned`, `copied` (`map_with` and `map_init`, which keep state per
//! run, are in `map_state.rs`). Each works on the consumer side (an
//! adaptor on every batch's iterator) and, over an indexed iterator, as a
//! [`Piece`] too (for `zip`, `enumerate`, `rev`, …).

use super::engine::{forward_consumer, forward_piece, forward_reverse, Consumer, Folder, Piece};
use super::{IndexedParallelIterator, ParallelIterator};

/// Declares an adaptor struct with its constructor.
macro_rules! adaptor {
    ($(#[$doc:meta])* $name:ident<$($p:ident),*> { $($field:ident: $ty:ty),* }) => {
        $(#[$doc])*
        #[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
        #[derive(Clone)]
        pub struct $name<$($p),*> {
            $($field: $ty),*
        }
        impl<$($p),*> $name<$($p),*> {
            pub(crate) fn new($($field: $ty),*) -> Self {
                $name { $($field),* }
            }
        }
        /// Shows the base iterator (closures have no `Debug`).
        impl<$($p),*> std::fmt::Debug for $name<$($p),*>
        where
            I: std::fmt::Debug,
        {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("base", &self.base)
                    .finish_non_exhaustive()
            }
        }
    };
}
pub(super) use adaptor;

adaptor! {
    /// [`ParallelIterator::map`]'s iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let m: terroir::iter::Map<_, _> = (0..4).into_par_iter().map(|x| x + 1);
    /// assert_eq!(m.sum::<i32>(), 10);
    /// ```
    Map<I, F> { base: I, map_op: F }
}

impl<I, F, R> ParallelIterator for Map<I, F>
where
    I: ParallelIterator,
    F: Fn(I::Item) -> R + Sync + Send,
    R: Send,
{
    type Item = R;
    fn drive_engine<C: Consumer<R>>(self, consumer: C) -> C::Result {
        let Map { base, map_op } = self;
        base.drive_engine(MapConsumer {
            base: consumer,
            f: &map_op,
        })
    }
    fn opt_len(&self) -> Option<usize> {
        self.base.opt_len()
    }
}

impl<I, F, R> IndexedParallelIterator for Map<I, F>
where
    I: IndexedParallelIterator,
    F: Fn(I::Item) -> R + Sync + Send,
    R: Send,
{
    type Piece<'a>
        = MapPiece<I::Piece<'a>, &'a F>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        MapPiece {
            base: self.base.piece(),
            f: &self.map_op,
        }
    }
    fn len(&self) -> usize {
        self.base.len()
    }
}

struct MapConsumer<'f, C, F> {
    base: C,
    f: &'f F,
}

impl<'f, T, R, C, F> Consumer<T> for MapConsumer<'f, C, F>
where
    C: Consumer<R>,
    F: Fn(T) -> R + Sync,
{
    type Folder = MapFolder<'f, C::Folder, F>;
    type Result = C::Result;
    fn folder(&self) -> Self::Folder {
        MapFolder {
            base: self.base.folder(),
            f: self.f,
        }
    }
    forward_consumer!();
    forward_reverse!(C, R);
}

struct MapFolder<'f, FO, F> {
    base: FO,
    f: &'f F,
}

impl<T, R, FO, F> Folder<T> for MapFolder<'_, FO, F>
where
    FO: Folder<R>,
    F: Fn(T) -> R,
{
    type Result = FO::Result;
    fn consume<I: Iterator<Item = T>>(self, start: usize, items: I) -> Self {
        MapFolder {
            base: self.base.consume(start, items.map(self.f)),
            f: self.f,
        }
    }
    fn full(&self) -> bool {
        self.base.full()
    }
    fn complete(self) -> FO::Result {
        self.base.complete()
    }
}

/// [`Map`]'s piece.
pub struct MapPiece<P, F> {
    base: P,
    f: F,
}

impl<'f, P, F, R> Piece for MapPiece<P, &'f F>
where
    P: Piece,
    F: Fn(P::Item) -> R + Sync,
{
    type Item = R;
    type Seq<'s>
        = std::iter::Map<P::Seq<'s>, &'f F>
    where
        Self: 's;
    type RevSeq<'s>
        = std::iter::Map<P::RevSeq<'s>, &'f F>
    where
        Self: 's;
    forward_piece!(cheap);
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (a, b) = self.base.split_at(mid);
        (
            MapPiece { base: a, f: self.f },
            MapPiece { base: b, f: self.f },
        )
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        self.base.front(n).map(self.f)
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        self.base.back_rev(n).map(self.f)
    }
}

adaptor! {
    /// [`ParallelIterator::inspect`]'s iterator.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use terroir::prelude::*;
    /// let seen = AtomicUsize::new(0);
    /// let sum: i32 = (0..10).into_par_iter().inspect(|_| { seen.fetch_add(1, Ordering::Relaxed); }).sum();
    /// assert_eq!((sum, seen.into_inner()), (45, 10));
    /// ```
    Inspect<I, F> { base: I, inspect_op: F }
}

impl<I, F> ParallelIterator for Inspect<I, F>
where
    I: ParallelIterator,
    F: Fn(&I::Item) + Sync + Send,
{
    type Item = I::Item;
    fn drive_engine<C: Consumer<I::Item>>(self, consumer: C) -> C::Result {
        let Inspect { base, inspect_op } = self;
        base.drive_engine(WrapConsumer {
            base: consumer,
            f: &inspect_op,
            how: InspectHow,
        })
    }
    fn opt_len(&self) -> Option<usize> {
        self.base.opt_len()
    }
}

impl<I, F> IndexedParallelIterator for Inspect<I, F>
where
    I: IndexedParallelIterator,
    F: Fn(&I::Item) + Sync + Send,
{
    type Piece<'a>
        = InspectPiece<I::Piece<'a>, &'a F>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        InspectPiece {
            base: self.base.piece(),
            f: &self.inspect_op,
        }
    }
    fn len(&self) -> usize {
        self.base.len()
    }
}

/// A consumer that changes each batch in place (`inspect`, `update`).
struct WrapConsumer<'f, C, F, H> {
    base: C,
    f: &'f F,
    how: H,
}

#[derive(Clone, Copy)]
struct InspectHow;
#[derive(Clone, Copy)]
struct UpdateHow;

impl<'f, T, C, F> Consumer<T> for WrapConsumer<'f, C, F, InspectHow>
where
    C: Consumer<T>,
    F: Fn(&T) + Sync,
{
    type Folder = WrapFolder<'f, C::Folder, F, InspectHow>;
    type Result = C::Result;
    fn folder(&self) -> Self::Folder {
        WrapFolder {
            base: self.base.folder(),
            f: self.f,
            how: self.how,
        }
    }
    forward_consumer!();
    forward_reverse!(C, T);
}

impl<'f, T, C, F> Consumer<T> for WrapConsumer<'f, C, F, UpdateHow>
where
    C: Consumer<T>,
    F: Fn(&mut T) + Sync,
{
    type Folder = WrapFolder<'f, C::Folder, F, UpdateHow>;
    type Result = C::Result;
    fn folder(&self) -> Self::Folder {
        WrapFolder {
            base: self.base.folder(),
            f: self.f,
            how: self.how,
        }
    }
    forward_consumer!();
    forward_reverse!(C, T);
}

struct WrapFolder<'f, FO, F, H> {
    base: FO,
    f: &'f F,
    how: H,
}

impl<T, FO, F> Folder<T> for WrapFolder<'_, FO, F, InspectHow>
where
    FO: Folder<T>,
    F: Fn(&T),
{
    type Result = FO::Result;
    fn consume<I: Iterator<Item = T>>(self, start: usize, items: I) -> Self {
        WrapFolder {
            base: self.base.consume(start, items.inspect(self.f)),
            f: self.f,
            how: self.how,
        }
    }
    fn full(&self) -> bool {
        self.base.full()
    }
    fn complete(self) -> FO::Result {
        self.base.complete()
    }
}

impl<T, FO, F> Folder<T> for WrapFolder<'_, FO, F, UpdateHow>
where
    FO: Folder<T>,
    F: Fn(&mut T),
{
    type Result = FO::Result;
    fn consume<I: Iterator<Item = T>>(self, start: usize, items: I) -> Self {
        let f = self.f;
        WrapFolder {
            base: self.base.consume(
                start,
                items.map(|mut x| {
                    f(&mut x);
                    x
                }),
            ),
            f,
            how: self.how,
        }
    }
    fn full(&self) -> bool {
        self.base.full()
    }
    fn complete(self) -> FO::Result {
        self.base.complete()
    }
}

/// [`Inspect`]'s piece.
pub struct InspectPiece<P, F> {
    base: P,
    f: F,
}

impl<'f, P, F> Piece for InspectPiece<P, &'f F>
where
    P: Piece,
    F: Fn(&P::Item) + Sync,
{
    type Item = P::Item;
    type Seq<'s>
        = std::iter::Inspect<P::Seq<'s>, &'f F>
    where
        Self: 's;
    type RevSeq<'s>
        = std::iter::Inspect<P::RevSeq<'s>, &'f F>
    where
        Self: 's;
    forward_piece!(cheap);
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (a, b) = self.base.split_at(mid);
        (
            InspectPiece { base: a, f: self.f },
            InspectPiece { base: b, f: self.f },
        )
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        self.base.front(n).inspect(self.f)
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        self.base.back_rev(n).inspect(self.f)
    }
}

adaptor! {
    /// [`ParallelIterator::update`]'s iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v: Vec<i32> = (0..3).into_par_iter().update(|x| *x *= 2).collect();
    /// assert_eq!(v, [0, 2, 4]);
    /// ```
    Update<I, F> { base: I, update_op: F }
}

impl<I, F> ParallelIterator for Update<I, F>
where
    I: ParallelIterator,
    F: Fn(&mut I::Item) + Sync + Send,
{
    type Item = I::Item;
    fn drive_engine<C: Consumer<I::Item>>(self, consumer: C) -> C::Result {
        let Update { base, update_op } = self;
        base.drive_engine(WrapConsumer {
            base: consumer,
            f: &update_op,
            how: UpdateHow,
        })
    }
    fn opt_len(&self) -> Option<usize> {
        self.base.opt_len()
    }
}

impl<I, F> IndexedParallelIterator for Update<I, F>
where
    I: IndexedParallelIterator,
    F: Fn(&mut I::Item) + Sync + Send,
{
    type Piece<'a>
        = UpdatePiece<I::Piece<'a>, &'a F>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        UpdatePiece {
            base: self.base.piece(),
            f: &self.update_op,
        }
    }
    fn len(&self) -> usize {
        self.base.len()
    }
}

/// [`Update`]'s piece.
pub struct UpdatePiece<P, F> {
    base: P,
    f: F,
}

/// A batch of an [`UpdatePiece`].
pub struct UpdateSeq<'f, S, F> {
    items: S,
    f: &'f F,
}

impl<S, F> Iterator for UpdateSeq<'_, S, F>
where
    S: Iterator,
    F: Fn(&mut S::Item),
{
    type Item = S::Item;
    fn next(&mut self) -> Option<S::Item> {
        let mut x = self.items.next()?;
        (self.f)(&mut x);
        Some(x)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.items.size_hint()
    }
    fn fold<B, G>(self, init: B, mut g: G) -> B
    where
        G: FnMut(B, S::Item) -> B,
    {
        let f = self.f;
        self.items.fold(init, |acc, mut x| {
            f(&mut x);
            g(acc, x)
        })
    }
}

impl<'f, P, F> Piece for UpdatePiece<P, &'f F>
where
    P: Piece,
    F: Fn(&mut P::Item) + Sync,
{
    type Item = P::Item;
    type Seq<'s>
        = UpdateSeq<'f, P::Seq<'s>, F>
    where
        Self: 's;
    type RevSeq<'s>
        = UpdateSeq<'f, P::RevSeq<'s>, F>
    where
        Self: 's;
    forward_piece!(cheap);
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (a, b) = self.base.split_at(mid);
        (
            UpdatePiece { base: a, f: self.f },
            UpdatePiece { base: b, f: self.f },
        )
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        UpdateSeq {
            items: self.base.front(n),
            f: self.f,
        }
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        UpdateSeq {
            items: self.base.back_rev(n),
            f: self.f,
        }
    }
}

adaptor! {
    /// [`ParallelIterator::cloned`]'s iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let v = vec![String::from("a"), String::from("b")];
    /// let w: Vec<String> = v.par_iter().cloned().collect();
    /// assert_eq!(v, w);
    /// ```
    Cloned<I> { base: I }
}

adaptor! {
    /// [`ParallelIterator::copied`]'s iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// assert_eq!([1u8, 2, 3].par_iter().copied().map(u32::from).sum::<u32>(), 6);
    /// ```
    Copied<I> { base: I }
}

macro_rules! clone_like {
    ($name:ident, $piece:ident, $bound:ident, $std:ident, $method:ident, $f:expr) => {
        impl<'a, T, I> ParallelIterator for $name<I>
        where
            I: ParallelIterator<Item = &'a T>,
            T: 'a + $bound + Send,
        {
            type Item = T;
            fn drive_engine<C: Consumer<T>>(self, consumer: C) -> C::Result {
                let f: fn(&T) -> T = $f;
                self.base.drive_engine(MapConsumer {
                    base: consumer,
                    f: &f,
                })
            }
            fn opt_len(&self) -> Option<usize> {
                self.base.opt_len()
            }
        }

        impl<'a, T, I> IndexedParallelIterator for $name<I>
        where
            I: IndexedParallelIterator<Item = &'a T>,
            T: 'a + $bound + Send,
        {
            type Piece<'b>
                = $piece<I::Piece<'b>>
            where
                Self: 'b;
            fn piece(&mut self) -> Self::Piece<'_> {
                $piece {
                    base: self.base.piece(),
                }
            }
            fn len(&self) -> usize {
                self.base.len()
            }
        }

        #[doc = concat!("[`", stringify!($name), "`]'s piece.")]
        pub struct $piece<P> {
            base: P,
        }

        impl<'a, T, P> Piece for $piece<P>
        where
            P: Piece<Item = &'a T>,
            T: 'a + $bound,
        {
            type Item = T;
            type Seq<'s>
                = std::iter::$std<P::Seq<'s>>
            where
                Self: 's;
            type RevSeq<'s>
                = std::iter::$std<P::RevSeq<'s>>
            where
                Self: 's;
            forward_piece!(cheap);
            fn split_at(self, mid: usize) -> (Self, Self) {
                let (a, b) = self.base.split_at(mid);
                ($piece { base: a }, $piece { base: b })
            }
            fn front(&mut self, n: usize) -> Self::Seq<'_> {
                self.base.front(n).$method()
            }
            fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
                self.base.back_rev(n).$method()
            }
        }
    };
}

clone_like!(Cloned, ClonedPiece, Clone, Cloned, cloned, T::clone);
clone_like!(Copied, CopiedPiece, Copy, Copied, copied, |x| *x);
