//! Raw system calls. Every `unsafe` block of the `numa` layer lives here;
//! the rest of the crate calls the safe functions of this file or of the
//! modules above it.

use std::io;
use std::mem;

use super::{CpuSet, NumaError};

/// The CPUs the calling thread may run on (`sched_getaffinity(0)`); cgroup
/// cpusets and `taskset` restrictions show up here.
pub(crate) fn allowed_cpus() -> Result<CpuSet, NumaError> {
    // SAFETY: cpu_set_t is plain old data; all-zero is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed; pid 0
    // means the calling thread.
    let rc = unsafe { libc::sched_getaffinity(0, mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(NumaError::Syscall {
            call: "sched_getaffinity(0)".into(),
            source: io::Error::last_os_error(),
        });
    }
    let mut cpus = CpuSet::new();
    for cpu in 0..libc::CPU_SETSIZE as usize {
        // SAFETY: `cpu` < CPU_SETSIZE, the capacity of `set`.
        if unsafe { libc::CPU_ISSET(cpu, &set) } {
            cpus.insert(cpu as u32);
        }
    }
    Ok(cpus)
}

/// Restricts the calling thread to `cpus` (`sched_setaffinity(0)`).
pub(crate) fn bind_current_thread(cpus: &CpuSet) -> Result<(), NumaError> {
    let call = || format!("sched_setaffinity(cpus {cpus})");
    // SAFETY: cpu_set_t is plain old data; all-zero is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    for cpu in cpus.iter() {
        if cpu as usize >= libc::CPU_SETSIZE as usize {
            return Err(NumaError::Syscall {
                call: call(),
                source: io::Error::from_raw_os_error(libc::EINVAL),
            });
        }
        // SAFETY: `cpu` < CPU_SETSIZE was checked just above.
        unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 means the
    // calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(NumaError::Syscall {
            call: call(),
            source: io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// The CPU and NUMA node the calling thread is running on right now
/// (`getcpu(2)`). The answer may be stale as soon as it returns unless the
/// thread is bound to one CPU.
pub(crate) fn getcpu() -> Result<(u32, u32), NumaError> {
    let mut cpu: libc::c_uint = 0;
    let mut node: libc::c_uint = 0;
    // SAFETY: both pointers are valid for a write of c_uint; the third
    // argument (tcache) is unused by Linux since 2.6.24 and may be null.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_getcpu,
            &mut cpu as *mut libc::c_uint,
            &mut node as *mut libc::c_uint,
            std::ptr::null_mut::<libc::c_void>(),
        )
    };
    if rc != 0 {
        return Err(NumaError::Syscall {
            call: "getcpu".into(),
            source: io::Error::last_os_error(),
        });
    }
    Ok((cpu, node))
}

/// The CPU the calling thread runs on, through the vDSO (`sched_getcpu`,
/// no system call); `None` if the C library cannot tell.
#[inline]
pub(crate) fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu has no preconditions; it returns -1 on failure.
    let cpu = unsafe { libc::sched_getcpu() };
    u32::try_from(cpu).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affinity_round_trip() {
        let allowed = allowed_cpus().unwrap();
        assert!(!allowed.is_empty());
        let first = allowed.iter().next().unwrap();
        let one: CpuSet = [first].into_iter().collect();
        // Bind in a scratch thread so the test runner's threads keep their mask.
        std::thread::spawn(move || {
            bind_current_thread(&one).unwrap();
            assert_eq!(allowed_cpus().unwrap(), one);
            assert_eq!(getcpu().unwrap().0, first);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn binding_to_a_cpu_that_does_not_exist_names_it() {
        let bogus: CpuSet = [100_000].into_iter().collect();
        let err = std::thread::spawn(move || bind_current_thread(&bogus).unwrap_err())
            .join()
            .unwrap();
        assert!(err.to_string().contains("100000"), "{err}");
    }
}
