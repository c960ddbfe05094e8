//! Parallel iterators over strings: rayon's [`ParallelString`].
//!
//! `par_chars` and `par_char_indices` split the string at any byte and
//! give each character to the part holding its first byte; the splitters
//! (`par_split`, `par_lines`, `par_split_whitespace`, …) cut the string at
//! a separator near the middle when a worker asks (see `split.rs`).

use super::engine::{self, Consumer, Piece};
use super::vec::IntoIter;
use super::{IntoParallelIterator, ParallelIterator};

mod split;

pub use split::{
    Lines, MatchIndices, Matches, Split, SplitAsciiWhitespace, SplitInclusive, SplitTerminator,
    SplitWhitespace,
};

mod private {
    /// What `par_split` and friends split at: a `char`, a set of them
    /// (`&[char]`, `[char; N]`, `&[char; N]`), or a predicate. Sealed.
    pub trait Pattern: Sync + Send {
        /// Whether `c` is a separator.
        fn matches(&self, c: char) -> bool;
        /// The first separator in `s`: its byte offset and length.
        #[inline]
        fn find_in(&self, s: &str) -> Option<(usize, usize)> {
            s.char_indices()
                .find(|&(_, c)| self.matches(c))
                .map(|(i, c)| (i, c.len_utf8()))
        }
        /// The last separator in `s`: its byte offset and length.
        #[inline]
        fn rfind_in(&self, s: &str) -> Option<(usize, usize)> {
            s.char_indices()
                .rev()
                .find(|&(_, c)| self.matches(c))
                .map(|(i, c)| (i, c.len_utf8()))
        }
    }
}
use private::Pattern;

impl Pattern for char {
    #[inline]
    fn matches(&self, c: char) -> bool {
        *self == c
    }
}
impl Pattern for &[char] {
    #[inline]
    fn matches(&self, c: char) -> bool {
        self.contains(&c)
    }
}
impl<const N: usize> Pattern for [char; N] {
    #[inline]
    fn matches(&self, c: char) -> bool {
        self.contains(&c)
    }
}
impl<const N: usize> Pattern for &[char; N] {
    #[inline]
    fn matches(&self, c: char) -> bool {
        self.contains(&c)
    }
}
impl<F: Fn(char) -> bool + Sync + Send> Pattern for F {
    #[inline]
    fn matches(&self, c: char) -> bool {
        self(c)
    }
}

/// Parallel iteration over a string's parts: rayon's `ParallelString`,
/// implemented for `str` (and so `String`).
///
/// ```
/// use terroir::prelude::*;
/// let text = "one two  three\nfour";
/// assert_eq!(text.par_split_whitespace().count(), 4);
/// assert_eq!(text.par_chars().filter(|c| *c == 'o').count(), 3);
/// assert_eq!(text.par_lines().collect::<Vec<_>>(), ["one two  three", "four"]);
/// ```
pub trait ParallelString {
    /// The string itself.
    fn as_parallel_string(&self) -> &str;

    /// The characters, in order.
    fn par_chars(&self) -> Chars<'_> {
        Chars {
            s: self.as_parallel_string(),
        }
    }

    /// The characters with their byte offsets, in order.
    fn par_char_indices(&self) -> CharIndices<'_> {
        CharIndices {
            s: self.as_parallel_string(),
        }
    }

    /// The bytes.
    fn par_bytes(&self) -> super::Copied<super::slice::Iter<'_, u8>> {
        super::ParallelIterator::copied(self.as_parallel_string().as_bytes().into_par_iter())
    }

    /// The UTF-16 code units (encoded sequentially first).
    fn par_encode_utf16(&self) -> IntoIter<u16> {
        let units: Vec<u16> = self.as_parallel_string().encode_utf16().collect();
        units.into_par_iter()
    }

    /// The parts between separators, like `str::split`.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let parts: Vec<&str> = "a,b,,c".par_split(',').collect();
    /// assert_eq!(parts, ["a", "b", "", "c"]);
    /// ```
    fn par_split<P: Pattern>(&self, separator: P) -> Split<'_, P> {
        Split::new(self.as_parallel_string(), separator)
    }

    /// The parts, each ending with its separator, like
    /// `str::split_inclusive`.
    fn par_split_inclusive<P: Pattern>(&self, separator: P) -> SplitInclusive<'_, P> {
        SplitInclusive::new(self.as_parallel_string(), separator)
    }

    /// The parts between terminators, like `str::split_terminator`.
    fn par_split_terminator<P: Pattern>(&self, terminator: P) -> SplitTerminator<'_, P> {
        SplitTerminator::new(self.as_parallel_string(), terminator)
    }

    /// The lines, like `str::lines`.
    fn par_lines(&self) -> Lines<'_> {
        Lines(self.as_parallel_string())
    }

    /// The words between Unicode white space, like `str::split_whitespace`.
    fn par_split_whitespace(&self) -> SplitWhitespace<'_> {
        SplitWhitespace(self.as_parallel_string())
    }

    /// The words between ASCII white space, like
    /// `str::split_ascii_whitespace`.
    fn par_split_ascii_whitespace(&self) -> SplitAsciiWhitespace<'_> {
        SplitAsciiWhitespace(self.as_parallel_string())
    }

    /// The matches of `pattern` (one character each), like `str::matches`.
    fn par_matches<P: Pattern>(&self, pattern: P) -> Matches<'_, P> {
        Matches::new(self.as_parallel_string(), pattern)
    }

    /// The matches of `pattern` with their byte offsets, like
    /// `str::match_indices`.
    fn par_match_indices<P: Pattern>(&self, pattern: P) -> MatchIndices<'_, P> {
        MatchIndices::new(self.as_parallel_string(), pattern)
    }
}

impl ParallelString for str {
    fn as_parallel_string(&self) -> &str {
        self
    }
}

/// [`ParallelString::par_chars`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let c: terroir::iter::string::Chars<'_> = "héllo".par_chars();
/// assert_eq!(c.collect::<String>(), "héllo");
/// ```
#[derive(Clone, Debug)]
pub struct Chars<'a> {
    s: &'a str,
}

/// [`ParallelString::par_char_indices`]'s iterator.
///
/// ```
/// use terroir::prelude::*;
/// let c: terroir::iter::string::CharIndices<'_> = "aé b".par_char_indices();
/// assert_eq!(c.collect::<Vec<_>>(), [(0, 'a'), (1, 'é'), (3, ' '), (4, 'b')]);
/// ```
#[derive(Clone, Debug)]
pub struct CharIndices<'a> {
    s: &'a str,
}

impl ParallelIterator for Chars<'_> {
    type Item = char;
    fn drive_engine<C: Consumer<char>>(self, consumer: C) -> C::Result {
        engine::run(
            StrPiece {
                s: self.s,
                lo: 0,
                hi: self.s.len(),
            },
            consumer,
        )
    }
}

impl ParallelIterator for CharIndices<'_> {
    type Item = (usize, char);
    fn drive_engine<C: Consumer<(usize, char)>>(self, consumer: C) -> C::Result {
        engine::run(
            IndexedStrPiece(StrPiece {
                s: self.s,
                lo: 0,
                hi: self.s.len(),
            }),
            consumer,
        )
    }
}

/// Bytes `lo..hi` of `s`: the characters whose first byte is there.
#[derive(Clone, Copy)]
pub struct StrPiece<'a> {
    s: &'a str,
    lo: usize,
    hi: usize,
}

impl<'a> StrPiece<'a> {
    /// The first character boundary at or after `i`.
    fn boundary(&self, i: usize) -> usize {
        (i..self.s.len())
            .find(|&j| self.s.is_char_boundary(j))
            .unwrap_or(self.s.len())
    }

    /// The characters whose first byte is in `a..b`, and where they start.
    fn part(&self, a: usize, b: usize) -> (usize, &'a str) {
        let (a, b) = (self.boundary(a), self.boundary(b));
        (a, &self.s[a..b])
    }

    fn split(self, mid: usize) -> (Self, Self) {
        let at = self.lo + mid;
        (StrPiece { hi: at, ..self }, StrPiece { lo: at, ..self })
    }
}

impl<'a> Piece for StrPiece<'a> {
    type Item = char;
    type Seq<'s>
        = std::str::Chars<'a>
    where
        Self: 's;
    type RevSeq<'s>
        = std::iter::Rev<std::str::Chars<'a>>
    where
        Self: 's;
    fn units(&self) -> usize {
        self.hi - self.lo
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        self.split(mid)
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        let (_, part) = self.part(self.lo, self.lo + n);
        self.lo += n;
        part.chars()
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        let (_, part) = self.part(self.hi - n, self.hi);
        self.hi -= n;
        part.chars().rev()
    }
}

/// [`StrPiece`] yielding byte offsets too.
pub struct IndexedStrPiece<'a>(StrPiece<'a>);

/// The characters of a part with their offsets in the whole string.
pub struct OffsetCharIndices<'a> {
    inner: std::str::CharIndices<'a>,
    offset: usize,
}

impl Iterator for OffsetCharIndices<'_> {
    type Item = (usize, char);
    fn next(&mut self) -> Option<(usize, char)> {
        self.inner.next().map(|(i, c)| (i + self.offset, c))
    }
}

impl DoubleEndedIterator for OffsetCharIndices<'_> {
    fn next_back(&mut self) -> Option<(usize, char)> {
        self.inner.next_back().map(|(i, c)| (i + self.offset, c))
    }
}

impl<'a> Piece for IndexedStrPiece<'a> {
    type Item = (usize, char);
    type Seq<'s>
        = OffsetCharIndices<'a>
    where
        Self: 's;
    type RevSeq<'s>
        = std::iter::Rev<OffsetCharIndices<'a>>
    where
        Self: 's;
    fn units(&self) -> usize {
        self.0.units()
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (a, b) = self.0.split(mid);
        (IndexedStrPiece(a), IndexedStrPiece(b))
    }
    fn front(&mut self, n: usize) -> Self::Seq<'_> {
        let p = &mut self.0;
        let (offset, part) = p.part(p.lo, p.lo + n);
        p.lo += n;
        OffsetCharIndices {
            inner: part.char_indices(),
            offset,
        }
    }
    fn back_rev(&mut self, n: usize) -> Self::RevSeq<'_> {
        let p = &mut self.0;
        let (offset, part) = p.part(p.hi - n, p.hi);
        p.hi -= n;
        OffsetCharIndices {
            inner: part.char_indices(),
            offset,
        }
        .rev()
    }
}

/// `par_drain(range)` on a `String`: the characters of a byte range,
/// removed from the string (rayon's `string::Drain`). The range is
/// removed when the iterator is dropped, run or not.
///
/// # Panics
/// When the range is out of bounds, decreasing, or does not lie on
/// character boundaries (as `String::drain`).
///
/// ```
/// use terroir::prelude::*;
/// let mut s = String::from("héllo wörld");
/// let d: terroir::iter::string::Drain<'_> = s.par_drain(..6);
/// assert_eq!(d.collect::<String>(), "héllo");
/// assert_eq!(s, " wörld");
/// ```
#[derive(Debug)]
pub struct Drain<'a> {
    string: &'a mut String,
    range: std::ops::Range<usize>,
}

impl<'a> super::ParallelDrainRange<usize> for &'a mut String {
    type Iter = Drain<'a>;
    type Item = char;
    #[track_caller]
    fn par_drain<R: std::ops::RangeBounds<usize>>(self, range: R) -> Drain<'a> {
        let range = super::vec::check_range(range, self.len());
        assert!(
            self.is_char_boundary(range.start),
            "byte index {} is not a char boundary",
            range.start
        );
        assert!(
            self.is_char_boundary(range.end),
            "byte index {} is not a char boundary",
            range.end
        );
        Drain {
            string: self,
            range,
        }
    }
}

impl ParallelIterator for Drain<'_> {
    type Item = char;
    fn drive_engine<C: Consumer<char>>(self, consumer: C) -> C::Result {
        Chars {
            s: &self.string[self.range.clone()],
        }
        .drive_engine(consumer)
    }
}

impl Drop for Drain<'_> {
    fn drop(&mut self) {
        self.string.drain(self.range.clone());
    }
}
