//! `pjrt capi install PREFIX`: the layout it makes, the pkg-config file as pkg-config reads it,
//! the CMake package as `find_package(pjrt)` reads it, and the error when the libraries have not
//! been built. The libraries here are stand-ins (files of known bytes: what is checked is that
//! they are copied where C, C++ and Fortran builds look); .ci/run builds and runs the C++ and
//! Fortran examples against a real install.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;

/// `pjrt ARGS`, without the plugins the other tests install (this command loads none).
fn pjrt_plain(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pjrt")).args(args).current_dir(root()).output().unwrap()
}

/// A folder with stand-in libpjrt.so and libpjrt.a.
fn stand_in_libs(name: &str) -> PathBuf {
    let dir = temp_dir(name);
    std::fs::write(dir.join("libpjrt.so"), b"stand-in shared library").unwrap();
    std::fs::write(dir.join("libpjrt.a"), b"stand-in static library").unwrap();
    dir
}

fn install(prefix: &Path, lib_dir: &Path) -> serde_json::Value {
    let out =
        pjrt_plain(&["capi", "install", prefix.to_str().unwrap(), "--lib-dir", lib_dir.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

fn tool(program: &str, args: &[&str], pkg_config_path: &Path) -> String {
    let out = Command::new(program)
        .args(args)
        .env("PKG_CONFIG_PATH", pkg_config_path)
        .output()
        .unwrap_or_else(|e| panic!("{program} is needed (.ci/run installs it from Debian's packages): {e}"));
    assert!(out.status.success(), "{program} {args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn install_lays_out_the_prefix() {
    let libs = stand_in_libs("capi-libs");
    let prefix = temp_dir("capi-prefix").join("usr local"); // made by the install, with a space
    let out = pjrt_plain(&["capi", "install", prefix.to_str().unwrap(), "--lib-dir", libs.to_str().unwrap()]);
    assert_fails(&out, "cannot be named in a pkg-config file");
    assert!(!prefix.exists(), "nothing is made for a prefix that is refused");

    let prefix = temp_dir("capi-prefix").join("opt").join("pjrt");
    let report = install(&prefix, &libs);
    let prefix = prefix.canonicalize().unwrap();
    assert_eq!(report["prefix"].as_str().map(Path::new), Some(prefix.as_path()));
    assert_eq!(report["version"], env!("CARGO_PKG_VERSION"));
    let files: Vec<&str> = report["files"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    let relative: Vec<String> =
        files.iter().map(|f| Path::new(f).strip_prefix(&prefix).unwrap().display().to_string()).collect();
    assert_eq!(
        relative,
        [
            "include/pjrt.h",
            "lib/libpjrt.so.1",
            "lib/libpjrt.so",
            "lib/libpjrt.a",
            "lib/pkgconfig/pjrt.pc",
            "lib/cmake/pjrt/pjrtConfig.cmake",
            "lib/cmake/pjrt/pjrtConfigVersion.cmake",
            "share/pjrt/fortran/pjrt.f90",
        ]
    );

    // The header and the module are the repository's; the libraries are copies; -lpjrt finds the
    // soname through the link.
    let repo = |p: &str| std::fs::read(root().join(p)).unwrap();
    assert_eq!(std::fs::read(prefix.join("include/pjrt.h")).unwrap(), repo("crates/pjrt-capi/include/pjrt.h"));
    assert_eq!(
        std::fs::read(prefix.join("share/pjrt/fortran/pjrt.f90")).unwrap(),
        repo("crates/pjrt-capi/fortran/pjrt.f90")
    );
    assert_eq!(std::fs::read(prefix.join("lib/libpjrt.so.1")).unwrap(), b"stand-in shared library");
    assert_eq!(std::fs::read(prefix.join("lib/libpjrt.a")).unwrap(), b"stand-in static library");
    assert_eq!(std::fs::read_link(prefix.join("lib/libpjrt.so")).unwrap(), Path::new("libpjrt.so.1"));
    assert!(!std::fs::read_dir(prefix.join("lib")).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .ends_with(".tmp")));

    // Installing again replaces what is there.
    std::fs::write(libs.join("libpjrt.so"), b"a newer stand-in").unwrap();
    install(&prefix, &libs);
    assert_eq!(std::fs::read(prefix.join("lib/libpjrt.so.1")).unwrap(), b"a newer stand-in");
    assert_eq!(std::fs::read_link(prefix.join("lib/libpjrt.so")).unwrap(), Path::new("libpjrt.so.1"));
}

#[test]
fn pkg_config_reads_the_installed_file() {
    let libs = stand_in_libs("capi-pc-libs");
    let prefix = temp_dir("capi-pc-prefix");
    install(&prefix, &libs);
    let prefix = prefix.canonicalize().unwrap();
    let pc = std::fs::read_to_string(prefix.join("lib/pkgconfig/pjrt.pc")).unwrap();
    assert!(pc.contains(&format!("prefix={}\n", prefix.display())), "{pc}");
    assert!(pc.contains(&format!("Version: {}\n", env!("CARGO_PKG_VERSION"))), "{pc}");

    let pkg_config_path = prefix.join("lib/pkgconfig");
    let flags = tool("pkg-config", &["--cflags", "--libs", "pjrt"], &pkg_config_path);
    let (include, lib) = (prefix.join("include"), prefix.join("lib"));
    assert_eq!(
        flags.split_whitespace().collect::<Vec<_>>(),
        [format!("-I{}", include.display()), format!("-L{}", lib.display()), "-lpjrt".to_owned()]
    );
    let static_libs = tool("pkg-config", &["--static", "--libs", "pjrt"], &pkg_config_path);
    for lib in ["-lpjrt", "-lpthread", "-ldl", "-lm"] {
        assert!(static_libs.split_whitespace().any(|w| w == lib), "{lib} not in {static_libs}");
    }
    assert_eq!(tool("pkg-config", &["--modversion", "pjrt"], &pkg_config_path).trim(), env!("CARGO_PKG_VERSION"));
    let module = tool("pkg-config", &["--variable=fortran_module", "pjrt"], &pkg_config_path);
    assert_eq!(Path::new(module.trim()), prefix.join("share/pjrt/fortran/pjrt.f90"));
    assert_eq!(tool("pkg-config", &["--variable=abi_major", "pjrt"], &pkg_config_path).trim(), "1");
}

#[test]
fn cmake_finds_the_package_and_its_targets() {
    let libs = stand_in_libs("capi-cmake-libs");
    let prefix = temp_dir("capi-cmake-prefix");
    install(&prefix, &libs);
    let prefix = prefix.canonicalize().unwrap();
    // A project of no language: find_package alone, its version check, its targets' properties.
    let project = temp_dir("capi-cmake-project");
    std::fs::write(
        project.join("CMakeLists.txt"),
        r#"cmake_minimum_required(VERSION 3.16)
project(probe LANGUAGES NONE)
find_package(pjrt 0.1 CONFIG REQUIRED)
get_target_property(shared pjrt::pjrt_shared IMPORTED_LOCATION)
get_target_property(static pjrt::pjrt_static IMPORTED_LOCATION)
get_target_property(linked pjrt::pjrt INTERFACE_LINK_LIBRARIES)
get_target_property(include pjrt::pjrt_shared INTERFACE_INCLUDE_DIRECTORIES)
message(STATUS "probe|${pjrt_VERSION}|${shared}|${static}|${linked}|${include}|${PJRT_FORTRAN_MODULE}|${PJRT_ABI_VERSION_MAJOR}")
find_package(pjrt 9.0 CONFIG QUIET)
message(STATUS "probe9|${pjrt_FOUND}")
"#,
    )
    .unwrap();
    let build = project.join("build");
    let prefix_arg = format!("-DCMAKE_PREFIX_PATH={}", prefix.display());
    let out = tool("cmake", &["-S", project.to_str().unwrap(), "-B", build.to_str().unwrap(), &prefix_arg], &prefix);
    let line = out.lines().find_map(|l| l.strip_prefix("-- probe|")).unwrap_or_else(|| panic!("{out}"));
    let fields: Vec<&str> = line.split('|').collect();
    let at = |p: &str| prefix.join(p).display().to_string();
    assert_eq!(
        fields,
        [
            env!("CARGO_PKG_VERSION"),
            &at("lib/libpjrt.so.1"),
            &at("lib/libpjrt.a"),
            "pjrt::pjrt_shared",
            &at("include"),
            &at("share/pjrt/fortran/pjrt.f90"),
            "1"
        ]
    );
    assert!(out.contains("-- probe9|0"), "a newer version asked for is not found: {out}");
}

#[test]
fn install_without_built_libraries_says_what_to_build() {
    let empty = temp_dir("capi-no-libs");
    let prefix = temp_dir("capi-no-libs-prefix").join("p");
    let out = pjrt_plain(&["capi", "install", prefix.to_str().unwrap(), "--lib-dir", empty.to_str().unwrap()]);
    assert_fails(&out, "libpjrt.so is missing");
    assert!(
        stderr(&out).contains("cargo build -p pjrt-capi") && stderr(&out).contains("--lib-dir"),
        "{}",
        stderr(&out)
    );
    assert!(!prefix.exists(), "nothing is written before the libraries are found");
}
