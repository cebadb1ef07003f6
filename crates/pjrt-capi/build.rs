//! The shared library's soname carries the ABI's major version (`libpjrt.so.1`), so that a
//! program linked against one major version never loads another. Keep the number in step with
//! `PJRT_ABI_VERSION_MAJOR` in src/lib.rs (a test checks it).

const ABI_MAJOR: u32 = 1;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    match std::env::var("CARGO_CFG_TARGET_OS").as_deref() {
        Ok("macos") | Ok("ios") => {
            println!("cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/libpjrt.{ABI_MAJOR}.dylib")
        }
        Ok("windows") => {}
        _ => println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libpjrt.so.{ABI_MAJOR}"),
    }
    println!("cargo:rustc-env=PJRT_CAPI_SONAME_MAJOR={ABI_MAJOR}");
}
