//! `pjrt`: inspect PJRT plugins and run StableHLO programs on them. Everything is in the
//! `pjrt_cli` library; see `src/lib.rs`.

use std::process::ExitCode;

fn main() -> ExitCode {
    pjrt_cli::main_with_args(std::env::args_os())
}
