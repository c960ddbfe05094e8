//! Gives the shared library its SONAME (ELF targets): `libterroir.so.<abi>`,
//! where `<abi>` is the part of the version that names an ABI: the major
//! version from 1.0 on, `0.<minor>` before (Cargo's semver rule: 0.1 to
//! 0.2 may break, 0.1.0 to 0.1.1 may not). A program linked against the
//! library records that name and runs against any later library of the
//! same ABI. `scripts/install-c.sh` installs `libterroir.so.<version>`
//! with the symlinks `libterroir.so.<abi>` and `libterroir.so`.
//!
//! Only the library target gets it (`rustc-cdylib-link-arg`): the copy
//! that `cargo test` builds as the example `terroir` for tests/ffi.rs has
//! no SONAME, so that test programs linked against it need no symlink.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let family = std::env::var("CARGO_CFG_TARGET_FAMILY").unwrap_or_default();
    // ELF targets with GNU-style linkers; Apple platforms use install names.
    let elf = family.split(',').any(|f| f == "unix") && !matches!(os.as_str(), "macos" | "ios");
    if elf {
        println!(
            "cargo:rustc-cdylib-link-arg=-Wl,-soname,libterroir.so.{}",
            abi_version(
                env!("CARGO_PKG_VERSION_MAJOR"),
                env!("CARGO_PKG_VERSION_MINOR")
            )
        );
    }
}

/// `major` from 1.0 on, `0.minor` before.
fn abi_version(major: &str, minor: &str) -> String {
    if major == "0" {
        format!("0.{minor}")
    } else {
        major.to_owned()
    }
}
