//! The persistent compile cache and AOT artifacts on both CPU plugins: hits give the same
//! results as compiling, keys follow the inputs, bad entries are misses, eviction keeps the
//! newest, concurrent writers never corrupt an entry, artifacts refuse another plugin.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use pjrt_client::{Client, CompileOptions, ExecuteOptions, Program};
use pjrt_formats::artifact::{self, Artifact, Target};
use pjrt_formats::compile_cache::{cache_key, CacheOutcome, CompileCache};

use crate::fake_support;
use crate::support;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pjrt-cache-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `a * SCALE + b`, a program per scale.
fn scaled_add(scale: f32) -> Program {
    Program::mlir_text(format!(
        r#"
module @scaled_add {{
  func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {{
    %s = stablehlo.constant dense<{scale:.1}> : tensor<4xf32>
    %m = stablehlo.multiply %a, %s : tensor<4xf32>
    %0 = stablehlo.add %m, %b : tensor<4xf32>
    return %0 : tensor<4xf32>
  }}
}}"#
    ))
    .unwrap()
}

fn run_add(client: &Client, exe: &pjrt_client::LoadedExecutable) -> Vec<f32> {
    let a = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
    let b = client.upload(&[10f32, 20., 30., 40.], &[4]).unwrap();
    exe.execute(&[&a, &b], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap()
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

#[test]
fn miss_then_hit_gives_identical_outputs() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let dir = temp_dir(&format!("hit-{name}"));
        let cache = CompileCache::open(&dir).unwrap();
        let program = Program::mlir_text(support::ADD_F32).unwrap();
        let options = CompileOptions::new();
        let first = cache.compile(&client, &program, &options).unwrap();
        assert_eq!(first.outcome, CacheOutcome::Miss, "{name}: {:?}", first.note);
        assert!(first.note.is_none(), "{name}: {:?}", first.note);
        assert_eq!(first.load, Duration::ZERO);
        let info = cache.info().unwrap();
        assert_eq!((info.entries, info.dir.as_path()), (1, dir.as_path()));
        assert!(info.bytes > 1000, "{name}: {info:?}");

        // A second cache object on the same folder (as a second process would) hits.
        let again = CompileCache::open(&dir).unwrap().compile(&client, &program, &options).unwrap();
        assert_eq!(again.outcome, CacheOutcome::Hit, "{name}");
        assert_eq!(again.compile, Duration::ZERO);
        assert_eq!(again.executable.name(), first.executable.name());
        assert_eq!(again.executable.output_shapes(), first.executable.output_shapes());
        let want = run_add(&client, &first.executable);
        assert_eq!(want, [11., 22., 33., 44.]);
        assert_eq!(run_add(&client, &again.executable), want, "{name}");

        // The entry is an artifact naming this plugin and its key.
        let entry = Artifact::read(&entries(&dir)[0]).unwrap();
        assert_eq!(entry.header.build_key, cache_key(&client, &program, &options).unwrap().0);
        assert_eq!(entry.header.target, Target::Devices);
        assert_eq!(entry.header.plugin.api_version, client.plugin().api_version());
        assert_eq!(entry.header.program_fingerprint, artifact::program_fingerprint(&program));

        assert_eq!(cache.clear().unwrap(), 1);
        assert_eq!(cache.info().unwrap().entries, 0);
        assert_eq!(cache.compile(&client, &program, &options).unwrap().outcome, CacheOutcome::Miss);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn key_follows_program_options_plugin_and_devices() {
    let client = support::client("cpu", 1);
    let program = Program::mlir_text(support::ADD_F32).unwrap();
    let options = CompileOptions::new();
    let key = cache_key(&client, &program, &options).unwrap();
    assert_eq!(cache_key(&client, &program, &CompileOptions::new()).unwrap(), key, "not deterministic");
    let changed = [
        ("program", cache_key(&client, &scaled_add(2.0), &options)),
        (
            "one byte of the program",
            cache_key(&client, &Program::mlir_text(format!("{} ", support::ADD_F32)).unwrap(), &options),
        ),
        (
            "an XLA option",
            cache_key(&client, &program, &CompileOptions::new().xla_option("xla_cpu_enable_fast_math", true)),
        ),
        (
            "replicas",
            cache_key(
                &client,
                &program,
                &CompileOptions::new().num_replicas(1).num_partitions(1).use_spmd_partitioning(true),
            ),
        ),
        ("device count", cache_key(&support::client("cpu", 2), &program, &options)),
        ("plugin", cache_key(&support::client("cpu-0.106", 1), &program, &options)),
    ];
    for (what, other) in changed {
        assert_ne!(other.unwrap(), key, "changing the {what} kept the key");
    }
}

#[test]
fn corrupt_or_truncated_entries_are_misses_and_replaced() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let dir = temp_dir(&format!("corrupt-{name}"));
        let cache = CompileCache::open(&dir).unwrap();
        let program = Program::mlir_text(support::ADD_F32).unwrap();
        let options = CompileOptions::new();
        cache.compile(&client, &program, &options).unwrap();
        let path = cache.entry_path(&cache_key(&client, &program, &options).unwrap());
        let good = std::fs::read(&path).unwrap();
        let mut flipped = good.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1; // in the plugin's bytes: caught by the checksum, never sent to the plugin
        let mut no_checksum = good.clone();
        let payload_at = no_checksum.len() - 100;
        no_checksum[payload_at] ^= 0xff;
        for (what, bytes) in [
            ("truncated", good[..good.len() / 2].to_vec()),
            ("header only", good[..40].to_vec()),
            ("empty", Vec::new()),
            ("garbage", b"not an artifact at all".to_vec()),
            ("flipped payload byte", flipped),
            ("flipped payload byte 2", no_checksum),
        ] {
            std::fs::write(&path, &bytes).unwrap();
            let cached = cache.compile(&client, &program, &options).unwrap();
            assert_eq!(cached.outcome, CacheOutcome::Miss, "{name}: {what}");
            assert_eq!(run_add(&client, &cached.executable), [11., 22., 33., 44.]);
            // Removed and stored again: the next compile hits. (The executable's bytes may differ
            // by a few from the first compile's: XLA numbers modules per process, and other
            // tests compile meanwhile.)
            let stored = Artifact::read(&path).unwrap_or_else(|e| panic!("{name}: {what}: {e}"));
            assert_eq!(stored.header, Artifact::from_bytes(&good).unwrap().header, "{name}: {what}");
            assert_eq!(cache.compile(&client, &program, &options).unwrap().outcome, CacheOutcome::Hit, "{what}");
        }
        // A folder where the entry should be is not ours to remove: still a miss, not an error.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let cached = cache.compile(&client, &program, &options).unwrap();
        assert_eq!(cached.outcome, CacheOutcome::Miss);
        assert!(cached.note.is_some(), "storing over a folder should leave a note");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn an_entry_from_another_plugin_is_a_miss() {
    let new = support::client("cpu", 1);
    let old = support::client("cpu-0.106", 1);
    let dir = temp_dir("foreign");
    let cache = CompileCache::open(&dir).unwrap();
    let program = Program::mlir_text(support::ADD_F32).unwrap();
    let options = CompileOptions::new();
    let new_path = cache.entry_path(&cache_key(&new, &program, &options).unwrap());
    let old_path = cache.entry_path(&cache_key(&old, &program, &options).unwrap());
    for (from, to, from_path, to_path) in [(&old, &new, &old_path, &new_path), (&new, &old, &new_path, &old_path)] {
        cache.clear().unwrap();
        assert_eq!(cache.compile(from, &program, &options).unwrap().outcome, CacheOutcome::Miss);
        // The other plugin's executable under this plugin's key (a copied cache, a hash clash).
        std::fs::rename(from_path, to_path).unwrap();
        let cached = cache.compile(to, &program, &options).unwrap();
        assert_eq!(cached.outcome, CacheOutcome::Miss);
        assert_eq!(run_add(to, &cached.executable), [11., 22., 33., 44.]);
        let stored = Artifact::read(to_path).unwrap();
        assert_eq!(stored.header.plugin.api_version, to.plugin().api_version(), "the foreign entry was replaced");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn eviction_under_a_small_cap_keeps_the_most_recently_used() {
    let client = support::client("cpu", 1);
    let dir = temp_dir("evict");
    let options = CompileOptions::new();
    let probe = CompileCache::open(&dir).unwrap();
    probe.compile(&client, &scaled_add(1.0), &options).unwrap();
    let entry_size = probe.info().unwrap().bytes;
    probe.clear().unwrap();
    // Room for two entries (they differ by a few bytes at most), not three.
    let cache = CompileCache::open(&dir).unwrap().max_bytes(entry_size * 5 / 2);
    let path = |scale: f32| cache.entry_path(&cache_key(&client, &scaled_add(scale), &options).unwrap());
    let set_age = |p: &Path, seconds_ago: u64| {
        let file = std::fs::File::options().append(true).open(p).unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(seconds_ago)).unwrap();
    };
    for scale in [1.0, 2.0] {
        assert_eq!(cache.compile(&client, &scaled_add(scale), &options).unwrap().outcome, CacheOutcome::Miss);
    }
    set_age(&path(1.0), 200);
    set_age(&path(2.0), 100);
    // Using entry 1 makes it the newest, so entry 2 goes when entry 3 arrives.
    assert_eq!(cache.compile(&client, &scaled_add(1.0), &options).unwrap().outcome, CacheOutcome::Hit);
    assert_eq!(cache.compile(&client, &scaled_add(3.0), &options).unwrap().outcome, CacheOutcome::Miss);
    assert!(path(1.0).exists() && path(3.0).exists());
    assert!(!path(2.0).exists(), "the least recently used entry stayed");
    let info = cache.info().unwrap();
    assert_eq!(info.entries, 2);
    // A writer that died mid-write an hour ago left a temporary file: the next store sweeps it,
    // a fresh one (a live writer's) stays.
    let (stale, fresh) = (dir.join(".tmp-1-0-0-dead.pjrtx"), dir.join(".tmp-2-0-0-live.pjrtx"));
    std::fs::write(&stale, b"half").unwrap();
    std::fs::write(&fresh, b"half").unwrap();
    set_age(&stale, 7200);
    assert_eq!(cache.compile(&client, &scaled_add(5.0), &options).unwrap().outcome, CacheOutcome::Miss);
    assert!(!stale.exists() && fresh.exists());
    assert_eq!(cache.info().unwrap().entries, 2, "temporary files are not entries");
    assert!(info.bytes <= info.max_bytes, "{info:?}");
    // An executable bigger than the whole cap is compiled but not stored.
    let tiny = CompileCache::open(&dir).unwrap().max_bytes(100);
    let cached = tiny.compile(&client, &scaled_add(4.0), &options).unwrap();
    assert_eq!(cached.outcome, CacheOutcome::Miss);
    assert!(cached.note.unwrap().contains("cap"));
    assert_eq!(run_add(&client, &cached.executable), [14., 28., 42., 56.]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn concurrent_writers_do_not_corrupt_entries() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let dir = temp_dir(&format!("concurrent-{name}"));
        let options = CompileOptions::new();
        std::thread::scope(|s| {
            for t in 0..6 {
                let (client, dir, options) = (&client, &dir, &options);
                s.spawn(move || {
                    let cache = CompileCache::open(dir).unwrap();
                    for round in 0..3 {
                        // Threads share programs pairwise, so writers race on the same entries.
                        let scale = ((t + round) % 3) as f32 + 1.0;
                        let cached = cache.compile(client, &scaled_add(scale), options).unwrap();
                        assert_ne!(cached.outcome, CacheOutcome::Off, "{:?}", cached.note);
                        let want: Vec<f32> = (1..=4).map(|i| i as f32 * scale + 10.0 * i as f32).collect();
                        assert_eq!(run_add(client, &cached.executable), want);
                    }
                });
            }
        });
        let files = entries(&dir);
        assert_eq!(files.len(), 3, "{name}: left {files:?}");
        for file in files {
            Artifact::read(&file).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn artifacts_load_without_compiling_and_refuse_another_plugin() {
    let dir = temp_dir("artifact");
    let new = support::client("cpu", 1);
    let old = support::client("cpu-0.106", 1);
    let program = Program::mlir_text(support::ADD_F32).unwrap();
    let options = CompileOptions::new();
    for (made_by, other) in [(&new, &old), (&old, &new)] {
        let exe = made_by.compile(&program, &options).unwrap();
        let artifact = Artifact::from_loaded(made_by, &exe, &program, &options).unwrap();
        let path = dir.join("add.pjrt");
        artifact.write(&path).unwrap();
        assert!(artifact::is_artifact_file(&path));
        let read = Artifact::read(&path).unwrap();
        assert_eq!(read, artifact);
        assert_eq!((read.header.num_replicas, read.header.num_partitions, read.header.device_count), (1, 1, 1));
        read.check_compatible(made_by).unwrap();
        assert_eq!(run_add(made_by, &read.load(made_by).unwrap()), [11., 22., 33., 44.]);
        let e = read.load(other).unwrap_err().to_string();
        assert!(e.contains("the artifact was compiled for the cpu plugin"), "{e}");
        assert!(e.contains(&format!("API {}", made_by.plugin().api_version())), "{e}");
        assert!(
            e.contains(&format!(
                "this plugin is the cpu plugin (version cpu, xla_version 2, API {}",
                other.plugin().api_version()
            )),
            "{e}"
        );
        assert!(e.contains("recompile"), "{e}");
    }
    // Too few devices for the artifact: refused before loading.
    let two = support::client("cpu", 2);
    let exe = two.compile(&program, &CompileOptions::new().num_replicas(2)).unwrap();
    let artifact = Artifact::from_loaded(&two, &exe, &program, &CompileOptions::new().num_replicas(2)).unwrap();
    let e = artifact.load(&new).unwrap_err().to_string();
    assert!(e.contains("2 devices, but the client has 1"), "{e}");
    assert!(!artifact::is_artifact_file(dir.join("missing")));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn topology_artifacts_load_on_the_0_115_plugin() {
    let client = support::client("cpu", 2);
    let topology = client.topology().unwrap();
    let program = Program::mlir_text(support::ADD_F32).unwrap();
    let artifact =
        Artifact::compile_for_topology(client.plugin(), &topology, &program, &CompileOptions::new()).unwrap();
    assert_eq!(artifact.header.target, Target::Topology);
    assert_eq!(artifact.header.device_count, 2);
    let again = Artifact::from_bytes(&artifact.to_bytes()).unwrap();
    assert_eq!(run_add(&client, &again.load(&client).unwrap()), [11., 22., 33., 44.]);
    let old = support::client("cpu-0.106", 1);
    let e = Artifact::compile_for_topology(old.plugin(), &old.topology().unwrap(), &program, &CompileOptions::new())
        .unwrap_err();
    assert_eq!(e.code(), Some(pjrt_client::ErrorCode::NotFound), "{e}");
}

#[test]
fn a_plugin_that_cannot_serialize_compiles_without_caching() {
    // The fake plugin compiles (every executable adds two f32[4]); here its
    // PJRT_Executable_Serialize always fails.
    let fake = fake_support::Fake::with_sidecar("no-serialize", "working\nfail PJRT_Executable_Serialize\n");
    let client = Client::new(&fake.plugin(), &pjrt_client::ClientOptions::new()).unwrap();
    let dir = temp_dir("no-serialize");
    let cache = CompileCache::open(&dir).unwrap();
    let program = Program::mlir_text(support::ADD_F32).unwrap();
    for _ in 0..2 {
        let cached = cache.compile(&client, &program, &CompileOptions::new()).unwrap();
        assert_eq!(cached.outcome, CacheOutcome::Off);
        let note = cached.note.unwrap();
        assert!(note.contains("cannot serialize") && note.contains("injected failure"), "{note}");
        let x = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
        let out = cached
            .executable
            .execute(&[&x, &x], &ExecuteOptions::new().device(&client.addressable_devices()[0]))
            .unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), [2., 4., 6., 8.]);
    }
    assert_eq!(cache.info().unwrap().entries, 0);
    // Portable executables are never cached either.
    let portable = cache.compile(&client, &program, &CompileOptions::new().compile_portable_executable(true)).unwrap();
    assert_eq!(portable.outcome, CacheOutcome::Off);
    assert!(portable.note.unwrap().contains("portable"));
    std::fs::remove_dir_all(&dir).unwrap();

    // The same plugin serializing: a miss stores the entry, the next compile loads it.
    let fake = fake_support::Fake::new("working");
    let client = Client::new(&fake.plugin(), &pjrt_client::ClientOptions::new()).unwrap();
    let dir = temp_dir("fake-serialize");
    let cache = CompileCache::open(&dir).unwrap();
    let outcomes: Vec<CacheOutcome> =
        (0..2).map(|_| cache.compile(&client, &program, &CompileOptions::new()).unwrap().outcome).collect();
    assert_eq!(outcomes, [CacheOutcome::Miss, CacheOutcome::Hit]);
    assert_eq!(cache.info().unwrap().entries, 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_rebuilt_plugin_file_is_a_miss_and_a_copy_of_the_same_file_a_hit() {
    // Three copies of the fake plugin report the same versions; the key holds the file's content.
    let program = Program::mlir_text(support::ADD_F32).unwrap();
    let options = CompileOptions::new();
    let (first, same, rebuilt) =
        (fake_support::Fake::new("working"), fake_support::Fake::new("working"), fake_support::Fake::new("working"));
    // A rebuild with the same version strings: other bytes (appended, so the loaded code is untouched).
    std::fs::OpenOptions::new().append(true).open(&rebuilt.path).unwrap().write_all(b"rebuilt").unwrap();
    let key = |fake: &fake_support::Fake| {
        let client = Client::new(&fake.plugin(), &pjrt_client::ClientOptions::new()).unwrap();
        (cache_key(&client, &program, &options).unwrap(), client)
    };
    let ((k_first, c_first), (k_same, c_same), (k_rebuilt, c_rebuilt)) = (key(&first), key(&same), key(&rebuilt));
    assert_eq!(k_first, k_same, "another path with the same bytes is the same plugin");
    assert_ne!(k_first, k_rebuilt, "other bytes are another plugin");
    let dir = temp_dir("rebuilt-plugin");
    let cache = CompileCache::open(&dir).unwrap();
    let outcome = |client: &Client| cache.compile(client, &program, &options).unwrap().outcome;
    assert_eq!(outcome(&c_first), CacheOutcome::Miss);
    assert_eq!(outcome(&c_same), CacheOutcome::Hit);
    assert_eq!(outcome(&c_rebuilt), CacheOutcome::Miss);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_key_names_this_hosts_cpu_and_the_compile_environment() {
    let cpu = artifact::host_cpu();
    if std::path::Path::new("/proc/cpuinfo").is_file() && cfg!(target_arch = "x86_64") {
        assert!(cpu.contains("model name") && cpu.contains("flags"), "{cpu}");
    }
    assert_eq!(artifact::COMPILE_ENVIRONMENT, ["XLA_FLAGS", "NEURON_CC_FLAGS"]);
}
