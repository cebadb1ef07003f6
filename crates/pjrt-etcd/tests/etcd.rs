//! `EtcdStore` against real etcd servers that each test starts, stops and kills itself (Debian's
//! `etcd-server`; the tests fail, saying how to install it, when `etcd` is missing): plain HTTP,
//! mutual TLS with authentication, leases, and a 3-member cluster that loses its leader; and
//! 4-process data-parallel jobs on the 0.115 CPU plugin that rendezvous through them.
//!
//! The workers are this test binary run again (`current_exe()`), with `PJRT_MP_WORKER` set,
//! running only the `worker` test (ignored in a normal run: it is an entry point, not a test).
//! Every child (etcd members, workers) is killed and waited for on drop, also when a test fails.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pjrt_client::{
    Client, ClientOptions, CompileOptions, ErrorCode, ExecuteOptions, HostSource, KeyValueStore, Program, UploadOptions,
};
use pjrt_etcd::{EtcdStore, TlsConfig};

#[path = "etcd/cluster.rs"]
mod cluster;
use cluster::{wait_bounded, Children, Cluster, JOB_PASSWORD, JOB_PREFIX, JOB_USER};

// The CPU plugins, installed into the cache on first use: pjrt-client's test support.
#[path = "../../pjrt-client/tests/support/mod.rs"]
mod support;
use support::{plugin, PLUGINS};

const WORKERS: usize = 4;
const ELEMENTS: usize = 4096;

fn unique_prefix(test: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("pjrt-test/{test}/{}-{nanos}/", std::process::id())
}

/// How a store (of the test or of a worker) reaches the cluster.
#[derive(Clone, Default)]
struct Access {
    endpoints: Vec<String>,
    prefix: String,
    tls: Option<(String, Option<(String, String)>)>,
    credentials: Option<(String, String)>,
    lease_ttl: Option<Duration>,
}

impl Access {
    fn plain(cluster: &Cluster, prefix: &str) -> Self {
        Access { endpoints: cluster.endpoints(), prefix: prefix.into(), ..Default::default() }
    }

    /// Mutual TLS and the job's user, under the job's prefix.
    fn job(cluster: &Cluster) -> Self {
        let c = cluster.certs.as_ref().unwrap();
        let s = |p: &std::path::Path| p.display().to_string();
        Access {
            endpoints: cluster.endpoints(),
            prefix: JOB_PREFIX.into(),
            tls: Some((s(&c.ca), Some((s(&c.client_cert), s(&c.client_key))))),
            credentials: Some((JOB_USER.into(), JOB_PASSWORD.into())),
            lease_ttl: None,
        }
    }

    fn builder(&self) -> pjrt_etcd::EtcdStoreBuilder {
        let mut b = EtcdStore::builder().endpoints(self.endpoints.iter().cloned()).prefix(self.prefix.clone());
        match &self.tls {
            Some((ca, client)) => b = b.tls(TlsConfig::from_pem_files(ca, client.clone()).unwrap()),
            None => b = b.allow_plain_http(),
        }
        if let Some((user, password)) = &self.credentials {
            b = b.credentials(user, password);
        }
        match self.lease_ttl {
            Some(ttl) => b.lease_ttl(ttl),
            None => b.without_lease(),
        }
    }

    fn connect(&self) -> EtcdStore {
        self.builder().connect().unwrap()
    }

    /// The same as environment variables for a worker.
    fn env(&self, cmd: &mut Command) {
        cmd.env("PJRT_MP_ENDPOINTS", self.endpoints.join(",")).env("PJRT_MP_PREFIX", &self.prefix);
        if let Some((ca, client)) = &self.tls {
            cmd.env("PJRT_MP_CA", ca);
            if let Some((cert, key)) = client {
                cmd.env("PJRT_MP_CERT", cert).env("PJRT_MP_KEY", key);
            }
        }
        if let Some((user, password)) = &self.credentials {
            cmd.env("PJRT_MP_USER", user).env("PJRT_MP_PASSWORD", password);
        }
        if let Some(ttl) = self.lease_ttl {
            cmd.env("PJRT_MP_LEASE_TTL", ttl.as_secs().to_string());
        }
    }

    fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Access {
            endpoints: var("PJRT_MP_ENDPOINTS").unwrap().split(',').map(str::to_string).collect(),
            prefix: var("PJRT_MP_PREFIX").unwrap_or_default(),
            tls: var("PJRT_MP_CA").map(|ca| (ca, var("PJRT_MP_CERT").zip(var("PJRT_MP_KEY")))),
            credentials: var("PJRT_MP_USER").zip(var("PJRT_MP_PASSWORD")),
            lease_ttl: var("PJRT_MP_LEASE_TTL").map(|s| Duration::from_secs(s.parse().unwrap())),
        }
    }
}

// ---- the store on its own, plain HTTP ----

#[test]
fn store_basics_over_plain_http() {
    let cluster = Cluster::start(1, false);
    let store = Access::plain(&cluster, &unique_prefix("basic")).connect();
    assert!(store.version().unwrap().starts_with("3."));
    assert_eq!(store.try_get("a").unwrap(), None);
    store.put("a", b"one").unwrap();
    assert_eq!(store.try_get("a").unwrap().as_deref(), Some(&b"one"[..]));
    assert_eq!(store.get("a", Duration::from_secs(1)).unwrap(), b"one");
    store.put("a", b"two").unwrap();
    assert_eq!(store.get("a", Duration::from_secs(1)).unwrap(), b"two");
    // Empty and binary values, odd keys.
    store.put("empty", b"").unwrap();
    assert_eq!(store.try_get("empty").unwrap().as_deref(), Some(&b""[..]));
    assert_eq!(store.get("empty", Duration::from_secs(1)).unwrap(), b"");
    let binary: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
    store.put("cpu:local_topology/cpu/0 é", &binary).unwrap();
    assert_eq!(store.get("cpu:local_topology/cpu/0 é", Duration::from_secs(1)).unwrap(), binary);
    let keys: Vec<String> = store.entries().unwrap().into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, ["a", "cpu:local_topology/cpu/0 é", "empty"]);
    assert_eq!(store.list("cpu:").unwrap().len(), 1);
    // Another job's prefix sees nothing of this one.
    let other = store.with_prefix(unique_prefix("other"));
    assert_eq!(other.try_get("a").unwrap(), None);
    assert_eq!(other.get("a", Duration::from_millis(300)).unwrap_err().code(), ErrorCode::DeadlineExceeded);
    assert!(other.entries().unwrap().is_empty());

    // A put from another thread wakes a blocked get (a watch, not polling); other keys do not.
    let writer = store.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        writer.put("other", b"not this one").unwrap();
        std::thread::sleep(Duration::from_millis(100));
        writer.put("late", b"here").unwrap();
    });
    assert_eq!(store.get("late", Duration::from_secs(20)).unwrap(), b"here");
    t.join().unwrap();
    let err = store.get("never", Duration::from_millis(500)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::DeadlineExceeded, "{err}");
    // Many waiters at once.
    let waiters: Vec<_> = (0..8)
        .map(|i| {
            let s = store.clone();
            std::thread::spawn(move || s.get(&format!("k{i}"), Duration::from_secs(20)))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    for i in 0..8 {
        store.put(&format!("k{i}"), format!("v{i}").as_bytes()).unwrap();
    }
    for (i, w) in waiters.into_iter().enumerate() {
        assert_eq!(w.join().unwrap().unwrap(), format!("v{i}").as_bytes());
    }
    assert_eq!(store.delete_all().unwrap(), 13);
    assert_eq!(store.try_get("a").unwrap(), None);

    // A store with a lease: revoking it deletes its keys at once; later puts say why they fail.
    let mut leased = Access::plain(&cluster, &unique_prefix("revoke"));
    leased.lease_ttl = Some(Duration::from_secs(30));
    let leased = leased.connect();
    assert!(leased.lease_id().is_some());
    leased.put("mine", b"1").unwrap();
    assert_eq!(leased.try_get("mine").unwrap().as_deref(), Some(&b"1"[..]));
    leased.revoke_lease().unwrap();
    assert_eq!(leased.try_get("mine").unwrap(), None);
    let err = leased.put("mine", b"2").unwrap_err();
    assert_eq!(err.code(), ErrorCode::FailedPrecondition, "{err}");
    assert!(err.message().contains("lease"), "{err}");

    // Both CPU plugins take the store.
    for name in PLUGINS {
        let plugin = plugin(name);
        let client = Client::builder(&plugin).kv_store(store.clone()).process(1, 2).build().unwrap();
        assert!(client.kv_callbacks().is_some());
        assert!(!client.addressable_devices().is_empty());
    }
}

#[test]
fn a_member_going_away_is_unavailable_not_a_hang() {
    let mut cluster = Cluster::start(1, false);
    let store = Access::plain(&cluster, &unique_prefix("gone"))
        .builder()
        .request_timeout(Duration::from_secs(2))
        .connect()
        .unwrap();
    store.put("x", b"1").unwrap();
    let waiter = {
        let s = store.clone();
        std::thread::spawn(move || s.get("never", Duration::from_secs(60)))
    };
    std::thread::sleep(Duration::from_millis(500));
    cluster.members[0].kill();
    let err = waiter.join().unwrap().unwrap_err();
    assert_eq!(err.code(), ErrorCode::Unavailable, "{err}");
    assert!(err.message().contains(&cluster.members[0].client_url), "{err}");
    assert_eq!(store.put("x", b"2").unwrap_err().code(), ErrorCode::Unavailable);
    assert_eq!(store.try_get("x").unwrap_err().code(), ErrorCode::Unavailable);
}

// ---- the 4-process job ----

/// The global data: ELEMENTS values; worker k holds elements [k*ELEMENTS/4, (k+1)*ELEMENTS/4).
fn global_data() -> Vec<f32> {
    (0..ELEMENTS).map(|i| (i % 97) as f32 - 40.).collect()
}

const SUM_OF_SQUARES: &str = r#"
module @sum_of_squares {
  func.func public @main(%x: tensor<1024xf32>) -> tensor<f32> {
    %sq = stablehlo.multiply %x, %x : tensor<1024xf32>
    %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %s = stablehlo.reduce(%sq init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<1024xf32>, tensor<f32>) -> tensor<f32>
    return %s : tensor<f32>
  }
}"#;

fn f32_of(bytes: &[u8]) -> f32 {
    f32::from_le_bytes(bytes.try_into().expect("4 bytes"))
}

/// What one worker does; errors are printed as `KV_ERROR <code>: ...` and end the process with
/// exit code 3. Prints `RENDEZVOUS_MS <n>`: from its client being built to knowing every
/// process's devices.
fn worker_main(id: usize, access: &Access, mode: &str) -> Result<(), String> {
    let kv_timeout =
        Duration::from_secs(std::env::var("PJRT_MP_KV_TIMEOUT").ok().and_then(|s| s.parse().ok()).unwrap_or(30));
    let kv = |e: pjrt_client::KvError| format!("KV_ERROR {:?}: {e}", e.code());
    let store = access.builder().connect().map_err(kv)?;
    if mode == "wait-go" {
        store.get("go", Duration::from_secs(120)).map_err(kv)?;
    }
    let plugin = plugin("cpu");
    let client = Client::builder(&plugin)
        .options(ClientOptions::new().cpu_device_count(1))
        .kv_store(store.clone())
        .process(id as i64, WORKERS as i64)
        .build()
        .map_err(|e| format!("client: {e}"))?;
    let started = Instant::now();
    // Rendezvous: publish my devices, read everyone's.
    let mine: Vec<String> = client.addressable_devices().iter().map(|d| d.id().unwrap().to_string()).collect();
    store
        .put(&format!("devices/{id}"), format!("{}:{}", client.process_index(), mine.join(",")).as_bytes())
        .map_err(kv)?;
    let mut all = Vec::new();
    for j in 0..WORKERS {
        let v = store.get(&format!("devices/{j}"), kv_timeout).map_err(kv)?;
        all.push(String::from_utf8_lossy(&v).to_string());
    }
    eprintln!("RENDEZVOUS_MS {}", started.elapsed().as_millis());
    store.put(&format!("seen/{id}"), all.join(";").as_bytes()).map_err(kv)?;
    if mode == "hang" {
        // Stand still until killed.
        std::thread::sleep(Duration::from_secs(600));
    }
    // My shard of the data-parallel job.
    let shard_len = ELEMENTS / WORKERS;
    let data = global_data();
    let shard = &data[id * shard_len..(id + 1) * shard_len];
    let exe = client
        .compile(&Program::mlir_text(SUM_OF_SQUARES).unwrap(), &CompileOptions::new())
        .map_err(|e| format!("compile: {e}"))?;
    let device = &client.addressable_devices()[0];
    let x = client
        .upload_with(HostSource::slice(shard, &[shard_len as i64]), &UploadOptions::new().device(device))
        .map_err(|e| e.to_string())?;
    let partial = exe.execute(&[&x], &ExecuteOptions::new()).map_err(|e| e.to_string())?[0]
        .to_vec::<f32>()
        .map_err(|e| e.to_string())?[0];
    store.put(&format!("partial/{id}"), &partial.to_le_bytes()).map_err(kv)?;
    // All-reduce through the store: read every partial, publish the total.
    let mut total = 0f32;
    for j in 0..WORKERS {
        total += f32_of(&store.get(&format!("partial/{j}"), kv_timeout).map_err(kv)?);
    }
    store.put(&format!("total/{id}"), &total.to_le_bytes()).map_err(kv)?;
    Ok(())
}

/// The worker entry point, run by `spawn_workers` (with `--ignored`); does nothing unless this
/// binary was started as a worker.
#[test]
#[ignore = "the entry point of the worker processes that the multi-process tests start"]
fn worker() {
    let Ok(id) = std::env::var("PJRT_MP_WORKER") else { return };
    let id: usize = id.parse().unwrap();
    let mode = std::env::var("PJRT_MP_MODE").unwrap_or_default();
    if let Err(e) = worker_main(id, &Access::from_env(), &mode) {
        eprintln!("worker {id}: {e}");
        std::process::exit(3);
    }
}

fn spawn_workers(access: &Access, mode: impl Fn(usize) -> &'static str, kv_timeout: Duration) -> Children {
    let mut children = Children::default();
    for id in 0..WORKERS {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", "worker", "--ignored", "--nocapture", "--test-threads", "1"])
            .env("PJRT_MP_WORKER", id.to_string())
            .env("PJRT_MP_MODE", mode(id))
            .env("PJRT_MP_KV_TIMEOUT", kv_timeout.as_secs().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        access.env(&mut cmd);
        children.0.push(Some(cmd.spawn().unwrap()));
    }
    children
}

/// Waits for every worker (bounded), asserts that each succeeded, and returns the slowest
/// rendezvous (RENDEZVOUS_MS) they reported.
fn all_succeed(children: &mut Children) -> u128 {
    let mut slowest = 0;
    for id in 0..WORKERS {
        let (code, stderr) = wait_bounded(children, id, Duration::from_secs(120));
        assert_eq!(code, Some(0), "worker {id} failed:\n{stderr}");
        let ms = stderr.lines().find_map(|l| l.strip_prefix("RENDEZVOUS_MS ")).and_then(|n| n.trim().parse().ok());
        slowest = slowest.max(ms.expect("the worker reports its rendezvous time"));
    }
    slowest
}

/// Checks what the workers left in the store: every worker saw every worker's devices, the
/// partial sums add up to the host's.
fn check_the_job(store: &EtcdStore) {
    // The 0.115 plugin took process_id (device ids start at id * 2048 there).
    let devices: Vec<String> = (0..WORKERS)
        .map(|j| String::from_utf8(store.try_get(&format!("devices/{j}")).unwrap().unwrap()).unwrap())
        .collect();
    for (j, d) in devices.iter().enumerate() {
        assert!(d.starts_with(&format!("{j}:")), "worker {j} is process {j}: {d}");
    }
    let expected_seen = devices.join(";");
    for j in 0..WORKERS {
        let seen = String::from_utf8(store.try_get(&format!("seen/{j}")).unwrap().unwrap()).unwrap();
        assert_eq!(seen, expected_seen, "worker {j}'s view of the job");
    }
    let ids: std::collections::BTreeSet<&str> = devices.iter().map(|d| d.split(':').nth(1).unwrap()).collect();
    assert_eq!(ids.len(), WORKERS, "device ids are distinct across processes: {devices:?}");
    let data = global_data();
    let shard_len = ELEMENTS / WORKERS;
    let mut total = 0f64;
    for j in 0..WORKERS {
        let partial = f32_of(&store.try_get(&format!("partial/{j}")).unwrap().unwrap());
        let expected: f64 = data[j * shard_len..(j + 1) * shard_len].iter().map(|v| (*v as f64) * (*v as f64)).sum();
        assert_eq!(partial as f64, expected, "worker {j}'s partial sum of squares");
        total += partial as f64;
    }
    let expected: f64 = data.iter().map(|v| (*v as f64) * (*v as f64)).sum();
    assert_eq!(total, expected);
    for j in 0..WORKERS {
        assert_eq!(f32_of(&store.try_get(&format!("total/{j}")).unwrap().unwrap()) as f64, expected, "worker {j}");
    }
}

// ---- mutual TLS and authentication ----

#[test]
fn four_processes_over_mutual_tls_with_auth_and_what_is_refused() {
    // Tokens expire after 1 s without use: the store authenticates again when etcd says so.
    let cluster = Cluster::start_with(1, true, &["--auth-token-ttl", "1"]);
    cluster.enable_auth();
    let job = Access::job(&cluster);
    let store = job.connect();
    assert!(store.version().unwrap().starts_with("3."));
    store.put("before-expiry", b"1").unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    store.put("after-expiry", b"2").unwrap();
    assert_eq!(store.try_get("before-expiry").unwrap().as_deref(), Some(&b"1"[..]));
    assert!(!format!("{store:?}").contains(JOB_PASSWORD), "{store:?}");
    let refused = |access: &Access| {
        let started = Instant::now();
        let err = access
            .builder()
            .request_timeout(Duration::from_secs(5))
            .connect()
            .and_then(|s| s.put("probe", b"x"))
            .unwrap_err();
        assert!(!err.message().contains(JOB_PASSWORD), "{err}");
        eprintln!("refused in {:?}: {err}", started.elapsed());
        err
    };
    let certs = cluster.certs.as_ref().unwrap();
    // A CA that did not sign the server's certificate.
    let mut wrong_ca = job.clone();
    wrong_ca.tls.as_mut().unwrap().0 = certs.other_ca.display().to_string();
    let err = refused(&wrong_ca);
    assert!(err.message().contains("not signed by the CA in") && err.message().contains("other-ca.pem"), "{err}");
    // No client certificate, while the server requires one.
    let mut no_cert = job.clone();
    no_cert.tls.as_mut().unwrap().1 = None;
    let err = refused(&no_cert);
    assert!(err.message().contains("requires a client certificate"), "{err}");
    // A wrong password.
    let mut wrong_password = job.clone();
    wrong_password.credentials.as_mut().unwrap().1 = "not-the-password".into();
    let err = refused(&wrong_password);
    assert_eq!(err.code(), ErrorCode::Unauthenticated, "{err}");
    assert!(err.message().contains(JOB_USER), "{err}");
    // No credentials at all on a cluster with auth.
    let mut anonymous = job.clone();
    anonymous.credentials = None;
    let err = refused(&anonymous);
    assert!(matches!(err.code(), ErrorCode::Unauthenticated | ErrorCode::PermissionDenied), "{err}");
    // Keys outside the job's prefix: the role does not grant them.
    let outside = store.with_prefix("jobs/job-2/");
    for err in [
        outside.put("k", b"v").unwrap_err(),
        outside.try_get("k").unwrap_err(),
        outside.get("k", Duration::from_secs(5)).unwrap_err(),
    ] {
        assert_eq!(err.code(), ErrorCode::PermissionDenied, "{err}");
        assert!(err.message().contains("jobs/job-2/k") && err.message().contains("grant-permission"), "{err}");
    }
    // The job itself: 4 processes over mutual TLS, as the job's user.
    let mut children = spawn_workers(&job, |_| "", Duration::from_secs(30));
    let slowest = all_succeed(&mut children);
    eprintln!("MEASURED rendezvous of {WORKERS} processes over mutual TLS with auth: {slowest} ms (slowest worker)");
    check_the_job(&store);
    assert!(store.delete_all().unwrap() >= 16);
}

// ---- leases ----

#[test]
fn a_killed_worker_leaves_no_keys_after_its_ttl() {
    let cluster = Cluster::start(1, false);
    // Long enough that a keep-alive delayed by a loaded machine does not lose the lease.
    let ttl = Duration::from_secs(4);
    let mut job = Access::plain(&cluster, &unique_prefix("lease"));
    job.lease_ttl = Some(ttl);
    let store = Access::plain(&cluster, &job.prefix).connect(); // the test's own: no lease
    let victim = 2;
    let mut children = spawn_workers(&job, |id| if id == victim { "hang" } else { "" }, Duration::from_secs(20));
    store.get(&format!("seen/{victim}"), Duration::from_secs(120)).expect("the victim joins the job");
    // Alive, its keys outlive two TTLs: the keep-alive thread renews the lease.
    std::thread::sleep(ttl * 2);
    assert!(store.try_get(&format!("devices/{victim}")).unwrap().is_some(), "the lease of a live worker expired");
    let mut v = children.0[victim].take().unwrap();
    v.kill().unwrap(); // SIGKILL: no clean-up runs in the victim
    v.wait().unwrap();
    let killed = Instant::now();
    let gone = |key: &str| store.try_get(key).unwrap().is_none();
    while !(gone(&format!("devices/{victim}")) && gone(&format!("seen/{victim}"))) {
        assert!(killed.elapsed() < Duration::from_secs(60), "the killed worker's keys are still there");
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("MEASURED the killed worker's keys expired {:?} after SIGKILL (TTL {ttl:?})", killed.elapsed());
    // The others wait for its partial sum and time out, each with a clear error.
    for id in (0..WORKERS).filter(|id| *id != victim) {
        let (code, stderr) = wait_bounded(&mut children, id, Duration::from_secs(60));
        assert_eq!(code, Some(3), "worker {id} should fail with a store error, got {code:?}:\n{stderr}");
        assert!(stderr.contains("KV_ERROR DeadlineExceeded"), "worker {id}:\n{stderr}");
        assert!(stderr.contains(&format!("partial/{victim}")), "worker {id} waited for the victim:\n{stderr}");
    }
    // Their keys go too, one TTL after they ended.
    while !store.entries().unwrap().is_empty() {
        assert!(killed.elapsed() < Duration::from_secs(90), "keys left behind: {:?}", store.entries().unwrap());
        std::thread::sleep(Duration::from_millis(100));
    }
}

// ---- a 3-member cluster that loses its leader ----

#[test]
fn three_members_lose_their_leader_during_a_rendezvous() {
    // Mutual TLS (no auth): every member's certificate is checked.
    let mut cluster = Cluster::start(3, true);
    let leader = cluster.leader();
    // Everyone talks to the leader first, so that losing it makes every store move.
    let mut endpoints = cluster.endpoints();
    endpoints.rotate_left(leader);
    let mut job = Access::job(&cluster);
    job.credentials = None;
    job.endpoints = endpoints;
    job.prefix = unique_prefix("cluster");
    job.lease_ttl = Some(Duration::from_secs(10));
    let store = job.builder().without_lease().connect().unwrap();
    // Workers 0-2 join now; worker 3 waits (on a watch) for "go", put after the leader is gone.
    let mut children = spawn_workers(&job, |id| if id == 3 { "wait-go" } else { "" }, Duration::from_secs(60));
    for j in 0..3 {
        store.get(&format!("devices/{j}"), Duration::from_secs(120)).expect("workers 0-2 publish their devices");
    }
    let blocked = {
        let s = store.clone();
        std::thread::spawn(move || s.get("put-during-the-outage", Duration::from_secs(60)))
    };
    std::thread::sleep(Duration::from_millis(200));
    cluster.members[leader].kill();
    let killed = Instant::now();
    store.put("put-during-the-outage", b"still here").unwrap();
    let recovered = killed.elapsed();
    store.put("go", b"").unwrap();
    assert_eq!(blocked.join().unwrap().unwrap(), b"still here");
    let slowest = all_succeed(&mut children);
    eprintln!("MEASURED first put after SIGKILL of the leader of 3 members: {recovered:?}; rendezvous (slowest worker, worker 3 joining after the loss): {slowest} ms");
    assert_ne!(cluster.leader(), leader, "a new leader was elected");
    check_the_job(&store);
    store.delete_all().unwrap();
}
