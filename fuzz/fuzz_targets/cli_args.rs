//! The `pjrt` command's argument parsing. The input is split on NUL bytes into argument words
//! (not necessarily UTF-8) after the program name. Only the parser runs: nothing is executed,
//! loaded or installed.
//!
//! Checked: the parser never panics; `--help` / `--version` are the only outcomes that exit 0
//! without running a command; an error message can always be rendered; every `--xla-option`
//! that parsed is turned into compile options that still encode.

#![no_main]

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use clap::error::ErrorKind;
use libfuzzer_sys::fuzz_target;
use pjrt_cli::{parse_args, parse_xla_option, Command};
use pjrt_client::CompileOptions;

fuzz_target!(|data: &[u8]| {
    let mut args = vec![OsString::from("pjrt")];
    if !data.is_empty() {
        args.extend(data.split(|&b| b == 0).map(|w| OsString::from_vec(w.to_vec())));
    }
    if args.len() > 64 {
        return;
    }
    match parse_args(args) {
        Ok(cli) => {
            if let Command::Run(run) = cli.command {
                let mut options = CompileOptions::new();
                for spec in &run.xla.xla_options {
                    match parse_xla_option(options.clone(), spec) {
                        Ok(o) => options = o,
                        Err(_) => assert!(!spec.contains('='), "{spec:?} has a '=' but was refused"),
                    }
                }
                options.to_bytes().expect("xla options never make compile options invalid");
            }
        }
        Err(e) => {
            let _ = e.render().to_string();
            if !e.use_stderr() {
                assert!(
                    matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion),
                    "exit code 0 for {:?}",
                    e.kind()
                );
            }
        }
    }
});
