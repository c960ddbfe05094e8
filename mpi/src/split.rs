//! Splitting rows (or any range of items) across ranks.

use std::fmt;
use std::ops::Range;

/// Why rows cannot be split across ranks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SplitError {
    /// No ranks to split across.
    NoRanks,
    /// More ranks than rows: some rank would get none.
    MoreRanksThanRows {
        /// The rows.
        rows: usize,
        /// The ranks.
        ranks: usize,
    },
}

impl fmt::Display for SplitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SplitError::NoRanks => f.write_str("cannot split rows across 0 ranks"),
            SplitError::MoreRanksThanRows { rows, ranks } => write!(
                f,
                "{rows} rows cannot be split across {ranks} ranks: every rank needs a row \
                 (use at most {rows} ranks, or more rows)"
            ),
        }
    }
}

impl std::error::Error for SplitError {}

/// The rows of rank `rank` when `rows` rows are split across `ranks`
/// ranks in contiguous blocks: the first `rows % ranks` ranks get one row
/// more than the others.
///
/// ```
/// use terroir_mpi::split_rows;
/// assert_eq!(split_rows(10, 3, 0), Ok(0..4));
/// assert_eq!(split_rows(10, 3, 1), Ok(4..7));
/// assert_eq!(split_rows(10, 3, 2), Ok(7..10));
/// assert!(split_rows(2, 3, 0).is_err());
/// ```
///
/// # Errors
/// [`SplitError`]: no ranks, or more ranks than rows.
///
/// # Panics
/// If `rank >= ranks` (a bug of the caller's, not bad input).
pub fn split_rows(rows: usize, ranks: usize, rank: usize) -> Result<Range<usize>, SplitError> {
    if ranks == 0 {
        return Err(SplitError::NoRanks);
    }
    if ranks > rows {
        return Err(SplitError::MoreRanksThanRows { rows, ranks });
    }
    assert!(rank < ranks, "rank {rank} of {ranks} ranks");
    let (base, extra) = (rows / ranks, rows % ranks);
    let start = rank * base + rank.min(extra);
    let len = base + usize::from(rank < extra);
    Ok(start..start + len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_the_rows_once_in_order() {
        for rows in 1..40 {
            for ranks in 1..=rows {
                let blocks: Vec<_> = (0..ranks)
                    .map(|r| split_rows(rows, ranks, r).unwrap())
                    .collect();
                assert_eq!(blocks[0].start, 0);
                assert_eq!(blocks[ranks - 1].end, rows);
                for w in blocks.windows(2) {
                    assert_eq!(w[0].end, w[1].start);
                }
                let (min, max) = blocks.iter().fold((usize::MAX, 0), |(lo, hi), b| {
                    (lo.min(b.len()), hi.max(b.len()))
                });
                assert!(
                    min >= 1 && max - min <= 1,
                    "rows {rows} ranks {ranks}: {blocks:?}"
                );
            }
        }
    }

    #[test]
    fn more_ranks_than_rows_is_an_error_naming_both() {
        let e = split_rows(2, 3, 0).unwrap_err();
        assert_eq!(e, SplitError::MoreRanksThanRows { rows: 2, ranks: 3 });
        assert!(e.to_string().contains("2 rows") && e.to_string().contains("3 ranks"));
        assert_eq!(split_rows(5, 0, 0), Err(SplitError::NoRanks));
    }
}
