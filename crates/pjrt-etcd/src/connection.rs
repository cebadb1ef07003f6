//! Requests to the cluster: member fail-over, the auth token, error mapping, watches.

use std::fmt;
use std::io::{self, Read};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pjrt_client::{ErrorCode, KvError};
use serde_json::{json, Value};

use crate::{as_u64, b64, decode_kv, TlsConfig};

/// The largest answer we read (a range over a job's keys is far smaller).
const MAX_ANSWER: u64 = 256 << 20;
/// The pause between two rounds over all members while none answers (e.g. during an election).
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// An etcd user and password; the password never appears in `Debug` output.
#[derive(Clone)]
pub(crate) struct Credentials {
    user: String,
    password: String,
}

impl Credentials {
    pub(crate) fn new(user: String, password: String) -> Self {
        Self { user, password }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials").field("user", &self.user).field("password", &"<redacted>").finish()
    }
}

/// What a watch ended with.
pub(crate) enum WatchOutcome {
    Put(Vec<u8>),
    TimedOut,
    /// The start revision was compacted away: read the key again.
    Compacted,
}

/// Why one attempt on one member failed.
enum Attempt {
    /// Worth trying the next member: it is down, unreachable or has no leader.
    NextMember(String),
    /// The token expired or is unknown to this member: authenticate again, then retry.
    Reauthenticate,
    /// A final answer.
    Fail(KvError),
}

pub(crate) struct Connection {
    endpoints: Vec<String>,
    agent: ureq::Agent,
    credentials: Option<Credentials>,
    token: Mutex<Option<String>>,
    /// The member that answered last: requests start there.
    preferred: AtomicUsize,
    request_timeout: Duration,
    /// Where the CA came from, for "not signed by the CA in FILE".
    ca_source: Option<String>,
    has_client_certificate: bool,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("endpoints", &self.endpoints)
            .field("user", &self.credentials.as_ref().map(|c| &c.user))
            .field("ca", &self.ca_source)
            .field("client_certificate", &self.has_client_certificate)
            .field("request_timeout", &self.request_timeout)
            .finish_non_exhaustive()
    }
}

impl Connection {
    pub(crate) fn new(
        endpoints: &[String],
        tls: Option<&TlsConfig>,
        credentials: Option<Credentials>,
        request_timeout: Duration,
        allow_plain_http: bool,
    ) -> Result<Self, KvError> {
        if endpoints.is_empty() {
            return Err(KvError::invalid_argument(
                "no etcd endpoint given: add one with EtcdStoreBuilder::endpoint(\"https://HOST:PORT\")",
            ));
        }
        let mut checked = Vec::new();
        for url in endpoints {
            let url = url.trim().trim_end_matches('/');
            let (scheme, host) = url.split_once("://").ok_or_else(|| {
                KvError::invalid_argument(format!("etcd endpoint {url:?}: expected https://HOST:PORT"))
            })?;
            if host.is_empty() || host.contains(['/', '?', '#', '@']) || !host.contains(':') {
                return Err(KvError::invalid_argument(format!(
                    "etcd endpoint {url:?}: expected https://HOST:PORT (a member's client URL, no path)"
                )));
            }
            match scheme {
                "https" if tls.is_none() => {
                    return Err(KvError::invalid_argument(format!(
                        "etcd endpoint {url}: https needs the CA that signs the members' certificates: \
                         .tls(TlsConfig::from_pem_files(CA_FILE, ..))"
                    )))
                }
                "https" => {}
                "http" if !allow_plain_http => {
                    return Err(KvError::invalid_argument(format!(
                        "etcd endpoint {url}: plain http sends keys, values and passwords in clear; use https:// \
                         with a TlsConfig, or call allow_plain_http() for loopback or a trusted network"
                    )))
                }
                "http" => {}
                _ => {
                    return Err(KvError::invalid_argument(format!(
                        "etcd endpoint {url:?}: the scheme must be https:// (or http:// with allow_plain_http)"
                    )))
                }
            }
            checked.push(url.to_string());
        }
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            // Cluster traffic goes straight to the members, whatever HTTPS_PROXY says.
            .proxy(None)
            .timeout_connect(Some(request_timeout.min(Duration::from_secs(5))))
            .user_agent(format!("pjrt-etcd/{}", env!("CARGO_PKG_VERSION")));
        if let Some(tls) = tls {
            config = config.tls_config(tls.to_ureq());
        }
        Ok(Self {
            endpoints: checked,
            agent: ureq::Agent::new_with_config(config.build()),
            credentials,
            token: Mutex::new(None),
            preferred: AtomicUsize::new(0),
            request_timeout,
            ca_source: tls.map(|t| t.ca_source().to_string()),
            has_client_certificate: tls.is_some_and(TlsConfig::has_client_certificate),
        })
    }

    pub(crate) fn has_credentials(&self) -> bool {
        self.credentials.is_some()
    }

    fn deadline(&self) -> Instant {
        let now = Instant::now();
        now.checked_add(self.request_timeout).unwrap_or_else(|| now + Duration::from_secs(1 << 30))
    }

    /// Authenticates on the first member that answers and keeps the token.
    pub(crate) fn authenticate_now(&self) -> Result<(), KvError> {
        *self.token.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.with_members(self.deadline(), |member, left| self.token(member, left).map(|_| Value::Null)).map(|_| ())
    }

    /// `GET path` (e.g. `/version`) on the first member that answers.
    pub(crate) fn get_json(&self, path: &str) -> Result<Value, KvError> {
        self.with_members(self.deadline(), |member, left| {
            let request = self.agent.get(format!("{member}{path}")).config().timeout_global(Some(left)).build();
            let answer = request.call().map_err(|e| self.transport_error(member, e))?;
            self.answer(member, path, answer, "")
        })
    }

    /// `POST path` with a JSON body on the first member that answers, with the auth token; `what`
    /// (a key or prefix) goes into error messages.
    pub(crate) fn call(&self, path: &str, body: &Value, what: &str) -> Result<Value, KvError> {
        self.with_members(self.deadline(), |member, left| self.post(member, path, body, what, left))
    }

    /// Renews a lease once (`/v3/lease/keepalive` answers a stream: read its first message);
    /// returns the TTL left, 0 when the lease is gone (expired or revoked).
    pub(crate) fn keep_alive(&self, id: i64) -> Result<u64, KvError> {
        self.with_members(self.deadline(), |member, left| {
            let response = self.send(member, "/v3/lease/keepalive", &json!({"ID": id.to_string()}), left)?;
            let mut messages =
                serde_json::Deserializer::from_reader(response.into_body().into_reader().take(MAX_ANSWER))
                    .into_iter::<Value>();
            match messages.next() {
                Some(Ok(message)) => self.check(member, &message, "lease keep-alive"),
                Some(Err(e)) => Err(Attempt::NextMember(format!("{member}: lease keep-alive: {e}"))),
                None => Err(Attempt::NextMember(format!("{member}: lease keep-alive: no answer"))),
            }
        })
        .map(|answer| answer.pointer("/result/TTL").and_then(as_u64).unwrap_or(0))
    }

    /// Waits for a put of `key` at `start` or later until `deadline`; resumes on another member
    /// from the last revision seen when a member goes away.
    pub(crate) fn watch(&self, key: &str, start: u64, deadline: Option<Instant>) -> Result<WatchOutcome, KvError> {
        let mut next = start;
        let mut rounds_without_answer = 0;
        let mut reauthenticated = false;
        let mut last_error = String::new();
        let count = self.endpoints.len();
        loop {
            let first = self.preferred.load(Ordering::Relaxed) % count;
            let mut any_answered = false;
            for i in (0..count).map(|k| (first + k) % count) {
                let member = &self.endpoints[i];
                let left = match deadline {
                    Some(d) => match d.checked_duration_since(Instant::now()).filter(|l| !l.is_zero()) {
                        Some(left) => left,
                        None => return Ok(WatchOutcome::TimedOut),
                    },
                    None => Duration::from_secs(1 << 30),
                };
                let body = json!({"create_request": {"key": b64(key.as_bytes()), "start_revision": next.to_string()}});
                let response = match self.send(member, "/v3/watch", &body, left) {
                    Ok(r) => r,
                    Err(Attempt::NextMember(e)) => {
                        last_error = e;
                        continue;
                    }
                    Err(Attempt::Reauthenticate) if !reauthenticated && self.has_credentials() => {
                        // The token expired: a new one, and this member again in the next round.
                        reauthenticated = true;
                        self.authenticate_now()?;
                        continue;
                    }
                    Err(Attempt::Reauthenticate) => return Err(self.unauthenticated()),
                    Err(Attempt::Fail(e)) => return Err(e),
                };
                let mut messages =
                    serde_json::Deserializer::from_reader(response.into_body().into_reader().take(MAX_ANSWER))
                        .into_iter::<Value>();
                loop {
                    let message = match messages.next() {
                        Some(Ok(m)) => m,
                        Some(Err(e)) if e.is_io() && deadline.is_some_and(|d| Instant::now() >= d) => {
                            return Ok(WatchOutcome::TimedOut)
                        }
                        Some(Err(e)) => {
                            last_error = format!("{member}: the watch broke: {e}");
                            break;
                        }
                        None => {
                            last_error = format!("{member}: the watch ended");
                            break;
                        }
                    };
                    let result = match self.check(member, &message, "watch") {
                        Ok(result) => result,
                        Err(Attempt::Reauthenticate) if !reauthenticated && self.has_credentials() => {
                            reauthenticated = true;
                            self.authenticate_now()?;
                            break;
                        }
                        Err(Attempt::Reauthenticate) => return Err(self.unauthenticated()),
                        Err(Attempt::NextMember(e)) => {
                            last_error = e;
                            break;
                        }
                        Err(Attempt::Fail(e)) => return Err(e),
                    };
                    any_answered = true;
                    self.preferred.store(i, Ordering::Relaxed);
                    let Some(result) = result.get("result") else { continue };
                    if result.get("canceled").and_then(Value::as_bool) == Some(true) {
                        if result.get("compact_revision").and_then(as_u64).is_some_and(|r| r > 0) {
                            return Ok(WatchOutcome::Compacted);
                        }
                        let reason = result.get("cancel_reason").and_then(Value::as_str).unwrap_or("no reason given");
                        if reason.contains("permission denied") {
                            return Err(self.permission_denied(key));
                        }
                        return Err(KvError::unavailable(format!("etcd canceled the watch on {key:?}: {reason}")));
                    }
                    for event in result.get("events").and_then(Value::as_array).into_iter().flatten() {
                        let kv = event.get("kv").unwrap_or(&Value::Null);
                        if let Some(revision) = kv.get("mod_revision").and_then(as_u64) {
                            next = next.max(revision + 1);
                        }
                        // PUT is the default (omitted) type; skip DELETE.
                        if event.get("type").and_then(Value::as_str).is_some_and(|t| t != "PUT") {
                            continue;
                        }
                        return Ok(WatchOutcome::Put(decode_kv(kv)?.1));
                    }
                }
            }
            if !any_answered {
                rounds_without_answer += 1;
            }
            // Every member failed this round: pause (an election takes a moment), unless time is up.
            if deadline.is_some_and(|d| Instant::now() + RETRY_PAUSE >= d) {
                return Ok(WatchOutcome::TimedOut);
            }
            if rounds_without_answer * RETRY_PAUSE > self.request_timeout {
                return Err(self.no_member(&last_error));
            }
            std::thread::sleep(RETRY_PAUSE);
        }
    }

    /// Runs `attempt` on each member in turn, starting at the one that answered last, in rounds
    /// until one gives a final answer or `deadline` passes.
    fn with_members(
        &self,
        deadline: Instant,
        attempt: impl Fn(&str, Duration) -> Result<Value, Attempt>,
    ) -> Result<Value, KvError> {
        let count = self.endpoints.len();
        let mut last_error = String::new();
        let mut reauthenticated = false;
        loop {
            let first = self.preferred.load(Ordering::Relaxed) % count;
            for i in (0..count).map(|k| (first + k) % count) {
                let member = &self.endpoints[i];
                let Some(left) = deadline.checked_duration_since(Instant::now()).filter(|l| !l.is_zero()) else {
                    return Err(self.out_of_time(&last_error));
                };
                // One member gets a part of the time: a follower that lost its leader holds a
                // write until etcd's own timeout (5 s and more), while another member may
                // already have a new leader.
                let left = left.min((self.request_timeout / 4).max(Duration::from_secs(1)));
                match attempt(member, left) {
                    Ok(value) => {
                        self.preferred.store(i, Ordering::Relaxed);
                        return Ok(value);
                    }
                    Err(Attempt::NextMember(e)) => last_error = e,
                    Err(Attempt::Reauthenticate) if !reauthenticated && self.has_credentials() => {
                        reauthenticated = true;
                        *self.token.lock().unwrap_or_else(|p| p.into_inner()) = None;
                        // Retry on this member with a new token.
                        match attempt(member, left) {
                            Ok(value) => {
                                self.preferred.store(i, Ordering::Relaxed);
                                return Ok(value);
                            }
                            Err(Attempt::NextMember(e)) => last_error = e,
                            Err(Attempt::Reauthenticate) => return Err(self.unauthenticated()),
                            Err(Attempt::Fail(e)) => return Err(e),
                        }
                    }
                    Err(Attempt::Reauthenticate) => return Err(self.unauthenticated()),
                    Err(Attempt::Fail(e)) => return Err(e),
                }
            }
            if Instant::now() + RETRY_PAUSE >= deadline {
                return Err(self.out_of_time(&last_error));
            }
            std::thread::sleep(RETRY_PAUSE);
        }
    }

    /// The token, authenticating on `member` first when there is none.
    fn token(&self, member: &str, left: Duration) -> Result<Option<String>, Attempt> {
        let Some(credentials) = &self.credentials else { return Ok(None) };
        if let Some(token) = self.token.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            return Ok(Some(token));
        }
        let body = json!({"name": credentials.user, "password": credentials.password});
        let request =
            self.agent.post(format!("{member}/v3/auth/authenticate")).config().timeout_global(Some(left)).build();
        let answer = request
            .header("Content-Type", "application/json")
            .send(body.to_string())
            .map_err(|e| self.transport_error(member, e))?;
        let answer = match self.answer(member, "/v3/auth/authenticate", answer, "") {
            Ok(a) => a,
            // A refused password answers INVALID_ARGUMENT ("authentication failed").
            Err(Attempt::Fail(e)) if e.message().contains("authentication failed") => {
                return Err(Attempt::Fail(KvError::new(
                    ErrorCode::Unauthenticated,
                    format!(
                        "etcd refused the password of user {:?} (or there is no such user): check the credentials \
                         (PJRT_ETCD_USER / PJRT_ETCD_PASSWORD_FILE for pjrt)",
                        credentials.user
                    ),
                )))
            }
            Err(Attempt::Fail(e)) if e.message().contains("authentication is not enabled") => {
                return Err(Attempt::Fail(KvError::new(
                    ErrorCode::FailedPrecondition,
                    "credentials were given but authentication is not enabled on this etcd (etcdctl auth enable), \
                     so anyone who reaches it may read and write every key: enable it, or drop the credentials",
                )))
            }
            Err(e) => return Err(e),
        };
        let token = answer
            .get("token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_graphic()))
            .ok_or_else(|| Attempt::Fail(KvError::internal("etcd's authenticate answer holds no usable token")))?
            .to_string();
        *self.token.lock().unwrap_or_else(|p| p.into_inner()) = Some(token.clone());
        Ok(Some(token))
    }

    /// Sends a POST with the token; the answer's body is not read.
    fn send(
        &self,
        member: &str,
        path: &str,
        body: &Value,
        left: Duration,
    ) -> Result<ureq::http::Response<ureq::Body>, Attempt> {
        let response = self.request(member, path, body, left)?;
        if response.status().is_success() {
            return Ok(response);
        }
        // An error status: read the gateway's error object.
        let value = self.answer(member, path, response, "")?;
        Err(Attempt::Fail(KvError::internal(format!("etcd answered {path} with an error status: {value}"))))
    }

    fn post(&self, member: &str, path: &str, body: &Value, what: &str, left: Duration) -> Result<Value, Attempt> {
        let response = self.request(member, path, body, left)?;
        self.answer(member, path, response, what)
    }

    /// POSTs `body` as JSON to `path` on `member`, with the auth token when there is one,
    /// within `left`; any HTTP status comes back.
    fn request(
        &self,
        member: &str,
        path: &str,
        body: &Value,
        left: Duration,
    ) -> Result<ureq::http::Response<ureq::Body>, Attempt> {
        let token = self.token(member, left)?;
        let mut request = self
            .agent
            .post(format!("{member}{path}"))
            .config()
            .timeout_global(Some(left))
            .build()
            .header("Content-Type", "application/json");
        if let Some(token) = &token {
            request = request.header("Authorization", token);
        }
        request.send(body.to_string()).map_err(|e| self.transport_error(member, e))
    }

    /// Reads and checks a whole JSON answer.
    fn answer(
        &self,
        member: &str,
        path: &str,
        response: ureq::http::Response<ureq::Body>,
        what: &str,
    ) -> Result<Value, Attempt> {
        let status = response.status();
        let mut bytes = Vec::new();
        response
            .into_body()
            .into_reader()
            .take(MAX_ANSWER)
            .read_to_end(&mut bytes)
            .map_err(|e| self.io_error(member, e))?;
        let value: Value = serde_json::from_slice(&bytes).map_err(|_| {
            let text = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).to_string();
            if text.contains("CommonName of client") {
                Attempt::Fail(KvError::invalid_argument(format!(
                    "{member} refuses our client certificate because it has a Common Name: etcd's JSON gateway \
                     (with --client-cert-auth) only takes client certificates without one; issue it with an empty \
                     subject and a subjectAltName, and authenticate with a user and password"
                )))
            } else if status.is_server_error() {
                Attempt::NextMember(format!("{member}{path}: HTTP {status}: {text}"))
            } else {
                Attempt::Fail(KvError::internal(format!(
                    "{member}{path} answered HTTP {status} with unreadable JSON: {text}"
                )))
            }
        })?;
        self.check(member, &value, what)
    }

    /// Turns a gateway error object into an attempt's outcome; passes other answers through.
    fn check(&self, member: &str, value: &Value, what: &str) -> Result<Value, Attempt> {
        let error = match value.get("error") {
            Some(error) if value.get("result").is_none() => error,
            _ if value.get("code").is_some() && value.get("message").is_some() => value,
            _ => return Ok(value.clone()),
        };
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| error.as_str())
            .or_else(|| value.get("message").and_then(Value::as_str))
            .unwrap_or("unknown error")
            .to_string();
        let code = error.get("code").or_else(|| value.get("code")).and_then(as_u64).and_then(grpc_code);
        if message.contains("invalid auth token")
            || message.contains("auth token is expired")
            || code == Some(ErrorCode::Unauthenticated)
        {
            return Err(Attempt::Reauthenticate);
        }
        if message.contains("permission denied") || code == Some(ErrorCode::PermissionDenied) {
            return Err(Attempt::Fail(self.permission_denied(what)));
        }
        if message.contains("user name is empty") {
            return Err(Attempt::Fail(KvError::new(
                ErrorCode::Unauthenticated,
                "this etcd has authentication enabled: give a user and password (EtcdStoreBuilder::credentials; \
                 PJRT_ETCD_USER and PJRT_ETCD_PASSWORD_FILE for pjrt)",
            )));
        }
        // No leader (an election), a stopping member, a timeout inside etcd: another member may do.
        if matches!(code, Some(ErrorCode::Unavailable | ErrorCode::DeadlineExceeded))
            || message.contains("leader changed")
            || message.contains("no leader")
        {
            return Err(Attempt::NextMember(format!("{member}: {message}")));
        }
        Err(Attempt::Fail(KvError::new(code.unwrap_or(ErrorCode::Unknown), format!("etcd at {member}: {message}"))))
    }

    fn permission_denied(&self, what: &str) -> KvError {
        let user = self.credentials.as_ref().map_or("(none)", |c| c.user.as_str());
        KvError::new(
            ErrorCode::PermissionDenied,
            format!(
                "etcd refused access to {what:?}: user {user:?} has no role that grants it (keep the store's prefix \
                 inside what the role grants, or grant it: etcdctl role grant-permission --prefix=true ROLE \
                 readwrite PREFIX)"
            ),
        )
    }

    fn unauthenticated(&self) -> KvError {
        KvError::new(
            ErrorCode::Unauthenticated,
            "etcd refused this store's auth token even after authenticating again: check the user's credentials \
             and the cluster's --auth-token settings",
        )
    }

    fn no_member(&self, last_error: &str) -> KvError {
        KvError::unavailable(format!(
            "no etcd member answered ({}); last error: {last_error}. Check that etcd runs and that these are its \
             client URLs",
            self.endpoints.join(", ")
        ))
    }

    fn out_of_time(&self, last_error: &str) -> KvError {
        if last_error.contains("timed out") || last_error.contains("Timeout") || last_error.is_empty() {
            KvError::new(
                ErrorCode::DeadlineExceeded,
                format!(
                    "etcd did not answer within {:?} ({}); last error: {last_error}",
                    self.request_timeout,
                    self.endpoints.join(", ")
                ),
            )
        } else {
            self.no_member(last_error)
        }
    }

    /// A transport failure: a certificate problem is final (every member shares the CA), the rest
    /// is worth another member.
    fn transport_error(&self, member: &str, e: ureq::Error) -> Attempt {
        match e {
            ureq::Error::Rustls(e) => Attempt::Fail(self.tls_error(member, &e)),
            ureq::Error::Io(e) => self.io_error(member, e),
            ureq::Error::Timeout(t) => Attempt::NextMember(format!("{member}: timed out ({t})")),
            e => Attempt::NextMember(format!("{member}: {e}")),
        }
    }

    fn io_error(&self, member: &str, e: io::Error) -> Attempt {
        if let Some(tls) = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
            return Attempt::Fail(self.tls_error(member, tls));
        }
        if let Some(ureq::Error::Rustls(tls)) = e.get_ref().and_then(|inner| inner.downcast_ref::<ureq::Error>()) {
            return Attempt::Fail(self.tls_error(member, tls));
        }
        if matches!(e.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock) {
            return Attempt::NextMember(format!("{member}: timed out ({e})"));
        }
        Attempt::NextMember(format!("{member}: {e}"))
    }

    fn tls_error(&self, member: &str, e: &rustls::Error) -> KvError {
        use rustls::{AlertDescription, CertificateError};
        let ca = self.ca_source.as_deref().unwrap_or("the CA bundle");
        let message = match e {
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer | CertificateError::BadSignature) => {
                format!(
                    "the certificate of {member} is not signed by the CA in {ca}: give the CA that signed the \
                         members' certificates (etcd's --trusted-ca-file signs clients; the server certificate's \
                         issuer is what matters here)"
                )
            }
            rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            ) => format!(
                "the certificate of {member} is not valid for that name: use the host name or IP address that the \
                 member's certificate lists (its subjectAltName)"
            ),
            rustls::Error::InvalidCertificate(CertificateError::Expired | CertificateError::ExpiredContext { .. }) => {
                format!("the certificate of {member} has expired: renew the member's certificate")
            }
            rustls::Error::AlertReceived(
                AlertDescription::CertificateRequired | AlertDescription::BadCertificate | AlertDescription::UnknownCA,
            ) if !self.has_client_certificate => format!(
                "{member} requires a client certificate (mutual TLS, etcd --client-cert-auth): give one with \
                 TlsConfig::from_pem_files(CA, Some((CERT, KEY))) (PJRT_ETCD_CERT / PJRT_ETCD_KEY for pjrt)"
            ),
            rustls::Error::AlertReceived(alert) => format!(
                "{member} refused the TLS connection ({alert:?}): check that its --trusted-ca-file signed our client \
                 certificate"
            ),
            e => format!("TLS with {member} failed: {e}"),
        };
        KvError::new(ErrorCode::Unavailable, message)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateway_errors_keep_the_grpc_code() {
        for c in 1..=16 {
            assert_eq!(grpc_code(c).unwrap().to_raw().0 as u64, c);
        }
        assert_eq!(grpc_code(0), None);
        assert_eq!(grpc_code(17), None);
        let c = Connection::new(&["http://127.0.0.1:1".into()], None, None, Duration::from_secs(1), true).unwrap();
        let check = |v: Value| c.check("m", &v, "k");
        assert!(check(json!({"kvs": []})).is_ok());
        let Err(Attempt::Fail(e)) = check(json!({"error": "no such key", "code": 5, "message": "no such key"})) else {
            panic!()
        };
        assert_eq!(e.code(), ErrorCode::NotFound);
        let Err(Attempt::Fail(e)) = check(json!({"code": 7, "message": "etcdserver: permission denied"})) else {
            panic!()
        };
        assert_eq!(e.code(), ErrorCode::PermissionDenied);
        assert!(matches!(
            check(json!({"code": 3, "message": "etcdserver: invalid auth token"})),
            Err(Attempt::Reauthenticate)
        ));
        assert!(matches!(check(json!({"code": 14, "message": "etcdserver: no leader"})), Err(Attempt::NextMember(_))));
        assert!(matches!(check(json!({"error": {"code": 14, "message": "x"}})), Err(Attempt::NextMember(_))));
        // A watch message with a result is not an error.
        assert!(check(json!({"result": {"events": []}})).is_ok());
    }
}
