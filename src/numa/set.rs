//! Bit sets of CPU and NUMA node numbers, parsed from and printed as Linux
//! "cpulist" text (`0-3,8,10-11`).

use std::fmt;

use super::NumaError;

/// Numbers in a list stay below this.
const LIST_LIMIT: u32 = 1 << 16;

/// A growable bit set of small integers; the storage behind [`CpuSet`] and
/// [`NodeSet`].
#[derive(Clone, Default, PartialEq, Eq, Hash)]
struct Bits {
    words: Vec<u64>,
}

impl Bits {
    fn insert(&mut self, i: u32) {
        let w = (i / 64) as usize;
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1 << (i % 64);
    }

    fn remove(&mut self, i: u32) {
        if let Some(word) = self.words.get_mut((i / 64) as usize) {
            *word &= !(1 << (i % 64));
        }
    }

    fn contains(&self, i: u32) -> bool {
        self.words
            .get((i / 64) as usize)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &w)| {
            (0..64u32)
                .filter(move |b| w & (1 << b) != 0)
                .map(move |b| wi as u32 * 64 + b)
        })
    }

    fn and(&self, other: &Bits) -> Bits {
        let mut words: Vec<u64> = self
            .words
            .iter()
            .zip(&other.words)
            .map(|(a, b)| a & b)
            .collect();
        while words.last() == Some(&0) {
            words.pop();
        }
        Bits { words }
    }

    /// Parses Linux list syntax; `what` names the source in the error.
    fn parse_list(text: &str, what: &str) -> Result<Bits, NumaError> {
        let bad = || NumaError::Parse {
            what: what.to_string(),
            text: text.to_string(),
            expected: "a list like `0-3,8,10-11`",
        };
        let mut bits = Bits::default();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Ok(bits);
        }
        for part in trimmed.split(',') {
            let part = part.trim();
            let (lo, hi) = match part.split_once('-') {
                Some((lo, hi)) => (lo, hi),
                None => (part, part),
            };
            let lo: u32 = lo.trim().parse().map_err(|_| bad())?;
            let hi: u32 = hi.trim().parse().map_err(|_| bad())?;
            // Linux builds with at most 8,192 CPUs (NR_CPUS of x86-64 and
            // powerpc) and 1,024 nodes: a number of 65,536 or more is
            // garbage, not a CPU, and would cost a set (and a topology) of
            // that many bits.
            if lo > hi || hi >= LIST_LIMIT {
                return Err(bad());
            }
            for i in lo..=hi {
                bits.insert(i);
            }
        }
        Ok(bits)
    }

    fn fmt_list(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut iter = self.iter().peekable();
        while let Some(lo) = iter.next() {
            let mut hi = lo;
            while iter.peek() == Some(&(hi + 1)) {
                hi = iter.next().unwrap_or(hi);
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if lo == hi {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

macro_rules! id_set {
    ($(#[$meta:meta])* $name:ident, $item:literal, $example:literal) => {
        $(#[$meta])*
        #[derive(Clone, Default, PartialEq, Eq, Hash)]
        pub struct $name(Bits);

        impl $name {
            /// The empty set.
            pub fn new() -> Self {
                Self::default()
            }

            #[doc = concat!("Parses Linux list syntax, e.g. `", $example, "`.")]
            ///
            /// # Errors
            /// [`NumaError::Parse`] naming the text when it is not a list of
            /// ranges of integers from 0 to 65,535.
            pub fn parse(text: &str) -> Result<Self, NumaError> {
                Bits::parse_list(text, concat!($item, " list")).map(Self)
            }

            #[allow(dead_code)] // used for CpuSet only so far
            pub(crate) fn parse_named(text: &str, what: &str) -> Result<Self, NumaError> {
                Bits::parse_list(text, what).map(Self)
            }

            #[doc = concat!("Adds ", $item, " `i`.")]
            pub fn insert(&mut self, i: u32) {
                self.0.insert(i)
            }

            #[doc = concat!("Removes ", $item, " `i` (no-op when absent).")]
            pub fn remove(&mut self, i: u32) {
                self.0.remove(i)
            }

            #[doc = concat!("Whether ", $item, " `i` is in the set.")]
            pub fn contains(&self, i: u32) -> bool {
                self.0.contains(i)
            }

            /// Number of members.
            pub fn len(&self) -> usize {
                self.0.len()
            }

            /// Whether the set has no members.
            pub fn is_empty(&self) -> bool {
                self.0.words.iter().all(|&w| w == 0)
            }

            /// Members in increasing order.
            pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
                self.0.iter()
            }

            /// The members present in both sets.
            pub fn intersection(&self, other: &Self) -> Self {
                Self(self.0.and(&other.0))
            }

            /// Members as 64-bit words, bit `i % 64` of word `i / 64`; the
            /// layout of the kernel's `unsigned long` masks on 64-bit Linux.
            pub fn as_words(&self) -> &[u64] {
                &self.0.words
            }
        }

        impl FromIterator<u32> for $name {
            fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
                let mut set = Self::new();
                for i in iter {
                    set.insert(i);
                }
                set
            }
        }

        impl std::str::FromStr for $name {
            type Err = NumaError;
            fn from_str(s: &str) -> Result<Self, NumaError> {
                Self::parse(s)
            }
        }

        /// Prints Linux list syntax.
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt_list(f)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self)
            }
        }
    };
}

id_set!(
    /// A set of CPU (processing unit) numbers as the OS numbers them.
    ///
    /// ```
    /// use terroir::numa::CpuSet;
    /// let cpus = CpuSet::parse("0-3,8").unwrap();
    /// assert_eq!(cpus.len(), 5);
    /// assert!(cpus.contains(8));
    /// assert_eq!(cpus.to_string(), "0-3,8");
    /// ```
    CpuSet,
    "CPU",
    "0-3,8"
);

id_set!(
    /// A set of NUMA node numbers as the OS numbers them.
    ///
    /// ```
    /// use terroir::numa::NodeSet;
    /// let nodes: NodeSet = [0, 2, 3].into_iter().collect();
    /// assert_eq!(nodes.to_string(), "0,2-3");
    /// ```
    NodeSet,
    "node",
    "0,2-3"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_lists() {
        let s = CpuSet::parse("0-3,8,10-11\n").unwrap();
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(s.to_string(), "0-3,8,10-11");
        assert_eq!(CpuSet::parse("").unwrap().len(), 0);
        assert_eq!(CpuSet::parse("64-65").unwrap().as_words(), &[0, 3]);
    }

    #[test]
    fn rejects_garbage_naming_it() {
        for bad in ["a", "3-1", "1-", "0,,2", "99999999"] {
            let err = CpuSet::parse(bad).unwrap_err();
            assert!(err.to_string().contains(bad), "{err}");
        }
    }

    /// CPU and node numbers stop below 65,536: Linux builds with at most
    /// 8,192 CPUs (x86-64 and powerpc `NR_CPUS`) and 1,024 nodes, and a
    /// bigger number in a list is garbage that would cost a set of that
    /// many bits (and a topology of that many CPUs).
    #[test]
    fn numbers_stop_below_65536() {
        assert_eq!(CpuSet::parse("65535").unwrap().len(), 1);
        assert_eq!(CpuSet::parse("0-65535").unwrap().len(), 65_536);
        for bad in ["65536", "0-65536", "16-943946", "1048575"] {
            let err = CpuSet::parse(bad).unwrap_err();
            assert!(err.to_string().contains(bad), "{err}");
            assert!(NodeSet::parse(bad).is_err());
        }
    }

    #[test]
    fn intersection_and_remove() {
        let a = CpuSet::parse("0-7").unwrap();
        let mut b = CpuSet::parse("4-70").unwrap();
        assert_eq!(a.intersection(&b).to_string(), "4-7");
        b.remove(70);
        assert!(!b.contains(70));
        assert!(CpuSet::parse("1")
            .unwrap()
            .intersection(&CpuSet::parse("2").unwrap())
            .is_empty());
    }
}
