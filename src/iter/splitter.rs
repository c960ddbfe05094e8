//! [`split`]: a parallel iterator over the pieces a user's splitter cuts
//! some data into.

use std::fmt;

use super::engine::{run_frontier, Consumer, Frontier};
use super::ParallelIterator;

/// The pieces `splitter` cuts `data` into, in order (rayon's `split`):
/// `splitter(d)` returns `(left, Some(right))` to cut `d` in two (`left`
/// before `right`), or `(d, None)` when `d` should not be cut further.
///
/// How far the data is cut depends on the pool: about as many times as
/// there are workers at first (rayon's rule), and again whenever another
/// worker takes a part or asks for work, until the splitter declines.
/// Each piece the splitter leaves whole is one item.
///
/// ```
/// use terroir::prelude::*;
/// use std::ops::Range;
/// // Ranges halved down to 1000 values or less, summed in parallel.
/// let halves = |r: Range<u64>| {
///     if r.end - r.start <= 1000 {
///         (r, None)
///     } else {
///         let mid = r.start + (r.end - r.start) / 2;
///         (r.start..mid, Some(mid..r.end))
///     }
/// };
/// let pieces = terroir::iter::split(0..1_000_000u64, halves);
/// assert_eq!(pieces.map(|r| r.sum::<u64>()).sum::<u64>(), 499_999_500_000);
/// // The pieces come in order.
/// let flat: Vec<u64> = terroir::iter::split(0..5000u64, halves).flat_map_iter(|r| r).collect();
/// assert!(flat.iter().copied().eq(0..5000));
/// ```
pub fn split<D, S>(data: D, splitter: S) -> Split<D, S>
where
    D: Send,
    S: Fn(D) -> (D, Option<D>) + Sync,
{
    Split { data, splitter }
}

/// [`split`]'s iterator.
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone)]
pub struct Split<D, S> {
    data: D,
    splitter: S,
}

/// Shows the data (the splitter is a closure).
impl<D: fmt::Debug, S> fmt::Debug for Split<D, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Split").field("data", &self.data).finish()
    }
}

impl<D, S> ParallelIterator for Split<D, S>
where
    D: Send,
    S: Fn(D) -> (D, Option<D>) + Sync + Send,
{
    type Item = D;
    fn drive_engine<C: Consumer<D>>(self, consumer: C) -> C::Result {
        let Split { data, splitter } = self;
        run_frontier(
            Pieces {
                data: Some(data),
                splitter: &splitter,
            },
            consumer,
            true,
        )
    }
}

/// [`Split`]'s frontier: the data not yet cut or yielded.
struct Pieces<'s, D, S> {
    data: Option<D>,
    splitter: &'s S,
}

impl<D, S> Frontier for Pieces<'_, D, S>
where
    D: Send,
    S: Fn(D) -> (D, Option<D>) + Sync,
{
    type Item = D;
    fn next(&mut self) -> Option<D> {
        self.data.take()
    }
    fn is_empty(&self) -> bool {
        self.data.is_none()
    }
    fn split_off(&mut self) -> Option<Self> {
        let (left, right) = (self.splitter)(self.data.take()?);
        self.data = Some(left);
        Some(Pieces {
            data: Some(right?),
            splitter: self.splitter,
        })
    }
}
