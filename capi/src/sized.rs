//! Structs that can grow: a config struct a caller passes by pointer
//! starts with a `size` field, set by the caller to `sizeof` of the
//! struct as its header declares it. The library reads only that many
//! bytes, so a program compiled against an older header (a smaller
//! struct) runs against a newer library, which gives the fields the
//! program does not know their defaults; and a program compiled against a
//! newer header runs against an older library as long as it leaves the
//! fields this library does not know at zero (their defaults). The rule
//! is the Linux kernel's for `clone3` and `openat2` (extensible structs).
//!
//! Every field's zero is its default, so all bytes after the caller's
//! struct read as zeros.
//!
//! A struct the library fills (`terroir_stats`) grows the same way:
//! the caller sets `size`, the library writes what fits ([`write_sized`]),
//! zeros the fields of a newer header that it does not know, and sets
//! `size` to the bytes it filled.

use std::mem::size_of;

use super::error::Error;

/// The largest `size` accepted: far beyond any version of a config
/// struct, it stops a garbage or uninitialised `size` from making the
/// library read far past the caller's struct.
pub(crate) const MAX_STRUCT_SIZE: usize = 4096;

/// A config struct that can grow.
///
/// # Safety
/// The implementing type is `#[repr(C)]`, starts with a `size: usize`
/// field, and every bit pattern is a valid value of it (integer fields
/// only: no `bool`, reference or enum field); its zero value is its
/// default.
pub(crate) unsafe trait SizedStruct: Copy {
    /// The C name of the struct, for messages (`"terroir_pool_config"`).
    const C_NAME: &'static str;
    /// The argument name, for messages (`"config"`).
    const ARG: &'static str;
    /// The size of the struct's first published version: a smaller `size`
    /// is an error.
    const MIN_SIZE: usize;
    /// The zero (default) value.
    fn zeroed() -> Self;
}

/// Reads a caller's struct whose first field `size` says how many bytes
/// it has: `Ok(None)` for NULL, the struct otherwise, with the fields
/// beyond the caller's `size` at their defaults.
///
/// Errors (`TERROIR_ERROR_INVALID_ARGUMENT`, naming `config->size` or the
/// field): a `size` below the first version's or above
/// [`MAX_STRUCT_SIZE`], and a nonzero byte past this library's struct
/// (a field of a newer header this library does not know).
///
/// # Safety
/// `ptr` is NULL or points to a readable `usize` which, when it is a
/// size within `T::MIN_SIZE ..= MAX_STRUCT_SIZE`, is the number of
/// readable bytes at `ptr`.
pub(crate) unsafe fn read_sized<T: SizedStruct>(ptr: *const T) -> Result<Option<T>, Error> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null, and it points to at least the leading `size`
    // field (the caller's promise). Unaligned: nothing is assumed of a C
    // caller's pointer beyond what it promises.
    let size = unsafe { ptr.cast::<usize>().read_unaligned() };
    check_size::<T>(size)?;
    let (name, arg) = (T::C_NAME, T::ARG);
    let known = size_of::<T>();
    let bytes = ptr.cast::<u8>();
    if size > known {
        // SAFETY: the caller's struct has `size` readable bytes.
        let extra = unsafe { std::slice::from_raw_parts(bytes.add(known), size - known) };
        if let Some(at) = extra.iter().position(|b| *b != 0) {
            return Err(Error::invalid(format!(
                "{arg}->size = {size}: byte {} of the {name} is not zero, but this library's \
                 {name} has {known} bytes (version {}), so it does not know that field; \
                 leave fields newer than the library at zero",
                known + at,
                env!("CARGO_PKG_VERSION")
            )));
        }
    }
    let mut value = T::zeroed();
    // SAFETY: the caller's struct has `size` readable bytes, of which the
    // first `min(size, known)` are copied into `value` (`known` bytes);
    // every bit pattern is a valid `T` (the trait's contract), and the two
    // do not overlap (`value` is a local).
    unsafe { std::ptr::copy_nonoverlapping(bytes, (&raw mut value).cast::<u8>(), size.min(known)) };
    Ok(Some(value))
}

/// Writes `value` into a caller's struct whose first field `size` (set by
/// the caller) says how many bytes it has: the first `min(size,
/// size_of::<T>())` bytes of `value`, zeros after them (the fields of a
/// newer header that this library does not know), and `size` set to the
/// number of bytes this library filled (`min(size, size_of::<T>())`), so
/// that a caller knows which of its fields were written.
///
/// Errors: NULL (`TERROIR_ERROR_NULL_POINTER`, naming `T::ARG`), and a
/// `size` below the first version's or above [`MAX_STRUCT_SIZE`]
/// (`TERROIR_ERROR_INVALID_ARGUMENT`); nothing is written then.
///
/// # Safety
/// `ptr` is NULL or points to a readable `usize` which, when it is a
/// size within `T::MIN_SIZE ..= MAX_STRUCT_SIZE`, is the number of
/// writable bytes at `ptr`.
pub(crate) unsafe fn write_sized<T: SizedStruct>(ptr: *mut T, value: T) -> Result<(), Error> {
    if ptr.is_null() {
        return Err(Error::null(T::ARG));
    }
    // SAFETY: non-null, and it points to at least the leading `size`
    // field (the caller's promise); unaligned, as in `read_sized`.
    let size = unsafe { ptr.cast::<usize>().read_unaligned() };
    check_size::<T>(size)?;
    let known = size_of::<T>();
    let filled = size.min(known);
    let bytes = ptr.cast::<u8>();
    // SAFETY: the caller's struct has `size` writable bytes, of which the
    // first `filled` receive `value`'s (a local: no overlap) and the rest
    // zeros; then its leading `usize` the number of bytes filled.
    unsafe {
        std::ptr::copy_nonoverlapping((&raw const value).cast::<u8>(), bytes, filled);
        std::ptr::write_bytes(bytes.add(filled), 0, size - filled);
        ptr.cast::<usize>().write_unaligned(filled);
    }
    Ok(())
}

/// The checks of a caller's `size` (see [`read_sized`]).
fn check_size<T: SizedStruct>(size: usize) -> Result<(), Error> {
    let (name, arg) = (T::C_NAME, T::ARG);
    if size < T::MIN_SIZE {
        let hint = if size == 0 {
            format!(
                " (set it to sizeof({name}), or start from TERROIR_{}_INIT)",
                name.trim_start_matches("terroir_").to_uppercase()
            )
        } else {
            String::new()
        };
        return Err(Error::invalid(format!(
            "{arg}->size = {size} is smaller than the first version of {name} ({} bytes){hint}",
            T::MIN_SIZE
        )));
    }
    if size > MAX_STRUCT_SIZE {
        return Err(Error::invalid(format!(
            "{arg}->size = {size} is not the size of a {name} (this library's has {} bytes; \
             a newer one has at most {MAX_STRUCT_SIZE}): was it set to sizeof({name})?",
            size_of::<T>()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::TerroirError;
    use std::mem::offset_of;

    /// Version 2 of a struct whose version 1 ended with `a`.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    struct V2 {
        size: usize,
        a: u64,
        b: u64,
    }

    // SAFETY: repr(C), `size` first, integers only.
    unsafe impl SizedStruct for V2 {
        const C_NAME: &'static str = "test_struct";
        const ARG: &'static str = "s";
        const MIN_SIZE: usize = offset_of!(V2, b);
        fn zeroed() -> Self {
            V2::default()
        }
    }

    /// Version 1, as a program built against the older header has it.
    #[repr(C)]
    struct V1 {
        size: usize,
        a: u64,
    }

    /// Version 3, as a program built against a newer header has it.
    #[repr(C)]
    struct V3 {
        v2: V2,
        c: u32,
        d: u32,
    }

    fn read<T>(s: &T) -> Result<Option<V2>, Error> {
        // SAFETY: `s` is a whole struct whose `size` (set by the tests)
        // is at most its size, or refused before any read past `size`.
        unsafe { read_sized((s as *const T).cast::<V2>()) }
    }

    #[test]
    fn an_older_struct_reads_as_its_fields_and_defaults() {
        let old = V1 {
            size: size_of::<V1>(),
            a: 7,
        };
        // `b`, unknown to the old program, is not read (beyond its struct).
        assert_eq!(
            read(&old).unwrap(),
            Some(V2 {
                size: size_of::<V1>(),
                a: 7,
                b: 0
            })
        );
        let same = V2 {
            size: size_of::<V2>(),
            a: 1,
            b: 2,
        };
        assert_eq!(read(&same).unwrap(), Some(same));
        // SAFETY: NULL is accepted.
        assert!(unsafe { read_sized(std::ptr::null::<V2>()) }
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_newer_struct_is_read_when_its_new_fields_are_zero() {
        let mut newer = V3 {
            v2: V2 {
                size: size_of::<V3>(),
                a: 1,
                b: 2,
            },
            c: 0,
            d: 0,
        };
        let v = read(&newer).unwrap().unwrap();
        assert_eq!((v.a, v.b), (1, 2));
        newer.d = 9;
        let e = read(&newer).unwrap_err();
        assert_eq!(e.code, TerroirError::InvalidArgument);
        assert!(
            e.message
                .contains("s->size = 32: byte 28 of the test_struct is not zero"),
            "{}",
            e.message
        );
    }

    #[test]
    fn sizes_below_the_first_version_or_absurd_are_refused() {
        for (size, needle) in [
            (
                0,
                "s->size = 0 is smaller than the first version of test_struct (16 bytes)",
            ),
            (8, "s->size = 8 is smaller"),
            (
                MAX_STRUCT_SIZE + 1,
                "s->size = 4097 is not the size of a test_struct",
            ),
            (usize::MAX, "is not the size of a test_struct"),
        ] {
            let s = V2 { size, a: 1, b: 2 };
            let e = read(&s).unwrap_err();
            assert_eq!(e.code, TerroirError::InvalidArgument);
            assert!(e.message.contains(needle), "{size}: {}", e.message);
        }
    }

    #[test]
    fn a_written_struct_fills_what_fits_and_zeros_the_rest() {
        let value = V2 {
            size: 0,
            a: 1,
            b: 2,
        };
        let mut newer = V3 {
            v2: V2 {
                size: size_of::<V3>(),
                a: 9,
                b: 9,
            },
            c: 7,
            d: 7,
        };
        // SAFETY: a whole V3 of `size` bytes.
        unsafe { write_sized((&raw mut newer).cast::<V2>(), value) }.unwrap();
        assert_eq!(
            newer.v2,
            V2 {
                size: size_of::<V2>(),
                a: 1,
                b: 2
            }
        );
        assert_eq!((newer.c, newer.d), (0, 0));
        let mut bad = V2 {
            size: 3,
            a: 5,
            b: 5,
        };
        // SAFETY: refused before any write past `size`.
        let e = unsafe { write_sized(&raw mut bad, value) }.unwrap_err();
        assert_eq!(e.code, TerroirError::InvalidArgument);
        assert_eq!(
            bad,
            V2 {
                size: 3,
                a: 5,
                b: 5
            }
        );
        // SAFETY: NULL is refused.
        let e = unsafe { write_sized(std::ptr::null_mut::<V2>(), value) }.unwrap_err();
        assert_eq!(e.code, TerroirError::NullPointer);
    }
}
