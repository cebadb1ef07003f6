//! `pjrt capi install PREFIX`: lays out the C API (`pjrt.h`, `libpjrt.so.1`, `libpjrt.a`, the
//! pkg-config and CMake files, the Fortran module) for C, C++ and Fortran builds. What goes where
//! is the C API crate's (`pjrt::install`); this finds the libraries and prints what was written.

use std::path::PathBuf;

use serde_json::json;

use crate::cli::CapiCommand;
use crate::error::Error;
use crate::out::outln;

/// Runs a `pjrt capi` subcommand.
pub fn exec(command: &CapiCommand) -> Result<(), Error> {
    match command {
        CapiCommand::Install { prefix, lib_dir, json } => {
            let lib_dir = match lib_dir {
                Some(dir) => dir.clone(),
                None => beside_this_executable()?,
            };
            let installed = pjrt::install::install(prefix, &lib_dir)?;
            if *json {
                outln!(
                    "{}",
                    json!({ "prefix": installed.prefix, "version": pjrt::install::VERSION, "files": installed.files })
                )?;
            } else {
                for file in &installed.files {
                    outln!("{}", file.display())?;
                }
            }
        }
    }
    Ok(())
}

/// The folder of the running `pjrt`: `target/debug` or `target/release` when cargo built it,
/// where `cargo build -p pjrt-capi` of the same profile puts the libraries.
fn beside_this_executable() -> Result<PathBuf, Error> {
    let exe = std::env::current_exe().map_err(|e| {
        Error::Usage(format!("cannot tell where this pjrt is ({e}): name the libraries' folder with --lib-dir"))
    })?;
    Ok(exe.parent().map(PathBuf::from).unwrap_or_default())
}
