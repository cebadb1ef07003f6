//! `EtcdStore` against a real etcd server, and a 4-process data-parallel job on the 0.115 CPU
//! plugin that rendezvous through it.
//!
//! The server: `$PJRT_TEST_ETCD` (`http://127.0.0.1:PORT`, as `.ci/run` sets it). The tests that
//! need a server run only when it is set at build time (`build.rs` turns it into
//! `cfg(pjrt_test_etcd)`); otherwise `cargo test` reports them as ignored, never as passed.
//! `cargo test -p pjrt-etcd -- --ignored` without `PJRT_TEST_ETCD` runs them anyway, each test
//! starting its own `etcd` (from `PATH` or `/usr/bin/etcd`) on free loopback ports with a
//! temporary data directory and stopping it afterwards; without etcd they fail, saying how to
//! install it (`apt-get install etcd-server`). `etcd_going_away_is_unavailable_not_a_hang`
//! always starts (and stops) a server of its own.
//!
//! The workers are this test binary run again (`current_exe()`), with `PJRT_MP_WORKER` set,
//! running only the `worker` test (ignored in a normal run: it is an entry point, not a test).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pjrt_client::{Client, ClientOptions, CompileOptions, ErrorCode, KeyValueStore, Placement, Program};
use pjrt_etcd::EtcdStore;

const WORKERS: usize = 4;
const ELEMENTS: usize = 4096;
/// How long a worker waits for another's key before giving up.
const KV_TIMEOUT: Duration = Duration::from_secs(5);

// The CPU plugins, installed into the cache on first use: pjrt-client's test support.
#[path = "../../pjrt-client/tests/support/mod.rs"]
mod support;
use support::{plugin, PLUGINS};

// ---- an etcd server for the test ----

struct Etcd {
    endpoint: String,
    child: Option<Child>,
    data_dir: Option<PathBuf>,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(dir) = &self.data_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn etcd_binary() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/local/bin")])
        .map(|d| d.join("etcd"))
        .find(|p| p.is_file())
}

fn etcd() -> Etcd {
    if let Ok(endpoint) = std::env::var("PJRT_TEST_ETCD") {
        if !endpoint.is_empty() {
            return Etcd { endpoint, child: None, data_dir: None };
        }
    }
    own_etcd()
}

/// An etcd server of this test's own.
fn own_etcd() -> Etcd {
    let binary = etcd_binary().unwrap_or_else(|| {
        panic!(
            "these tests need an etcd server: set PJRT_TEST_ETCD=http://HOST:PORT, or install etcd so that \
             `etcd` is on PATH (Debian/Ubuntu: `apt-get install -y etcd-server`)"
        )
    });
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let data_dir = std::env::temp_dir().join(format!("pjrt-etcd-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data_dir);
    let (client_port, peer_port) = (free_port(), free_port());
    let client_url = format!("http://127.0.0.1:{client_port}");
    let peer_url = format!("http://127.0.0.1:{peer_port}");
    let child = Command::new(&binary)
        .args(["--name", "pjrt-test", "--data-dir"])
        .arg(&data_dir)
        .args(["--listen-client-urls", &client_url, "--advertise-client-urls", &client_url])
        .args(["--listen-peer-urls", &peer_url, "--initial-advertise-peer-urls", &peer_url])
        .args(["--initial-cluster", &format!("pjrt-test={peer_url}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
    let etcd = Etcd { endpoint: client_url, child: Some(child), data_dir: Some(data_dir) };
    let store = EtcdStore::new(&etcd.endpoint, "").unwrap().request_timeout(Duration::from_secs(1));
    let started = Instant::now();
    loop {
        match store.version() {
            Ok(_) => break,
            Err(e) if started.elapsed() > Duration::from_secs(20) => panic!("etcd did not come up: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    etcd
}

fn unique_prefix(test: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("pjrt-test/{test}/{}-{nanos}/", std::process::id())
}

// ---- the store on its own ----

#[test]
#[cfg_attr(not(pjrt_test_etcd), ignore = "needs an etcd server: set PJRT_TEST_ETCD=http://HOST:PORT")]
fn etcd_store_put_get_try_get() {
    let etcd = etcd();
    let store = EtcdStore::new(&etcd.endpoint, unique_prefix("basic")).unwrap();
    assert!(!store.version().unwrap().is_empty());
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
    // Another job's prefix sees nothing of this one.
    let other = store.with_prefix(unique_prefix("other"));
    assert_eq!(other.try_get("a").unwrap(), None);
    assert_eq!(other.get("a", Duration::from_millis(300)).unwrap_err().code(), ErrorCode::DeadlineExceeded);
    assert!(other.entries().unwrap().is_empty());
    assert_eq!(store.delete_all().unwrap(), 3);
    assert_eq!(store.try_get("a").unwrap(), None);
}

#[test]
#[cfg_attr(not(pjrt_test_etcd), ignore = "needs an etcd server: set PJRT_TEST_ETCD=http://HOST:PORT")]
fn etcd_get_waits_on_a_watch_and_times_out() {
    let etcd = etcd();
    let store = EtcdStore::new(&etcd.endpoint, unique_prefix("watch")).unwrap();
    // A put from another thread wakes the blocked get.
    let writer = store.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        writer.put("other", b"not this one").unwrap();
        std::thread::sleep(Duration::from_millis(200));
        writer.put("late", b"here").unwrap();
    });
    let started = Instant::now();
    assert_eq!(store.get("late", Duration::from_secs(10)).unwrap(), b"here");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(600) && waited < Duration::from_secs(5), "waited {waited:?}");
    t.join().unwrap();
    // Nobody puts: DEADLINE_EXCEEDED after the timeout, not before and not much later.
    let started = Instant::now();
    let err = store.get("never", Duration::from_millis(700)).unwrap_err();
    let waited = started.elapsed();
    assert_eq!(err.code(), ErrorCode::DeadlineExceeded, "{err}");
    assert!(waited >= Duration::from_millis(650) && waited < Duration::from_secs(3), "waited {waited:?}");
    // Many waiters at once.
    let waiters: Vec<_> = (0..8)
        .map(|i| {
            let s = store.clone();
            std::thread::spawn(move || s.get(&format!("k{i}"), Duration::from_secs(10)))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    for i in 0..8 {
        store.put(&format!("k{i}"), format!("v{i}").as_bytes()).unwrap();
    }
    for (i, w) in waiters.into_iter().enumerate() {
        assert_eq!(w.join().unwrap().unwrap(), format!("v{i}").as_bytes());
    }
    store.delete_all().unwrap();
}

#[test]
#[cfg_attr(not(pjrt_test_etcd), ignore = "needs an etcd server: set PJRT_TEST_ETCD=http://HOST:PORT")]
fn etcd_going_away_is_unavailable_not_a_hang() {
    // A server of our own, to stop (never the shared PJRT_TEST_ETCD one).
    let mut etcd = own_etcd();
    let store = EtcdStore::new(&etcd.endpoint, unique_prefix("gone")).unwrap();
    store.put("x", b"1").unwrap();
    let waiter = {
        let s = store.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            (s.get("never", Duration::from_secs(30)), started.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    let child = etcd.child.as_mut().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let (result, waited) = waiter.join().unwrap();
    let err = result.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Unavailable, "{err}");
    assert!(waited < Duration::from_secs(10), "waited {waited:?}");
    assert_eq!(store.put("x", b"2").unwrap_err().code(), ErrorCode::Unavailable);
    assert_eq!(store.try_get("x").unwrap_err().code(), ErrorCode::Unavailable);
}

#[test]
#[cfg_attr(not(pjrt_test_etcd), ignore = "needs an etcd server: set PJRT_TEST_ETCD=http://HOST:PORT")]
fn clients_take_an_etcd_store() {
    let etcd = etcd();
    let store = EtcdStore::new(&etcd.endpoint, unique_prefix("client")).unwrap();
    for name in PLUGINS {
        let plugin = plugin(name);
        let client = Client::builder(&plugin).kv_store(store.clone()).process(1, 2).build().unwrap();
        assert!(client.kv_callbacks().is_some());
        assert!(!client.addressable_devices().is_empty());
    }
    store.delete_all().unwrap();
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
/// exit code 3.
fn worker_main(id: usize, endpoint: &str, prefix: &str, mode: &str) -> Result<(), String> {
    let store = EtcdStore::new(endpoint, prefix).map_err(|e| e.to_string())?;
    let plugin = plugin("cpu");
    let client = Client::builder(&plugin)
        .options(ClientOptions::new().cpu_device_count(1))
        .kv_store(store.clone())
        .process(id as i64, WORKERS as i64)
        .build()
        .map_err(|e| format!("client: {e}"))?;
    let kv = |e: pjrt_client::KvError| format!("KV_ERROR {:?}: {e}", e.code());
    // Rendezvous: publish my devices, read everyone's.
    let mine: Vec<String> = client.addressable_devices().iter().map(|d| d.id().unwrap().to_string()).collect();
    store
        .put(&format!("devices/{id}"), format!("{}:{}", client.process_index(), mine.join(",")).as_bytes())
        .map_err(kv)?;
    let mut all = Vec::new();
    for j in 0..WORKERS {
        let v = store.get(&format!("devices/{j}"), KV_TIMEOUT).map_err(kv)?;
        all.push(String::from_utf8_lossy(&v).to_string());
    }
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
    let x =
        client.buffer_from_slice(shard, &[shard_len as i64], Placement::Device(device)).map_err(|e| e.to_string())?;
    let partial = exe.execute(&[&x]).map_err(|e| e.to_string())?[0].to_vec::<f32>().map_err(|e| e.to_string())?[0];
    store.put(&format!("partial/{id}"), &partial.to_le_bytes()).map_err(kv)?;
    // All-reduce through the store: read every partial, publish the total.
    let mut total = 0f32;
    for j in 0..WORKERS {
        total += f32_of(&store.get(&format!("partial/{j}"), KV_TIMEOUT).map_err(kv)?);
    }
    store.put(&format!("total/{id}"), &total.to_le_bytes()).map_err(kv)?;
    Ok(())
}

/// The worker entry point, run by `spawn_worker` (with `--ignored`); does nothing unless this
/// binary was started as a worker.
#[test]
#[ignore = "the entry point of the worker processes that the multi-process tests start"]
fn worker() {
    let Ok(id) = std::env::var("PJRT_MP_WORKER") else { return };
    let id: usize = id.parse().unwrap();
    let endpoint = std::env::var("PJRT_MP_ENDPOINT").unwrap();
    let prefix = std::env::var("PJRT_MP_PREFIX").unwrap();
    let mode = std::env::var("PJRT_MP_MODE").unwrap_or_default();
    if let Err(e) = worker_main(id, &endpoint, &prefix, &mode) {
        eprintln!("worker {id}: {e}");
        std::process::exit(3);
    }
}

fn spawn_worker(id: usize, endpoint: &str, prefix: &str, mode: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "worker", "--ignored", "--nocapture", "--test-threads", "1"])
        .env("PJRT_MP_WORKER", id.to_string())
        .env("PJRT_MP_ENDPOINT", endpoint)
        .env("PJRT_MP_PREFIX", prefix)
        .env("PJRT_MP_MODE", mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for a child with a bound; kills it when the bound runs out. Returns its exit code (None
/// if killed) and its stderr.
fn wait_bounded(mut child: Child, bound: Duration) -> (Option<i32>, String, Duration) {
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
    (status.and_then(|s| s.code()), stderr, started.elapsed())
}

#[test]
#[cfg_attr(not(pjrt_test_etcd), ignore = "needs an etcd server: set PJRT_TEST_ETCD=http://HOST:PORT")]
fn four_processes_rendezvous_and_sum_through_etcd() {
    let etcd = etcd();
    let prefix = unique_prefix("job");
    let store = EtcdStore::new(&etcd.endpoint, prefix.clone()).unwrap();
    let children: Vec<Child> = (0..WORKERS).map(|id| spawn_worker(id, &etcd.endpoint, &prefix, "")).collect();
    for (id, child) in children.into_iter().enumerate() {
        let (code, stderr, _) = wait_bounded(child, Duration::from_secs(120));
        assert_eq!(code, Some(0), "worker {id} failed:\n{stderr}");
    }
    // Every worker saw every worker's devices; the 0.115 plugin took process_id (device ids
    // start at id * 2048 there) — the 0.106 plugin would report process 0 everywhere.
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
    // Combine the partial results and check them against the host.
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
    store.delete_all().unwrap();
}

#[test]
#[cfg_attr(not(pjrt_test_etcd), ignore = "needs an etcd server: set PJRT_TEST_ETCD=http://HOST:PORT")]
fn a_killed_process_makes_the_others_time_out() {
    let etcd = etcd();
    let prefix = unique_prefix("killed");
    let store = EtcdStore::new(&etcd.endpoint, prefix.clone()).unwrap();
    let victim = 2;
    let mut children: Vec<Option<Child>> = (0..WORKERS)
        .map(|id| Some(spawn_worker(id, &etcd.endpoint, &prefix, if id == victim { "hang" } else { "" })))
        .collect();
    // Kill the victim once it has joined the job (mid-run: after the rendezvous, before its part).
    store.get(&format!("seen/{victim}"), Duration::from_secs(120)).expect("the victim joins the job");
    let mut v = children[victim].take().unwrap();
    v.kill().unwrap();
    v.wait().unwrap();
    let killed_at = Instant::now();
    for (id, child) in children.into_iter().enumerate() {
        let Some(child) = child else { continue };
        let (code, stderr, _) = wait_bounded(child, Duration::from_secs(60));
        let after_kill = killed_at.elapsed();
        assert_eq!(code, Some(3), "worker {id} should fail with a store error, got {code:?}:\n{stderr}");
        assert!(stderr.contains("KV_ERROR DeadlineExceeded"), "worker {id}:\n{stderr}");
        assert!(stderr.contains(&format!("partial/{victim}")), "worker {id} waited for the victim:\n{stderr}");
        // Bounded: the 5 s timeout plus start-up slack, not a hang.
        assert!(after_kill < KV_TIMEOUT + Duration::from_secs(30), "worker {id} ended {after_kill:?} after the kill");
    }
    assert!(store.try_get(&format!("partial/{victim}")).unwrap().is_none());
    store.delete_all().unwrap();
}
