//! `pjrt run --kv-store etcd+https://...`: two processes of one job meet through an etcd member
//! of the test's own (mutual TLS, the job's user limited to its prefix); certificates and the
//! password come from PJRT_ETCD_* variables and a password file, never from the command line.

use std::time::Duration;

use pjrt_client::KeyValueStore;
use pjrt_etcd::{EtcdStore, TlsConfig};

use crate::common::{pjrt_configured, stderr, temp_dir};

#[path = "../../../pjrt-etcd/tests/etcd/cluster.rs"]
mod cluster;
use cluster::{Cluster, JOB_PASSWORD, JOB_USER};

#[test]
fn two_run_processes_meet_through_etcd_over_mutual_tls() {
    let cluster = Cluster::start(1, true);
    cluster.enable_auth();
    let certs = cluster.certs.as_ref().unwrap();
    let password_file = cluster.dir.join("job-password");
    std::fs::write(&password_file, format!("{JOB_PASSWORD}\n")).unwrap();
    let hostport = cluster.members[0].client_url.trim_start_matches("https://").to_string();
    let kv_store = format!("etcd+https://{hostport}");
    let run = |process: usize, extra_env: &[(&str, &str)]| {
        let out_dir = temp_dir(&format!("etcd-run-{process}"));
        let out_str = out_dir.to_string_lossy().into_owned();
        let process_arg = format!("{process}/2");
        let args = [
            "run",
            "examples/mlp/train_step.mlir",
            "--plugin",
            "cpu",
            "--json",
            "--output-dir",
            &out_str,
            "--kv-store",
            &kv_store,
            "--job-id",
            "job-1",
            "--process",
            &process_arg,
            "--kv-timeout",
            "60",
            "--input",
            "examples/mlp/b1.npy",
            "examples/mlp/b2.npy",
            "examples/mlp/w1.npy",
            "examples/mlp/w2.npy",
            "examples/mlp/x.npy",
            "examples/mlp/y.npy",
        ]
        .map(String::from);
        let env: Vec<(String, String)> = [
            ("PJRT_ETCD_CA", certs.ca.display().to_string()),
            ("PJRT_ETCD_CERT", certs.client_cert.display().to_string()),
            ("PJRT_ETCD_KEY", certs.client_key.display().to_string()),
            ("PJRT_ETCD_USER", JOB_USER.to_string()),
            ("PJRT_ETCD_PASSWORD_FILE", password_file.display().to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .chain(extra_env.iter().map(|(k, v)| (k.to_string(), v.to_string())))
        .collect();
        std::thread::spawn(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            pjrt_configured(&args, |c| {
                c.envs(env.iter().map(|(k, v)| (k, v)));
            })
        })
    };
    let runs = [run(0, &[]), run(1, &[])];
    let mut rendezvous = Vec::new();
    for (i, r) in runs.into_iter().enumerate() {
        let out = r.join().unwrap();
        assert!(out.status.success(), "process {i}: {}", stderr(&out));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
        assert_eq!(report["process"]["index"], i, "{report}");
        assert_eq!(report["process"]["count"], 2);
        assert_eq!(report["process"]["process_index"], i, "the plugin took the process index");
        assert_eq!(report["outputs"].as_array().unwrap().len(), 5);
        rendezvous.push(report["process"]["rendezvous_ms"].as_f64().unwrap());
    }
    eprintln!("MEASURED pjrt run: 2 processes joined in {rendezvous:?} ms");
    // Both processes' keys are in etcd under jobs/job-1/ (held by their leases for 60 s).
    let store = EtcdStore::builder()
        .endpoint(&cluster.members[0].client_url)
        .tls(TlsConfig::from_pem_files(&certs.ca, Some((&certs.client_cert, &certs.client_key))).unwrap())
        .credentials(JOB_USER, JOB_PASSWORD)
        .prefix("jobs/job-1/")
        .without_lease()
        .connect()
        .unwrap();
    for i in 0..2 {
        assert!(store.get(&format!("pjrt-run/joined/{i}"), Duration::from_secs(5)).is_ok());
    }
    // A wrong password fails with a clear error, and no secret on the command line is needed or shown.
    let wrong = cluster.dir.join("wrong-password");
    std::fs::write(&wrong, "nope\n").unwrap();
    let out = run(0, &[("PJRT_ETCD_PASSWORD_FILE", wrong.to_str().unwrap())]).join().unwrap();
    assert!(!out.status.success());
    let message = stderr(&out);
    assert!(message.contains("refused the password") && message.contains(JOB_USER), "{message}");
    assert!(!message.contains(JOB_PASSWORD), "{message}");
    // A job id whose prefix the user's role does not grant.
    let out = pjrt_configured(
        &["run", "examples/mlp/train_step.mlir", "--kv-store", &kv_store, "--job-id", "job-2", "--process", "0/1"],
        |c| {
            c.env("PJRT_ETCD_CA", &certs.ca)
                .env("PJRT_ETCD_CERT", &certs.client_cert)
                .env("PJRT_ETCD_KEY", &certs.client_key)
                .env("PJRT_ETCD_USER", JOB_USER)
                .env("PJRT_ETCD_PASSWORD_FILE", &password_file);
        },
    );
    assert!(!out.status.success());
    let message = stderr(&out);
    assert!(message.contains("jobs/job-2/") && message.contains("grant-permission"), "{message}");
}
