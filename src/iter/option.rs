//! Parallel iterators over `Option` and `Result` (zero or one item), as in
//! rayon.

use super::engine::{Consumer, Piece};
use super::indexed::drive_piece;
use super::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};

/// The parallel iterator of an `Option` (or the `Ok` value of a `Result`)
/// by value, by reference and by mutable reference; also
/// [`once`](super::once)'s.
///
/// ```
/// use terroir::prelude::*;
/// let it: terroir::iter::option::IntoIter<i32> = Some(3).into_par_iter();
/// assert_eq!(it.collect::<Vec<_>>(), [3]);
/// let r: Result<i32, ()> = Err(());
/// assert_eq!(r.par_iter().count(), 0);
/// ```
#[derive(Clone, Debug)]
pub struct IntoIter<T> {
    opt: Option<T>,
}

impl<T> IntoIter<T> {
    pub(crate) fn new(opt: Option<T>) -> Self {
        IntoIter { opt }
    }
}

/// rayon's `option::Iter`: `&Option<T>`'s `into_par_iter()` (`par_iter()`),
/// an [`IntoIter`] of the reference.
pub type Iter<'a, T> = IntoIter<&'a T>;
/// rayon's `option::IterMut`: `&mut Option<T>`'s `into_par_iter()`
/// (`par_iter_mut()`), an [`IntoIter`] of the mutable reference.
pub type IterMut<'a, T> = IntoIter<&'a mut T>;

impl<T: Send> IntoParallelIterator for Option<T> {
    type Iter = IntoIter<T>;
    type Item = T;
    fn into_par_iter(self) -> IntoIter<T> {
        IntoIter::new(self)
    }
}

impl<'a, T: Sync> IntoParallelIterator for &'a Option<T> {
    type Iter = IntoIter<&'a T>;
    type Item = &'a T;
    fn into_par_iter(self) -> IntoIter<&'a T> {
        IntoIter::new(self.as_ref())
    }
}

impl<'a, T: Send> IntoParallelIterator for &'a mut Option<T> {
    type Iter = IntoIter<&'a mut T>;
    type Item = &'a mut T;
    fn into_par_iter(self) -> IntoIter<&'a mut T> {
        IntoIter::new(self.as_mut())
    }
}

impl<T: Send, E> IntoParallelIterator for Result<T, E> {
    type Iter = IntoIter<T>;
    type Item = T;
    fn into_par_iter(self) -> IntoIter<T> {
        IntoIter::new(self.ok())
    }
}

impl<'a, T: Sync, E> IntoParallelIterator for &'a Result<T, E> {
    type Iter = IntoIter<&'a T>;
    type Item = &'a T;
    fn into_par_iter(self) -> IntoIter<&'a T> {
        IntoIter::new(self.as_ref().ok())
    }
}

impl<'a, T: Send, E> IntoParallelIterator for &'a mut Result<T, E> {
    type Iter = IntoIter<&'a mut T>;
    type Item = &'a mut T;
    fn into_par_iter(self) -> IntoIter<&'a mut T> {
        IntoIter::new(self.as_mut().ok())
    }
}

impl<T: Send> ParallelIterator for IntoIter<T> {
    type Item = T;
    fn drive_engine<C: Consumer<T>>(self, consumer: C) -> C::Result {
        drive_piece(self, consumer)
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.opt.is_some().into())
    }
}

impl<T: Send> IndexedParallelIterator for IntoIter<T> {
    type Piece<'a>
        = OptionPiece<T>
    where
        Self: 'a;
    fn piece(&mut self) -> OptionPiece<T> {
        OptionPiece {
            opt: self.opt.take(),
        }
    }
    fn len(&self) -> usize {
        self.opt.is_some().into()
    }
}

/// Zero or one unit.
pub struct OptionPiece<T> {
    opt: Option<T>,
}

impl<T: Send> Piece for OptionPiece<T> {
    fn pure(&self) -> bool {
        true
    }
    type Item = T;
    type Seq<'s>
        = std::option::IntoIter<T>
    where
        Self: 's;
    type RevSeq<'s>
        = std::option::IntoIter<T>
    where
        Self: 's;
    fn units(&self) -> usize {
        self.opt.is_some().into()
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        if mid == 0 {
            (OptionPiece { opt: None }, self)
        } else {
            (self, OptionPiece { opt: None })
        }
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        if n == 0 { None } else { self.opt.take() }.into_iter()
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        self.front(n)
    }
}
