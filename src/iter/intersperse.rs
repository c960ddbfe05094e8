//! [`ParallelIterator::intersperse`]: a clone of a separator between
//! every two items.
//!
//! - Over an iterator of known length (its positions are its items'
//!   indices), item `i` becomes item `2i` and the separator before it item
//!   `2i - 1`: a batch from position `s > 0` yields a separator first, the
//!   batch at 0 does not, and the result is indexed (`len`, `rev`, `zip`
//!   through its [`Piece`]).
//! - Otherwise nobody knows which run holds the first item: each run holds
//!   its first item back and yields a separator before each of the
//!   others; two neighbouring results are joined by folding a separator
//!   and the right one's held item between them, and the item held at the
//!   very end is the first of all, folded in front without a separator.

use std::sync::Mutex;

use super::engine::{Consumer, Extent, Folder, Hints, Options, Piece};
use super::{IndexedParallelIterator, ParallelIterator};

/// [`ParallelIterator::intersperse`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let i: terroir::iter::Intersperse<_> = (1..4).into_par_iter().intersperse(0);
/// assert_eq!(i.len(), 5);
/// assert_eq!(i.collect::<Vec<_>>(), [1, 0, 2, 0, 3]);
/// let words: String = "a b c".par_split_whitespace().intersperse("-").collect();
/// assert_eq!(words, "a-b-c");
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct Intersperse<I: ParallelIterator> {
    base: I,
    item: I::Item,
}

impl<I: ParallelIterator> Intersperse<I> {
    pub(crate) fn new(base: I, item: I::Item) -> Self {
        Intersperse { base, item }
    }
}

/// The position of the first unit of a batch at base position `start`.
fn spread(start: usize) -> usize {
    start.saturating_mul(2).saturating_sub(1)
}

impl<I> ParallelIterator for Intersperse<I>
where
    I: ParallelIterator,
    I::Item: Clone,
{
    type Item = I::Item;
    fn drive_engine<C: Consumer<I::Item>>(self, consumer: C) -> C::Result {
        let exact = self.base.opt_len().is_some();
        let held = self.base.drive_engine(SepConsumer {
            base: &consumer,
            sep: Mutex::new(self.item),
            exact,
        });
        match held.first {
            None => held.rest,
            Some((pos, x)) => {
                let first = consumer
                    .folder()
                    .consume(pos, std::iter::once(x))
                    .complete();
                consumer.reduce(first, held.rest)
            }
        }
    }
    fn opt_len(&self) -> Option<usize> {
        self.base.opt_len().map(spread)
    }
}

/// A run's result: its first item when held back (with its position),
/// and the result of the rest.
struct Held<T, R> {
    first: Option<(usize, T)>,
    rest: R,
}

/// Puts separators between items (see the module docs); `exact`: the
/// positions are the items' indices.
struct SepConsumer<'c, C, T> {
    base: &'c C,
    /// Cloned once per folder (the consumer is shared, `T` need not be
    /// `Sync`).
    sep: Mutex<T>,
    exact: bool,
}

impl<C, T: Clone> SepConsumer<'_, C, T> {
    fn sep(&self) -> T {
        self.sep.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl<'c, T, C> Consumer<T> for SepConsumer<'c, C, T>
where
    T: Clone + Send,
    C: Consumer<T>,
{
    type Folder = SepFolder<C::Folder, T>;
    type Result = Held<T, C::Result>;
    fn folder(&self) -> Self::Folder {
        SepFolder {
            base: self.base.folder(),
            sep: self.sep(),
            exact: self.exact,
            first: None,
            seen: false,
        }
    }
    fn reduce(&self, left: Self::Result, right: Self::Result) -> Self::Result {
        let c = self.base;
        match (left.first, right.first) {
            (Some(l), Some((pos, x))) => {
                let sep = self.sep();
                let mid = c.folder().consume(pos, [sep, x].into_iter()).complete();
                Held {
                    first: Some(l),
                    rest: c.reduce(c.reduce(left.rest, mid), right.rest),
                }
            }
            // The left side has no items at all.
            (None, r) => Held {
                first: r,
                rest: c.reduce(left.rest, right.rest),
            },
            (l, None) => Held {
                first: l,
                rest: c.reduce(left.rest, right.rest),
            },
        }
    }
    fn stop(&self, start: usize, end: usize) -> bool {
        if self.exact {
            self.base.stop(spread(start), spread(end))
        } else {
            self.base.stop(start, end)
        }
    }
    fn options(&self) -> Options {
        self.base.options()
    }
    fn eager(&self) -> bool {
        self.base.eager()
    }
    fn done(&self, result: &Self::Result) -> bool {
        self.base.done(&result.rest)
    }
}

struct SepFolder<FO, T> {
    base: FO,
    sep: T,
    exact: bool,
    first: Option<(usize, T)>,
    /// Whether an item came (held back, or the one at position 0).
    seen: bool,
}

impl<T: Clone, FO: Folder<T>> Folder<T> for SepFolder<FO, T> {
    type Result = Held<T, FO::Result>;
    fn consume<I: Iterator<Item = T>>(self, start: usize, items: I) -> Self {
        let SepFolder {
            base,
            sep,
            exact,
            mut first,
            mut seen,
        } = self;
        let mut items = items.peekable();
        if items.peek().is_none() {
            return SepFolder {
                base,
                sep,
                exact,
                first,
                seen,
            };
        }
        let (pos, lead) = if exact {
            // The item at position 0 is the first of all.
            (spread(start), start > 0)
        } else if seen {
            (start, true)
        } else {
            first = items.next().map(|x| (start, x));
            (start, true)
        };
        seen = true;
        let mut lead = lead;
        let s = &sep;
        let spread_items = items.flat_map(move |x| {
            let sep = std::mem::replace(&mut lead, true).then(|| s.clone());
            sep.into_iter().chain(std::iter::once(x))
        });
        let base = base.consume(pos, spread_items);
        SepFolder {
            base,
            sep,
            exact,
            first,
            seen,
        }
    }
    fn full(&self) -> bool {
        self.base.full()
    }
    fn complete(self) -> Self::Result {
        Held {
            first: self.first,
            rest: self.base.complete(),
        }
    }
}

impl<I> IndexedParallelIterator for Intersperse<I>
where
    I: IndexedParallelIterator,
    I::Item: Clone,
{
    type Piece<'a>
        = SepPiece<I::Piece<'a>, I::Item>
    where
        Self: 'a;
    fn piece(&mut self) -> Self::Piece<'_> {
        SepPiece {
            base: self.base.piece(),
            sep: self.item.clone(),
            lead: false,
            trail: false,
        }
    }
    fn len(&self) -> usize {
        spread(self.base.len())
    }
}

/// [`Intersperse`]'s piece: the base's items with separators between
/// them, and one before the first (`lead`) or after the last (`trail`)
/// where a cut left one there. Units alternate strictly between items and
/// separators.
pub struct SepPiece<P, T> {
    base: P,
    sep: T,
    lead: bool,
    trail: bool,
}

/// The two parts of a [`SepPiece`] cut after some units: the base items
/// of the first, and where each has a separator at its ends.
struct Cut {
    items: usize,
    left: (bool, bool),
    right: (bool, bool),
}

impl<P: Piece<Item = T>, T: Clone + Send> SepPiece<P, T> {
    /// Cuts after `mid` units.
    fn cut(&self, mid: usize) -> Cut {
        let m = self.base.units();
        let ends = (self.lead, self.trail);
        if mid == 0 {
            return Cut {
                items: 0,
                left: (false, false),
                right: ends,
            };
        }
        if mid >= self.units() {
            return Cut {
                items: m,
                left: ends,
                right: (false, false),
            };
        }
        // Units after the leading separator: item, separator, item, …
        let u = mid - usize::from(self.lead);
        let k = u.div_ceil(2);
        let (left_trail, right_lead) = if u % 2 == 0 {
            // Ends with a separator (none at u == 0); the rest starts
            // with item k.
            (u > 0, false)
        } else {
            // Ends with item k - 1; the separator after it (the trailing
            // one when k == m) starts the rest.
            (false, k < m || self.trail)
        };
        Cut {
            items: k,
            left: (self.lead, left_trail),
            // A rest of just the trailing separator holds it as `lead`.
            right: (right_lead, self.trail && k < m),
        }
    }
}

impl<P: Piece<Item = T>, T: Clone + Send> Piece for SepPiece<P, T> {
    type Item = T;
    type Seq<'s>
        = Alternating<'s, P::Seq<'s>, T>
    where
        Self: 's;
    type RevSeq<'s>
        = Alternating<'s, P::RevSeq<'s>, T>
    where
        Self: 's;
    fn pure(&self) -> bool {
        self.base.pure()
    }
    fn units(&self) -> usize {
        usize::from(self.lead) + usize::from(self.trail) + spread(self.base.units())
    }
    fn hints(&self) -> Hints {
        self.base.hints()
    }
    fn layout(&self, out: &mut Vec<Extent>) {
        let _ = out; // the units are no longer the base's elements
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let cut = self.cut(mid);
        let (a, b) = self.base.split_at(cut.items);
        let left = SepPiece {
            base: a,
            sep: self.sep.clone(),
            lead: cut.left.0,
            trail: cut.left.1,
        };
        let right = SepPiece {
            base: b,
            sep: self.sep,
            lead: cut.right.0,
            trail: cut.right.1,
        };
        (left, right)
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        let cut = self.cut(n);
        (self.lead, self.trail) = cut.right;
        Alternating {
            items: self.base.front(cut.items),
            sep: &self.sep,
            next_sep: cut.left.0,
            left: n,
        }
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        let cut = self.cut(self.units() - n);
        (self.lead, self.trail) = cut.left;
        let rest = self.base.units() - cut.items;
        Alternating {
            items: self.base.back_rev(rest),
            sep: &self.sep,
            // The last unit: the trailing separator, or the only unit
            // (a lone separator is held as `lead`).
            next_sep: cut.right.1 || (rest == 0 && cut.right.0),
            left: n,
        }
    }
}

/// A batch of [`SepPiece`]: `left` units, alternating between the base's
/// items and clones of `sep`, starting with a separator if `next_sep`.
pub struct Alternating<'s, S, T> {
    items: S,
    sep: &'s T,
    next_sep: bool,
    left: usize,
}

impl<S: Iterator<Item = T>, T: Clone> Iterator for Alternating<'_, S, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.left = self.left.checked_sub(1)?;
        let sep = self.next_sep;
        self.next_sep = !sep;
        if sep {
            Some(self.sep.clone())
        } else {
            self.items.next()
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}
