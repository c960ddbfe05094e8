//! Requests on one rank (MPI's singleton start-up: no `mpirun` needed),
//! sending to itself. MPI can be initialised once per process, so this
//! file is one test, in steps.

use terroir::ThreadPoolBuilder;
use terroir_mpi::{Builder, CommError, InitError, Threading};

/// The request's buffer, or a panic after 10 s (not a hang) when a bug
/// lost its message.
fn within_10s<T>(r: terroir_mpi::Request<T>) -> Vec<T> {
    let start = std::time::Instant::now();
    while !r.is_complete() {
        assert!(start.elapsed().as_secs() < 10, "the message never came");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    r.wait().unwrap()
}

#[test]
fn requests_on_one_rank() {
    // One worker: a wait that blocked it instead of running other work
    // would hang the scope step below.
    let rank = Builder::new()
        .threading(Threading::Funneled)
        .pool(ThreadPoolBuilder::new().num_threads(1))
        .init()
        .expect("MPI singleton start-up");
    assert_eq!((rank.rank(), rank.size()), (0, 1));
    assert!(rank.threading() >= Threading::Funneled);
    assert!(matches!(
        terroir_mpi::init(),
        Err(InitError::AlreadyInitialized)
    ));

    let (leaked, kept) = rank.run(|comm| {
        // Bad input, refused at once.
        assert_eq!(
            comm.isend(1, 0, vec![1u8]).unwrap_err(),
            CommError::InvalidRank { rank: 1, size: 1 }
        );
        assert_eq!(
            comm.irecv(0, -1, vec![0u8]).unwrap_err(),
            CommError::InvalidTag(-1)
        );
        assert_eq!(
            comm.irecv(0, terroir_mpi::MAX_TAG + 1, vec![0u8])
                .unwrap_err(),
            CommError::InvalidTag(terroir_mpi::MAX_TAG + 1)
        );

        // A round trip; both buffers come back.
        let r = comm.irecv(0, 5, vec![0u32; 3]).unwrap();
        let s = comm.isend(0, 5, vec![1u32, 2, 3]).unwrap();
        assert_eq!(s.wait().unwrap(), vec![1, 2, 3]);
        assert_eq!(r.wait().unwrap(), vec![1, 2, 3]);

        // A message longer than the receive: a typed error, and the
        // message is consumed (the next receive gets the next message).
        let r = comm.irecv(0, 6, vec![0u32; 2]).unwrap();
        comm.isend(0, 6, vec![7u32; 3]).unwrap().wait().unwrap();
        let e = r.wait().unwrap_err();
        assert_eq!(
            e,
            CommError::SizeMismatch {
                source: 0,
                tag: 6,
                expected: 2,
                received_bytes: 12,
                element_size: 4
            }
        );
        assert!(e.to_string().contains("12 bytes"), "{e}");
        let s = comm.isend(0, 6, vec![8u32, 9]).unwrap();
        assert_eq!(
            comm.irecv(0, 6, vec![0u32; 2]).unwrap().wait().unwrap(),
            vec![8, 9]
        );
        s.wait().unwrap();
        // Shorter than the receive: an error too.
        let r = comm.irecv(0, 6, vec![0u32; 4]).unwrap();
        comm.isend(0, 6, vec![1u32]).unwrap().wait().unwrap();
        assert!(matches!(
            r.wait(),
            Err(CommError::SizeMismatch {
                expected: 4,
                received_bytes: 4,
                ..
            })
        ));

        // A receive dropped before it matched is withdrawn: the message
        // goes to the next receive.
        drop(comm.irecv(0, 7, vec![0u8]).unwrap());
        // (The send completes before the next receive is posted: a
        // receive that was not withdrawn would have taken its message.)
        comm.isend(0, 7, vec![42u8]).unwrap().wait().unwrap();
        let r = comm.irecv(0, 7, vec![0u8]).unwrap();
        assert_eq!(within_10s(r), vec![42]);

        // A send dropped while pending (too large to go eagerly) completes
        // in the background: its buffer stays valid until it is received.
        drop(comm.isend(0, 8, vec![1u64; 1 << 18]).unwrap());
        let got = comm
            .irecv(0, 8, vec![0u64; 1 << 18])
            .unwrap()
            .wait()
            .unwrap();
        assert!(got.iter().all(|&x| x == 1));

        // `test` and `is_complete` before and after.
        let r = comm.irecv(0, 11, vec![false; 2]).unwrap();
        assert!(!r.is_complete());
        let r = r.test().unwrap_err();
        comm.isend(0, 11, vec![true, false])
            .unwrap()
            .wait()
            .unwrap();
        let got = r.wait().unwrap();
        assert_eq!(got, vec![true, false]);

        // A wait runs other work: the only worker waits for a message that
        // a task queued behind it sends.
        let r = comm.irecv(0, 9, vec![0i64]).unwrap();
        let c = comm.clone();
        terroir::scope(|s| {
            s.spawn(move |_| {
                c.isend(0, 9, vec![-5i64]).unwrap().wait().unwrap();
            });
            assert_eq!(r.wait().unwrap(), vec![-5]);
        });

        // Left pending when `run` returns.
        (comm.irecv(0, 10, vec![0u8]).unwrap(), comm.clone())
    });
    assert_eq!(leaked.wait().unwrap_err(), CommError::Shutdown);
    assert_eq!(
        kept.isend(0, 0, vec![1u8]).unwrap().wait().unwrap_err(),
        CommError::Shutdown
    );

    // A second phase works as the first did.
    let echoed = rank.run(|comm| {
        let r = comm.irecv(0, 1, vec![0.0f64; 2]).unwrap();
        comm.isend(0, 1, vec![0.5, 1.5]).unwrap().wait().unwrap();
        r.wait().unwrap()
    });
    assert_eq!(echoed, vec![0.5, 1.5]);

    // The doctor on one rank: a table of one row.
    let report = terroir_mpi::doctor::Report::gather(&rank).expect("rank 0 gets the report");
    assert_eq!(report.ranks.len(), 1);
    assert_eq!(report.ranks[0].threads, 1);
    assert_eq!(&report.ranks[0].cpus, rank.cpus());

    drop(rank); // finalises MPI
    assert!(matches!(terroir_mpi::init(), Err(InitError::Finalized)));
}
