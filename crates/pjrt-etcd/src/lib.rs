//! # pjrt-etcd
//!
//! A [`KeyValueStore`] on [etcd](https://etcd.io) for [`pjrt_client`]: the store that the
//! processes of a multi-process (or multi-host) client share. Hand an [`EtcdStore`] to
//! [`ClientBuilder::kv_store`](pjrt_client::ClientBuilder::kv_store).
//!
//! [`EtcdStore`] talks to etcd's v3 JSON gateway (`POST /v3/kv/put`, `/v3/kv/range`,
//! `/v3/watch`, ...) through [`ureq`] with rustls, and takes what an etcd operator configures:
//!
//! - **TLS**: `https://` endpoints, checked against a CA bundle (and the member's name), with an
//!   optional client certificate for mutual TLS ([`TlsConfig`]). Plain `http://` is refused
//!   unless asked for with [`EtcdStoreBuilder::allow_plain_http`].
//! - **Authentication**: an etcd user and password ([`EtcdStoreBuilder::credentials`]) turned
//!   into a token, renewed when etcd says it expired. A key outside what the user's roles grant is
//!   refused with `PERMISSION_DENIED`; a wrong password is `UNAUTHENTICATED`.
//! - **Leases**: every key this store puts is attached to a lease of this process
//!   ([`EtcdStoreBuilder::lease_ttl`], 60 s by default) that a thread keeps alive while the store
//!   lives. When the process dies (even by SIGKILL), its keys expire after the TTL;
//!   [`EtcdStore::revoke_lease`] deletes them at once.
//! - **Clusters**: several endpoints; a request that finds a member down (or without a leader)
//!   goes to the next one until the request timeout, and a blocked `get` resumes its watch on
//!   another member from the last revision it saw, so no put is missed across a reconnect.
//! - Every key lives under a per-job **prefix**, so jobs sharing one etcd never see each other's
//!   keys (and a role may be limited to that prefix).
//!
//! [`KeyValueStore::get`] reads the key once and, if it is absent, **waits on a watch** that
//! starts at the revision after that read until the key is put or the timeout passes (no
//! polling). Errors are [`KvError`]s with gRPC codes, never panics: no member answering is
//! `UNAVAILABLE`, a timeout `DEADLINE_EXCEEDED`.
//!
//! ```no_run
//! use std::time::Duration;
//! use pjrt_client::{Client, KeyValueStore, Plugin};
//! use pjrt_etcd::{EtcdStore, TlsConfig};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Every process of the job: the same endpoints, the same job prefix.
//! let (process_id, process_count) = (0, 2);
//! let store = EtcdStore::builder()
//!     .endpoints(["https://10.0.0.1:2379", "https://10.0.0.2:2379", "https://10.0.0.3:2379"])
//!     .tls(TlsConfig::from_pem_files("ca.pem", Some(("client.pem", "client-key.pem")))?)
//!     .credentials("job-42", std::fs::read_to_string("/run/secrets/etcd-password")?.trim())
//!     .prefix("jobs/job-42/")
//!     .lease_ttl(Duration::from_secs(30))
//!     .connect()?;
//! let plugin = Plugin::load(pjrt_plugins::resolve(None)?.load_path())?;
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
//! // The keys expire with the lease when the processes end (or at once: store.revoke_lease()).
//! # Ok(()) }
//! ```
//!
//! Tests: the unit tests need no server; `tests/etcd.rs` starts its own etcd members (TLS, auth,
//! a 3-member cluster) and multi-process jobs on the CPU plugin.

#![deny(missing_docs)]

mod connection;
mod tls;

use std::fmt;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use pjrt_client::{ErrorCode, KeyValueStore, KvError};
use serde_json::{json, Value};

use connection::{Connection, Credentials, WatchOutcome};
pub use tls::TlsConfig;

/// How long one request (other than a blocking `get`'s watch) may take, all retries included.
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long keys outlive a process that stopped renewing its lease.
const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(60);

/// Builds an [`EtcdStore`]: endpoints, TLS, credentials, prefix, lease. See the
/// [crate documentation](crate) for a full example.
///
/// ```
/// use std::time::Duration;
/// use pjrt_client::ErrorCode;
/// use pjrt_etcd::EtcdStore;
///
/// // Plain HTTP is refused unless asked for.
/// let refused = EtcdStore::builder().endpoint("http://127.0.0.1:2379").connect().unwrap_err();
/// assert_eq!(refused.code(), ErrorCode::InvalidArgument);
/// assert!(refused.message().contains("allow_plain_http"), "{refused}");
/// // https needs the CA that signs the members' certificates.
/// let refused = EtcdStore::builder().endpoint("https://127.0.0.1:2379").connect().unwrap_err();
/// assert!(refused.message().contains("TlsConfig"), "{refused}");
/// // Without a lease and credentials, connecting does not talk to etcd yet.
/// let store = EtcdStore::builder()
///     .endpoints(["http://127.0.0.1:2379", "http://127.0.0.1:22379"])
///     .allow_plain_http()
///     .prefix("jobs/job-42/")
///     .without_lease()
///     .request_timeout(Duration::from_secs(5))
///     .connect()?;
/// assert_eq!(store.prefix(), "jobs/job-42/");
/// assert_eq!(store.with_prefix("jobs/job-43/").prefix(), "jobs/job-43/");
/// assert_eq!(store.lease_id(), None);
/// # Ok::<(), pjrt_client::KvError>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `connect`"]
pub struct EtcdStoreBuilder {
    endpoints: Vec<String>,
    prefix: String,
    tls: Option<TlsConfig>,
    credentials: Option<Credentials>,
    lease_ttl: Option<Duration>,
    request_timeout: Duration,
    allow_plain_http: bool,
}

impl EtcdStoreBuilder {
    /// Adds one member's client URL (`https://HOST:PORT`, or `http://HOST:PORT` with
    /// [`allow_plain_http`](Self::allow_plain_http)).
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoints.push(url.into());
        self
    }

    /// Adds several members' client URLs; requests go to the first that answers.
    pub fn endpoints<S: Into<String>>(mut self, urls: impl IntoIterator<Item = S>) -> Self {
        self.endpoints.extend(urls.into_iter().map(Into::into));
        self
    }

    /// The key prefix of the job (e.g. `jobs/<id>/`): every key is stored under it. Default: empty.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The CA bundle and optional client certificate for `https://` endpoints.
    pub fn tls(mut self, tls: TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// An etcd user and its password (for clusters with `etcdctl auth enable`). The password is
    /// kept in memory to renew the token; it never appears in `Debug` output or errors.
    pub fn credentials(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.credentials = Some(Credentials::new(user.into(), password.into()));
        self
    }

    /// How long this process's keys outlive it (default 60 s; etcd rounds up to its minimum, a
    /// few seconds). The lease is renewed every TTL/3 while the store lives.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = Some(ttl);
        self
    }

    /// Keys without a lease: they stay until deleted ([`EtcdStore::delete_all`]).
    pub fn without_lease(mut self) -> Self {
        self.lease_ttl = None;
        self
    }

    /// How long one request may take, retries on other members included (default 10 s); a
    /// blocking `get` is bounded by its own timeout instead.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Accepts `http://` endpoints: keys, values and passwords then travel in clear, so only for
    /// loopback or a network you trust.
    pub fn allow_plain_http(mut self) -> Self {
        self.allow_plain_http = true;
        self
    }

    /// Checks the settings, authenticates (when credentials are set) and grants the lease (when
    /// one is configured), starting the thread that keeps it alive.
    pub fn connect(self) -> Result<EtcdStore, KvError> {
        let connection = Arc::new(Connection::new(
            &self.endpoints,
            self.tls.as_ref(),
            self.credentials,
            self.request_timeout,
            self.allow_plain_http,
        )?);
        if connection.has_credentials() {
            connection.authenticate_now()?;
        }
        let lease = match self.lease_ttl {
            Some(ttl) => Some(Lease::grant(connection.clone(), ttl)?),
            None => None,
        };
        Ok(EtcdStore { shared: Arc::new(Shared { connection, lease }), prefix: self.prefix })
    }
}

/// A key-value store on an etcd cluster, under a key prefix. Cheap to clone (clones share the
/// connection and the lease); usable from many threads at once. Build one with
/// [`EtcdStore::builder`].
#[derive(Clone)]
pub struct EtcdStore {
    shared: Arc<Shared>,
    prefix: String,
}

impl fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdStore")
            .field("connection", &self.shared.connection)
            .field("prefix", &self.prefix)
            .field("lease", &self.shared.lease.as_ref().map(|l| (l.id, l.ttl)))
            .finish()
    }
}

struct Shared {
    connection: Arc<Connection>,
    lease: Option<Lease>,
}

impl EtcdStore {
    /// A builder: at least one endpoint, then [`EtcdStoreBuilder::connect`].
    pub fn builder() -> EtcdStoreBuilder {
        EtcdStoreBuilder {
            endpoints: Vec::new(),
            prefix: String::new(),
            tls: None,
            credentials: None,
            lease_ttl: Some(DEFAULT_LEASE_TTL),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            allow_plain_http: false,
        }
    }

    /// The same cluster, connection and lease with another key prefix.
    pub fn with_prefix(&self, prefix: impl Into<String>) -> Self {
        Self { shared: self.shared.clone(), prefix: prefix.into() }
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The id of this store's lease (`None` without one).
    pub fn lease_id(&self) -> Option<i64> {
        self.shared.lease.as_ref().map(|l| l.id)
    }

    /// The version of the first member that answers (`GET /version`): a cheap check that the
    /// cluster is reachable (and, with TLS, that the certificates fit).
    pub fn version(&self) -> Result<String, KvError> {
        let answer = self.shared.connection.get_json("/version")?;
        answer
            .get("etcdserver")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| KvError::internal(format!("etcd's /version answer has no etcdserver field: {answer}")))
    }

    /// Every key under the prefix (without the prefix) and its value, sorted by key.
    pub fn entries(&self) -> Result<Vec<(String, Vec<u8>)>, KvError> {
        self.list("")
    }

    /// Every key that starts with prefix + `start` (returned without the store's prefix) and its
    /// value, sorted by key.
    pub fn list(&self, start: &str) -> Result<Vec<(String, Vec<u8>)>, KvError> {
        let from = format!("{}{start}", self.prefix);
        let body = json!({"key": b64(from.as_bytes()), "range_end": b64(&prefix_end(from.as_bytes()))});
        let (_, kvs) = self.range(&body, &from)?;
        kvs.into_iter()
            .map(|(k, v)| {
                let key =
                    String::from_utf8(k).map_err(|_| KvError::internal("etcd returned a key that is not UTF-8"))?;
                let Some(short) = key.strip_prefix(&self.prefix) else {
                    return Err(KvError::internal(format!("etcd returned {key:?}, outside the range asked for")));
                };
                Ok((short.to_string(), v))
            })
            .collect()
    }

    /// Deletes every key under the prefix (the job's clean-up). Returns how many were deleted.
    pub fn delete_all(&self) -> Result<u64, KvError> {
        let body = json!({"key": b64(self.prefix.as_bytes()), "range_end": b64(&prefix_end(self.prefix.as_bytes()))});
        let answer = self.shared.connection.call("/v3/kv/deleterange", &body, &self.prefix)?;
        Ok(answer.get("deleted").and_then(as_u64).unwrap_or(0))
    }

    /// Revokes this store's lease now: every key it put (through any clone) is deleted at once,
    /// and later puts fail. Without it the keys expire one TTL after the last clone is dropped
    /// (so that slower processes of the job can still read them).
    pub fn revoke_lease(&self) -> Result<(), KvError> {
        let Some(lease) = &self.shared.lease else { return Ok(()) };
        lease.stop();
        self.shared.connection.call("/v3/lease/revoke", &json!({"ID": lease.id.to_string()}), "")?;
        Ok(())
    }

    fn full_key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// A range request; returns the store's revision and the keys and values found.
    #[allow(clippy::type_complexity)]
    fn range(&self, body: &Value, what: &str) -> Result<(u64, Vec<(Vec<u8>, Vec<u8>)>), KvError> {
        let answer = self.shared.connection.call("/v3/kv/range", body, what)?;
        let revision = answer.pointer("/header/revision").and_then(as_u64).unwrap_or(0);
        let mut kvs = Vec::new();
        if let Some(items) = answer.get("kvs") {
            let items = items.as_array().ok_or_else(|| KvError::internal("etcd's range answer: kvs is not a list"))?;
            for kv in items {
                kvs.push(decode_kv(kv)?);
            }
        }
        Ok((revision, kvs))
    }
}

impl KeyValueStore for EtcdStore {
    fn get(&self, key: &str, timeout: Duration) -> Result<Vec<u8>, KvError> {
        let deadline = Instant::now().checked_add(timeout);
        let full = self.full_key(key);
        let (revision, mut kvs) = self.range(&json!({"key": b64(full.as_bytes())}), &full)?;
        if let Some((_, value)) = kvs.pop() {
            return Ok(value);
        }
        let mut start = revision + 1;
        loop {
            match self.shared.connection.watch(&full, start, deadline)? {
                WatchOutcome::Put(value) => return Ok(value),
                WatchOutcome::TimedOut => return Err(KvError::deadline_exceeded(key, timeout)),
                WatchOutcome::Compacted => {
                    // The revisions we wanted are gone: read again, then watch from there.
                    let (revision, mut kvs) = self.range(&json!({"key": b64(full.as_bytes())}), &full)?;
                    if let Some((_, value)) = kvs.pop() {
                        return Ok(value);
                    }
                    start = revision + 1;
                }
            }
        }
    }

    fn try_get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        let full = self.full_key(key);
        Ok(self.range(&json!({"key": b64(full.as_bytes())}), &full)?.1.pop().map(|(_, v)| v))
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        let full = self.full_key(key);
        let mut body = json!({"key": b64(full.as_bytes()), "value": b64(value)});
        if let Some(lease) = &self.shared.lease {
            body["lease"] = json!(lease.id.to_string());
        }
        self.shared.connection.call("/v3/kv/put", &body, &full).map_err(|e| match &self.shared.lease {
            Some(lease) if e.message().contains("requested lease not found") => KvError::new(
                ErrorCode::FailedPrecondition,
                format!(
                    "etcd put of {full:?}: the lease of this process ({}, TTL {:?}) has expired or was revoked, and \
                     the keys it held are gone (etcd unreachable for longer than the TTL?): restart the job, or \
                     raise the lease TTL",
                    lease.id, lease.ttl
                ),
            ),
            _ => e,
        })?;
        Ok(())
    }
}

// ---- the lease and its keep-alive thread ----

struct Lease {
    id: i64,
    ttl: Duration,
    /// Dropping the sender wakes and ends the keep-alive thread.
    stop: Mutex<Option<mpsc::Sender<()>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Lease {
    fn grant(connection: Arc<Connection>, ttl: Duration) -> Result<Self, KvError> {
        let seconds = ttl.as_secs().max(1);
        let answer = connection.call("/v3/lease/grant", &json!({"TTL": seconds.to_string()}), "")?;
        let id = answer
            .get("ID")
            .and_then(as_i64)
            .filter(|id| *id != 0)
            .ok_or_else(|| KvError::internal(format!("etcd's lease grant answer has no lease ID: {answer}")))?;
        let granted = answer.get("TTL").and_then(as_u64).filter(|t| *t > 0).unwrap_or(seconds);
        let ttl = Duration::from_secs(granted);
        let (stop, stopped) = mpsc::channel::<()>();
        let every = (ttl / 3).max(Duration::from_millis(500));
        let thread = std::thread::Builder::new()
            .name(format!("etcd-lease-{id:x}"))
            .spawn(move || {
                // Renew until the store is dropped; a failed renewal is retried at the next
                // tick (the next members are tried within the request timeout). A lease that is
                // gone stays gone: the next put says so (FAILED_PRECONDITION).
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                    if let Ok(0) = connection.keep_alive(id) {
                        break;
                    }
                }
            })
            .map_err(|e| KvError::internal(format!("cannot start the lease keep-alive thread: {e}")))?;
        Ok(Self { id, ttl, stop: Mutex::new(Some(stop)), thread: Mutex::new(Some(thread)) })
    }

    fn stop(&self) {
        drop(self.stop.lock().unwrap_or_else(|p| p.into_inner()).take());
        if let Some(thread) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.stop();
    }
}

// ---- JSON helpers ----

fn b64(bytes: &[u8]) -> String {
    BASE64.encode(bytes)
}

/// A number, or a string holding one (proto3 JSON writes 64-bit integers as strings).
fn as_u64(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}

fn as_i64(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| v.as_str().and_then(|s| s.parse().ok()))
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

fn decode_kv(kv: &Value) -> Result<(Vec<u8>, Vec<u8>), KvError> {
    let field = |name: &str| -> Result<Vec<u8>, KvError> {
        match kv.get(name) {
            // proto3 JSON leaves out empty fields: an empty value.
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::String(s)) => {
                BASE64.decode(s).map_err(|_| KvError::internal(format!("etcd returned bad base64 in {name}")))
            }
            Some(other) => Err(KvError::internal(format!("etcd returned a {name} that is not a string: {other}"))),
        }
    };
    Ok((field("key")?, field("value")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(prefix_end(b"job/"), b"job0");
        assert_eq!(prefix_end(b"a\xff"), b"b");
        assert_eq!(prefix_end(b""), b"\0");
        assert_eq!(as_u64(&json!("42")), Some(42));
        assert_eq!(as_u64(&json!(42)), Some(42));
        assert_eq!(as_i64(&json!("-7")), Some(-7));
        assert_eq!(as_u64(&json!("x")), None);
        let kv = json!({"key": b64(b"foo"), "value": b64(b"bar")});
        assert_eq!(decode_kv(&kv).unwrap(), (b"foo".to_vec(), b"bar".to_vec()));
        assert_eq!(decode_kv(&json!({"key": b64(b"k")})).unwrap().1, b"");
        assert!(decode_kv(&json!({"key": "*not base64*"})).is_err());
        assert!(decode_kv(&json!({"key": 3})).is_err());
    }

    #[test]
    fn endpoints_are_checked() {
        let connect = |urls: &[&str], plain: bool| {
            let mut b = EtcdStore::builder().endpoints(urls.iter().copied()).without_lease();
            if plain {
                b = b.allow_plain_http();
            }
            b.connect().map(|_| ()).map_err(|e| (e.code(), e.message().to_string()))
        };
        assert!(connect(&[], true).unwrap_err().1.contains("no etcd endpoint"));
        assert!(connect(&["http://127.0.0.1:2379"], false).unwrap_err().1.contains("allow_plain_http"));
        assert!(connect(&["127.0.0.1:2379"], true).unwrap_err().1.contains("https://HOST:PORT"));
        assert!(connect(&["http://127.0.0.1:2379/v3"], true).is_err());
        assert!(connect(&["ftp://127.0.0.1:2379"], true).is_err());
        assert!(connect(&["http://127.0.0.1:2379", "http://127.0.0.1:2380/"], true).is_ok());
        // Debug never shows a password.
        let b = EtcdStore::builder().credentials("alice", "s3cret-pw");
        assert!(!format!("{b:?}").contains("s3cret-pw"));
    }

    #[test]
    fn unreachable_and_silent_servers() {
        // A port nobody listens on: UNAVAILABLE within the request timeout, not a panic or a hang.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let store = EtcdStore::builder()
            .endpoint(format!("http://127.0.0.1:{port}"))
            .allow_plain_http()
            .without_lease()
            .prefix("job/")
            .request_timeout(Duration::from_millis(500))
            .connect()
            .unwrap();
        assert_eq!(store.put("k", b"v").unwrap_err().code(), ErrorCode::Unavailable);
        assert_eq!(store.get("k", Duration::from_millis(100)).unwrap_err().code(), ErrorCode::Unavailable);
        let err = store.try_get("k").unwrap_err();
        assert_eq!(err.code(), ErrorCode::Unavailable);
        assert!(err.message().contains(&port.to_string()), "{err}");
        // A server that accepts and never answers: DEADLINE_EXCEEDED within the request timeout.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let store = EtcdStore::builder()
            .endpoint(format!("http://{}", silent.local_addr().unwrap()))
            .allow_plain_http()
            .without_lease()
            .request_timeout(Duration::from_millis(300))
            .connect()
            .unwrap();
        let err = store.try_get("k").unwrap_err();
        assert_eq!(err.code(), ErrorCode::DeadlineExceeded, "{err}");
    }
}
