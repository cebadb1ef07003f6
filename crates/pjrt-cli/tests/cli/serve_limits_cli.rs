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

impl Serving {
    /// The server's peak resident memory (`VmHWM`), in bytes.
    fn peak(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
    }

    /// Resets the peak to the memory resident now (`clear_refs` 5), so that a step's peak is
    /// its own.
    fn reset_peak(&self) {
        std::fs::write(format!("/proc/{}/clear_refs", self.child.id()), "5").unwrap();
    }

    /// Runs `step` and returns how far it raised the server's peak memory above what was
    /// resident before it.
    fn growth(&self, step: impl FnOnce()) -> u64 {
        self.reset_peak();
        let before = self.peak();
        step();
        self.peak().saturating_sub(before)
    }

    /// A gRPC ModelInfer call with `message` as the encoded request.
    fn grpc_infer(&self, message: &[u8]) -> grpc_client::GrpcAnswer {
        grpc_client::call(
            &self.grpc,
            "/inference.GRPCInferenceService/ModelInfer",
            message,
            &[],
            Duration::from_secs(120),
        )
        .unwrap()
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
    let (status, body) = server.request(
        "GET /v2/models/cnn/ready HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0ken\r\nConnection: close\r\n\r\n",
        b"",
    );
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
    assert!(pjrt_serve::grpc::messages::ServerLiveResponse::decode(&live.body[..]).unwrap().live);
    drop(held);
}

const MIB: u64 = 1 << 20;

/// A JSON infer request whose input `name` (`datatype`, shape `[count]` or `[count/8, 8]`)
/// has `count` zeros as its data: two bytes of body per element.
fn zeros_json(name: &str, datatype: &str, count: usize, rows_of_8: bool) -> Vec<u8> {
    let shape = if rows_of_8 { format!("[{}, 8]", count / 8) } else { format!("[{count}]") };
    let mut body = format!(r#"{{"inputs": [{{"name": "{name}", "datatype": "{datatype}", "shape": {shape}, "data": ["#)
        .into_bytes();
    body.reserve(count * 2 + 8);
    for i in 0..count {
        body.extend_from_slice(if i == 0 { b"0" } else { b",0" });
    }
    body.extend_from_slice(b"]}]}");
    body
}

/// A ModelInfer request of `model` whose input0 (INT64, shape `[count]`) has `count` zeros as
/// packed `int64_contents`: one byte each.
fn zeros_int64_grpc(model: &str, count: usize) -> Vec<u8> {
    use pjrt_serve::grpc::messages::{InferInputTensor, InferTensorContents, ModelInferRequest};
    use prost::Message as _;
    ModelInferRequest {
        model_name: model.into(),
        inputs: vec![InferInputTensor {
            name: "input0".into(),
            datatype: "INT64".into(),
            shape: vec![count as i64],
            parameters: Default::default(),
            contents: Some(InferTensorContents { int64_contents: vec![0; count], ..Default::default() }),
        }],
        ..Default::default()
    }
    .encode_to_vec()
}

/// Posts `body` to `path` from `clients` threads at once; the status lines.
fn post_concurrently(server: &Serving, path: &str, body: &[u8], clients: usize) -> Vec<String> {
    std::thread::scope(|scope| {
        let posts: Vec<_> = (0..clients)
            .map(|_| {
                scope.spawn(|| {
                    let head = format!(
                        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    server.request(&head, body).0
                })
            })
            .collect();
        posts.into_iter().map(|p| p.join().unwrap()).collect()
    })
}

/// The server's peak memory under hostile bodies grows by no more than its budget of bytes in
/// flight (16 MiB here) and 16 MiB for what is not request data (buffers, threads, the
/// allocator), where it grew by 7 to 24 times the body before: a 12 MiB JSON body of zeros (to
/// a model whose shape it does not fit, and to one it fits but whose decoded tensor is over the
/// budget), a 12 MiB ModelInfer of packed INT64 zeros (to a model with no INT64 input, and to
/// none), 12 bodies of 8 MiB at once to a model that does not exist and to one that does. Each
/// step runs on a server of its own, so that no step's peak hides in what an earlier one left.
#[test]
fn peak_memory_under_hostile_bodies_stays_within_the_budget() {
    let budget = 16 * MIB;
    let bound = budget + 16 * MIB;
    let args = [
        "--model",
        "cnn=tests/data/jax_export/jax-0.10.2/cnn/model.jaxexport",
        "--model",
        "mlp=tests/data/jax_export/symbolic/jax-0.10.2/mlp_batch/model.jaxexport",
        "--max-body-mib",
        "16",
        "--max-inflight-mib",
        "16",
    ];
    let json_cnn = zeros_json("input0", "FP32", 6 << 20, false);
    let json_mlp = zeros_json("input0", "FP32", 6 << 20, true);
    let grpc_cnn = zeros_int64_grpc("cnn", 12 << 20);
    let grpc_nope = zeros_int64_grpc("nope", 12 << 20);
    let spaces = vec![b' '; 8 << 20];
    let post = |server: &Serving, path: &str, body: &[u8]| {
        let head =
            format!("POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
        server.request(&head, body)
    };
    type Step<'a> = (&'a str, Box<dyn Fn(&Serving) + 'a>);
    let steps: Vec<Step<'_>> = vec![
        (
            "JSON, shape does not fit",
            Box::new(|server| {
                let (status, body) = post(server, "/v2/models/cnn/infer", &json_cnn);
                assert!(status.contains("400") && body.contains("has shape [6291456]"), "{status} {body}");
            }),
        ),
        (
            "JSON, decoded over the budget",
            Box::new(|server| {
                let (status, body) = post(server, "/v2/models/mlp/infer", &json_mlp);
                assert!(status.contains("413") && body.contains("--max-inflight-mib"), "{status} {body}");
            }),
        ),
        (
            "gRPC INT64 contents to a model without an INT64 input",
            Box::new(|server| {
                let answer = server.grpc_infer(&grpc_cnn);
                // INVALID_ARGUMENT.
                assert!(
                    answer.code == 3 && answer.message.contains("is INT64, but the model takes FP32"),
                    "{answer:?}"
                );
            }),
        ),
        (
            "gRPC INT64 contents to no model",
            Box::new(|server| {
                let answer = server.grpc_infer(&grpc_nope);
                // NOT_FOUND.
                assert!(answer.code == 5 && answer.message.contains("Request for unknown model"), "{answer:?}");
            }),
        ),
        (
            "12 bodies at once to no model",
            Box::new(|server| {
                let statuses = post_concurrently(server, "/v2/models/nope/infer", &spaces, 12);
                assert!(statuses.iter().all(|s| s.contains("404")), "{statuses:?}");
            }),
        ),
        (
            "12 bodies at once to a model",
            Box::new(|server| {
                let statuses = post_concurrently(server, "/v2/models/cnn/infer", &spaces, 12);
                assert!(statuses.iter().all(|s| s.contains("400") || s.contains("503")), "{statuses:?}");
            }),
        ),
    ];
    let mut report = Vec::new();
    for (what, step) in &steps {
        let server = Serving::start(&args, None);
        let grown = server.growth(|| step(&server));
        report.push(format!("{what}: +{} MiB", grown / MIB));
        assert!(grown <= bound, "{what}: the peak grew by {} MiB, over {} MiB", grown / MIB, bound / MIB);
    }
    eprintln!("peak memory growth per step (budget {} MiB): {}", budget / MIB, report.join("; "));
}
