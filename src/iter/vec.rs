//! Parallel iterators that own their items: `Vec<T>::into_par_iter()`
//! ([`IntoIter`]) and `Vec::par_drain(range)` ([`Drain`]). The items stay
//! in the vector's buffer; a piece owns a run of them and moves each out
//! as it goes, dropping those it never yields (a loop that stops early or
//! panics leaks nothing).

use std::marker::PhantomData;
use std::ops::{Bound, Range, RangeBounds};
use std::ptr;

use super::engine::{Consumer, Piece};
use super::indexed::drive_piece;
use super::{IndexedParallelIterator, IntoParallelIterator, ParallelDrainRange, ParallelIterator};

/// The parallel iterator of a `Vec<T>` by value (rayon's `vec::IntoIter`).
///
/// ```
/// use terroir::prelude::*;
/// let v = vec![String::from("a"), String::from("b")];
/// let it: terroir::iter::vec::IntoIter<String> = v.into_par_iter();
/// assert_eq!(it.map(|s| s + "!").collect::<Vec<_>>(), ["a!", "b!"]);
/// ```
#[derive(Clone, Debug)]
pub struct IntoIter<T> {
    vec: Vec<T>,
}

impl<T> IntoIter<T> {
    pub(crate) fn new(vec: Vec<T>) -> Self {
        IntoIter { vec }
    }
}

impl<T: Send> IntoParallelIterator for Vec<T> {
    type Iter = IntoIter<T>;
    type Item = T;
    fn into_par_iter(self) -> IntoIter<T> {
        IntoIter::new(self)
    }
}

impl<T: Send, const N: usize> IntoParallelIterator for [T; N] {
    type Iter = super::array::IntoIter<T, N>;
    type Item = T;
    fn into_par_iter(self) -> super::array::IntoIter<T, N> {
        super::array::IntoIter::new(Vec::from(self))
    }
}

impl<T: Send> IntoParallelIterator for Box<[T]> {
    type Iter = IntoIter<T>;
    type Item = T;
    fn into_par_iter(self) -> IntoIter<T> {
        IntoIter::new(self.into_vec())
    }
}

impl<T: Send> ParallelIterator for IntoIter<T> {
    type Item = T;
    fn drive_engine<C: Consumer<T>>(self, consumer: C) -> C::Result {
        drive_piece(self, consumer)
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.vec.len())
    }
}

impl<T: Send> IndexedParallelIterator for IntoIter<T> {
    type Piece<'a>
        = VecPiece<'a, T>
    where
        Self: 'a;
    fn piece(&mut self) -> VecPiece<'_, T> {
        let len = self.vec.len();
        // SAFETY: the piece owns the `len` initialised elements from here
        // on; the vector keeps only its buffer (freed when it drops).
        unsafe { self.vec.set_len(0) };
        VecPiece {
            ptr: self.vec.as_mut_ptr(),
            len,
            marker: PhantomData,
        }
    }
    fn len(&self) -> usize {
        self.vec.len()
    }
}

/// A run of `len` initialised elements from `ptr` that the piece owns.
pub struct VecPiece<'a, T> {
    ptr: *mut T,
    len: usize,
    marker: PhantomData<&'a mut T>,
}

// SAFETY: the piece owns its elements (like a `Vec<T>` of them) and nobody
// else touches them; sending it sends them.
unsafe impl<T: Send> Send for VecPiece<'_, T> {}

impl<T> Drop for VecPiece<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the piece owns these `len` initialised elements.
        unsafe { ptr::drop_in_place(ptr::slice_from_raw_parts_mut(self.ptr, self.len)) };
    }
}

/// A batch of a [`VecPiece`]: `left` elements from `ptr`, moved out one
/// by one; dropping it drops the rest.
pub struct VecSeq<'a, T> {
    ptr: *mut T,
    left: usize,
    marker: PhantomData<&'a mut T>,
}

impl<T> Iterator for VecSeq<'_, T> {
    type Item = T;
    #[inline]
    fn next(&mut self) -> Option<T> {
        if self.left == 0 {
            return None;
        }
        // SAFETY: an owned, initialised element, read once (the batch moves
        // past it; for zero-sized types `add` stays put, which is fine).
        let x = unsafe { self.ptr.read() };
        // SAFETY: within (or one past) the batch.
        self.ptr = unsafe { self.ptr.add(1) };
        self.left -= 1;
        Some(x)
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<T> DoubleEndedIterator for VecSeq<'_, T> {
    #[inline]
    fn next_back(&mut self) -> Option<T> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // SAFETY: the last owned element, read once (the batch no longer
        // counts it).
        Some(unsafe { self.ptr.add(self.left).read() })
    }
}

impl<T> ExactSizeIterator for VecSeq<'_, T> {}

impl<T> Drop for VecSeq<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the `left` elements not yet yielded are owned by the
        // batch.
        unsafe { ptr::drop_in_place(ptr::slice_from_raw_parts_mut(self.ptr, self.left)) };
    }
}

/// `n` elements from `ptr` as a batch.
fn seq<'a, T>(ptr: *mut T, n: usize) -> VecSeq<'a, T> {
    VecSeq {
        ptr,
        left: n,
        marker: PhantomData,
    }
}

/// `ptr + n` elements.
fn advance<T>(ptr: *mut T, n: usize) -> *mut T {
    // SAFETY: callers stay within the piece's elements (or one past).
    unsafe { ptr.add(n) }
}

impl<'a, T: Send> Piece for VecPiece<'a, T> {
    fn pure(&self) -> bool {
        true
    }
    fn split_cheap(&self) -> bool {
        true
    }
    type Item = T;
    type Seq<'s>
        = VecSeq<'a, T>
    where
        Self: 's;
    type RevSeq<'s>
        = std::iter::Rev<VecSeq<'a, T>>
    where
        Self: 's;
    fn units(&self) -> usize {
        self.len
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (ptr, len) = (self.ptr, self.len);
        std::mem::forget(self);
        (
            VecPiece {
                ptr,
                len: mid,
                marker: PhantomData,
            },
            VecPiece {
                ptr: advance(ptr, mid),
                len: len - mid,
                marker: PhantomData,
            },
        )
    }
    fn front(&mut self, n: usize) -> VecSeq<'a, T> {
        let s = seq(self.ptr, n);
        self.ptr = advance(self.ptr, n);
        self.len -= n;
        s
    }
    fn back_rev(&mut self, n: usize) -> std::iter::Rev<VecSeq<'a, T>> {
        self.len -= n;
        seq(advance(self.ptr, self.len), n).rev()
    }
}

/// The parallel iterator of `Vec::par_drain(range)` (rayon's
/// `vec::Drain`): the range's elements by value; the elements after it
/// move down when the iterator is dropped (also if it never ran).
///
/// ```
/// use terroir::prelude::*;
/// let mut v: Vec<i32> = (0..6).collect();
/// let d: terroir::iter::vec::Drain<'_, i32> = v.par_drain(1..3);
/// assert_eq!(d.sum::<i32>(), 3);
/// assert_eq!(v, [0, 3, 4, 5]);
/// ```
#[derive(Debug)]
pub struct Drain<'a, T> {
    vec: &'a mut Vec<T>,
    range: Range<usize>,
    /// The vector's length before the drain.
    orig_len: usize,
    /// Whether a piece took the range's elements.
    taken: bool,
}

impl<'a, T: Send> ParallelDrainRange<usize> for &'a mut Vec<T> {
    type Iter = Drain<'a, T>;
    type Item = T;
    #[track_caller]
    fn par_drain<R: RangeBounds<usize>>(self, range: R) -> Drain<'a, T> {
        let len = self.len();
        let range = check_range(range, len);
        Drain {
            vec: self,
            range,
            orig_len: len,
            taken: false,
        }
    }
}

/// The bounds of `range` in a sequence of `len` elements.
///
/// # Panics
/// When it is out of bounds or decreasing (with the standard library's
/// messages).
#[track_caller]
pub(crate) fn check_range<R: RangeBounds<usize>>(range: R, len: usize) -> Range<usize> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s
            .checked_add(1)
            .unwrap_or_else(|| panic!("attempted to index slice from after maximum usize")),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e
            .checked_add(1)
            .unwrap_or_else(|| panic!("attempted to index slice up to maximum usize")),
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    assert!(
        start <= end,
        "slice index starts at {start} but ends at {end}"
    );
    assert!(
        end <= len,
        "range end index {end} out of range for slice of length {len}"
    );
    start..end
}

impl<T: Send> ParallelIterator for Drain<'_, T> {
    type Item = T;
    fn drive_engine<C: Consumer<T>>(self, consumer: C) -> C::Result {
        drive_piece(self, consumer)
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.range.len())
    }
}

impl<T: Send> IndexedParallelIterator for Drain<'_, T> {
    type Piece<'p>
        = VecPiece<'p, T>
    where
        Self: 'p;
    fn piece(&mut self) -> VecPiece<'_, T> {
        assert!(!self.taken, "a drain's elements are taken once");
        self.taken = true;
        // SAFETY: the vector keeps its elements before the range; the
        // piece owns the range's; `Drop` moves the tail down.
        unsafe { self.vec.set_len(self.range.start) };
        VecPiece {
            // SAFETY: range.start <= len, within the buffer.
            ptr: unsafe { self.vec.as_mut_ptr().add(self.range.start) },
            len: self.range.len(),
            marker: PhantomData,
        }
    }
    fn len(&self) -> usize {
        self.range.len()
    }
}

impl<T> Drop for Drain<'_, T> {
    fn drop(&mut self) {
        if !self.taken {
            self.vec.drain(self.range.clone());
            return;
        }
        let Range { start, end } = self.range;
        let tail = self.orig_len - end;
        // SAFETY: the range's elements were moved out or dropped by the
        // piece; the tail end..orig_len is initialised and moves down to
        // start (regions may overlap: `copy`).
        unsafe {
            let p = self.vec.as_mut_ptr();
            ptr::copy(p.add(end), p.add(start), tail);
            self.vec.set_len(start + tail);
        }
    }
}
