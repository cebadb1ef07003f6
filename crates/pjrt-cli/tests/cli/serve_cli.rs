//! `pjrt serve`: the CNN and the shape-polymorphic transformer answer over HTTP (JSON and
//! binary tensors) what `pjrt run` writes, with two replicas; `pjrt bench serve` measures it;
//! SIGTERM shuts the server down cleanly.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use pjrt_formats::npy::NpyArray;
use serde_json::{json, Value};

use crate::common::{pjrt, root, temp_dir};

/// What `pjrt run MODEL --input ...` writes as out0.npy.
fn pjrt_run_output(model: &str, inputs: &[String], name: &str) -> NpyArray {
    let out = temp_dir(&format!("serve-run-{name}"));
    let mut args = vec!["run", model];
    for input in inputs {
        args.extend(["--input", input.as_str()]);
    }
    args.extend(["--output-dir", out.to_str().unwrap()]);
    let run = pjrt(&args);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    NpyArray::read(&out.join("out0.npy")).unwrap()
}

fn tensor(name: &str, a: &NpyArray, binary: bool) -> Value {
    if binary {
        json!({ "name": name, "datatype": "FP32", "shape": a.dims, "parameters": { "binary_data_size": a.data.len() } })
    } else {
        json!({ "name": name, "datatype": "FP32", "shape": a.dims, "data": a.to_vec::<f32>().unwrap() })
    }
}

#[test]
fn served_models_answer_what_pjrt_run_writes_and_sigterm_drains() {
    let cnn_dir = "tests/data/jax_export/jax-0.10.2/cnn";
    let tfm_dir = "tests/data/jax_export/symbolic/jax-0.10.2/transformer/ok1";
    let cnn_inputs: Vec<String> = (0..4).map(|i| format!("{cnn_dir}/in{i}.npy")).collect();
    let tfm_inputs: Vec<String> = (0..13).map(|i| format!("{tfm_dir}/in{i}.npy")).collect();
    // (pjrt run first: it installs the plugins the server then finds.)
    let cnn_expected = pjrt_run_output(&format!("{cnn_dir}/model.jaxexport"), &cnn_inputs, "cnn");
    let tfm_model = "tests/data/jax_export/symbolic/jax-0.10.2/transformer/model.jaxexport";
    let tfm_expected = pjrt_run_output(tfm_model, &tfm_inputs, "tfm");

    let cache = temp_dir("serve-cache");
    let mut child = Command::new(env!("CARGO_BIN_EXE_pjrt"))
        .args([
            "serve",
            "--port",
            "0",
            "--grpc-port",
            "0",
            // Two devices from one queue: the answers do not depend on which one runs them.
            "--replicas",
            "2",
            "--model",
            &format!("cnn={cnn_dir}/model.jaxexport"),
            "--model",
        ])
        .arg(format!("tfm={tfm_model}"))
        .current_dir(root())
        .env("PJRT_CACHE_DIR", &cache)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.starts_with("serving 2 model(s) on http://"), "{line:?}");
    let base = line.split_whitespace().find(|w| w.starts_with("http://")).unwrap().to_string();
    let agent = ureq::Agent::new_with_config(ureq::Agent::config_builder().http_status_as_error(false).build());

    // The CNN in JSON.
    let read = |p: &String| NpyArray::read(&root().join(p)).unwrap();
    let inputs: Vec<Value> =
        cnn_inputs.iter().enumerate().map(|(i, p)| tensor(&format!("input{i}"), &read(p), false)).collect();
    let mut response =
        agent.post(format!("{base}/v2/models/cnn/infer")).send(json!({ "inputs": inputs }).to_string()).unwrap();
    let answer: Value = serde_json::from_slice(&response.body_mut().read_to_vec().unwrap()).unwrap();
    let data: Vec<f32> =
        answer["outputs"][0]["data"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
    assert_eq!(answer["outputs"][0]["shape"], json!(cnn_expected.dims));
    assert_eq!(data, cnn_expected.to_vec::<f32>().unwrap());

    // The transformer (symbolic batch and length) with binary tensors both ways.
    let arrays: Vec<NpyArray> = tfm_inputs.iter().map(read).collect();
    let header = json!({
        "inputs": arrays.iter().enumerate().map(|(i, a)| tensor(&format!("input{i}"), a, true)).collect::<Vec<_>>(),
        "parameters": { "binary_data_output": true },
    })
    .to_string();
    let mut body = header.clone().into_bytes();
    for a in &arrays {
        body.extend_from_slice(&a.data);
    }
    let mut response = agent
        .post(format!("{base}/v2/models/tfm/infer"))
        .header("Inference-Header-Content-Length", header.len().to_string())
        .send(&body[..])
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let json_length: usize = response.headers()["inference-header-content-length"].to_str().unwrap().parse().unwrap();
    let bytes = response.body_mut().with_config().limit(1 << 30).read_to_vec().unwrap();
    let answer: Value = serde_json::from_slice(&bytes[..json_length]).unwrap();
    assert_eq!(answer["outputs"][0]["shape"], json!(tfm_expected.dims));
    assert_eq!(&bytes[json_length..], &tfm_expected.data[..]);

    let (status, _) = {
        let mut r = agent.get(format!("{base}/v2/models/tfm")).call().unwrap();
        (r.status().as_u16(), r.body_mut().read_to_string().unwrap())
    };
    assert_eq!(status, 200);

    // The load generator against it: two levels, every request answered.
    let mut args = vec![
        "bench",
        "--json",
        "serve",
        "--url",
        base.as_str(),
        "--model",
        "cnn",
        "--concurrency",
        "1,2",
        "--requests",
        "20",
    ];
    for input in &cnn_inputs {
        args.extend(["--input", input.as_str()]);
    }
    let bench = pjrt(&args);
    assert!(bench.status.success(), "{}", String::from_utf8_lossy(&bench.stderr));
    let report: Value = serde_json::from_slice(&bench.stdout).unwrap();
    let levels = report["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2, "{report}");
    assert!(
        levels.iter().all(|l| l["throughput_rps"].as_f64().unwrap() > 0.0 && l["p99_ms"].as_f64().unwrap() > 0.0),
        "{report}"
    );

    // SIGTERM: a clean exit.
    // SAFETY: kill(2) on the pid of a child this test spawned and has not yet waited for.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) }, 0);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("loaded cnn (version 1)"), "{stderr}");
    assert!(stderr.contains("shut down"), "{stderr}");
}

#[test]
fn serve_without_models_is_a_usage_error() {
    let out = pjrt(&["serve"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("give a model repository"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn serve_over_tls_with_a_certificate_file() {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let dir = temp_dir("serve-tls");
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let issuer = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap().signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.join("cert.pem"), leaf.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), key.serialize_pem()).unwrap();
    pjrt(&["plugin", "list"]); // (installs the plugins first)
    let mut child = Command::new(env!("CARGO_BIN_EXE_pjrt"))
        .args([
            "serve",
            "--port",
            "0",
            "--no-grpc",
            "--model",
            "cnn=tests/data/jax_export/jax-0.10.2/cnn/model.jaxexport",
        ])
        .arg("--tls-cert")
        .arg(dir.join("cert.pem"))
        .arg("--tls-key")
        .arg(dir.join("key.pem"))
        .current_dir(root())
        .env("PJRT_CACHE_DIR", dir.join("cache"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("serving 1 model(s) on https://"), "{line:?}");
    let base = line.split_whitespace().find(|w| w.starts_with("https://")).unwrap().to_string();
    use ureq::tls::{Certificate, RootCerts, TlsConfig, TlsProvider};
    let tls = TlsConfig::builder()
        .provider(TlsProvider::Rustls)
        .root_certs(RootCerts::new_with_certs(&[Certificate::from_pem(issuer.pem().as_bytes()).unwrap()]))
        .unversioned_rustls_crypto_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
        .build();
    let agent = ureq::Agent::new_with_config(ureq::Agent::config_builder().tls_config(tls).proxy(None).build());
    let status = agent.get(format!("{base}/v2/models/cnn/ready")).call().unwrap().status().as_u16();
    // SAFETY: kill(2) on the pid of a child this test spawned and has not yet waited for.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(status, 200);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A model that fails to load does not stop `pjrt serve`: it serves the others and answers not
/// ready (503 `{"ready": false}`, as Triton's --strict-readiness), unless started with
/// `--strict-readiness false`.
#[test]
fn a_model_that_fails_to_load_makes_serve_not_ready_unless_told_otherwise() {
    let repo = temp_dir("serve-readiness");
    let cache = temp_dir("serve-readiness-cache");
    std::fs::create_dir_all(repo.join("cnn")).unwrap();
    let cnn = root().join("tests/data/jax_export/jax-0.10.2/cnn/model.jaxexport");
    std::fs::copy(cnn, repo.join("cnn/model.jaxexport")).unwrap();
    std::fs::create_dir_all(repo.join("broken")).unwrap();
    std::fs::write(repo.join("broken/model.jaxexport"), b"not a model").unwrap();
    pjrt(&["plugin", "list"]); // (installs the plugins first)
    let agent = ureq::Agent::new_with_config(ureq::Agent::config_builder().http_status_as_error(false).build());
    for (strict, want) in [(None, (503, false)), (Some("false"), (200, true))] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_pjrt"));
        command.args(["serve", "--port", "0", "--no-grpc"]).arg(&repo);
        if let Some(strict) = strict {
            command.args(["--strict-readiness", strict]);
        }
        let mut child = command
            .current_dir(root())
            .env("PJRT_CACHE_DIR", &cache)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let base = line.split_whitespace().find(|w| w.starts_with("http://")).map(str::to_string);
        let get = |path: &str| {
            let mut response = agent.get(format!("{}{path}", base.as_deref().unwrap_or_default())).call().unwrap();
            let body: Value = serde_json::from_slice(&response.body_mut().read_to_vec().unwrap()).unwrap();
            (response.status().as_u16(), body)
        };
        let answers = base.as_ref().map(|_| (get("/v2/health/ready"), get("/v2/models/cnn/ready").0));
        // SAFETY: kill(2) on the pid of a child this test spawned and has not yet waited for.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(line.starts_with("serving 1 model(s) on http://") && line.contains("1 failed to load"), "{line:?}");
        let ((status, ready), cnn) = answers.unwrap();
        assert_eq!((status, ready["ready"].as_bool()), (want.0, Some(want.1)), "{strict:?}: {ready}");
        assert_eq!(cnn, 200, "{strict:?}");
        assert!(out.status.success() && stderr.contains("\"broken\""), "{stderr}");
    }
}
