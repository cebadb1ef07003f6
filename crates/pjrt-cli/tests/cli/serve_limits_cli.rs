//! `pjrt serve` against hostile clients, as a process: idle and half-sent connections past the
//! open-file limit it started with, and (in the memory tests) bodies built to make it allocate,
//! with its peak memory (`VmHWM`) read from `/proc` before and after.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::{root, temp_dir};

#[path = "../../../pjrt-serve/tests/serve/grpc_client.rs"]
mod grpc_client;

/// A `pjrt serve` process, killed when dropped.
struct Serving {
    child: Child,
    http: String,
    grpc: String,
}

impl Serving {
    /// `pjrt serve ARGS --port 0 --grpc-port 0`, with the soft open-file limit `open_files` (the
    /// hard one as it is) if given; returns once it is ready.
    fn start(args: &[&str], open_files: Option<u64>) -> Serving {
        crate::common::pjrt(&["plugin", "list"]); // (installs the plugins first)
        let mut command = Command::new(env!("CARGO_BIN_EXE_pjrt"));
        command
            .args(["serve", "--port", "0", "--grpc-port", "0"])
            .args(args)
            .current_dir(root())
            .env("PJRT_CACHE_DIR", temp_dir("serve-limits-cache"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(soft) = open_files {
            // SAFETY: between fork and exec only async-signal-safe calls: getrlimit, setrlimit.
            unsafe {
                command.pre_exec(move || {
                    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
                    if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    limit.rlim_cur = soft;
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = command.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert!(line.starts_with("serving "), "{line:?}");
        let word = |scheme: &str| {
            line.split_whitespace().find_map(|w| w.strip_prefix(scheme)).unwrap_or_else(|| panic!("{line}")).to_string()
        };
        Serving { http: word("http://"), grpc: word("grpc://"), child }
    }

    /// A request on a connection of its own: the status line and the body.
    fn request(&self, head: &str, body: &[u8]) -> (String, String) {
        let mut stream = TcpStream::connect(&self.http).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        stream.write_all(head.as_bytes()).unwrap();
        let _ = stream.write_all(body);
        let mut answer = Vec::new();
        let read = stream.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer).into_owned();
        assert!(read.is_ok() || !answer.is_empty(), "no answer to {head:?}: {read:?}");
        let status = answer.lines().next().unwrap_or_default().to_string();
        let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
        (status, body)
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Started with a soft limit of 64 open files, the server raises it to the hard one, closes
/// half-sent heads and prefaces after the header timeout, and answers a good request on each
/// port while 150 idle connections (more than the limit it started with) are held on each.
#[test]
fn a_good_request_is_answered_while_idle_connections_are_held() {
    use pjrt_serve::grpc::messages::ServerLiveRequest;
    use prost::Message as _;

    let dir = temp_dir("serve-idle");
    std::fs::write(dir.join("token"), "t0ken").unwrap();
    let token = dir.join("token");
    let model = "cnn=tests/data/jax_export/jax-0.10.2/cnn/model.jaxexport";
    let args = ["--model", model, "--token-file", token.to_str().unwrap()];
    let server = Serving::start(&args, Some(64));
    let mut held = Vec::new();
    for i in 0..150 {
        let mut http = TcpStream::connect(&server.http).unwrap();
        let _ = http.write_all(if i % 2 == 0 { b"POST /v2/models/cnn/infer HTTP/1.1\r\nHost: x\r\nCont" } else { b"" });
        let mut grpc = TcpStream::connect(&server.grpc).unwrap();
        let _ = grpc.write_all(if i % 2 == 0 { b"PRI * HTTP/2.0\r\n" } else { b"" });
        held.extend([http, grpc]);
    }
    let (status, body) =
        server.request("GET /v2/models/cnn/ready HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0ken\r\nConnection: close\r\n\r\n", b"");
    assert!(status.starts_with("HTTP/1.1 200"), "{status} {body}");
    let live = grpc_client::call(
        &server.grpc,
        "/inference.GRPCInferenceService/ServerLive",
        &ServerLiveRequest {}.encode_to_vec(),
        &[("authorization", "Bearer t0ken")],
        Duration::from_secs(30),
    )
    .unwrap();
    assert_eq!(live.code, 0, "{live:?}");
    drop(held);
}
