//! An install prefix for C, C++ and Fortran builds: what `pjrt capi install PREFIX` lays out.
//!
//! ```text
//! PREFIX/include/pjrt.h                      the header (HEADER)
//! PREFIX/lib/libpjrt.so.1                    the shared library (its soname)
//! PREFIX/lib/libpjrt.so -> libpjrt.so.1      what `-lpjrt` finds
//! PREFIX/lib/libpjrt.a                       the static library
//! PREFIX/lib/pkgconfig/pjrt.pc               pkg-config --cflags --libs pjrt
//! PREFIX/lib/cmake/pjrt/pjrtConfig.cmake     find_package(pjrt CONFIG): pjrt::pjrt
//! PREFIX/lib/cmake/pjrt/pjrtConfigVersion.cmake
//! PREFIX/share/pjrt/fortran/pjrt.f90         the Fortran module's source (FORTRAN_MODULE)
//! ```
//!
//! The Fortran module is installed as source: a compiled `.mod` file belongs to one compiler
//! and version, so a Fortran program compiles `pjrt.f90` with its own (pkg-config's variable
//! `fortran_module`, CMake's `PJRT_FORTRAN_MODULE`). The CMake files find the prefix from their
//! own place (the prefix may move); the pkg-config file names it (absolute), as pkg-config
//! files do. Linux only, as the rest of the C API.
//!
//! ```
//! // Usually `lib_dir` is the profile folder of `cargo build --release -p pjrt-capi`
//! // (target/release); here, stand-ins for its two libraries.
//! let temp = std::env::temp_dir().join(format!("pjrt-install-doc-{}", std::process::id()));
//! let lib_dir = temp.join("built");
//! std::fs::create_dir_all(&lib_dir)?;
//! std::fs::write(lib_dir.join("libpjrt.so"), b"...")?;
//! std::fs::write(lib_dir.join("libpjrt.a"), b"...")?;
//!
//! let installed = pjrt::install::install(&temp.join("prefix"), &lib_dir)?;
//! assert_eq!(installed.files.len(), 8);
//! let pc = std::fs::read_to_string(installed.prefix.join("lib/pkgconfig/pjrt.pc"))?;
//! assert!(pc.contains("Libs: -L${libdir} -lpjrt"));
//! assert_eq!(std::fs::read_link(installed.prefix.join("lib/libpjrt.so"))?, std::path::Path::new("libpjrt.so.1"));
//! # std::fs::remove_dir_all(&temp)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io;
use std::path::{Path, PathBuf};

/// `pjrt.h`, the header this library was built with.
pub const HEADER: &str = include_str!("../include/pjrt.h");

/// `pjrt.f90`, the Fortran module over the C API (`iso_c_binding`), as source.
pub const FORTRAN_MODULE: &str = include_str!("../fortran/pjrt.f90");

/// The package's version (pjrt-client's), written into the pkg-config and CMake files.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The native libraries `libpjrt.a` needs after it (what Rust's standard library uses), for a
/// static link: `--print native-static-libs` of this crate on Linux.
pub const STATIC_LINK_LIBS: &[&str] = &["dl", "gcc_s", "util", "rt", "pthread", "m", "c"];

/// Why an install failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstallError {
    /// A library to copy is not in the folder it was looked for in.
    #[error(
        "{} is missing: build the C library first (`cargo build -p pjrt-capi`, with `--release` for \
         target/release), or name the folder that holds libpjrt.so and libpjrt.a",
        path.display()
    )]
    MissingLibrary {
        /// The file looked for.
        path: PathBuf,
    },
    /// The prefix cannot be written into a pkg-config file (it splits words at white space and
    /// quotes).
    #[error("{}: a prefix with white space, quotes, `$` or `#` cannot be named in a pkg-config file; choose another", prefix.display())]
    UnsuitablePrefix {
        /// The prefix asked for.
        prefix: PathBuf,
    },
    /// Reading, writing or linking a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What failed.
        #[source]
        source: io::Error,
    },
}

/// What [`install`] wrote: every file and link, in the order written.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Installed {
    /// The prefix, absolute.
    pub prefix: PathBuf,
    /// The files and the link, under `prefix`.
    pub files: Vec<PathBuf>,
}

/// Installs the C API into `prefix` (made if missing; files there are replaced): the header,
/// the libraries `libpjrt.so` and `libpjrt.a` copied from `lib_dir` (a cargo profile folder such
/// as `target/release`), the Fortran module's source, and the pkg-config and CMake files.
/// Each file is written beside its place and renamed into it, so a program running the old
/// library keeps its copy.
///
/// # Errors
///
/// [`InstallError::MissingLibrary`] before anything is written when `lib_dir` lacks a library;
/// [`InstallError::UnsuitablePrefix`] for a prefix pkg-config cannot name; [`InstallError::Io`]
/// when a file cannot be written.
pub fn install(prefix: &Path, lib_dir: &Path) -> Result<Installed, InstallError> {
    let shared = lib_dir.join("libpjrt.so");
    let static_lib = lib_dir.join("libpjrt.a");
    for path in [&shared, &static_lib] {
        if !path.is_file() {
            return Err(InstallError::MissingLibrary { path: path.clone() });
        }
    }
    if prefix.to_string_lossy().chars().any(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '\\' | '$' | '#')) {
        return Err(InstallError::UnsuitablePrefix { prefix: prefix.to_path_buf() });
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| InstallError::Io { path, source }
    };
    std::fs::create_dir_all(prefix).map_err(io(prefix))?;
    let prefix = prefix.canonicalize().map_err(io(prefix))?;
    let lib = prefix.join("lib");
    let cmake = lib.join("cmake").join("pjrt");
    let fortran = prefix.join("share").join("pjrt").join("fortran");
    for dir in [prefix.join("include"), lib.join("pkgconfig"), cmake.clone(), fortran.clone()] {
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    }
    let soname = format!("libpjrt.so.{}", crate::PJRT_ABI_VERSION_MAJOR);
    let mut files = Vec::new();
    let mut put = |to: PathBuf, from: Source<'_>| -> Result<(), InstallError> {
        let temp = to.with_file_name(format!(".{}.tmp", to.file_name().unwrap_or_default().to_string_lossy()));
        match from {
            Source::Copy(from) => std::fs::copy(from, &temp).map(drop).map_err(io(from))?,
            Source::Text(text) => std::fs::write(&temp, text).map_err(io(&temp))?,
            Source::Link(target) => {
                let _ = std::fs::remove_file(&temp);
                symlink(target, &temp).map_err(io(&temp))?
            }
        }
        std::fs::rename(&temp, &to).map_err(io(&to))?;
        files.push(to);
        Ok(())
    };
    put(prefix.join("include").join("pjrt.h"), Source::Text(HEADER))?;
    put(lib.join(&soname), Source::Copy(&shared))?;
    put(lib.join("libpjrt.so"), Source::Link(Path::new(&soname)))?;
    put(lib.join("libpjrt.a"), Source::Copy(&static_lib))?;
    put(lib.join("pkgconfig").join("pjrt.pc"), Source::Text(&pkg_config_file(&prefix)))?;
    put(cmake.join("pjrtConfig.cmake"), Source::Text(&cmake_config()))?;
    put(cmake.join("pjrtConfigVersion.cmake"), Source::Text(&cmake_config_version()))?;
    put(fortran.join("pjrt.f90"), Source::Text(FORTRAN_MODULE))?;
    Ok(Installed { prefix, files })
}

enum Source<'a> {
    Copy(&'a Path),
    Text(&'a str),
    Link(&'a Path),
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
fn symlink(_target: &Path, _link: &Path) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "the install layout is made on Unix only"))
}

/// `lib/pkgconfig/pjrt.pc` for `prefix` (absolute): `pkg-config --cflags --libs pjrt` gives the
/// include folder and `-L… -lpjrt`; `--static` adds [`STATIC_LINK_LIBS`]; its variables
/// `fortran_module` (the module's source) and `abi_major`.
pub fn pkg_config_file(prefix: &Path) -> String {
    let private: Vec<String> = STATIC_LINK_LIBS.iter().map(|l| format!("-l{l}")).collect();
    format!(
        "# pjrt: the C API of pjrt-client (written by `pjrt capi install`).\n\
         prefix={prefix}\n\
         libdir=${{prefix}}/lib\n\
         includedir=${{prefix}}/include\n\
         fortran_module=${{prefix}}/share/pjrt/fortran/pjrt.f90\n\
         abi_major={abi}\n\
         \n\
         Name: pjrt\n\
         Description: Run jax.export models, StableHLO programs and AOT artifacts on PJRT plugins\n\
         Version: {VERSION}\n\
         Cflags: -I${{includedir}}\n\
         Libs: -L${{libdir}} -lpjrt\n\
         Libs.private: {private}\n",
        prefix = prefix.display(),
        abi = crate::PJRT_ABI_VERSION_MAJOR,
        private = private.join(" "),
    )
}

/// `lib/cmake/pjrt/pjrtConfig.cmake`: the imported targets `pjrt::pjrt` (the shared library,
/// or the static one when `PJRT_STATIC` is on), `pjrt::pjrt_shared` and `pjrt::pjrt_static`,
/// and the variables `PJRT_INCLUDE_DIR`, `PJRT_FORTRAN_MODULE`, `PJRT_ABI_VERSION_MAJOR`. The
/// prefix is found from the file's own place.
pub fn cmake_config() -> String {
    let abi = crate::PJRT_ABI_VERSION_MAJOR;
    // The C library is every program's already; the rest by name (`-lpthread`, ...), which works
    // in projects of any language (CMake's FindThreads needs C or C++ enabled, and a Fortran
    // project may have neither).
    let static_libs: Vec<&str> = STATIC_LINK_LIBS.iter().copied().filter(|l| *l != "c").collect();
    format!(
        r#"# pjrt's CMake package: the C API of pjrt-client {VERSION} (written by `pjrt capi install`).
#
#   find_package(pjrt CONFIG REQUIRED)                   # CMAKE_PREFIX_PATH=PREFIX
#   target_link_libraries(app PRIVATE pjrt::pjrt)        # libpjrt.so.{abi}; PJRT_STATIC=ON: libpjrt.a
#
# Targets: pjrt::pjrt, pjrt::pjrt_shared, pjrt::pjrt_static. Variables: PJRT_INCLUDE_DIR,
# PJRT_FORTRAN_MODULE (the Fortran module's source: add it to a Fortran target's sources),
# PJRT_ABI_VERSION_MAJOR.

get_filename_component(_pjrt_prefix "${{CMAKE_CURRENT_LIST_DIR}}/../../.." ABSOLUTE)
set(PJRT_INCLUDE_DIR "${{_pjrt_prefix}}/include")
set(PJRT_FORTRAN_MODULE "${{_pjrt_prefix}}/share/pjrt/fortran/pjrt.f90")
set(PJRT_ABI_VERSION_MAJOR {abi})

if(NOT TARGET pjrt::pjrt)
  add_library(pjrt::pjrt_shared SHARED IMPORTED)
  set_target_properties(pjrt::pjrt_shared PROPERTIES
    IMPORTED_LOCATION "${{_pjrt_prefix}}/lib/libpjrt.so.{abi}"
    IMPORTED_SONAME "libpjrt.so.{abi}"
    INTERFACE_INCLUDE_DIRECTORIES "${{PJRT_INCLUDE_DIR}}")

  add_library(pjrt::pjrt_static STATIC IMPORTED)
  set_target_properties(pjrt::pjrt_static PROPERTIES
    IMPORTED_LOCATION "${{_pjrt_prefix}}/lib/libpjrt.a"
    IMPORTED_LINK_INTERFACE_LANGUAGES "C"
    INTERFACE_INCLUDE_DIRECTORIES "${{PJRT_INCLUDE_DIR}}"
    INTERFACE_LINK_LIBRARIES "{static_libs}")

  add_library(pjrt::pjrt INTERFACE IMPORTED)
  if(PJRT_STATIC)
    set_property(TARGET pjrt::pjrt PROPERTY INTERFACE_LINK_LIBRARIES pjrt::pjrt_static)
  else()
    set_property(TARGET pjrt::pjrt PROPERTY INTERFACE_LINK_LIBRARIES pjrt::pjrt_shared)
  endif()
endif()

unset(_pjrt_prefix)
"#,
        static_libs = static_libs.join(";"),
    )
}

/// `lib/cmake/pjrt/pjrtConfigVersion.cmake`: [`VERSION`] answers a `find_package(pjrt X.Y)`
/// when it is not older and of the same major version (the same minor one while the major is
/// 0, as Cargo's versions go); 64-bit only.
pub fn cmake_config_version() -> String {
    format!(
        r#"# pjrt's package version (written by `pjrt capi install`): {VERSION}.
set(PACKAGE_VERSION "{VERSION}")
set(PACKAGE_VERSION_COMPATIBLE FALSE)
set(PACKAGE_VERSION_EXACT FALSE)
if(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  string(REPLACE "." ";" _pjrt_have "${{PACKAGE_VERSION}}")
  list(GET _pjrt_have 0 _pjrt_major)
  list(GET _pjrt_have 1 _pjrt_minor)
  if(PACKAGE_FIND_VERSION_MAJOR EQUAL _pjrt_major AND
     (NOT _pjrt_major EQUAL 0 OR PACKAGE_FIND_VERSION_MINOR EQUAL _pjrt_minor))
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  endif()
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
  unset(_pjrt_have)
  unset(_pjrt_major)
  unset(_pjrt_minor)
endif()
# The library is built for 64-bit targets only (a project of no language knows no pointer size).
if(NOT "${{CMAKE_SIZEOF_VOID_P}}" STREQUAL "" AND NOT "${{CMAKE_SIZEOF_VOID_P}}" STREQUAL "8")
  set(PACKAGE_VERSION "${{PACKAGE_VERSION}} (64-bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pkg_config_file_names_the_prefix_and_the_version() {
        let pc = pkg_config_file(Path::new("/opt/pjrt"));
        assert!(pc.contains("prefix=/opt/pjrt\n"), "{pc}");
        assert!(pc.contains(&format!("Version: {VERSION}\n")), "{pc}");
        assert!(pc.contains("Libs.private: -ldl -lgcc_s"), "{pc}");
    }

    /// `#define NAME VALUE` lines of the header.
    fn header_defines() -> Vec<(&'static str, &'static str)> {
        HEADER
            .lines()
            .filter_map(|l| l.strip_prefix("#define "))
            .filter_map(|l| l.split_once(' '))
            .filter(|(name, _)| name.starts_with("PJRT_") && *name != "PJRT_H")
            .collect()
    }

    #[test]
    fn the_fortran_module_declares_every_constant_and_function_of_the_header() {
        // Fortran is case-insensitive and the module's text is ours: compare in lower case,
        // without blanks, so `PJRT_DTYPE_F32 = 11` is found however the line wraps.
        let module: String = FORTRAN_MODULE.to_lowercase().chars().filter(|c| *c != ' ').collect();
        let defines = header_defines();
        assert!(defines.len() > 30, "{defines:?}");
        for (name, value) in defines {
            if name == "PJRT_ABI_VERSION_MINOR" {
                continue; // the module's functions are the major version's; it adds none of a minor's
            }
            let declared = format!("{}={}", name.to_lowercase(), value);
            assert!(module.contains(&declared), "pjrt.f90 lacks `{name} = {value}` of pjrt.h");
        }
        let functions: Vec<&str> = HEADER
            .lines()
            .filter(|l| !l.starts_with("//") && l.contains("pjrt_") && l.contains('('))
            .filter_map(|l| l.split('(').next()?.split([' ', '*']).next_back())
            .filter(|name| name.starts_with("pjrt_"))
            .collect();
        assert_eq!(functions.len(), 11, "{functions:?}");
        for function in functions {
            assert!(module.contains(&format!("bind(c,name='{function}')")), "pjrt.f90 does not bind {function}");
        }
    }

    #[test]
    fn the_cmake_files_carry_the_abi_and_the_version() {
        assert!(cmake_config().contains("libpjrt.so.1\""));
        assert!(cmake_config_version().contains(&format!("set(PACKAGE_VERSION \"{VERSION}\")")));
    }
}
