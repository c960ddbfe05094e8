//! A C task: a function and its argument.

use std::ffi::c_void;

/// A C task: `f(arg)`.
#[derive(Clone, Copy)]
pub(crate) struct CTask {
    f: unsafe extern "C" fn(*mut c_void),
    arg: *mut c_void,
}

// SAFETY: the C caller promises that a task may run on any thread (the
// documented contract of `terroir_join` and `terroir_group_spawn`): terroir
// only calls `f(arg)` once, on a worker, and never touches `arg` itself.
unsafe impl Send for CTask {}
// SAFETY: as above; terroir shares only the two pointer values.
unsafe impl Sync for CTask {}

impl CTask {
    pub(crate) fn new(f: unsafe extern "C" fn(*mut c_void), arg: *mut c_void) -> CTask {
        CTask { f, arg }
    }

    /// Calls the C function.
    #[inline]
    pub(crate) fn run(self) {
        // SAFETY: the C caller gave a function of this signature and an
        // argument it accepts, and promised both stay valid until the task
        // is done (until `terroir_join` returns or the group is waited for).
        unsafe { (self.f)(self.arg) }
    }
}
