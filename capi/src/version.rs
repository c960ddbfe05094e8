//! The library's version: macros for the version a program was compiled
//! against (`TERROIR_VERSION_MAJOR`, `_MINOR`, `_PATCH`, `TERROIR_VERSION`)
//! and functions for the version it runs against (`terroir_version`,
//! `terroir_version_string`).
//!
//! The constants are literals (cbindgen writes them into the header as
//! `#define`s); a test checks them against the package's version.

use std::ffi::c_char;

/// The major version of this header.
pub const TERROIR_VERSION_MAJOR: u32 = 0;
/// The minor version of this header.
pub const TERROIR_VERSION_MINOR: u32 = 1;
/// The patch version of this header.
pub const TERROIR_VERSION_PATCH: u32 = 0;
/// This header's version as one number, `MAJOR * 1000000 + MINOR * 1000 +
/// PATCH` (0.1.0 is 1000): what `terroir_version()` returns for the
/// library a program runs against.
pub const TERROIR_VERSION: u32 =
    TERROIR_VERSION_MAJOR * 1000000 + TERROIR_VERSION_MINOR * 1000 + TERROIR_VERSION_PATCH;

/// The version of the library the program runs against, as
/// `TERROIR_VERSION` encodes it (`MAJOR * 1000000 + MINOR * 1000 +
/// PATCH`). The ABI policy (README, "Versions and ABI"): a library runs
/// programs compiled against an earlier header of the same ABI, which is
/// the same major version from 1.0 on and the same `0.MINOR` before it.
/// A program can check at start-up that it was not given an older library
/// than its header:
///
/// ```c
/// if (terroir_version() < TERROIR_VERSION) { /* built against a newer terroir */ }
/// ```
#[no_mangle]
pub extern "C" fn terroir_version() -> u32 {
    TERROIR_VERSION
}

/// The version of the library the program runs against, as a static
/// NUL-terminated string (`"0.1.0"`). Never NULL; never freed.
#[no_mangle]
pub extern "C" fn terroir_version_string() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn the_constants_are_the_package_version() {
        let v = |s: &str| s.parse::<u32>().unwrap();
        assert_eq!(
            TERROIR_VERSION_MAJOR,
            v(env!("CARGO_PKG_VERSION_MAJOR")),
            "bump TERROIR_VERSION_* in capi/src/version.rs with the package version"
        );
        assert_eq!(TERROIR_VERSION_MINOR, v(env!("CARGO_PKG_VERSION_MINOR")));
        assert_eq!(TERROIR_VERSION_PATCH, v(env!("CARGO_PKG_VERSION_PATCH")));
        assert_eq!(terroir_version(), TERROIR_VERSION);
        // SAFETY: terroir_version_string returns a static C string.
        let s = unsafe { CStr::from_ptr(terroir_version_string()) };
        assert_eq!(s.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    }
}
