//! # pjrt-etcd
//!
//! A [`KeyValueStore`] on [etcd](https://etcd.io) for [`pjrt_client`]: the store that the
//! processes of a multi-process (or multi-host) client share. A plug-in implementation of
//! `pjrt-client`'s store trait, built on its public API only; hand an [`EtcdStore`] to
//! [`ClientBuilder::kv_store`](pjrt_client::ClientBuilder::kv_store).
//!
//! [`EtcdStore`] talks to etcd's v3 JSON gateway (`POST /v3/kv/put`, `/v3/kv/range`,
//! `/v3/watch`, keys and values in base64) over plain HTTP/1.1 on a `std::net::TcpStream`: no
//! gRPC stack and no extra crates. Only `http://` endpoints (loopback or a trusted network; TLS is
//! not supported — put a TLS-terminating proxy or an SSH tunnel in front for anything else).
//!
//! - Every key is stored under a per-job **prefix** (`EtcdStore::new(endpoint, "job-42/")`), so
//!   jobs sharing one etcd never see each other's keys.
//! - [`KeyValueStore::get`] reads the key once and, if it is absent, **waits on a watch** that
//!   starts at the revision of that read (so a put between the read and the watch is not missed)
//!   until the key is put or the timeout passes — no polling.
//! - Errors come back as [`KvError`], never panics: a connection that cannot be made, breaks, or a
//!   server that answers with an error is `UNAVAILABLE` (or the gateway's own code); a timeout
//!   is `DEADLINE_EXCEEDED`.
//!
//! ```no_run
//! use std::time::Duration;
//! use pjrt_client::{Client, KeyValueStore, Plugin};
//! use pjrt_etcd::EtcdStore;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Every process of the job: the same endpoint, the same job prefix.
//! let (process_id, process_count) = (0, 2);
//! let store = EtcdStore::new("http://127.0.0.1:2379", "jobs/run-42/")?;
//! println!("etcd {}", store.version()?); // a cheap check that the server answers
//! let plugin = Plugin::load(pjrt_client::locate::resolve(None)?.path)?;
//! let client = Client::builder(&plugin)
//!     .kv_store(store.clone()) // the plugin's kv_get / kv_try_get / kv_put go to etcd
//!     .process(process_id, process_count)
//!     .build()?;
//! // Your own coordination can use the same store under keys of your choosing.
//! store.put(&format!("app/ready/{process_id}"), b"yes")?;
//! for other in 0..process_count {
//!     store.get(&format!("app/ready/{other}"), Duration::from_secs(60))?; // waits on a watch
//! }
//! # drop(client);
//! if process_id == 0 {
//!     store.delete_all()?; // etcd keeps keys until they are deleted
//! }
//! # Ok(()) }
//! ```
//!
//! Tests: the unit tests need no server; `tests/multi_process.rs` (etcd itself, and a 4-process
//! job on the CPU plugin that rendezvous through it) runs when `PJRT_TEST_ETCD` names a server
//! (`http://127.0.0.1:PORT`) and is reported as ignored otherwise.

#![deny(missing_docs)]

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use pjrt_client::{ErrorCode, KeyValueStore, KvError};

/// How long one request (other than a blocking `get`'s watch) may take.
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// A key-value store on an etcd server, under a key prefix. Cheap to clone; each request opens
/// its own connection, so it may be used from many threads at once.
#[derive(Clone, Debug)]
pub struct EtcdStore {
    host: String,
    addrs: Vec<SocketAddr>,
    prefix: String,
    request_timeout: Duration,
}

impl EtcdStore {
    /// A store on the etcd at `endpoint` (`http://HOST:PORT` or `HOST:PORT`) whose keys all start
    /// with `prefix` (use one prefix per job; may be empty). Resolves the address but does not
    /// connect: see [`EtcdStore::version`] to check that the server answers.
    ///
    /// ```
    /// use pjrt_client::ErrorCode;
    /// use pjrt_etcd::EtcdStore;
    ///
    /// let store = EtcdStore::new("http://127.0.0.1:2379", "job-42/")?; // no connection yet
    /// assert_eq!(store.with_prefix("job-43/").prefix(), "job-43/");
    /// let refused = EtcdStore::new("https://127.0.0.1:2379", "").unwrap_err();
    /// assert_eq!(refused.code(), ErrorCode::InvalidArgument);
    /// # Ok::<(), pjrt_client::KvError>(())
    /// ```
    pub fn new(endpoint: &str, prefix: impl Into<String>) -> Result<Self, KvError> {
        let rest = endpoint.trim().trim_end_matches('/');
        if rest.starts_with("https://") {
            return Err(KvError::invalid_argument(format!(
                "{endpoint}: https endpoints are not supported (plain http only)"
            )));
        }
        let host = rest.strip_prefix("http://").unwrap_or(rest);
        if host.is_empty() || host.contains('/') {
            return Err(KvError::invalid_argument(format!("{endpoint}: expected http://HOST:PORT")));
        }
        let addrs: Vec<SocketAddr> = host
            .to_socket_addrs()
            .map_err(|e| KvError::unavailable(format!("cannot resolve etcd endpoint {endpoint}: {e}")))?
            .collect();
        if addrs.is_empty() {
            return Err(KvError::unavailable(format!("etcd endpoint {endpoint} resolves to no address")));
        }
        Ok(Self { host: host.to_string(), addrs, prefix: prefix.into(), request_timeout: DEFAULT_REQUEST_TIMEOUT })
    }

    /// The same server with another key prefix.
    pub fn with_prefix(&self, prefix: impl Into<String>) -> Self {
        Self { prefix: prefix.into(), ..self.clone() }
    }

    /// How long a single request may take (default 10 s); a blocking `get` is bounded by its
    /// own timeout instead.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The server's version (`GET /version`): a cheap check that etcd answers.
    pub fn version(&self) -> Result<String, KvError> {
        let deadline = self.request_deadline();
        let body = self.request("GET", "/version", "", deadline)?;
        let json = Json::parse_all(&body)?;
        json.get("etcdserver")
            .and_then(Json::as_str)
            .map(str::to_string)
            .ok_or_else(|| KvError::internal(format!("unexpected /version answer: {}", String::from_utf8_lossy(&body))))
    }

    /// Every key under the prefix (without the prefix) and its value, sorted by key.
    pub fn entries(&self) -> Result<Vec<(String, Vec<u8>)>, KvError> {
        self.list("")
    }

    /// Every key that starts with prefix + `start` (returned without the store's prefix) and its
    /// value, sorted by key.
    pub fn list(&self, start: &str) -> Result<Vec<(String, Vec<u8>)>, KvError> {
        let from = format!("{}{start}", self.prefix);
        let body = format!(
            r#"{{"key":"{}","range_end":"{}"}}"#,
            base64_encode(from.as_bytes()),
            base64_encode(&prefix_end(from.as_bytes()))
        );
        let (_, kvs) = self.range(&body)?;
        kvs.into_iter()
            .map(|(k, v)| {
                let key =
                    String::from_utf8(k).map_err(|_| KvError::internal("etcd returned a key that is not UTF-8"))?;
                Ok((key.strip_prefix(&self.prefix).unwrap_or(&key).to_string(), v))
            })
            .collect()
    }

    /// Deletes every key under the prefix (the job's clean-up). Returns how many were deleted.
    pub fn delete_all(&self) -> Result<u64, KvError> {
        let body = format!(
            r#"{{"key":"{}","range_end":"{}"}}"#,
            base64_encode(self.prefix.as_bytes()),
            base64_encode(&prefix_end(self.prefix.as_bytes()))
        );
        let deadline = self.request_deadline();
        let answer = Json::parse_all(&self.request("POST", "/v3/kv/deleterange", &body, deadline)?)?;
        Ok(answer.get("deleted").and_then(Json::as_u64).unwrap_or(0))
    }

    /// The deadline of one request from now. A request timeout too long for `Instant` (up to
    /// `Duration::MAX`, "no limit") is capped at about 30 years instead of panicking.
    fn request_deadline(&self) -> Instant {
        let now = Instant::now();
        now.checked_add(self.request_timeout).or_else(|| now.checked_add(Duration::from_secs(1 << 30))).unwrap_or(now)
    }

    fn full_key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// A range request; returns the store's revision and the keys and values found.
    #[allow(clippy::type_complexity)]
    fn range(&self, body: &str) -> Result<(u64, Vec<(Vec<u8>, Vec<u8>)>), KvError> {
        let deadline = self.request_deadline();
        let answer = Json::parse_all(&self.request("POST", "/v3/kv/range", body, deadline)?)?;
        let revision = answer.get("header").and_then(|h| h.get("revision")).and_then(Json::as_u64).unwrap_or(0);
        let mut kvs = Vec::new();
        if let Some(Json::Arr(items)) = answer.get("kvs") {
            for kv in items {
                kvs.push(decode_kv(kv)?);
            }
        }
        Ok((revision, kvs))
    }

    fn connect(&self, deadline: Instant) -> Result<TcpStream, KvError> {
        let mut last = None;
        for addr in &self.addrs {
            let left = left_until(deadline).ok_or_else(|| self.deadline("connecting"))?;
            match TcpStream::connect_timeout(addr, left.min(Duration::from_secs(5))) {
                Ok(stream) => {
                    let _ = stream.set_nodelay(true);
                    return Ok(stream);
                }
                Err(e) => last = Some(e),
            }
        }
        let e = last.map_or_else(|| "no address".to_string(), |e| e.to_string());
        Err(KvError::unavailable(format!("cannot connect to etcd at {}: {e}", self.host)))
    }

    fn deadline(&self, what: &str) -> KvError {
        KvError::new(ErrorCode::DeadlineExceeded, format!("etcd at {}: timed out {what}", self.host))
    }

    fn io_error(&self, e: io::Error, what: &str) -> KvError {
        if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) {
            self.deadline(what)
        } else {
            KvError::unavailable(format!("etcd at {}: {what}: {e}", self.host))
        }
    }

    fn send(&self, method: &str, path: &str, body: &str, deadline: Instant) -> Result<HttpReader, KvError> {
        let mut stream = self.connect(deadline)?;
        let left = left_until(deadline).ok_or_else(|| self.deadline("sending"))?;
        stream.set_write_timeout(Some(left.min(self.request_timeout))).map_err(|e| self.io_error(e, "configuring"))?;
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            self.host,
            body.len()
        );
        stream.write_all(request.as_bytes()).map_err(|e| self.io_error(e, "sending a request"))?;
        let mut reader =
            HttpReader { stream, raw: Vec::new(), body: Vec::new(), chunked: false, remaining: None, eof: false };
        reader.read_head(self, deadline)?;
        Ok(reader)
    }

    /// One request with a JSON answer, read whole.
    fn request(&self, method: &str, path: &str, body: &str, deadline: Instant) -> Result<Vec<u8>, KvError> {
        let mut reader = self.send(method, path, body, deadline)?;
        while !reader.eof {
            reader.fill(self, Some(deadline))?;
        }
        Ok(reader.body)
    }

    /// Waits on a watch of `key` from `revision` until a put arrives or `deadline` passes.
    fn watch(
        &self,
        key: &str,
        revision: u64,
        deadline: Option<Instant>,
        timeout: Duration,
    ) -> Result<Vec<u8>, KvError> {
        let body = format!(
            r#"{{"create_request":{{"key":"{}","start_revision":"{revision}"}}}}"#,
            base64_encode(self.full_key(key).as_bytes())
        );
        let connect_deadline = deadline.unwrap_or_else(|| self.request_deadline());
        let mut reader = self.send("POST", "/v3/watch", &body, connect_deadline)?;
        let mut consumed = 0;
        loop {
            // Every complete JSON message in what has arrived so far.
            loop {
                let text = &reader.body[consumed..];
                let start = text.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(text.len());
                if start == text.len() {
                    break;
                }
                let mut parser = Parser { s: &text[start..], i: 0 };
                match parser.value() {
                    Ok(message) => {
                        consumed += start + parser.i;
                        if let Some(value) = self.watch_message(&message, key)? {
                            return Ok(value);
                        }
                    }
                    Err(ParseError::Incomplete) => break,
                    Err(ParseError::Invalid(m)) => {
                        return Err(KvError::internal(format!("etcd watch: unreadable message ({m})")))
                    }
                }
            }
            if reader.eof {
                return Err(KvError::unavailable(format!(
                    "etcd at {} closed the watch on {key:?} before the key was put",
                    self.host
                )));
            }
            match reader.fill(self, deadline) {
                Ok(()) => {}
                Err(e) if e.code() == ErrorCode::DeadlineExceeded => {
                    return Err(KvError::deadline_exceeded(key, timeout))
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The value of the first put event in a watch message, if any.
    fn watch_message(&self, message: &Json, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        if let Some(error) = message.get("error") {
            return Err(gateway_error(error, "watch"));
        }
        let Some(result) = message.get("result") else { return Ok(None) };
        if result.get("canceled").and_then(Json::as_bool) == Some(true) {
            let reason = result.get("cancel_reason").and_then(Json::as_str).unwrap_or("no reason given");
            return Err(KvError::unavailable(format!("etcd canceled the watch on {key:?}: {reason}")));
        }
        if let Some(Json::Arr(events)) = result.get("events") {
            for event in events {
                // PUT is the default (omitted) type; skip DELETE.
                if event.get("type").and_then(Json::as_str).is_some_and(|t| t != "PUT") {
                    continue;
                }
                if let Some(kv) = event.get("kv") {
                    return Ok(Some(decode_kv(kv)?.1));
                }
            }
        }
        Ok(None)
    }
}

impl KeyValueStore for EtcdStore {
    fn get(&self, key: &str, timeout: Duration) -> Result<Vec<u8>, KvError> {
        let deadline = Instant::now().checked_add(timeout);
        let body = format!(r#"{{"key":"{}"}}"#, base64_encode(self.full_key(key).as_bytes()));
        let (revision, mut kvs) = self.range(&body)?;
        if let Some((_, value)) = kvs.pop() {
            return Ok(value);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(KvError::deadline_exceeded(key, timeout));
        }
        self.watch(key, revision + 1, deadline, timeout)
    }

    fn try_get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        let body = format!(r#"{{"key":"{}"}}"#, base64_encode(self.full_key(key).as_bytes()));
        Ok(self.range(&body)?.1.pop().map(|(_, v)| v))
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        let body = format!(
            r#"{{"key":"{}","value":"{}"}}"#,
            base64_encode(self.full_key(key).as_bytes()),
            base64_encode(value)
        );
        let deadline = self.request_deadline();
        Json::parse_all(&self.request("POST", "/v3/kv/put", &body, deadline)?)?;
        Ok(())
    }
}

fn left_until(deadline: Instant) -> Option<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    (!left.is_zero()).then_some(left)
}

/// The smallest key greater than every key that starts with `prefix` (etcd's range_end).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0] // every key
}

fn decode_kv(kv: &Json) -> Result<(Vec<u8>, Vec<u8>), KvError> {
    let field = |name: &str| -> Result<Vec<u8>, KvError> {
        match kv.get(name).and_then(Json::as_str) {
            // proto3 JSON leaves out empty fields: an empty value.
            None => Ok(Vec::new()),
            Some(s) => base64_decode(s).ok_or_else(|| KvError::internal(format!("etcd returned bad base64 in {name}"))),
        }
    };
    Ok((field("key")?, field("value")?))
}

fn gateway_error(error: &Json, what: &str) -> KvError {
    let message = error
        .get("message")
        .and_then(Json::as_str)
        .or_else(|| error.as_str())
        .or_else(|| error.get("error").and_then(Json::as_str))
        .unwrap_or("unknown error");
    let code = error.get("code").and_then(Json::as_u64).and_then(grpc_code).unwrap_or(ErrorCode::Unavailable);
    KvError::new(code, format!("etcd {what}: {message}"))
}

/// The [`ErrorCode`] of a gRPC status code (PJRT's codes are gRPC's); `None` for OK and codes
/// outside 1..=16.
fn grpc_code(code: u64) -> Option<ErrorCode> {
    Some(match code {
        1 => ErrorCode::Cancelled,
        2 => ErrorCode::Unknown,
        3 => ErrorCode::InvalidArgument,
        4 => ErrorCode::DeadlineExceeded,
        5 => ErrorCode::NotFound,
        6 => ErrorCode::AlreadyExists,
        7 => ErrorCode::PermissionDenied,
        8 => ErrorCode::ResourceExhausted,
        9 => ErrorCode::FailedPrecondition,
        10 => ErrorCode::Aborted,
        11 => ErrorCode::OutOfRange,
        12 => ErrorCode::Unimplemented,
        13 => ErrorCode::Internal,
        14 => ErrorCode::Unavailable,
        15 => ErrorCode::DataLoss,
        16 => ErrorCode::Unauthenticated,
        _ => return None,
    })
}

// ---- HTTP/1.1 responses: head, then a body with Content-Length, chunked, or up to EOF ----

struct HttpReader {
    stream: TcpStream,
    /// Bytes read but not yet decoded.
    raw: Vec<u8>,
    /// Decoded body so far.
    body: Vec<u8>,
    chunked: bool,
    /// Bytes of the body (or current chunk) still to come, where known.
    remaining: Option<usize>,
    eof: bool,
}

impl HttpReader {
    fn read_more(&mut self, store: &EtcdStore, deadline: Option<Instant>) -> Result<usize, KvError> {
        let timeout = match deadline {
            Some(d) => Some(left_until(d).ok_or_else(|| store.deadline("waiting for an answer"))?),
            None => None,
        };
        self.stream.set_read_timeout(timeout).map_err(|e| store.io_error(e, "configuring"))?;
        let mut buf = [0u8; 8192];
        let n = loop {
            match self.stream.read(&mut buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(store.io_error(e, "reading an answer")),
            }
        };
        self.raw.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn read_head(&mut self, store: &EtcdStore, deadline: Instant) -> Result<(), KvError> {
        let end = loop {
            if let Some(p) = self.raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break p;
            }
            if self.raw.len() > 64 * 1024 {
                return Err(KvError::internal("etcd answered with an oversized HTTP head"));
            }
            if self.read_more(store, Some(deadline))? == 0 {
                return Err(KvError::unavailable(format!("etcd at {} closed the connection", store.host)));
            }
        };
        let head = String::from_utf8_lossy(&self.raw[..end]).to_string();
        self.raw.drain(..end + 4);
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or("");
        let status: u16 = status_line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        for line in lines {
            if let Some((name, value)) = line.split_once(':') {
                let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
                if name == "transfer-encoding" && value.to_ascii_lowercase().contains("chunked") {
                    self.chunked = true;
                } else if name == "content-length" {
                    self.remaining = value.parse().ok();
                }
            }
        }
        if self.chunked {
            self.remaining = None;
        }
        if status != 200 {
            // Read the (short) error body for its message.
            while !self.eof {
                if self.fill(store, Some(deadline)).is_err() {
                    break;
                }
            }
            let detail = match Json::parse_all(&self.body) {
                Ok(json) => return Err(gateway_error(&json, &format!("HTTP {status}"))),
                Err(_) => String::from_utf8_lossy(&self.body).to_string(),
            };
            return Err(KvError::unavailable(format!("etcd at {} answered {status_line}: {detail}", store.host)));
        }
        self.decode();
        Ok(())
    }

    /// Moves what can be decoded from `raw` into `body`.
    fn decode(&mut self) {
        if !self.chunked {
            let take = self.remaining.map_or(self.raw.len(), |r| r.min(self.raw.len()));
            self.body.extend(self.raw.drain(..take));
            if let Some(r) = self.remaining.as_mut() {
                *r -= take;
                if *r == 0 {
                    self.eof = true;
                }
            }
            return;
        }
        loop {
            match self.remaining {
                Some(0) => {
                    // The CRLF after a chunk's data.
                    if self.raw.len() < 2 {
                        return;
                    }
                    self.raw.drain(..2);
                    self.remaining = None;
                }
                Some(r) => {
                    if self.raw.is_empty() {
                        return;
                    }
                    let take = r.min(self.raw.len());
                    self.body.extend(self.raw.drain(..take));
                    self.remaining = Some(r - take);
                }
                None => {
                    let Some(p) = self.raw.windows(2).position(|w| w == b"\r\n") else { return };
                    let line = String::from_utf8_lossy(&self.raw[..p]).to_string();
                    self.raw.drain(..p + 2);
                    let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16).unwrap_or(0);
                    if size == 0 {
                        self.eof = true;
                        return;
                    }
                    self.remaining = Some(size);
                }
            }
        }
    }

    /// Reads once more from the connection and decodes it.
    fn fill(&mut self, store: &EtcdStore, deadline: Option<Instant>) -> Result<(), KvError> {
        if self.read_more(store, deadline)? == 0 {
            if !self.chunked && self.remaining.is_none() {
                self.eof = true;
                return Ok(());
            }
            return Err(KvError::unavailable(format!("etcd at {} closed the connection mid-answer", store.host)));
        }
        self.decode();
        Ok(())
    }
}

// ---- base64 (standard alphabet, padded) ----

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard (or URL-safe) base64, padded or not; `None` on anything else.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = acc << 6 | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if bits >= 6 {
        return None; // a single leftover character cannot encode a byte
    }
    Some(out)
}

// ---- a minimal JSON reader (what the gateway answers with) ----

#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

#[derive(Debug)]
enum ParseError {
    Incomplete,
    Invalid(String),
}

impl Json {
    fn parse_all(bytes: &[u8]) -> Result<Json, KvError> {
        let mut p = Parser { s: bytes, i: 0 };
        let fail = |e: ParseError| {
            KvError::internal(format!("etcd answered with unreadable JSON ({e:?}): {}", String::from_utf8_lossy(bytes)))
        };
        let v = p.value().map_err(fail)?;
        p.ws();
        if p.i != bytes.len() {
            return Err(fail(ParseError::Invalid("trailing data".into())));
        }
        Ok(v)
    }

    fn get(&self, name: &str) -> Option<&Json> {
        match self {
            Json::Obj(fields) => fields.iter().find(|(k, _)| k == name).map(|(_, v)| v),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    fn as_bool(&self) -> Option<bool> {
        match self {
            Json::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// A number, or a string holding one (proto3 JSON writes int64 as strings).
    fn as_u64(&self) -> Option<u64> {
        match self {
            Json::Num(s) | Json::Str(s) => s.parse().ok(),
            _ => None,
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&self) -> Result<u8, ParseError> {
        self.s.get(self.i).copied().ok_or(ParseError::Incomplete)
    }

    fn expect(&mut self, word: &[u8]) -> Result<(), ParseError> {
        for &c in word {
            if self.peek()? != c {
                return Err(ParseError::Invalid(format!("unexpected byte at {}", self.i)));
            }
            self.i += 1;
        }
        Ok(())
    }

    /// Reads the comma-separated items of an object or array, from its opening byte through
    /// `close`, with `item` reading each one.
    fn items(
        &mut self,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Result<(), ParseError>,
    ) -> Result<(), ParseError> {
        self.i += 1; // the opening `{` or `[`
        self.ws();
        if self.peek()? == close {
            self.i += 1;
            return Ok(());
        }
        loop {
            item(self)?;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                c if c == close => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(ParseError::Invalid(format!("expected , or {} at {}", close as char, self.i))),
            }
        }
    }

    fn value(&mut self) -> Result<Json, ParseError> {
        self.ws();
        match self.peek()? {
            b'{' => {
                let mut fields = Vec::new();
                self.items(b'}', |p| {
                    p.ws();
                    let key = p.string()?;
                    p.ws();
                    p.expect(b":")?;
                    fields.push((key, p.value()?));
                    Ok(())
                })?;
                Ok(Json::Obj(fields))
            }
            b'[' => {
                let mut items = Vec::new();
                self.items(b']', |p| {
                    items.push(p.value()?);
                    Ok(())
                })?;
                Ok(Json::Arr(items))
            }
            b'"' => Ok(Json::Str(self.string()?)),
            b't' => self.expect(b"true").map(|_| Json::Bool(true)),
            b'f' => self.expect(b"false").map(|_| Json::Bool(false)),
            b'n' => self.expect(b"null").map(|_| Json::Null),
            b'-' | b'0'..=b'9' => {
                let start = self.i;
                while self.i < self.s.len() && matches!(self.s[self.i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    self.i += 1;
                }
                if self.i == self.s.len() {
                    return Err(ParseError::Incomplete); // a number may go on
                }
                Ok(Json::Num(String::from_utf8_lossy(&self.s[start..self.i]).to_string()))
            }
            c => Err(ParseError::Invalid(format!("unexpected {:?} at {}", c as char, self.i))),
        }
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let end = self.i + 4;
        if end > self.s.len() {
            return Err(ParseError::Incomplete);
        }
        let text = std::str::from_utf8(&self.s[self.i..end]).map_err(|_| ParseError::Invalid("bad \\u".into()))?;
        self.i = end;
        u32::from_str_radix(text, 16).map_err(|_| ParseError::Invalid("bad \\u".into()))
    }

    fn string(&mut self) -> Result<String, ParseError> {
        self.expect(b"\"")?;
        let mut out = Vec::new();
        loop {
            let c = self.peek()?;
            self.i += 1;
            match c {
                b'"' => return String::from_utf8(out).map_err(|_| ParseError::Invalid("string not UTF-8".into())),
                b'\\' => {
                    let e = self.peek()?;
                    self.i += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let mut code = self.hex4()?;
                            if (0xd800..0xdc00).contains(&code) && self.s.get(self.i) == Some(&b'\\') {
                                self.i += 2;
                                let low = self.hex4()?;
                                code = 0x10000 + ((code - 0xd800) << 10) + (low.wrapping_sub(0xdc00) & 0x3ff);
                            }
                            char::from_u32(code).unwrap_or('\u{fffd}')
                        }
                        _ => return Err(ParseError::Invalid("bad escape".into())),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                c => out.push(c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for (plain, encoded) in
            [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE=")]
        {
            assert_eq!(base64_encode(plain.as_bytes()), encoded);
            assert_eq!(base64_decode(encoded).unwrap(), plain.as_bytes());
        }
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(base64_decode(&base64_encode(&all)).unwrap(), all);
        assert!(base64_decode("a").is_none());
        assert!(base64_decode("a*b=").is_none());
    }

    #[test]
    fn json_reader() {
        let j = Json::parse_all(br#"{"header":{"revision":"42"},"kvs":[{"key":"Zm9v","value":"YmFy"}],"count":"1","more":false,"x":[1.5e3,null,true,"\u00e9\n"]}"#).unwrap();
        assert_eq!(j.get("header").unwrap().get("revision").unwrap().as_u64(), Some(42));
        let Some(Json::Arr(kvs)) = j.get("kvs") else { panic!() };
        assert_eq!(decode_kv(&kvs[0]).unwrap(), (b"foo".to_vec(), b"bar".to_vec()));
        assert_eq!(j.get("more").unwrap().as_bool(), Some(false));
        let Some(Json::Arr(x)) = j.get("x") else { panic!() };
        assert_eq!(x[3].as_str(), Some("é\n"));
        let mut p = Parser { s: br#"{"result":{"#, i: 0 };
        assert!(matches!(p.value(), Err(ParseError::Incomplete)));
        assert!(Json::parse_all(b"{} x").is_err());
        let Json::Obj(empty) = Json::parse_all(b" { } ").unwrap() else { panic!() };
        assert!(empty.is_empty());
        let Json::Arr(nested) = Json::parse_all(b"[ [ ] , {\"a\" : [1]} ]").unwrap() else { panic!() };
        assert_eq!(nested.len(), 2);
        for bad in [&b"[1 2]"[..], b"[1,]", b"{\"a\":1 \"b\":2}", b"{\"a\" 1}", b"{1:2}"] {
            assert!(matches!(Parser { s: bad, i: 0 }.value(), Err(ParseError::Invalid(_))), "{bad:?}");
        }
    }

    #[test]
    fn gateway_errors_keep_the_grpc_code() {
        for c in 1..=16 {
            assert_eq!(grpc_code(c).unwrap().to_raw().0 as u64, c);
        }
        assert_eq!(grpc_code(0), None);
        assert_eq!(grpc_code(17), None);
        let error = |json: &str| gateway_error(&Json::parse_all(json.as_bytes()).unwrap(), "put");
        let e = error(r#"{"code":5,"message":"no such key"}"#);
        assert_eq!((e.code(), e.message()), (ErrorCode::NotFound, "etcd put: no such key"));
        assert_eq!(error(r#"{"code":"3","error":"bad"}"#).code(), ErrorCode::InvalidArgument);
        assert_eq!(error(r#"{"code":0}"#).code(), ErrorCode::Unavailable);
        assert_eq!(error(r#"{"code":99}"#).code(), ErrorCode::Unavailable);
        assert_eq!(error(r#""text""#).message(), "etcd put: text");
    }

    #[test]
    fn chunked_bodies_decode_in_pieces() {
        let (a, _b) = (std::net::TcpListener::bind("127.0.0.1:0").unwrap(), ());
        let stream = TcpStream::connect(a.local_addr().unwrap()).unwrap();
        let mut r =
            HttpReader { stream, raw: Vec::new(), body: Vec::new(), chunked: true, remaining: None, eof: false };
        for piece in [&b"5\r\nhel"[..], b"lo\r", b"\n3;x=y\r\n wo\r\n", b"0\r\n\r\n"] {
            r.raw.extend_from_slice(piece);
            r.decode();
        }
        assert_eq!(r.body, b"hello wo");
        assert!(r.eof);
    }

    #[test]
    fn endpoints_and_unreachable_servers() {
        assert!(EtcdStore::new("https://127.0.0.1:2379", "").is_err());
        assert!(EtcdStore::new("http://127.0.0.1:2379/v3", "").is_err());
        assert_eq!(prefix_end(b"job/"), b"job0");
        assert_eq!(prefix_end(b"a\xff"), b"b");
        // A port nobody listens on: UNAVAILABLE, not a panic or a hang.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let store = EtcdStore::new(&format!("http://127.0.0.1:{port}"), "job/").unwrap();
        assert_eq!(store.put("k", b"v").unwrap_err().code(), ErrorCode::Unavailable);
        assert_eq!(store.get("k", Duration::from_millis(100)).unwrap_err().code(), ErrorCode::Unavailable);
        assert_eq!(store.try_get("k").unwrap_err().code(), ErrorCode::Unavailable);
        // A server that accepts and never answers: DEADLINE_EXCEEDED within the request timeout.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let store = EtcdStore::new(&silent.local_addr().unwrap().to_string(), "")
            .unwrap()
            .request_timeout(Duration::from_millis(200));
        let started = Instant::now();
        assert_eq!(store.try_get("k").unwrap_err().code(), ErrorCode::DeadlineExceeded);
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
