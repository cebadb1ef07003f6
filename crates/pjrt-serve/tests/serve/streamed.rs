//! Binary tensor data read straight into the tensors as it arrives: a body sent in small
//! chunks (no Content-Length, frames straddling the JSON header and the tensors) answers as
//! the same request sent whole; one that ends early, or carries bytes no input claims, is a 400
//! that says so.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::npy;
use crate::{serve, ServerOptions};

/// Posts `header` then `binary` as a chunked body of `chunk`-byte chunks, each written (and
/// flushed) on its own; the status and the JSON answer.
fn post_chunked(address: &str, header: &[u8], binary: &[u8], chunk: usize) -> (u16, Value) {
    post(address, header, binary, chunk, false)
}

/// As [`post_chunked`], the whole request written at once: for a body the server answers before
/// its end (a bad JSON header), which it then does not read (the connection closes after the
/// answer), so that no write of the client's meets the closed connection.
fn post_chunked_at_once(address: &str, header: &[u8], binary: &[u8], chunk: usize) -> (u16, Value) {
    post(address, header, binary, chunk, true)
}

fn post(address: &str, header: &[u8], binary: &[u8], chunk: usize, at_once: bool) -> (u16, Value) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let head = format!(
        "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nInference-Header-Content-Length: {}\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        header.len()
    );
    let body = [header, binary].concat();
    let mut pieces = vec![head.into_bytes()];
    for part in body.chunks(chunk) {
        pieces.push([format!("{:x}\r\n", part.len()).as_bytes(), part, b"\r\n"].concat());
    }
    pieces.push(b"0\r\n\r\n".to_vec());
    if at_once {
        pieces = vec![pieces.concat()];
    }
    for piece in pieces {
        stream.write_all(&piece).unwrap();
        stream.flush().unwrap();
    }
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let text = String::from_utf8_lossy(&answer);
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let json = text.split("\r\n\r\n").nth(1).unwrap_or_default();
    (status, serde_json::from_str(json).unwrap_or(Value::Null))
}

#[test]
fn binary_data_sent_in_pieces_is_read_into_its_tensors() {
    let server = serve(ServerOptions::default());
    let x = npy("jax_export/jax-0.10.2/mlp_f32/in4.npy");
    let (status, whole) = server.post_json(
        "/v2/models/mlp/infer",
        &json!({ "inputs": [{ "name": "x", "datatype": "FP32", "shape": [4, 8], "data": x.to_vec::<f32>().unwrap() }] }),
    );
    assert_eq!(status, 200, "{whole}");
    let header = |size: usize| {
        json!({ "inputs": [{ "name": "x", "datatype": "FP32", "shape": [4, 8], "parameters": { "binary_data_size": size } }] })
            .to_string()
            .into_bytes()
    };
    for chunk in [1, 7, 64, 4096] {
        let (status, answer) = post_chunked(server.address(), &header(128), &x.data, chunk);
        assert_eq!(status, 200, "chunks of {chunk}: {answer}");
        assert_eq!(answer["outputs"], whole["outputs"], "chunks of {chunk}");
    }
    let (status, answer) = post_chunked(server.address(), &header(128), &x.data[..100], 7);
    assert_eq!(status, 400, "{answer}");
    let message = answer["error"].as_str().unwrap_or_default();
    assert!(message.contains("binary_data_size is 128 bytes, but only 100 are left"), "{message}");
    let (status, answer) = post_chunked(server.address(), &header(128), &[&x.data[..], &[0; 5]].concat(), 7);
    assert_eq!(status, 400, "{answer}");
    let message = answer["error"].as_str().unwrap_or_default();
    assert!(message.contains("5 bytes of binary data follow the inputs that no input claims"), "{message}");
    let (status, answer) = post_chunked_at_once(server.address(), &header(128)[..10], &[], 3);
    assert_eq!(status, 400, "{answer}");
    // And the server still answers.
    let (status, _) = post_chunked(server.address(), &header(128), &x.data, 16);
    assert_eq!(status, 200);
}
