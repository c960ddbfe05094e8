//! Parallel iterators over integer ranges (`(a..b).into_par_iter()`,
//! `(a..=b).into_par_iter()`), for every integer type and `char`.
//!
//! As in rayon, `Range<T>` is an [`IndexedParallelIterator`] for the types
//! whose lengths fit a `usize` (here: up to 64 bits, on 64-bit targets),
//! `RangeInclusive<T>` for those up to 32 bits; the others (`u128`,
//! `i128`, and inclusive ranges of 64-bit types, which may hold 2⁶⁴
//! values) are [`ParallelIterator`]s only. Empty and reversed ranges yield
//! nothing; the values are never computed by overflowing arithmetic.
//!
//! Ranges of `char` are indexed too, and skip the surrogate code points
//! (`'\u{D800}'..'\u{E000}'`), as `std`'s ranges of `char` do.
//!
//! ```
//! use terroir::prelude::*;
//! assert_eq!((i64::MIN..i64::MIN + 3).into_par_iter().count(), 3);
//! let around = '\u{D7FE}'..='\u{E001}';
//! assert_eq!(around.clone().into_par_iter().collect::<Vec<char>>(), around.collect::<Vec<char>>());
//! assert_eq!((250u8..=255).into_par_iter().map(u32::from).sum::<u32>(), 1515);
//! assert_eq!((5..1).into_par_iter().count(), 0);
//! ```

use std::ops::{Range, RangeInclusive};

use super::engine::{self, Consumer, Piece};
use super::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};

mod private {
    /// The integer types ranges are over.
    pub trait Int: Copy + PartialOrd + Send + Sync + 'static {
        /// `self + n`, wrapping (`n` may exceed the type only when the
        /// result wraps back into the range).
        fn add(self, n: u128) -> Self;
        /// The number of values in `start..end` (0 when `end <= start`).
        fn span(start: Self, end: Self) -> u128;
    }
}
use private::Int;

macro_rules! int {
    ($($t:ty),*) => {$(
        impl Int for $t {
            #[inline]
            fn add(self, n: u128) -> Self {
                self.wrapping_add(n as $t)
            }
            #[inline]
            fn span(start: Self, end: Self) -> u128 {
                if end > start {
                    end.abs_diff(start) as u128
                } else {
                    0
                }
            }
        }
    )*};
}
int!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize);

/// The surrogate code points, which are not `char`s: ranges of `char`
/// skip them.
const SURROGATES: std::ops::Range<u32> = 0xD800..0xE000;

/// The number of `char`s.
const CHARS: u32 = char::MAX as u32 + 1 - (SURROGATES.end - SURROGATES.start);

/// The index of `c` among all `char`s, in order.
fn char_index(c: char) -> u32 {
    let v = u32::from(c);
    if v >= SURROGATES.end {
        v - (SURROGATES.end - SURROGATES.start)
    } else {
        v
    }
}

impl Int for char {
    #[inline]
    fn add(self, n: u128) -> Self {
        // Wraps past `char::MAX` (only the value after a range's last one
        // is ever computed that far), as the integers wrap.
        let i = ((u128::from(char_index(self)) + n) % u128::from(CHARS)) as u32;
        let v = if i >= SURROGATES.start {
            i + (SURROGATES.end - SURROGATES.start)
        } else {
            i
        };
        char::from_u32(v).expect("an index below CHARS maps to a char")
    }
    #[inline]
    fn span(start: Self, end: Self) -> u128 {
        u128::from(char_index(end).saturating_sub(char_index(start)))
    }
}

/// The parallel iterator of a `Range<T>` (rayon's `range::Iter`).
///
/// ```
/// use terroir::prelude::*;
/// let it: terroir::iter::range::Iter<u32> = (0..10u32).into_par_iter();
/// assert_eq!(it.len(), 10);
/// ```
#[derive(Clone, Debug)]
pub struct Iter<T> {
    start: T,
    len: u128,
}

/// The parallel iterator of a `RangeInclusive<T>` (rayon's
/// `range_inclusive::Iter`).
///
/// ```
/// use terroir::prelude::*;
/// let it: terroir::iter::range::InclusiveIter<i16> = (-1i16..=1).into_par_iter();
/// assert_eq!(it.collect::<Vec<_>>(), [-1, 0, 1]);
/// ```
#[derive(Clone, Debug)]
pub struct InclusiveIter<T> {
    start: T,
    len: u128,
}

impl<T: Int> IntoParallelIterator for Range<T> {
    type Iter = Iter<T>;
    type Item = T;
    fn into_par_iter(self) -> Iter<T> {
        Iter {
            start: self.start,
            len: T::span(self.start, self.end),
        }
    }
}

impl<T: Int> IntoParallelIterator for RangeInclusive<T> {
    type Iter = InclusiveIter<T>;
    type Item = T;
    fn into_par_iter(self) -> InclusiveIter<T> {
        let (start, end) = (*self.start(), *self.end());
        let len = if self.is_empty() {
            0
        } else {
            // 2^128 values (the whole u128 or i128 range) saturate: such a
            // loop cannot end anyway.
            T::span(start, end).saturating_add(1)
        };
        InclusiveIter { start, len }
    }
}

/// `len` as a unit count, when it fits.
fn fits(len: u128) -> Option<usize> {
    usize::try_from(len).ok()
}

macro_rules! parallel {
    ($iter:ident) => {
        impl<T: Int> ParallelIterator for $iter<T> {
            type Item = T;
            fn drive_engine<C: Consumer<T>>(self, consumer: C) -> C::Result {
                engine::run(
                    RangePiece {
                        start: self.start,
                        len: self.len,
                    },
                    consumer,
                )
            }
            fn opt_len(&self) -> Option<usize> {
                fits(self.len)
            }
        }
    };
}
parallel!(Iter);
parallel!(InclusiveIter);

macro_rules! indexed {
    ($iter:ident: $($t:ty),*) => {$(
        impl IndexedParallelIterator for $iter<$t> {
            type Piece<'a> = RangePiece<$t>;
            fn piece(&mut self) -> RangePiece<$t> {
                RangePiece { start: self.start, len: self.len }
            }
            fn len(&self) -> usize {
                fits(self.len).expect("the length of an indexed range fits a usize")
            }
        }
    )*};
}
indexed!(Iter: u8, u16, u32, usize, i8, i16, i32, isize, char);
#[cfg(target_pointer_width = "64")]
indexed!(Iter: u64, i64);
indexed!(InclusiveIter: u8, u16, i8, i16, char);
#[cfg(target_pointer_width = "64")]
indexed!(InclusiveIter: u32, i32);

/// A range's piece: `len` values from `start`.
#[derive(Clone, Copy, Debug)]
pub struct RangePiece<T> {
    start: T,
    len: u128,
}

impl<T: Int> Piece for RangePiece<T> {
    fn pure(&self) -> bool {
        true
    }
    fn split_cheap(&self) -> bool {
        // Not past usize::MAX units: `split_at` then cuts at a fraction of
        // the range, not after `mid` values, and the offer's batch would
        // not be the batch taken from the front.
        self.len <= usize::MAX as u128
    }
    type Item = T;
    type Seq<'s> = IntSeq<T>;
    type RevSeq<'s> = std::iter::Rev<IntSeq<T>>;
    fn units(&self) -> usize {
        fits(self.len).unwrap_or(usize::MAX)
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        // Longer than usize::MAX units (only u128 ranges and 2^64-value
        // inclusive ranges, which are not indexed), `units()` saturates:
        // `mid` is then taken as a fraction of usize::MAX, so that halving
        // the reported units halves the range (a search for a value far
        // into it reaches it after a few splits).
        let full = usize::MAX as u128;
        let mid = if self.len > full {
            (self.len / full) * mid as u128 + (self.len % full) * mid as u128 / full
        } else {
            mid as u128
        };
        (
            RangePiece {
                start: self.start,
                len: mid,
            },
            RangePiece {
                start: self.start.add(mid),
                len: self.len - mid,
            },
        )
    }
    fn front(&mut self, n: usize) -> IntSeq<T> {
        let seq = IntSeq {
            next: self.start,
            left: n,
        };
        self.start = self.start.add(n as u128);
        self.len -= n as u128;
        seq
    }
    fn back_rev(&mut self, n: usize) -> std::iter::Rev<IntSeq<T>> {
        self.len -= n as u128;
        IntSeq {
            next: self.start.add(self.len),
            left: n,
        }
        .rev()
    }
}

/// A batch of a range: `left` values from `next`.
#[derive(Clone, Debug)]
pub struct IntSeq<T> {
    next: T,
    left: usize,
}

impl<T: Int> Iterator for IntSeq<T> {
    type Item = T;
    #[inline]
    fn next(&mut self) -> Option<T> {
        if self.left == 0 {
            return None;
        }
        let v = self.next;
        self.next = v.add(1);
        self.left -= 1;
        Some(v)
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
    #[inline]
    fn fold<B, F>(self, init: B, mut f: F) -> B
    where
        F: FnMut(B, T) -> B,
    {
        let mut acc = init;
        let mut x = self.next;
        for _ in 0..self.left {
            acc = f(acc, x);
            x = x.add(1);
        }
        acc
    }
}

impl<T: Int> DoubleEndedIterator for IntSeq<T> {
    #[inline]
    fn next_back(&mut self) -> Option<T> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        Some(self.next.add(self.left as u128))
    }
}

impl<T: Int> ExactSizeIterator for IntSeq<T> {}
