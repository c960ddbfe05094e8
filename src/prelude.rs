//! `use terroir::prelude::*;`: the traits of the parallel iterators, under
//! rayon's names (the whole change from `use rayon::prelude::*;`).
//!
//! ```
//! use terroir::prelude::*;
//! let v: Vec<u64> = (1..=4u64).into_par_iter().map(|x| x * x).collect();
//! assert_eq!(v.par_iter().sum::<u64>(), 30);
//! ```

pub use crate::iter::slice::{ParallelSlice, ParallelSliceMut};
pub use crate::iter::string::ParallelString;
pub use crate::iter::{
    FromParallelIterator, IndexedParallelIterator, IntoParallelIterator, IntoParallelRefIterator,
    IntoParallelRefMutIterator, ParallelBridge, ParallelDrainFull, ParallelDrainRange,
    ParallelExtend, ParallelIterator,
};
