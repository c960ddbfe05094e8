//! The checks of capi_calls: the codes the header documents, and the
//! calls that take any pointer value as a handle.

use std::ffi::{c_int, CStr};

use crate::capi::*;

pub(crate) const OK: c_int = TerroirError::Ok as c_int;
pub(crate) const NULL_POINTER: c_int = TerroirError::NullPointer as c_int;
pub(crate) const INVALID_HANDLE: c_int = TerroirError::InvalidHandle as c_int;
pub(crate) const INVALID_ARGUMENT: c_int = TerroirError::InvalidArgument as c_int;
pub(crate) const INVALID_NODE: c_int = TerroirError::InvalidNode as c_int;
pub(crate) const INVALID_WORKER: c_int = TerroirError::InvalidWorker as c_int;
pub(crate) const ZERO_SIZE: c_int = TerroirError::ZeroSize as c_int;
pub(crate) const WOULD_DEADLOCK: c_int = TerroirError::WouldDeadlock as c_int;
pub(crate) const GLOBAL_ALREADY: c_int = TerroirError::GlobalAlreadyInitialized as c_int;
pub(crate) const POOL_BUILD: c_int = TerroirError::PoolBuild as c_int;
pub(crate) const NOT_IN_POOL: c_int = TerroirError::NotInPool as c_int;

/// At most this many pools and groups live at a time, and tasks spawned
/// per input: an input stays in milliseconds.
pub(crate) const MAX_POOLS: usize = 2;
pub(crate) const MAX_GROUPS: usize = 4;
pub(crate) const MAX_TASKS: usize = 24;
pub(crate) const MAX_OPS: usize = 48;

/// Handle values that no table can hand out: slot `0xffff_fffe` (far past
/// the last of the 2^20 slots), and a zero slot field (slot numbers start
/// at 1).
pub(crate) const GARBAGE_IN_TASK: [usize; 2] = [0x7_ffff_ffff, 0x1234_0000_0000];

/// Checks that `code` is one of `allowed`, naming the call.
#[track_caller]
pub(crate) fn expect(call: &str, code: c_int, allowed: &[c_int]) {
    assert!(
        allowed.contains(&code),
        "{call} returned {code} ({}), expected one of {allowed:?}; last error: {}",
        strerror(code),
        last_error()
    );
}

/// What a call may return: exactly OK when none of `errors` applies,
/// else one of those that apply.
pub(crate) fn allowed(errors: &[(bool, c_int)]) -> Vec<c_int> {
    let v: Vec<c_int> = errors.iter().filter(|e| e.0).map(|e| e.1).collect();
    if v.is_empty() {
        vec![OK]
    } else {
        v
    }
}

// Handles are keys, never dereferenced: these accept any pointer value.
pub(crate) fn group_wait(g: *mut TerroirGroup) -> c_int {
    // SAFETY: any pointer value is accepted (the header's contract).
    unsafe { terroir_group_wait(g) }
}

pub(crate) fn group_destroy(g: *mut TerroirGroup) -> c_int {
    // SAFETY: as above.
    unsafe { terroir_group_destroy(g) }
}

pub(crate) fn pool_destroy(p: *mut TerroirPool) -> c_int {
    // SAFETY: as above.
    unsafe { terroir_pool_destroy(p) }
}

pub(crate) fn strerror(code: c_int) -> String {
    let p = terroir_strerror(code);
    assert!(!p.is_null(), "terroir_strerror({code}) is NULL");
    // SAFETY: documented: a static NUL-terminated string.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

pub(crate) fn last_error() -> String {
    let p = terroir_last_error_message();
    if p.is_null() {
        return "(none)".into();
    }
    // SAFETY: documented: NUL-terminated, valid until the next failing
    // call on this thread.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}
