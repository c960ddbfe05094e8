//! `libterroir.so` and `libterroir.a` built as an example target, for
//! `tests/ffi.rs`: `cargo test` builds examples before the tests (and does
//! not build a library that is only a cdylib and a staticlib). The same
//! sources as the library.

#[path = "../src/lib.rs"]
pub mod capi;
