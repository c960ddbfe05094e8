//! [`parallel_for`]: a loop over a range of indices whose body gets
//! sub-ranges, with a schedule, bounds and an optional data place: the
//! shape of OpenMP's `parallel for`, and what the C API's
//! `terroir_parallel_for` (terroir-capi, `capi/src/loops.rs`) wraps.

use std::ops::Range;

use super::engine::{self, Consumer, Extent, Hints, Piece, Schedule};
use super::ParallelIterator;
use crate::Place;

/// How [`parallel_for`] runs: grain (shortest piece split off), longest
/// batch between split polls, schedule, and the place of the data the
/// loop walks.
///
/// ```
/// use terroir::iter::{ForOptions, Schedule};
/// let opts = ForOptions::new().grain(1024).schedule(Schedule::Static);
/// assert_eq!(opts.get_schedule(), Schedule::Static);
/// ```
#[derive(Clone, Debug)]
pub struct ForOptions {
    hints: Hints,
    schedule: Schedule,
    strict: bool,
    place: Option<Place>,
}

impl Default for ForOptions {
    fn default() -> Self {
        ForOptions::new()
    }
}

impl ForOptions {
    /// Adaptive, no bounds, no place.
    pub fn new() -> ForOptions {
        ForOptions {
            hints: Hints::NONE,
            schedule: Schedule::Adaptive,
            strict: false,
            place: None,
        }
    }

    /// Never split off fewer than `grain` indices (0 is taken as 1), as
    /// [`with_min_len`](super::IndexedParallelIterator::with_min_len).
    pub fn grain(mut self, grain: usize) -> ForOptions {
        self.hints.min_len = grain.max(1);
        self
    }

    /// Poll for split requests at least every `max` indices (0 is taken as
    /// 1), as [`with_max_len`](super::IndexedParallelIterator::with_max_len).
    pub fn max_len(mut self, max: usize) -> ForOptions {
        self.hints.max_len = max.max(1);
        self
    }

    /// The schedule (see [`Schedule`]).
    pub fn schedule(mut self, schedule: Schedule) -> ForOptions {
        self.schedule = schedule;
        self
    }

    /// The schedule set.
    pub fn get_schedule(&self) -> Schedule {
        self.schedule
    }

    /// Run node shares strictly on their nodes (see
    /// [`ParallelIterator::strict`]).
    pub fn strict(mut self) -> ForOptions {
        self.strict = true;
        self
    }

    /// The place of the data the loop walks, index `begin` to `end`
    /// mapped linearly onto its declared bytes: a node place (or the
    /// place of data on one node) starts the whole loop on that node; the
    /// place of a blocked [`NodeVec`](crate::pool::NodeVec)
    /// ([`Place::data`]) cuts the range at its node shares, each run on
    /// its node, as a loop over the vector would be.
    pub fn place(mut self, place: Place) -> ForOptions {
        self.place = Some(place);
        self
    }
}

/// Runs `body` over sub-ranges that together cover `range` exactly once,
/// in parallel on the current pool (the global pool outside any), as
/// `options` says. `body` is called once per batch (a few microseconds of
/// work or more, never fewer than the grain unless the range is shorter),
/// so a C callback costs one call per batch, not per index.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use terroir::iter::{parallel_for, ForOptions};
/// let sum = AtomicU64::new(0);
/// parallel_for(0..1_000_000, &ForOptions::new().grain(1000), |r| {
///     let s: u64 = r.map(|i| i as u64).sum();
///     sum.fetch_add(s, Ordering::Relaxed);
/// });
/// assert_eq!(sum.into_inner(), 499_999_500_000);
/// ```
///
/// # Panics
/// Propagates a panic of `body` once the other sub-ranges have stopped.
pub fn parallel_for<F>(range: Range<usize>, options: &ForOptions, body: F)
where
    F: Fn(Range<usize>) + Sync + Send,
{
    let len = range.end.saturating_sub(range.start);
    let layout = options
        .place
        .as_ref()
        .map(|p| layout_of(p, len))
        .unwrap_or_default();
    let blocks = Blocks {
        piece: BlockPiece {
            start: range.start,
            len,
            base: 0,
            hints: options.hints,
            layout: &layout,
        },
    };
    super::unindexed::Scheduled::new(blocks, Some(options.schedule), options.strict).for_each(body);
}

/// The extents of a loop of `len` indices over the data `place` declares.
fn layout_of(place: &Place, len: usize) -> Vec<Extent> {
    let declared = place.declared();
    let total: u64 = declared.iter().map(|a| a.bytes()).sum();
    let at = |bytes: u64| -> usize {
        if total == 0 {
            0
        } else {
            ((u128::from(bytes) * len as u128) / u128::from(total)) as usize
        }
    };
    let unit_bytes = if len == 0 {
        0
    } else {
        (total / len as u64) as usize
    };
    let mut out = Vec::new();
    let mut cum = 0;
    for a in declared {
        let (s, e) = (at(cum), at(cum + a.bytes()));
        cum += a.bytes();
        if let (Some(node), true) = (a.node(), s < e) {
            out.push(Extent {
                node,
                start: s,
                end: e,
                unit_bytes,
            });
        }
    }
    if out.is_empty() && len > 0 {
        if let Some(node) = place.node() {
            out.push(Extent {
                node,
                start: 0,
                end: len,
                unit_bytes,
            });
        }
    }
    out
}

/// The parallel iterator behind [`parallel_for`]: one item per batch, the
/// batch's range.
struct Blocks<'p> {
    piece: BlockPiece<'p>,
}

impl ParallelIterator for Blocks<'_> {
    type Item = Range<usize>;
    fn drive_engine<C: Consumer<Range<usize>>>(self, consumer: C) -> C::Result {
        engine::run(self.piece, consumer)
    }
}

/// `len` indices from `start`, units `base..` of the loop.
struct BlockPiece<'p> {
    start: usize,
    len: usize,
    base: usize,
    hints: Hints,
    layout: &'p [Extent],
}

impl Piece for BlockPiece<'_> {
    type Item = Range<usize>;
    type Seq<'s>
        = std::option::IntoIter<Range<usize>>
    where
        Self: 's;
    type RevSeq<'s>
        = std::option::IntoIter<Range<usize>>
    where
        Self: 's;
    fn split_cheap(&self) -> bool {
        true
    }
    fn units(&self) -> usize {
        self.len
    }
    fn hints(&self) -> Hints {
        self.hints
    }
    fn layout(&self, out: &mut Vec<Extent>) {
        let end = self.base + self.len;
        out.extend(self.layout.iter().filter_map(|e| {
            let (s, t) = (e.start.max(self.base), e.end.min(end));
            (s < t).then_some(Extent {
                start: s - self.base,
                end: t - self.base,
                ..*e
            })
        }));
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        (
            BlockPiece { len: mid, ..self },
            BlockPiece {
                start: self.start + mid,
                len: self.len - mid,
                base: self.base + mid,
                ..self
            },
        )
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        let r = self.start..self.start + n;
        self.start += n;
        self.base += n;
        self.len -= n;
        (n > 0).then_some(r).into_iter()
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        self.len -= n;
        let s = self.start + self.len;
        (n > 0).then_some(s..s + n).into_iter()
    }
}
