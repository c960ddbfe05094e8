//! Gathering bytes of any length from every rank on rank 0.

use mpi::datatype::PartitionMut;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, Root};

/// Gathers `bytes` from every rank of `world` on its rank 0, by rank:
/// `Some` there, `None` on the other ranks. Collective: every rank calls
/// it, from the thread that initialised MPI. A rank's bytes beyond
/// `i32::MAX` are cut (MPI counts in `i32`).
pub(crate) fn gather_bytes(world: &SimpleCommunicator, bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
    let root = world.process_at_rank(0);
    let bytes = &bytes[..bytes.len().min(i32::MAX as usize)];
    // Cut above to fit.
    let len = bytes.len() as i32;
    if world.rank() != 0 {
        root.gather_into(&len);
        root.gather_varcount_into(bytes);
        return None;
    }
    let mut lens = vec![0i32; world.size() as usize];
    root.gather_into_root(&len, &mut lens[..]);
    let displs: Vec<i32> = lens
        .iter()
        .scan(0i32, |acc, &l| {
            let d = *acc;
            *acc = acc.saturating_add(l);
            Some(d)
        })
        .collect();
    let total = lens.iter().map(|&l| l as usize).sum();
    let mut all = vec![0u8; total];
    {
        let mut partition = PartitionMut::new(&mut all[..], &lens[..], &displs[..]);
        root.gather_varcount_into_root(bytes, &mut partition);
    }
    Some(
        lens.iter()
            .zip(&displs)
            .map(|(&l, &d)| all[d as usize..(d + l) as usize].to_vec())
            .collect(),
    )
}
