//! etcd members of a test's own: started on free loopback ports in a temporary directory,
//! optionally with TLS (certificates made here with rcgen) and authentication; killed and waited
//! for on drop, also when the test panics. Shared with pjrt-cli's tests (`#[path]`).

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The etcd user a job runs as, the role it has, and the only prefix that role may touch.
pub const JOB_USER: &str = "job-1";
pub const JOB_PASSWORD: &str = "job-1-password";
pub const JOB_PREFIX: &str = "jobs/job-1/";
pub const ROOT_PASSWORD: &str = "root-password";

/// Certificates in PEM files: a CA, a server certificate for 127.0.0.1/localhost, a client
/// certificate, and a second, unrelated CA.
pub struct Certs {
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    pub other_ca: PathBuf,
}

pub fn make_certs(dir: &Path) -> Certs {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
        KeyPair, KeyUsagePurpose,
    };
    let ca = |name: &str| {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
    };
    let issuer = ca("pjrt test CA");
    let other = ca("some other CA");
    let leaf = |names: Vec<String>, cn: Option<&str>, usages: Vec<ExtendedKeyUsagePurpose>| {
        let mut params = CertificateParams::new(names).unwrap();
        params.distinguished_name = DistinguishedName::new();
        if let Some(cn) = cn {
            params.distinguished_name.push(DnType::CommonName, cn);
        }
        params.extended_key_usages = usages;
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    // The server certificate also serves as a client one: etcd's gateway dials its own gRPC port with it.
    let (server_cert, server_key) = leaf(
        vec!["127.0.0.1".into(), "localhost".into()],
        Some("pjrt-test-etcd"),
        vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth],
    );
    // No Common Name: etcd 3.4's gateway refuses client certificates with one (it would not be
    // used as the user name there) when --client-cert-auth is on.
    let (client_cert, client_key) =
        leaf(vec!["pjrt-test-client".into()], None, vec![ExtendedKeyUsagePurpose::ClientAuth]);
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    Certs {
        ca: write("ca.pem", &issuer.pem()),
        server_cert: write("server.pem", &server_cert),
        server_key: write("server-key.pem", &server_key),
        client_cert: write("client.pem", &client_cert),
        client_key: write("client-key.pem", &client_key),
        other_ca: write("other-ca.pem", &other.pem()),
    }
}

pub struct Member {
    pub name: String,
    pub client_url: String,
    pub peer_url: String,
    pub child: Option<Child>,
}

impl Member {
    /// SIGKILL, then wait (no zombie).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A cluster of this test's own; killed and removed on drop.
pub struct Cluster {
    pub members: Vec<Member>,
    pub dir: PathBuf,
    pub certs: Option<Certs>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for m in &mut self.members {
            m.kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `etcd` from `PATH`, `/usr/bin` or `/usr/local/bin`; else the copy these tests unpacked into the
/// plugin cache's sibling folder before; else that copy made now from Debian's package
/// (`apt-get download etcd-server` and `dpkg-deb -x`: no root needed), as the tests install
/// their plugins on first use. Fails saying how to install it when none of that works.
fn binary(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/local/bin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file());
    found.unwrap_or_else(|| unpacked_etcd(name))
}

/// Where `unpacked_etcd` keeps its copy: `$PJRT_PLUGIN_CACHE/../etcd` or `~/.cache/pjrt-client/etcd`.
fn etcd_cache() -> PathBuf {
    match std::env::var_os("PJRT_PLUGIN_CACHE").filter(|v| !v.is_empty()) {
        Some(plugins) => PathBuf::from(plugins).join("..").join("etcd"),
        None => {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into())).join(".cache/pjrt-client/etcd")
        }
    }
}

fn unpacked_etcd(name: &str) -> PathBuf {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let cache = etcd_cache();
    let binary = cache.join("usr/bin").join(name);
    if binary.is_file() {
        return binary;
    }
    let how =
        "these tests run etcd servers of their own: install etcd (Debian/Ubuntu: `apt-get install -y etcd-server`)";
    let work = cache.with_extension(format!("partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap_or_else(|e| panic!("{how}; creating {}: {e}", work.display()));
    let download = Command::new("apt-get").args(["download", "etcd-server"]).current_dir(&work).output();
    match download {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!("{how}; `apt-get download etcd-server` failed: {}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => panic!("{how}; `apt-get download etcd-server` could not run: {e}"),
    }
    let deb = std::fs::read_dir(&work)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .unwrap_or_else(|| panic!("{how}; apt-get download left no .deb in {}", work.display()));
    let unpacked = work.join("root");
    let status = Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&unpacked).status();
    assert!(matches!(status, Ok(s) if s.success()), "{how}; `dpkg-deb -x {}` failed: {status:?}", deb.display());
    let _ = std::fs::remove_dir_all(&cache);
    std::fs::rename(&unpacked, &cache).unwrap_or_else(|e| panic!("{how}; moving etcd into {}: {e}", cache.display()));
    let _ = std::fs::remove_dir_all(&work);
    assert!(binary.is_file(), "{how}; the etcd-server package has no usr/bin/{name}");
    binary
}

impl Cluster {
    /// `size` members; with `tls`, https client URLs with mutual TLS (peers talk plain http on loopback).
    pub fn start(size: usize, tls: bool) -> Cluster {
        Self::start_with(size, tls, &[])
    }

    /// [`Cluster::start`] with extra etcd flags for every member.
    pub fn start_with(size: usize, tls: bool, extra: &[&str]) -> Cluster {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("pjrt-etcd-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let certs = tls.then(|| make_certs(&dir));
        let scheme = if tls { "https" } else { "http" };
        let mut members: Vec<Member> = (0..size)
            .map(|i| Member {
                name: format!("m{i}"),
                client_url: format!("{scheme}://127.0.0.1:{}", free_port()),
                peer_url: format!("http://127.0.0.1:{}", free_port()),
                child: None,
            })
            .collect();
        let initial: Vec<String> = members.iter().map(|m| format!("{}={}", m.name, m.peer_url)).collect();
        let initial = initial.join(",");
        let etcd = binary("etcd");
        let token = format!("pjrt-test-{}-{n}", std::process::id());
        for m in &mut members {
            let mut cmd = Command::new(&etcd);
            cmd.args(["--name", &m.name, "--data-dir"])
                .arg(dir.join(&m.name))
                .args(["--listen-client-urls", &m.client_url, "--advertise-client-urls", &m.client_url])
                .args(["--listen-peer-urls", &m.peer_url, "--initial-advertise-peer-urls", &m.peer_url])
                .args(["--initial-cluster", &initial, "--initial-cluster-token", &token])
                .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(dir.join(format!("{}.log", m.name))).unwrap());
            if let Some(c) = &certs {
                cmd.arg("--cert-file").arg(&c.server_cert).arg("--key-file").arg(&c.server_key);
                cmd.arg("--trusted-ca-file").arg(&c.ca).arg("--client-cert-auth");
            }
            m.child = Some(cmd.spawn().unwrap_or_else(|e| panic!("starting {}: {e}", etcd.display())));
        }
        let cluster = Cluster { members, dir, certs };
        for i in 0..size {
            cluster.wait_healthy(i);
        }
        cluster
    }

    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(|m| m.client_url.clone()).collect()
    }

    /// An HTTP client for the members' gateways, with the test's client certificate.
    fn agent(&self) -> ureq::Agent {
        use ureq::tls::{Certificate, ClientCert, PrivateKey, RootCerts, TlsConfig, TlsProvider};
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .proxy(None)
            .timeout_global(Some(Duration::from_secs(5)));
        if let Some(c) = &self.certs {
            let read = |p: &Path| std::fs::read(p).unwrap();
            let ca = Certificate::from_pem(&read(&c.ca)).unwrap();
            let cert = Certificate::from_pem(&read(&c.client_cert)).unwrap();
            let key = PrivateKey::from_pem(&read(&c.client_key)).unwrap();
            config = config.tls_config(
                TlsConfig::builder()
                    .provider(TlsProvider::Rustls)
                    .root_certs(RootCerts::new_with_certs(&[ca]))
                    .client_cert(Some(ClientCert::new_with_certs(&[cert], key)))
                    .unversioned_rustls_crypto_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
                    .build(),
            );
        }
        ureq::Agent::new_with_config(config.build())
    }

    /// POSTs a JSON request to member `i`'s gateway (with an auth token when given).
    pub fn post(
        &self,
        i: usize,
        path: &str,
        body: serde_json::Value,
        token: Option<&str>,
    ) -> Result<serde_json::Value, String> {
        let url = format!("{}{path}", self.members[i].client_url);
        let mut request = self.agent().post(&url);
        if let Some(token) = token {
            request = request.header("Authorization", token);
        }
        let mut answer = request.send(body.to_string()).map_err(|e| format!("{url}: {e}"))?;
        let text = answer.body_mut().read_to_string().map_err(|e| format!("{url}: {e}"))?;
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{url}: {e}: {text}"))?;
        if value.get("error").is_some() || value.get("code").is_some() {
            return Err(format!("{url}: {text}"));
        }
        Ok(value)
    }

    fn wait_healthy(&self, i: usize) {
        let started = Instant::now();
        let url = format!("{}/health", self.members[i].client_url);
        let agent = self.agent();
        loop {
            let ok = agent
                .get(&url)
                .call()
                .ok()
                .and_then(|mut r| r.body_mut().read_to_string().ok())
                .is_some_and(|text| text.contains("\"health\":\"true\""));
            if ok {
                return;
            }
            if started.elapsed() > Duration::from_secs(30) {
                let log =
                    std::fs::read_to_string(self.dir.join(format!("{}.log", self.members[i].name))).unwrap_or_default();
                let lines: Vec<&str> = log.lines().collect();
                let tail = lines[lines.len().saturating_sub(20)..].join("\n");
                panic!("etcd member {url} did not become healthy in 30 s; its log ends:\n{tail}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Users and roles: root, and JOB_USER whose role may only read and write under JOB_PREFIX;
    /// then `auth enable` (what `etcdctl user add / role add / role grant-permission --prefix=true
    /// / user grant-role / auth enable` do, through the gateway).
    pub fn enable_auth(&self) {
        use base64::Engine as _;
        let b64 = |s: &[u8]| base64::engine::general_purpose::STANDARD.encode(s);
        let mut end = JOB_PREFIX.as_bytes().to_vec();
        *end.last_mut().unwrap() += 1;
        for (path, body) in [
            ("/v3/auth/user/add", serde_json::json!({"name": "root", "password": ROOT_PASSWORD})),
            ("/v3/auth/user/grant", serde_json::json!({"user": "root", "role": "root"})),
            ("/v3/auth/role/add", serde_json::json!({"name": JOB_USER})),
            (
                "/v3/auth/role/grant",
                serde_json::json!({"name": JOB_USER, "perm": {"permType": "READWRITE", "key": b64(JOB_PREFIX.as_bytes()), "range_end": b64(&end)}}),
            ),
            ("/v3/auth/user/add", serde_json::json!({"name": JOB_USER, "password": JOB_PASSWORD})),
            ("/v3/auth/user/grant", serde_json::json!({"user": JOB_USER, "role": JOB_USER})),
            ("/v3/auth/enable", serde_json::json!({})),
        ] {
            self.post(0, path, body, None).unwrap();
        }
    }

    /// The index of the leader (`/v3/maintenance/status`: the member whose id is the leader).
    pub fn leader(&self) -> usize {
        let started = Instant::now();
        loop {
            for (i, m) in self.members.iter().enumerate() {
                if m.child.is_none() {
                    continue;
                }
                let Ok(status) = self.post(i, "/v3/maintenance/status", serde_json::json!({}), None) else { continue };
                let me = status["header"]["member_id"].as_str();
                if me.is_some() && me == status["leader"].as_str() {
                    return i;
                }
            }
            assert!(started.elapsed() < Duration::from_secs(30), "no etcd leader within 30 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Children killed and waited for on drop (the workers of a test), also when the test panics.
#[derive(Default)]
pub struct Children(pub Vec<Option<Child>>);

impl Drop for Children {
    fn drop(&mut self) {
        for child in self.0.iter_mut().flatten() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Waits for child `i` with a bound; kills it when the bound runs out. Returns its exit code
/// (None if killed) and its stderr.
pub fn wait_bounded(children: &mut Children, i: usize, bound: Duration) -> (Option<i32>, String) {
    let mut child = children.0[i].take().expect("a running child");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut stderr);
    }
    (status.and_then(|s| s.code()), stderr)
}
