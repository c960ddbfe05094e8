//! The string splitters (`par_split`, `par_lines`, `par_matches`, …) as
//! [`Frontier`]s: a run takes its pieces from the front of its text, and
//! when another worker asks, cuts the text at a separator near the middle
//! of what is left and gives away the later half. No pass over the whole
//! string comes first, and nothing is collected.

use std::fmt;

use super::Pattern;
use crate::iter::engine::{run_frontier, Consumer, Frontier};
use crate::iter::ParallelIterator;

/// Which pieces a separator-delimited walk yields.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Between separators (`str::split`).
    Split,
    /// Each ending with its separator (`str::split_inclusive`): an empty
    /// last piece is not one.
    Inclusive,
    /// Between separators, an empty last piece of the string not one
    /// (`str::split_terminator`).
    Terminator,
}

/// A part of a string being split: the text left of it and how its last
/// piece counts.
struct Pieces<'ch, 'p, P> {
    rest: &'ch str,
    /// The last piece was yielded.
    done: bool,
    /// An empty last piece is not yielded: a split-inclusive part's (cut
    /// after a separator), or a split-terminator part that ends where the
    /// string ends.
    skip_empty_last: bool,
    /// `rest` holds no separator where a cut could go: it cannot be cut.
    whole: bool,
    kind: Kind,
    sep: &'p P,
}

impl<'ch, 'p, P: Pattern> Pieces<'ch, 'p, P> {
    fn new(text: &'ch str, sep: &'p P, kind: Kind) -> Self {
        Pieces {
            rest: text,
            done: false,
            skip_empty_last: kind != Kind::Split,
            whole: false,
            kind,
            sep,
        }
    }
}

/// `i` or the closest character boundary before it.
fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

impl<'ch, P: Pattern> Pieces<'ch, '_, P> {
    /// The next piece.
    #[inline]
    fn piece(&mut self) -> Option<&'ch str> {
        if self.done {
            return None;
        }
        match self.sep.find_in(self.rest) {
            Some((i, len)) => {
                let end = if self.kind == Kind::Inclusive {
                    i + len
                } else {
                    i
                };
                let piece = &self.rest[..end];
                self.rest = &self.rest[i + len..];
                Some(piece)
            }
            None => {
                self.done = true;
                if self.rest.is_empty() && self.skip_empty_last {
                    None
                } else {
                    Some(self.rest)
                }
            }
        }
    }

    fn no_piece(&self) -> bool {
        self.done || (self.rest.is_empty() && self.skip_empty_last)
    }

    /// Cuts at a separator near the middle of what is left (the first one
    /// after it, else the last one before it), one that leaves text after
    /// it: both parts have a piece.
    fn cut(&mut self) -> Option<Self> {
        if self.whole || self.done || self.rest.len() < 2 {
            return None;
        }
        let rest = self.rest;
        let mid = floor_boundary(rest, rest.len() / 2);
        let found = match self.sep.find_in(&rest[mid..]) {
            Some((i, len)) if mid + i + len < rest.len() => Some((mid + i, len)),
            _ => self.sep.rfind_in(&rest[..mid]),
        };
        let Some((i, len)) = found else {
            self.whole = true;
            return None;
        };
        let theirs = Pieces {
            rest: &rest[i + len..],
            done: false,
            skip_empty_last: self.skip_empty_last,
            whole: false,
            kind: self.kind,
            sep: self.sep,
        };
        if self.kind == Kind::Inclusive {
            self.rest = &rest[..i + len];
        } else {
            // The piece before the cut is a piece even if empty: a
            // separator ends it.
            self.rest = &rest[..i];
            self.skip_empty_last = false;
        }
        Some(theirs)
    }
}

/// [`Pieces`] yielding the pieces themselves.
struct Parts<'ch, 'p, P>(Pieces<'ch, 'p, P>);

impl<'ch, P: Pattern> Frontier for Parts<'ch, '_, P> {
    type Item = &'ch str;
    #[inline]
    fn next(&mut self) -> Option<&'ch str> {
        self.0.piece()
    }
    fn is_empty(&self) -> bool {
        self.0.no_piece()
    }
    fn split_off(&mut self) -> Option<Self> {
        self.0.cut().map(Parts)
    }
}

/// The matches of a pattern in a part of a string that starts at byte
/// `offset` of it.
struct Found<'ch, 'p, P> {
    rest: &'ch str,
    offset: usize,
    done: bool,
    sep: &'p P,
}

impl<'ch, P: Pattern> Frontier for Found<'ch, '_, P> {
    type Item = (usize, &'ch str);
    #[inline]
    fn next(&mut self) -> Option<(usize, &'ch str)> {
        if self.done {
            return None;
        }
        match self.sep.find_in(self.rest) {
            Some((i, len)) => {
                let found = (self.offset + i, &self.rest[i..i + len]);
                self.rest = &self.rest[i + len..];
                self.offset += i + len;
                Some(found)
            }
            None => {
                self.done = true;
                None
            }
        }
    }
    fn is_empty(&self) -> bool {
        self.done || self.rest.is_empty()
    }
    fn split_off(&mut self) -> Option<Self> {
        // Any character boundary is a cut: a match is one character.
        if self.done || self.rest.len() < 2 {
            return None;
        }
        let mid = floor_boundary(self.rest, self.rest.len() / 2);
        if mid == 0 {
            return None;
        }
        let theirs = Found {
            rest: &self.rest[mid..],
            offset: self.offset + mid,
            done: false,
            sep: self.sep,
        };
        self.rest = &self.rest[..mid];
        Some(theirs)
    }
}

macro_rules! pattern_iter {
    ($(#[$doc:meta])* $name:ident, $kind:ident) => {
        $(#[$doc])*
        #[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
        #[derive(Clone)]
        pub struct $name<'ch, P> {
            text: &'ch str,
            sep: P,
        }

        impl<'ch, P> $name<'ch, P> {
            pub(crate) fn new(text: &'ch str, sep: P) -> Self {
                $name { text, sep }
            }
        }

        /// Shows the text and the separator.
        impl<P: fmt::Debug> fmt::Debug for $name<'_, P> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("text", &self.text)
                    .field("separator", &self.sep)
                    .finish()
            }
        }

        impl<'ch, P: Pattern> ParallelIterator for $name<'ch, P> {
            type Item = &'ch str;
            fn drive_engine<C: Consumer<&'ch str>>(self, consumer: C) -> C::Result {
                let parts = Parts(Pieces::new(self.text, &self.sep, Kind::$kind));
                run_frontier(parts, consumer, false)
            }
        }
    };
}

pattern_iter! {
    /// [`ParallelString::par_split`](super::ParallelString::par_split)'s
    /// iterator (`P`: the separator).
    ///
    /// ```
    /// use terroir::prelude::*;
    /// fn fields(line: &str) -> terroir::str::Split<'_, char> {
    ///     line.par_split(',')
    /// }
    /// assert_eq!(fields("a,b,,c").collect::<Vec<_>>(), ["a", "b", "", "c"]);
    /// ```
    Split, Split
}

pattern_iter! {
    /// [`ParallelString::par_split_inclusive`](super::ParallelString::par_split_inclusive)'s
    /// iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let parts: Vec<&str> = "a,b,".par_split_inclusive(',').collect();
    /// assert_eq!(parts, ["a,", "b,"]);
    /// ```
    SplitInclusive, Inclusive
}

pattern_iter! {
    /// [`ParallelString::par_split_terminator`](super::ParallelString::par_split_terminator)'s
    /// iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let parts: Vec<&str> = "a;b;;".par_split_terminator(';').collect();
    /// assert_eq!(parts, ["a", "b", ""]);
    /// ```
    SplitTerminator, Terminator
}

macro_rules! found_iter {
    ($(#[$doc:meta])* $name:ident, $item:ty, $map:expr) => {
        $(#[$doc])*
        #[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
        #[derive(Clone)]
        pub struct $name<'ch, P> {
            text: &'ch str,
            pattern: P,
        }

        impl<'ch, P> $name<'ch, P> {
            pub(crate) fn new(text: &'ch str, pattern: P) -> Self {
                $name { text, pattern }
            }
        }

        /// Shows the text and the pattern.
        impl<P: fmt::Debug> fmt::Debug for $name<'_, P> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("text", &self.text)
                    .field("pattern", &self.pattern)
                    .finish()
            }
        }

        impl<'ch, P: Pattern> ParallelIterator for $name<'ch, P> {
            type Item = $item;
            fn drive_engine<C: Consumer<$item>>(self, consumer: C) -> C::Result {
                let found = Found {
                    rest: self.text,
                    offset: 0,
                    done: false,
                    sep: &self.pattern,
                };
                run_frontier(Mapped(found, $map), consumer, false)
            }
        }
    };
}

found_iter! {
    /// [`ParallelString::par_matches`](super::ParallelString::par_matches)'s
    /// iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// assert_eq!("a1b22".par_matches(char::is_numeric).count(), 3);
    /// ```
    Matches, &'ch str, |(_, m): (usize, &'ch str)| m
}

found_iter! {
    /// [`ParallelString::par_match_indices`](super::ParallelString::par_match_indices)'s
    /// iterator.
    ///
    /// ```
    /// use terroir::prelude::*;
    /// let at: Vec<(usize, &str)> = "a1b2".par_match_indices(char::is_numeric).collect();
    /// assert_eq!(at, [(1, "1"), (3, "2")]);
    /// ```
    MatchIndices, (usize, &'ch str), |m: (usize, &'ch str)| m
}

/// A frontier whose items are mapped by `F` (a copyable function).
struct Mapped<Fr, F>(Fr, F);

impl<Fr, F, T> Frontier for Mapped<Fr, F>
where
    Fr: Frontier,
    F: Fn(Fr::Item) -> T + Copy + Send,
{
    type Item = T;
    #[inline]
    fn next(&mut self) -> Option<T> {
        self.0.next().map(self.1)
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    fn split_off(&mut self) -> Option<Self> {
        self.0.split_off().map(|fr| Mapped(fr, self.1))
    }
}

/// Lines: pieces ending at `'\n'` (kept), the `"\n"` or `"\r\n"` then
/// dropped, as `str::lines`.
fn line(piece: &str) -> &str {
    match piece.strip_suffix('\n') {
        Some(l) => l.strip_suffix('\r').unwrap_or(l),
        None => piece,
    }
}

/// Words: pieces between separators, the empty ones dropped.
struct Words<'ch, 'p, P>(Pieces<'ch, 'p, P>);

impl<'ch, P: Pattern> Frontier for Words<'ch, '_, P> {
    type Item = &'ch str;
    #[inline]
    fn next(&mut self) -> Option<&'ch str> {
        loop {
            match self.0.piece() {
                Some("") => continue,
                other => return other,
            }
        }
    }
    fn is_empty(&self) -> bool {
        // A part with only separators left is not known to be empty until
        // its pieces are looked at: `next` says `None` then, and the part
        // is done.
        self.0.no_piece()
    }
    fn split_off(&mut self) -> Option<Self> {
        self.0.cut().map(Words)
    }
}

/// [`ParallelString::par_lines`](super::ParallelString::par_lines)'s
/// iterator.
///
/// ```
/// use terroir::prelude::*;
/// let lines: Vec<&str> = "one\r\ntwo\n\nthree".par_lines().collect();
/// assert_eq!(lines, ["one", "two", "", "three"]);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct Lines<'ch>(pub(crate) &'ch str);

impl<'ch> ParallelIterator for Lines<'ch> {
    type Item = &'ch str;
    fn drive_engine<C: Consumer<&'ch str>>(self, consumer: C) -> C::Result {
        let pieces = Pieces::new(self.0, &'\n', Kind::Inclusive);
        run_frontier(Mapped(Parts(pieces), line), consumer, false)
    }
}

/// [`ParallelString::par_split_whitespace`](super::ParallelString::par_split_whitespace)'s
/// iterator.
///
/// ```
/// use terroir::prelude::*;
/// assert_eq!(" a  b\tc\n".par_split_whitespace().count(), 3);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct SplitWhitespace<'ch>(pub(crate) &'ch str);

impl<'ch> ParallelIterator for SplitWhitespace<'ch> {
    type Item = &'ch str;
    fn drive_engine<C: Consumer<&'ch str>>(self, consumer: C) -> C::Result {
        let sep = char::is_whitespace;
        run_frontier(
            Words(Pieces::new(self.0, &sep, Kind::Split)),
            consumer,
            false,
        )
    }
}

/// [`ParallelString::par_split_ascii_whitespace`](super::ParallelString::par_split_ascii_whitespace)'s
/// iterator.
///
/// ```
/// use terroir::prelude::*;
/// assert_eq!(" a  b\tc\n".par_split_ascii_whitespace().count(), 3);
/// ```
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct SplitAsciiWhitespace<'ch>(pub(crate) &'ch str);

impl<'ch> ParallelIterator for SplitAsciiWhitespace<'ch> {
    type Item = &'ch str;
    fn drive_engine<C: Consumer<&'ch str>>(self, consumer: C) -> C::Result {
        let sep = |c: char| c.is_ascii_whitespace();
        run_frontier(
            Words(Pieces::new(self.0, &sep, Kind::Split)),
            consumer,
            false,
        )
    }
}
