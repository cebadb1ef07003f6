//! A server running on its own runtime and thread on a loopback port, and an HTTP client for it.

use std::path::PathBuf;
use std::sync::OnceLock;

use pjrt_client::{Client, ClientOptions, Plugin};
use pjrt_formats::npy::NpyArray;
use pjrt_serve::Server;
use serde_json::Value;

use crate::grpc_client::{self, GrpcAnswer};

/// One client of the default CPU plugin for every test (installed when missing).
pub fn client() -> Client {
    static CLIENT: OnceLock<Client> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            let found =
                pjrt_plugins::resolve_or_install(None, |line| eprintln!("{line}")).expect("the default CPU plugin");
            let plugin = Plugin::load(found.load_path()).expect("the plugin loads");
            Client::new(&plugin, &ClientOptions::new()).expect("a CPU client")
        })
        .clone()
}

/// A file of the repository's test data.
pub fn data(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data").join(path)
}

pub fn npy(path: &str) -> NpyArray {
    NpyArray::read(&data(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A new empty folder of this test process.
pub fn temp_dir(what: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "pjrt-serve-test-{}-{what}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A server serving HTTP and gRPC on 127.0.0.1 until dropped (then it shuts down gracefully).
pub struct Running {
    pub server: Server,
    base: String,
    grpc: String,
    agent: ureq::Agent,
    shutdown: Option<tokio::sync::watch::Sender<bool>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    pub fn start(server: Server) -> Running {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let (address_tx, address_rx) = std::sync::mpsc::channel();
        let serving = server.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let grpc = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                address_tx.send((listener.local_addr().unwrap(), grpc.local_addr().unwrap())).unwrap();
                let until = |mut stopped: tokio::sync::watch::Receiver<bool>| async move {
                    let _ = stopped.wait_for(|s| *s).await;
                };
                let grpc_server = serving.clone();
                let grpc_until = until(stopped.clone());
                let grpc_task = tokio::spawn(async move { grpc_server.serve_grpc(grpc, grpc_until).await });
                serving.serve(listener, until(stopped)).await.unwrap();
                grpc_task.await.unwrap().unwrap();
            });
        });
        let (address, grpc) = address_rx.recv().unwrap();
        let config = ureq::Agent::config_builder().http_status_as_error(false).build();
        Running {
            server,
            base: format!("http://{address}"),
            grpc: grpc.to_string(),
            agent: ureq::Agent::new_with_config(config),
            shutdown: Some(stop),
            thread: Some(thread),
        }
    }

    /// The gRPC port's address (`127.0.0.1:PORT`).
    pub fn grpc_address(&self) -> &str {
        &self.grpc
    }

    /// A unary gRPC call: `method` is the call's name (`ServerLive`), `message` its request.
    pub fn grpc(&self, method: &str, message: &impl prost::Message, headers: &[(&str, &str)]) -> GrpcAnswer {
        let method = format!("/inference.GRPCInferenceService/{method}");
        grpc_client::call(&self.grpc, &method, &message.encode_to_vec(), headers, std::time::Duration::from_secs(60))
            .unwrap()
    }

    fn read(mut response: ureq::http::Response<ureq::Body>) -> (u16, Option<usize>, Vec<u8>) {
        let status = response.status().as_u16();
        let header_length = response
            .headers()
            .get("inference-header-content-length")
            .map(|v| v.to_str().unwrap().parse::<usize>().unwrap());
        let body = response.body_mut().with_config().limit(1 << 30).read_to_vec().unwrap();
        (status, header_length, body)
    }

    fn json(status: u16, body: &[u8]) -> (u16, Value) {
        let value = if body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(body)
                .unwrap_or_else(|e| panic!("{status}: not JSON ({e}): {}", String::from_utf8_lossy(body)))
        };
        (status, value)
    }

    /// The server's address (`127.0.0.1:PORT`).
    pub fn address(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    pub fn get_json_with(&self, path: &str, headers: &[(&str, &str)]) -> (u16, Value) {
        let mut request = self.agent.get(format!("{}{path}", self.base));
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let (status, _, body) = Self::read(request.call().unwrap());
        Self::json(status, &body)
    }

    pub fn get_json(&self, path: &str) -> (u16, Value) {
        self.get_json_with(path, &[])
    }

    pub fn get_text(&self, path: &str) -> String {
        let (status, _, body) = Self::read(self.agent.get(format!("{}{path}", self.base)).call().unwrap());
        assert_eq!(status, 200);
        String::from_utf8(body).unwrap()
    }

    /// Posts `body` with `headers`: the status and the body as text.
    pub fn post_raw(&self, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
        let mut request = self.agent.post(format!("{}{path}", self.base));
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let (status, _, body) = Self::read(request.send(body).unwrap());
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    pub fn post_json(&self, path: &str, body: &Value) -> (u16, Value) {
        let (status, _, body) =
            Self::read(self.agent.post(format!("{}{path}", self.base)).send(body.to_string().as_bytes()).unwrap());
        Self::json(status, &body)
    }

    /// Posts a binary tensor data request (`header`, then `binary`): the status, the JSON part
    /// and the binary part of the answer.
    pub fn post_binary(&self, path: &str, header: &Value, binary: &[u8]) -> (u16, Value, Vec<u8>) {
        let header = header.to_string().into_bytes();
        let body = [header.clone(), binary.to_vec()].concat();
        let response = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("Inference-Header-Content-Length", header.len().to_string())
            .header("Content-Type", "application/octet-stream")
            .send(&body[..])
            .unwrap();
        let (status, header_length, body) = Self::read(response);
        let split = header_length.unwrap_or(body.len());
        let (status, json) = Self::json(status, &body[..split]);
        (status, json, body[split..].to_vec())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.shutdown.take() {
            let _ = stop.send(true);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
