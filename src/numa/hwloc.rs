//! Topology discovery through hwloc (the `hwloc` feature).

use super::{NumaError, Topology};

pub(crate) fn from_hwloc() -> Result<Topology, NumaError> {
    Err(NumaError::Hwloc {
        detail: "the hwloc backend is not written yet".into(),
    })
}
