//! Watching what the process writes to its standard error while a plugin call runs, to learn
//! whether the plugin printed a given line: for the duration of the call file descriptor 2 is
//! the write end of a pipe, and a thread forwards every byte it reads to the real stderr
//! unchanged, noting whether the line went by. Afterwards fd 2 is the real stderr again (also
//! when the call fails or panics).
//!
//! Why: a plugin's C++ logging writes straight to fd 2, and whether it prints some lines depends
//! on the host (the 0.106 CPU plugin's `+prefer-no-gather` lines on loading a serialized
//! executable appear only where the host CPU's tuning features hold those preferences), so
//! `pjrt run` explains such a line only after seeing it, never from the plugin's version.
//!
//! Ordering: everything written to fd 2 during the call, by any thread, reaches the real stderr
//! in the order it was written, and all of it before [`watch`] returns. A write by another thread
//! racing with the restore may overtake bytes still in the pipe; nothing is lost or changed.

use std::ffi::c_int;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{mpsc, Mutex, TryLockError};

use libc::{dup2, pipe2, poll, pollfd as PollFd, EBUSY, EINTR, O_CLOEXEC, POLLIN};

const STDERR_FD: RawFd = 2;

/// Runs `call` with fd 2 watched: returns its result and whether `needle` appeared in what was
/// written to fd 2 meanwhile (all of which reached the real stderr unchanged). When fd 2 cannot
/// be watched (it is closed, or no pipe or thread can be made), `call` runs unwatched and the
/// answer is `false`: nothing was seen.
/// One watch at a time runs (a nested or concurrent one would save and restore the other's pipe);
/// a call made while another is watched runs unwatched.
pub(crate) fn watch<T>(needle: &'static [u8], call: impl FnOnce() -> T) -> (T, bool) {
    let Ok(forward_to) = io::stderr().as_fd().try_clone_to_owned() else { return (call(), false) };
    watch_into(needle, forward_to, call)
}

/// Held while fd 2 is redirected.
static WATCHING: Mutex<()> = Mutex::new(());

/// [`watch`], forwarding to `forward_to` instead of the real stderr (the tests read it back).
fn watch_into<T>(needle: &'static [u8], forward_to: OwnedFd, call: impl FnOnce() -> T) -> (T, bool) {
    // A poisoned lock only means a watched call panicked; the redirect was undone on unwinding.
    let _only_watch = match WATCHING.try_lock() {
        Ok(guard) => guard,
        Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(TryLockError::WouldBlock) => return (call(), false),
    };
    match Redirect::start(needle, forward_to) {
        Ok(redirect) => {
            let value = call();
            (value, redirect.finish())
        }
        Err(_) => (call(), false),
    }
}

/// fd 2 redirected into a pipe, with the thread that forwards it; dropping it restores fd 2.
struct Redirect {
    /// A duplicate of fd 2 as it was, put back by [`Redirect::restore`].
    original: Option<OwnedFd>,
    /// Closed after fd 2 is restored: tells the thread that everything written meanwhile is in
    /// the pipe, so it can drain the pipe and answer.
    stop: Option<OwnedFd>,
    seen: mpsc::Receiver<bool>,
}

impl Redirect {
    fn start(needle: &'static [u8], forward_to: OwnedFd) -> io::Result<Redirect> {
        let original = io::stderr().as_fd().try_clone_to_owned()?;
        let (data_read, data_write) = cloexec_pipe()?;
        let (stop_read, stop_write) = cloexec_pipe()?;
        let (seen_tx, seen) = mpsc::channel();
        std::thread::Builder::new()
            .name("pjrt-stderr-watch".into())
            .spawn(move || forward(File::from(data_read), stop_read, File::from(forward_to), needle, seen_tx))?;
        // SAFETY: `dup2` makes fd 2 another descriptor of the pipe's write end, atomically (a
        // concurrent write to fd 2 goes to one or the other, whole). No Rust object owns fd 2:
        // `std::io::Stderr` writes to the number, and the standard library documents replacing
        // the standard streams with `dup2` as sound. Both descriptors are open (we own them).
        if unsafe { dup2(data_write.as_raw_fd(), STDERR_FD) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // fd 2 is now the only write end: once it is restored the thread sees end-of-file.
        drop(data_write);
        Ok(Redirect { original: Some(original), stop: Some(stop_write), seen })
    }

    /// Restores fd 2 and answers whether the needle went by (once the thread forwarded every
    /// byte written before the restore).
    fn finish(mut self) -> bool {
        self.restore();
        self.seen.recv().unwrap_or(false)
    }

    fn restore(&mut self) {
        if let Some(original) = self.original.take() {
            // SAFETY: as in `start`: fd 2 becomes a descriptor of the original stderr again (the
            // pipe's write end it was is closed by this); `original` is open until dropped here.
            // Linux's dup2 fails only with EINTR or EBUSY (a racing open of fd 2) for two open
            // descriptors: retry those. Were it to fail anyway, fd 2 would stay the pipe, whose
            // bytes the thread keeps forwarding.
            while unsafe { dup2(original.as_raw_fd(), STDERR_FD) } < 0
                && matches!(io::Error::last_os_error().raw_os_error(), Some(EINTR | EBUSY))
            {}
        }
        // Every write to fd 2 made before the restore is in the pipe now (a pipe write returns
        // once its bytes are in the pipe); closing `stop` tells the thread so.
        self.stop.take();
    }
}

impl Drop for Redirect {
    fn drop(&mut self) {
        self.restore();
    }
}

/// A pipe whose both ends are closed on `exec`: (read end, write end).
fn cloexec_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1 as c_int; 2];
    // SAFETY: `pipe2` writes two descriptors into the two-element array.
    if unsafe { pipe2(fds.as_mut_ptr(), O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created by `pipe2` and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Which of `fds` (`None`: not asked) can be read without blocking (data, end of file or an
/// error), now or, with `wait`, once one can.
fn readable(fds: [Option<RawFd>; 2], wait: bool) -> io::Result<[bool; 2]> {
    let mut polled = fds.map(|fd| PollFd { fd: fd.unwrap_or(-1), events: POLLIN, revents: 0 });
    loop {
        // SAFETY: `polled` is an array of two `pollfd`s, which `poll` only reads and writes the
        // `revents` of (a negative fd is skipped).
        let ready = unsafe { poll(polled.as_mut_ptr(), 2, if wait { -1 } else { 0 }) };
        if ready >= 0 {
            return Ok(polled.map(|p| p.revents != 0));
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// The thread: forwards `data` to `to` unchanged until `stop` closes (fd 2 is restored), then
/// takes what is still in the pipe without waiting, answers whether `needle` went by, and keeps
/// forwarding until end of file (a program started during the call may still hold the pipe as
/// its stderr). It never stops reading before end of file, so no writer blocks on a full pipe.
fn forward(mut data: File, stop: OwnedFd, mut to: File, needle: &'static [u8], seen: mpsc::Sender<bool>) {
    let mut scan = Scanner::new(needle);
    let mut buffer = vec![0u8; 16 * 1024];
    // One read, passed on; false at end of file (or on a read error, which a pipe does not have).
    let mut pass_on = |data: &mut File, scan: &mut Scanner| -> bool {
        match data.read(&mut buffer) {
            Ok(0) => false,
            Ok(n) => {
                scan.feed(&buffer[..n]);
                // A stderr that cannot be written (closed, a full disk) must not stop the reading.
                let _ = to.write_all(&buffer[..n]);
                true
            }
            Err(e) => e.kind() == io::ErrorKind::Interrupted,
        }
    };
    let mut open = true;
    loop {
        match readable([open.then(|| data.as_raw_fd()), Some(stop.as_raw_fd())], true) {
            Ok([true, _]) => open = pass_on(&mut data, &mut scan),
            Ok([false, true]) => break,
            Ok([false, false]) => {}
            // `poll` failing leaves only the blocking reads below: the answer may then miss
            // what comes later (no note), the bytes do not.
            Err(_) => break,
        }
    }
    while open && matches!(readable([Some(data.as_raw_fd()), None], false), Ok([true, _])) {
        open = pass_on(&mut data, &mut scan);
    }
    let _ = seen.send(scan.seen);
    while open {
        open = pass_on(&mut data, &mut scan);
    }
}

/// Finds `needle` in a stream that arrives in pieces.
struct Scanner {
    needle: &'static [u8],
    /// The bytes not yet searched, after the last `needle.len() - 1` already searched (where a
    /// match may start).
    window: Vec<u8>,
    seen: bool,
}

impl Scanner {
    fn new(needle: &'static [u8]) -> Scanner {
        Scanner { needle, window: Vec::new(), seen: needle.is_empty() }
    }

    fn feed(&mut self, bytes: &[u8]) {
        if self.seen {
            return;
        }
        self.window.extend_from_slice(bytes);
        self.seen = self.window.windows(self.needle.len()).any(|w| w == self.needle);
        let keep = self.needle.len() - 1;
        if self.window.len() > keep {
            self.window.drain(..self.window.len() - keep);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    const NEEDLE: &[u8] = b"Target machine feature +prefer-no-";

    /// The tests that watch fd 2 take turns (a watch that finds another running runs unwatched).
    static TURN: Mutex<()> = Mutex::new(());

    fn turn() -> std::sync::MutexGuard<'static, ()> {
        TURN.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What fd 2 is (`pipe:[N]`, `/dev/pts/0`, ...).
    fn fd2() -> PathBuf {
        std::fs::read_link("/proc/self/fd/2").unwrap()
    }

    /// Runs `call` watched, forwarding into a file; returns (seen, the file's lines that start
    /// with `tag`). Other tests of this binary may write to fd 2 meanwhile, so only the lines
    /// tagged by this one are compared (each is one write of under PIPE_BUF bytes: whole).
    fn watched(tag: &str, call: impl FnOnce()) -> (bool, Vec<String>) {
        let _turn = turn();
        let path = std::env::temp_dir().join(format!("pjrt-stderr-watch-{}-{tag}", std::process::id()));
        let file = File::create(&path).unwrap();
        let before = fd2();
        let ((), seen) = watch_into(NEEDLE, file.into(), call);
        assert_eq!(fd2(), before, "fd 2 is restored");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        (seen, text.lines().filter(|l| l.starts_with(tag)).map(str::to_owned).collect())
    }

    fn write_stderr(bytes: &[u8]) {
        // `Stderr` writes to fd 2 itself (libtest captures only the print macros), as a plugin's
        // C++ logging does.
        io::stderr().write_all(bytes).unwrap();
    }

    #[test]
    fn every_byte_is_forwarded_and_the_line_is_noticed() {
        // 256 KiB, more than a pipe holds (64 KiB): the call would block if nothing forwarded
        // during it. The needle comes in two writes, after all of it.
        let lines: Vec<String> = (0..4096).map(|i| format!("watch-a {i:04} {}", "x".repeat(48))).collect();
        let (seen, forwarded) = watched("watch-a", || {
            assert!(fd2().to_string_lossy().starts_with("pipe:"), "fd 2 is the pipe during the call");
            for line in &lines {
                write_stderr(format!("{line}\n").as_bytes());
            }
            write_stderr(b"watch-a E cpu_aot_loader.cc:220] Loading XLA:CPU AOT result. Target machine fe");
            write_stderr(b"ature +prefer-no-gather is not supported on the host machine.\n");
        });
        assert!(seen);
        assert_eq!(forwarded.len(), lines.len() + 1);
        assert_eq!(forwarded[..lines.len()], lines[..], "unchanged, in order");
        assert!(forwarded[lines.len()].ends_with("+prefer-no-gather is not supported on the host machine."));
    }

    #[test]
    fn without_the_line_nothing_is_noticed() {
        let (seen, forwarded) = watched("watch-b", || {
            write_stderr(b"watch-b Target machine feature +avx512f is not supported\n");
            write_stderr(b"watch-b +prefer-no-gather alone\n");
        });
        assert!(!seen);
        assert_eq!(forwarded.len(), 2);
        let _turn = turn();
        let ((), seen) = watch_into(NEEDLE, File::create("/dev/null").unwrap().into(), || ());
        assert!(!seen, "a call that writes nothing");
    }

    #[test]
    fn a_panicking_call_restores_fd_2() {
        let _turn = turn();
        let before = fd2();
        let panicked = std::panic::catch_unwind(|| {
            watch_into(NEEDLE, File::create("/dev/null").unwrap().into(), || panic!("in the call"))
        });
        assert!(panicked.is_err());
        assert_eq!(fd2(), before);
    }

    #[test]
    fn the_scanner_finds_the_needle_split_anywhere() {
        let text = b"..E0000 Target machine feature +prefer-no-scatter is not supported..";
        for cut in 0..=text.len() {
            for second in cut..=text.len() {
                let mut scan = Scanner::new(NEEDLE);
                for piece in [&text[..cut], &text[cut..second], &text[second..]] {
                    scan.feed(piece);
                }
                assert!(scan.seen, "cut at {cut} and {second}");
            }
        }
        let mut scan = Scanner::new(NEEDLE);
        scan.feed(b"Target machine feature +prefer");
        scan.feed(b"-yes-gather");
        assert!(!scan.seen);
    }
}
