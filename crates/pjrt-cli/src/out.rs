//! Standard output: where every command writes its results, through `outln!` and `out!` (crate-private macros).
//!
//! `println!` panics when stdout cannot be written ("failed printing to stdout: Broken pipe" for
//! `pjrt inspect FILE | head`). These macros return a [`StdoutError`] instead, which the command
//! passes up with `?` like any other error; [`crate::main_with_args`] then ends the run quietly
//! with status 0 when the reader has gone away (the pipe is broken), as ripgrep does, and reports
//! any other write error (a full disk, say) as an error. One place decides, not each command.
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe is an `EPIPE` error, not a signal; `pjrt`
//! keeps it ignored: `pjrt serve`'s sockets must not kill the process when a client hangs up.

use std::io::Write as _;

/// Writing a command's results to stdout failed; [`StdoutError::reader_gone`] tells whether the
/// reader has closed the pipe (a quiet end), or the write failed otherwise.
#[derive(Debug, thiserror::Error)]
#[error("writing to standard output failed: {0}")]
pub struct StdoutError(#[source] pub std::io::Error);

impl StdoutError {
    /// Whether stdout is a pipe whose reader has gone away (`| head`).
    pub fn reader_gone(&self) -> bool {
        self.0.kind() == std::io::ErrorKind::BrokenPipe
    }
}

/// Writes `args` to stdout.
pub fn write(args: std::fmt::Arguments<'_>) -> Result<(), StdoutError> {
    std::io::stdout().lock().write_fmt(args).map_err(StdoutError)
}

/// Writes `args` and a newline to stdout, as one write of the line.
pub fn line(args: std::fmt::Arguments<'_>) -> Result<(), StdoutError> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_fmt(args).and_then(|()| stdout.write_all(b"\n")).map_err(StdoutError)
}

/// Writes out what stdout still buffers (a last line without a newline); called once at the end
/// of a command, so that its errors are seen too.
pub fn flush() -> Result<(), StdoutError> {
    std::io::stdout().lock().flush().map_err(StdoutError)
}

/// `println!` that returns `Result<(), StdoutError>` instead of panicking (see the module docs).
macro_rules! outln {
    () => {
        $crate::out::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}

/// `print!` that returns `Result<(), StdoutError>` instead of panicking (see the module docs).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*))
    };
}

pub(crate) use {out, outln};
