//! Small sources: [`empty`], [`once`], [`repeat_n`], and
//! [`ParallelBridge`] (a sequential iterator fed to the pool).

use std::sync::Mutex;

use super::engine::{in_worker, Consumer, Folder, Piece};
use super::indexed::drive_piece;
use super::option;
use super::{IndexedParallelIterator, ParallelIterator};

/// A parallel iterator with no items.
///
/// ```
/// use terroir::prelude::*;
/// assert_eq!(terroir::iter::empty::<i32>().sum::<i32>(), 0);
/// ```
pub fn empty<T: Send>() -> Empty<T> {
    Empty(std::marker::PhantomData)
}

/// [`empty`]'s iterator.
#[derive(Clone, Debug)]
pub struct Empty<T>(std::marker::PhantomData<fn() -> T>);

impl<T: Send> ParallelIterator for Empty<T> {
    type Item = T;
    fn drive_engine<C: Consumer<T>>(self, consumer: C) -> C::Result {
        consumer.folder().complete()
    }
    fn opt_len(&self) -> Option<usize> {
        Some(0)
    }
}

impl<T: Send> IndexedParallelIterator for Empty<T> {
    type Piece<'a>
        = EmptyPiece<T>
    where
        Self: 'a;
    fn piece(&mut self) -> EmptyPiece<T> {
        EmptyPiece(std::marker::PhantomData)
    }
    fn len(&self) -> usize {
        0
    }
}

/// [`Empty`]'s piece.
pub struct EmptyPiece<T>(std::marker::PhantomData<fn() -> T>);

impl<T: Send> Piece for EmptyPiece<T> {
    fn pure(&self) -> bool {
        true
    }
    type Item = T;
    type Seq<'s>
        = std::iter::Empty<T>
    where
        Self: 's;
    type RevSeq<'s>
        = std::iter::Empty<T>
    where
        Self: 's;
    fn units(&self) -> usize {
        0
    }
    fn split_at(self, _mid: usize) -> (Self, Self) {
        (self, EmptyPiece(std::marker::PhantomData))
    }
    fn front(&mut self, _n: usize) -> std::iter::Empty<T> {
        std::iter::empty()
    }
    fn back_rev(&mut self, _n: usize) -> std::iter::Empty<T> {
        std::iter::empty()
    }
}

/// A parallel iterator with one item.
///
/// ```
/// use terroir::prelude::*;
/// let v: Vec<i32> = (0..2).into_par_iter().chain(terroir::iter::once(9)).collect();
/// assert_eq!(v, [0, 1, 9]);
/// ```
pub fn once<T: Send>(item: T) -> Once<T> {
    option::IntoIter::new(Some(item))
}

/// [`once`]'s iterator.
pub type Once<T> = option::IntoIter<T>;

/// Endless clones of `element` (rayon's `repeat`): bound it with its own
/// [`take`](Repeat::take) or [`zip`](Repeat::zip), or stop it with a
/// search (`find_any`, `take_any`, …).
///
/// ```
/// use terroir::prelude::*;
/// let v: Vec<(char, i32)> = terroir::iter::repeat('x').zip(0..3).collect();
/// assert_eq!(v, [('x', 0), ('x', 1), ('x', 2)]);
/// assert_eq!(terroir::iter::repeat(7).take_any(3).count(), 3);
/// ```
pub fn repeat<T: Clone + Send>(element: T) -> Repeat<T> {
    Repeat { element }
}

/// [`repeat`]'s iterator.
#[derive(Clone, Debug)]
pub struct Repeat<T> {
    element: T,
}

impl<T: Clone + Send> Repeat<T> {
    /// The first `n` items: [`repeat_n`].
    pub fn take(self, n: usize) -> RepeatN<T> {
        repeat_n(self.element, n)
    }

    /// Pairs the items with those of `zip_op`, for its length.
    pub fn zip<Z>(self, zip_op: Z) -> super::Zip<RepeatN<T>, Z::Iter>
    where
        Z: super::IntoParallelIterator<Iter: IndexedParallelIterator>,
    {
        let z = zip_op.into_par_iter();
        let n = z.len();
        self.take(n).zip(z)
    }
}

impl<T: Clone + Send> ParallelIterator for Repeat<T> {
    type Item = T;
    fn drive_engine<C: Consumer<T>>(self, consumer: C) -> C::Result {
        // As many items as positions (2^64 - 1): endless in practice.
        super::engine::run(
            RepeatPiece {
                element: Some(self.element),
                count: usize::MAX,
            },
            consumer,
        )
    }
}

/// A parallel iterator of `n` clones of `element` (the last item is
/// `element` itself; with `n == 0` it is dropped at once).
///
/// ```
/// use terroir::prelude::*;
/// let v: Vec<(usize, char)> = (0..3).into_par_iter().zip(terroir::iter::repeat_n('x', 2)).collect();
/// assert_eq!(v, [(0, 'x'), (1, 'x')]);
/// ```
pub fn repeat_n<T: Clone + Send>(element: T, n: usize) -> RepeatN<T> {
    RepeatN {
        element: (n > 0).then_some(element),
        count: n,
    }
}

/// rayon's older name of [`repeat_n`].
#[deprecated(note = "use `repeat_n`")]
pub fn repeatn<T: Clone + Send>(element: T, n: usize) -> RepeatN<T> {
    repeat_n(element, n)
}

/// [`repeat_n`]'s iterator.
#[derive(Clone, Debug)]
pub struct RepeatN<T> {
    element: Option<T>,
    count: usize,
}

impl<T: Clone + Send> ParallelIterator for RepeatN<T> {
    type Item = T;
    fn drive_engine<C: Consumer<T>>(self, consumer: C) -> C::Result {
        drive_piece(self, consumer)
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.count)
    }
}

impl<T: Clone + Send> IndexedParallelIterator for RepeatN<T> {
    type Piece<'a>
        = RepeatPiece<T>
    where
        Self: 'a;
    fn piece(&mut self) -> RepeatPiece<T> {
        RepeatPiece {
            element: self.element.take(),
            count: std::mem::take(&mut self.count),
        }
    }
    fn len(&self) -> usize {
        self.count
    }
}

/// [`RepeatN`]'s piece: `count` items, `element` (`None` when empty).
pub struct RepeatPiece<T> {
    element: Option<T>,
    count: usize,
}

impl<T: Clone + Send> Piece for RepeatPiece<T> {
    type Item = T;
    type Seq<'s>
        = RepeatSeq<T>
    where
        Self: 's;
    type RevSeq<'s>
        = RepeatSeq<T>
    where
        Self: 's;
    fn units(&self) -> usize {
        self.count
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let right = self.count - mid;
        // The original goes where it is needed; a clone only when both
        // halves have items.
        let (left_elem, right_elem) = match (mid > 0, right > 0) {
            (true, true) => (self.element.clone(), self.element),
            (true, false) => (self.element, None),
            (false, _) => (None, self.element),
        };
        (
            RepeatPiece {
                element: left_elem,
                count: mid,
            },
            RepeatPiece {
                element: right_elem,
                count: right,
            },
        )
    }
    fn front(&mut self, n: usize) -> RepeatSeq<T> {
        self.count -= n;
        let element = if self.count == 0 {
            self.element.take()
        } else if n > 0 {
            self.element.clone()
        } else {
            None
        };
        RepeatSeq { element, left: n }
    }
    fn back_rev(&mut self, n: usize) -> RepeatSeq<T> {
        self.front(n)
    }
}

/// A batch of [`RepeatN`]: `left` items, clones of `element` but the last.
pub struct RepeatSeq<T> {
    element: Option<T>,
    left: usize,
}

impl<T: Clone> Iterator for RepeatSeq<T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        if self.left == 0 {
            self.element.take()
        } else {
            self.element.clone()
        }
    }
    fn nth(&mut self, n: usize) -> Option<T> {
        if n >= self.left {
            self.left = 0;
            self.element = None;
            return None;
        }
        self.left -= n;
        self.next()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<T: Clone> DoubleEndedIterator for RepeatSeq<T> {
    fn next_back(&mut self) -> Option<T> {
        self.next()
    }
}

/// `par_bridge()`: any sequential iterator whose items are `Send`, run in
/// parallel (rayon's `ParallelBridge`). The items are taken in small
/// batches under a lock by every worker that joins in; their order is not
/// kept.
///
/// ```
/// use std::sync::mpsc::channel;
/// use terroir::prelude::*;
/// let (tx, rx) = channel();
/// for i in 0..100 { tx.send(i).unwrap(); }
/// drop(tx);
/// let sum: i32 = rx.into_iter().par_bridge().map(|x| x * 2).sum();
/// assert_eq!(sum, 9900);
/// ```
pub trait ParallelBridge: Sized {
    /// Turns the iterator into a parallel one.
    fn par_bridge(self) -> IterBridge<Self>;
}

impl<T: Iterator + Send> ParallelBridge for T
where
    T::Item: Send,
{
    fn par_bridge(self) -> IterBridge<Self> {
        IterBridge { iter: self }
    }
}

/// [`ParallelBridge::par_bridge`]'s iterator.
#[derive(Clone, Debug)]
pub struct IterBridge<I> {
    iter: I,
}

/// Items taken under the lock at a time.
const BRIDGE_BATCH: usize = 16;

impl<I> ParallelIterator for IterBridge<I>
where
    I: Iterator + Send,
    I::Item: Send,
{
    type Item = I::Item;
    fn drive_engine<C: Consumer<I::Item>>(self, consumer: C) -> C::Result {
        let shared = Mutex::new(self.iter.fuse());
        let c = &consumer;
        let shared = &shared;
        in_worker(move |wt| {
            let parts = wt.registry().num_threads();
            bridge(shared, c, parts)
        })
    }
}

/// Runs `parts` takers of `shared` (a `join` tree, so idle workers take
/// the parts their owner has not reached) and reduces their results.
fn bridge<I, C>(shared: &Mutex<std::iter::Fuse<I>>, consumer: &C, parts: usize) -> C::Result
where
    I: Iterator + Send,
    I::Item: Send,
    C: Consumer<I::Item>,
{
    if parts <= 1 {
        let mut folder = consumer.folder();
        let mut buf = Vec::with_capacity(BRIDGE_BATCH);
        loop {
            if folder.full() || consumer.stop(0, usize::MAX) {
                break;
            }
            {
                let mut it = shared.lock().unwrap_or_else(|e| e.into_inner());
                buf.extend(it.by_ref().take(BRIDGE_BATCH));
            }
            if buf.is_empty() {
                break;
            }
            folder = folder.consume(0, buf.drain(..));
        }
        return folder.complete();
    }
    let half = parts / 2;
    let (a, b) = crate::join(
        || bridge(shared, consumer, half),
        || bridge(shared, consumer, parts - half),
    );
    consumer.reduce(a, b)
}
