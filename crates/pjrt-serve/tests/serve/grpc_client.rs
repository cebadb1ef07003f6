//! A minimal gRPC client for the tests (unary calls over HTTP/2 with the h2 crate): the status,
//! message and answer of a call, each call on a connection of its own. Shared with pjrt-cli's
//! serve tests (`#[path]`).

use std::time::Duration;

/// What a unary call got back.
#[derive(Debug)]
pub struct GrpcAnswer {
    /// `grpc-status` (0: OK).
    pub code: u32,
    /// `grpc-message`.
    pub message: String,
    /// The answer's message bytes (without the 5-byte frame header), when OK.
    pub body: Vec<u8>,
}

/// Calls `method` (`/inference.GRPCInferenceService/ServerLive`) at `address` with the encoded
/// `message` and extra `headers`; fails after `timeout`.
pub fn call(
    address: &str,
    method: &str,
    message: &[u8],
    headers: &[(&str, &str)],
    timeout: Duration,
) -> Result<GrpcAnswer, String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        tokio::time::timeout(timeout, call_async(address, method, message, headers))
            .await
            .map_err(|_| format!("{method}: no answer within {timeout:?}"))?
    })
}

async fn call_async(
    address: &str,
    method: &str,
    message: &[u8],
    headers: &[(&str, &str)],
) -> Result<GrpcAnswer, String> {
    let e = |e: &dyn std::fmt::Display| format!("{method}: {e}");
    let tcp = tokio::net::TcpStream::connect(address).await.map_err(|x| e(&x))?;
    let (client, connection) = h2::client::handshake(tcp).await.map_err(|x| e(&x))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut request = http::Request::post(format!("http://{address}{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let request = request.body(()).map_err(|x| e(&x))?;
    let mut client = client.ready().await.map_err(|x| e(&x))?;
    let (response, mut send) = client.send_request(request, false).map_err(|x| e(&x))?;
    let mut framed = Vec::with_capacity(5 + message.len());
    framed.push(0);
    framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
    framed.extend_from_slice(message);
    send.send_data(bytes::Bytes::from(framed), true).map_err(|x| e(&x))?;
    let response = response.await.map_err(|x| e(&x))?;
    let (parts, mut body) = response.into_parts();
    let mut data = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|x| e(&x))?;
        let _ = body.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    let trailers = body.trailers().await.map_err(|x| e(&x))?.unwrap_or_default();
    // A trailers-only answer has its status in the headers.
    let header = |name: &str| {
        trailers.get(name).or_else(|| parts.headers.get(name)).and_then(|v| v.to_str().ok()).map(str::to_string)
    };
    let code = header("grpc-status").and_then(|s| s.parse().ok()).ok_or_else(|| e(&"no grpc-status"))?;
    let message = percent_decoded(&header("grpc-message").unwrap_or_default());
    let body = if data.len() >= 5 { data[5..].to_vec() } else { Vec::new() };
    Ok(GrpcAnswer { code, message, body })
}

/// `grpc-message` is percent-encoded.
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
