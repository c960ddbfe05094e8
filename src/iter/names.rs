//! rayon's iterator type names that terroir's own types already cover:
//! `rayon::array`, `rayon::result`, `rayon::str`, the iterators of the
//! `rayon::collections` modules, `rayon::option::{Iter, IterMut}` and the
//! slice splitters. Each has rayon's generic parameters,
//! so that code naming one (a function returning
//! `rayon::str::Split<'_, char>`, a struct holding a
//! `rayon::collections::hash_map::Iter<'a, K, V>`) compiles with only the
//! crate name changed.
//!
//! Where terroir's type would not carry all of rayon's parameters (the
//! pattern `P` of a splitter, an array's length `N`), the name is a struct
//! of its own around the `Vec` iterator (see `vec_newtype!`).

/// A parallel iterator type of rayon's whose items terroir gathers into a
/// `Vec` first (the splitters find their pieces in one sequential pass):
/// a struct with rayon's name and parameters around a
/// [`vec::IntoIter`](crate::vec::IntoIter) of the items, which runs it.
/// `$gen` are the struct's generic parameters, `$arg` the same as
/// arguments, `$ph` what the unused ones are kept as.
macro_rules! vec_newtype {
    ($(#[$doc:meta])* $name:ident [$($gen:tt)*] [$($arg:tt)*] $item:ty, $ph:ty) => {
        $(#[$doc])*
        pub struct $name<$($gen)*> {
            inner: $crate::vec::IntoIter<$item>,
            marker: ::std::marker::PhantomData<fn() -> $ph>,
        }

        impl<$($gen)*> $name<$($arg)*> {
            #[allow(dead_code)]
            pub(crate) fn new(items: Vec<$item>) -> Self {
                $name {
                    inner: $crate::vec::IntoIter::new(items),
                    marker: ::std::marker::PhantomData,
                }
            }
        }

        impl<$($gen)*> Clone for $name<$($arg)*>
        where
            $item: Clone,
        {
            fn clone(&self) -> Self {
                $name {
                    inner: self.inner.clone(),
                    marker: ::std::marker::PhantomData,
                }
            }
        }

        impl<$($gen)*> ::std::fmt::Debug for $name<$($arg)*>
        where
            $item: ::std::fmt::Debug,
        {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("items", &self.inner)
                    .finish()
            }
        }

        impl<$($gen)*> $crate::iter::ParallelIterator for $name<$($arg)*>
        where
            $item: Send,
        {
            type Item = $item;
            fn drive_engine<C>(self, consumer: C) -> C::Result
            where
                C: $crate::iter::engine::Consumer<$item>,
            {
                $crate::iter::ParallelIterator::drive_engine(self.inner, consumer)
            }
            fn opt_len(&self) -> Option<usize> {
                $crate::iter::ParallelIterator::opt_len(&self.inner)
            }
        }

        impl<$($gen)*> $crate::iter::IndexedParallelIterator for $name<$($arg)*>
        where
            $item: Send,
        {
            type Piece<'z>
                = <$crate::vec::IntoIter<$item> as $crate::iter::IndexedParallelIterator>::Piece<'z>
            where
                Self: 'z;
            fn piece(&mut self) -> Self::Piece<'_> {
                $crate::iter::IndexedParallelIterator::piece(&mut self.inner)
            }
            fn len(&self) -> usize {
                $crate::iter::IndexedParallelIterator::len(&self.inner)
            }
        }
    };
}
pub(crate) use vec_newtype;

pub mod array {
    //! rayon's `array` module: the iterator of `[T; N]`.

    vec_newtype! {
        /// `[T; N]`'s `into_par_iter()`: the items moved out, in order.
        ///
        /// ```
        /// use terroir::prelude::*;
        /// let it: terroir::array::IntoIter<u8, 3> = [1, 2, 3].into_par_iter();
        /// assert_eq!(it.sum::<u8>(), 6);
        /// ```
        IntoIter [T, const N: usize] [T, N] T, [(); N]
    }
}

pub mod result {
    //! rayon's `result` module: the iterators of a `Result`'s `Ok` value
    //! (zero or one item), the same types as `Option`'s.

    use crate::option::IntoIter as OptionIter;

    /// `Result<T, E>`'s `into_par_iter()`.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let it: terroir::result::IntoIter<i32> = Ok::<i32, ()>(4).into_par_iter();
    /// assert_eq!(it.collect::<Vec<_>>(), [4]);
    /// ```
    pub type IntoIter<T> = OptionIter<T>;
    /// `&Result<T, E>`'s `into_par_iter()` (`par_iter()`).
    pub type Iter<'a, T> = OptionIter<&'a T>;
    /// `&mut Result<T, E>`'s `into_par_iter()` (`par_iter_mut()`).
    pub type IterMut<'a, T> = OptionIter<&'a mut T>;
}

pub mod str {
    //! rayon's `str` module: [`ParallelString`] and its iterators.

    use crate::vec::IntoIter;

    pub use crate::iter::string::{
        CharIndices, Chars, Lines, MatchIndices, Matches, ParallelString, Split,
        SplitAsciiWhitespace, SplitInclusive, SplitTerminator, SplitWhitespace,
    };

    /// [`ParallelString::par_bytes`]'s iterator.
    pub type Bytes<'ch> = crate::iter::Copied<crate::slice::Iter<'ch, u8>>;
    /// [`ParallelString::par_encode_utf16`]'s iterator.
    pub type EncodeUtf16<'ch> = IntoIter<u16>;
}
