//! Hostile clients at the socket: garbage instead of HTTP, a cut-off request, a body that
//! never comes, a declared body far over the limit, a client that leaves mid-request. Each is
//! answered or dropped without harm, and the server goes on answering others.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use pjrt_serve::{Server, ServerOptions};

use crate::harness::{client, data, Running};

fn connect(server: &Running) -> TcpStream {
    let stream = TcpStream::connect(server.address()).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream
}

/// The start of what the server answers (empty if it closes without a word).
fn answer(mut stream: TcpStream) -> String {
    let mut out = vec![0u8; 4096];
    let n = stream.read(&mut out).unwrap_or(0);
    String::from_utf8_lossy(&out[..n]).into_owned()
}

#[test]
fn hostile_connections_leave_the_server_serving() {
    let server = Server::new(client(), ServerOptions::default().with_max_body_bytes(1 << 20));
    let model = pjrt_serve::ModelConfig::new("cnn", data("jax_export/jax-0.10.2/cnn/model.jaxexport"));
    server.load(model).unwrap();
    let server = Running::start(server);

    // Not HTTP at all.
    let mut s = connect(&server);
    s.write_all(&[0x16, 0x03, 0x01, 0x00, 0xff, 0, 0, 0, 0, 0]).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let a = answer(s);
    assert!(a.is_empty() || a.starts_with("HTTP/1.1 400"), "{a:?}");

    // A body declared far over the limit: refused at once, without waiting for it.
    let mut s = connect(&server);
    s.write_all(b"POST /v2/models/cnn/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000000\r\n\r\n{").unwrap();
    let a = answer(s);
    assert!(a.starts_with("HTTP/1.1 413"), "{a:?}");

    // A request cut off in its headers, and one that leaves halfway through its body.
    let mut s = connect(&server);
    s.write_all(b"POST /v2/models/cnn/infer HTTP/1.1\r\nHost: x\r\nContent-Le").unwrap();
    drop(s);
    let mut s = connect(&server);
    s.write_all(b"POST /v2/models/cnn/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n{\"inputs\": [")
        .unwrap();
    drop(s);

    // Many connections opened and dropped at once.
    let idle: Vec<TcpStream> = (0..64).map(|_| connect(&server)).collect();
    drop(idle);

    // Headers far too long.
    let mut s = connect(&server);
    let long = format!("GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Long: {}\r\n\r\n", "a".repeat(1 << 20));
    let _ = s.write_all(long.as_bytes());
    let a = answer(s);
    assert!(a.is_empty() || a.starts_with("HTTP/1.1 4"), "{}", &a[..a.len().min(200)]);

    // Still serving.
    let (status, _) = server.get_json("/v2/health/live");
    assert_eq!(status, 200);
    let (status, meta) = server.get_json("/v2/models/cnn");
    assert_eq!(status, 200, "{meta}");
}

/// Connections that never finish their head (HTTP/1) or preface (HTTP/2), or send nothing,
/// are closed after the header timeout, and past the connection bound they wait: a good
/// request is answered on both ports while more idle connections than the bound are held.
#[test]
fn idle_and_half_sent_connections_cannot_starve_the_server() {
    use pjrt_serve::grpc::messages::{ServerLiveRequest, ServerLiveResponse};
    use prost::Message as _;

    let mut options = ServerOptions::default().with_token("t0ken");
    options.max_connections = 8;
    options.header_timeout = Duration::from_millis(300);
    let server = Running::start(Server::new(client(), options));

    // Each kind of stalled client is closed by the server (EOF, or a 408 first).
    let grpc = |_: ()| {
        let stream = TcpStream::connect(server.grpc_address()).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        stream
    };
    // (The HTTP/2 server sends its SETTINGS frame before it closes.)
    let stalled: [(TcpStream, &[u8], bool); 4] = [
        (connect(&server), b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nAuthoriz", false),
        (connect(&server), b"", false),
        (grpc(()), b"PRI * HTTP/2.0\r\n", true),
        (grpc(()), b"", true),
    ];
    for (mut stream, sent, http2) in stalled {
        stream.write_all(sent).unwrap();
        let mut rest = Vec::new();
        let read = stream.read_to_end(&mut rest);
        assert!(read.is_ok(), "{:?}: the server kept the connection: {read:?}", String::from_utf8_lossy(sent));
        let http1_close = rest.is_empty() || rest.starts_with(b"HTTP/1.1 408");
        assert!(http2 || http1_close, "{:?}", String::from_utf8_lossy(&rest));
    }

    // Four times the bound of idle connections on each port, then a good request to each.
    let mut held = Vec::new();
    for i in 0..32 {
        let mut http = connect(&server);
        let _ = http.write_all(if i % 2 == 0 { b"POST /v2/models/x/infer HTTP/1.1\r\nHo" } else { b"" });
        let mut h2 = grpc(());
        let _ = h2.write_all(if i % 2 == 0 { b"PRI * HTTP/2.0\r\n" } else { b"" });
        held.extend([http, h2]);
    }
    let (status, _) = server.get_json_with("/v2/health/ready", &[("Authorization", "Bearer t0ken")]);
    assert_eq!(status, 200);
    let answer = server.grpc("ServerLive", &ServerLiveRequest {}, &[("authorization", "Bearer t0ken")]);
    assert_eq!(answer.code, 0, "{answer:?}");
    assert!(ServerLiveResponse::decode(&answer.body[..]).unwrap().live);
    drop(held);
}

/// A body that does not arrive whole within the body timeout is answered 408 and its bytes
/// are given back; a body over the budget of bytes in flight is refused before it is read.
#[test]
fn slow_and_oversized_bodies_are_refused() {
    let mut options = ServerOptions::default().with_max_inflight_bytes(1 << 20);
    options.body_timeout = Duration::from_millis(300);
    let server = Server::new(client(), options);
    server.load(pjrt_serve::ModelConfig::new("cnn", data("jax_export/jax-0.10.2/cnn/model.jaxexport"))).unwrap();
    let mlp = data("jax_export/symbolic/jax-0.10.2/mlp_batch/model.jaxexport");
    server.load(pjrt_serve::ModelConfig::new("mlp", mlp)).unwrap();
    let server = Running::start(server);
    let mut s = connect(&server);
    s.write_all(b"POST /v2/models/cnn/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"inputs\"").unwrap();
    let a = answer(s);
    assert!(a.starts_with("HTTP/1.1 408"), "{a:?}");
    assert!(a.contains("--body-timeout-ms"), "{a:?}");
    // Over the whole budget (1 MiB): 413 at once, nothing read.
    let mut s = connect(&server);
    s.write_all(b"POST /v2/models/cnn/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n{").unwrap();
    let a = answer(s);
    assert!(a.starts_with("HTTP/1.1 413") && a.contains("--max-inflight-mib"), "{a:?}");
    // A tensor whose declared bytes (40000 rows of 8 FP32) are over the budget: 413 before
    // its data is decoded.
    let body = br#"{"inputs": [{"name": "input0", "datatype": "FP32", "shape": [40000, 8], "data": [0]}]}"#;
    let (status, answer) = server.post_raw("/v2/models/mlp/infer", &[], body);
    assert_eq!(status, 413, "{answer}");
    assert!(answer.contains("input \\\"input0\\\" needs 1280000 bytes"), "{answer}");
    let (status, _) = server.get_json("/v2/health/live");
    assert_eq!(status, 200);
}
