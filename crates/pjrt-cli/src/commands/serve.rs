//! `pjrt serve`: the models of a repository folder and of `--model` specs, served over HTTP
//! with the Open Inference Protocol (`pjrt_serve`) until SIGINT or SIGTERM, then drained.

use std::io::Write as _;
use std::time::{Duration, Instant};

use pjrt_client::Client;
use pjrt_serve::{Server, ServerOptions};

use crate::cli::ServeArgs;
use crate::error::Error;
use crate::out::outln;
use crate::plugins::resolve_plugin;
use crate::ui::invalid;

/// `pjrt serve`: loads the models (those that fail are reported, the others served), prints
/// the address once ready, serves until a shutdown signal. A model that fails to load does not
/// stop the server (unlike Triton's default `--exit-on-error`): it keeps serving the others and,
/// with `--strict-readiness` (the default), answers not ready until the model loads or a client
/// unloads it.
pub fn exec(args: &ServeArgs) -> Result<(), Error> {
    let started = Instant::now();
    if args.repository.is_none() && args.models.is_empty() {
        return Err(invalid("give a model repository folder or --model NAME=PATH (or both)"));
    }
    let token = match &args.token_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| pjrt_client::Error::Io { path: path.clone(), source: e })?
                .trim()
                .to_string(),
        ),
        None => std::env::var("PJRT_SERVE_TOKEN").ok().filter(|t| !t.is_empty()),
    };
    if token.as_deref() == Some("") {
        return Err(invalid("the token file is empty"));
    }
    let plugin = resolve_plugin(&args.plugin)?;
    // On a CPU plugin the client has as many devices as replicas, and executions run on its own threads
    // (asynchronous=false), as many at once as --concurrent-executions: measured faster than
    // the plugin's defaults for small and large models alike (docs/serving.md).
    let mut client_options = args.client_options.clone();
    if crate::plugins::plugin_is_cpu(&plugin) {
        let devices = args.replicas.max(1).to_string();
        for (name, default) in [("cpu_device_count", devices.as_str()), ("asynchronous", "false")] {
            if !client_options.iter().any(|o| o.split('=').next() == Some(name)) {
                client_options.push(format!("{name}={default}"));
            }
        }
    }
    let client = Client::new(&plugin, &crate::plugins::client_options(&client_options)?)?;
    let mut options =
        ServerOptions::default().with_max_queue(args.max_queue).with_max_body_bytes(args.max_body_mib << 20);
    options = options.with_max_inflight_bytes(args.max_inflight_mib.saturating_mul(1 << 20));
    options.queue_timeout = Duration::from_millis(args.queue_timeout_ms);
    options.header_timeout = Duration::from_millis(args.header_timeout_ms.max(1));
    options.body_timeout = Duration::from_millis(args.body_timeout_ms.max(1));
    return_large_buffers_to_the_os();
    // Every connection is a file descriptor: the soft limit goes up to the hard one, and the
    // connection bound stays under it (with room for the plugin's and the cache's files).
    let open_files = raise_open_files_limit();
    options.max_connections = args.max_connections.max(1);
    if let Some(limit) = open_files {
        let room = usize::try_from(limit.saturating_sub(FILES_BESIDE_CONNECTIONS)).unwrap_or(usize::MAX).max(1);
        if options.max_connections > room {
            crate::ui::log_line(&format!(
                "note: --max-connections {} lowered to {room}: the open-file limit is {limit} (ulimit -n)",
                options.max_connections
            ));
            options.max_connections = room;
        }
    }
    if let Some(n) = args.concurrent_executions {
        options.concurrent_executions = n.max(1);
    }
    options = options.with_replicas(args.replicas);
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        options.tls = Some(pjrt_serve::TlsConfig::from_pem_files(cert, key)?);
    }
    let scheme = if options.tls.is_some() { ("https", "grpcs") } else { ("http", "grpc") };
    options.token = token;
    options.open_health_and_metrics = args.open_health_and_metrics;
    options.model_control = args.model_control == "explicit";
    options.strict_readiness = args.strict_readiness;
    options.shared_memory = args.shared_memory;
    options.log = Some(crate::ui::log_line);
    if let Some(repository) = &args.repository {
        options = options.with_repository(repository);
    }
    if !args.no_cache {
        options.compile_cache = pjrt_formats::compile_cache::CompileCache::default_dir();
    }
    let server = Server::new(client, options);
    let mut failed = Vec::new();
    if let Some(repository) = &args.repository {
        failed.extend(server.load_repository(repository)?);
    }
    for config in &args.models {
        if let Err(e) = server.load(config.clone()) {
            failed.push(e);
        }
    }
    for e in &failed {
        crate::ui::log_line(&format!("error: {e}"));
    }
    for model in server.models() {
        let inputs: Vec<String> =
            model.inputs().iter().map(|i| format!("{} {}{:?}", i.name, i.datatype, i.shape)).collect();
        crate::ui::log_line(&format!(
            "loaded {} (version {}) from {} in {:.1} ms (warm-up {:.1} ms): {}",
            model.name(),
            model.version(),
            model.program_path().display(),
            model.load_ms(),
            model.warmup_ms(),
            inputs.join(", ")
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| invalid(format!("the server's runtime did not start: {e}")))?;
    runtime.block_on(async {
        let bind = |port: u16| {
            let address = format!("{}:{port}", args.host);
            async move {
                let listener = tokio::net::TcpListener::bind(&address)
                    .await
                    .map_err(|e| invalid(format!("cannot listen on {address}: {e}")))?;
                let bound = listener.local_addr().map_err(|e| invalid(format!("{address}: {e}")))?;
                Ok::<_, Error>((listener, bound))
            }
        };
        let (http, http_address) = bind(args.port).await?;
        let grpc = if args.no_grpc { None } else { Some(bind(args.grpc_port).await?) };
        // One signal stops both servers.
        let (stop, stopped) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            shutdown_signal().await;
            let _ = stop.send(true);
        });
        let until_stopped = move || {
            let mut stopped = stopped.clone();
            async move {
                let _ = stopped.wait_for(|s| *s).await;
            }
        };
        let grpc_task = grpc.as_ref().map(|(_, address)| format!(" and {}://{address}", scheme.1)).unwrap_or_default();
        outln!(
            "serving {} model(s) on {}://{http_address}{grpc_task} (ready in {:.1} ms; {} failed to load)",
            server.models().len(),
            scheme.0,
            started.elapsed().as_secs_f64() * 1e3,
            failed.len()
        )?;
        let _ = std::io::stdout().flush();
        let grpc_server = grpc.map(|(listener, _)| {
            let server = server.clone();
            let until = until_stopped();
            tokio::spawn(async move { server.serve_grpc(listener, until).await })
        });
        server.serve(http, until_stopped()).await.map_err(|e| invalid(format!("the server failed: {e}")))?;
        if let Some(task) = grpc_server {
            task.await.map_err(|e| invalid(format!("the gRPC server failed: {e}")))??;
        }
        crate::ui::log_line("shut down: requests in flight were answered");
        Ok(())
    })
}

/// File descriptors kept for what is not a connection: the plugin's, the compile cache's, the
/// listeners, the runtime's.
const FILES_BESIDE_CONNECTIONS: u64 = 128;

/// Raises the soft limit of open files (`RLIMIT_NOFILE`) to the hard one: the new soft limit,
/// or `None` where it cannot be read.
#[allow(clippy::unnecessary_cast)] // (rlim_t is u64 on Linux, not everywhere)
fn raise_open_files_limit() -> Option<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the rlimit we pass, which lives through the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    // An unlimited hard limit is still bounded by the kernel's (fs.nr_open, 2^20 by default).
    for wanted in [limit.rlim_max, limit.rlim_max.min(1 << 20)] {
        if wanted <= limit.rlim_cur {
            break;
        }
        let raised = libc::rlimit { rlim_cur: wanted, rlim_max: limit.rlim_max };
        // SAFETY: setrlimit reads the rlimit we pass; raising a soft limit up to the hard one
        // needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Some(wanted as u64);
        }
    }
    Some(limit.rlim_cur as u64)
}

/// Request bodies and tensors are large buffers that come and go: glibc's allocator would keep
/// what they freed (its mmap threshold rises with each large free, up to 32 MiB), so the
/// server's resident memory would follow the sum of past requests, not the budget of those in
/// flight. A fixed threshold of 256 KiB maps each large buffer on its own and unmaps it when it
/// is freed.
fn return_large_buffers_to_the_os() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tuning parameter of the allocator; called before the server's
    // threads start.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 10);
    }
}

/// SIGINT (Ctrl-C) or SIGTERM, whichever comes first.
async fn shutdown_signal() {
    let (tx, rx) = tokio::sync::mpsc::channel::<()>(2);
    let on_interrupt = tx.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            let _ = on_interrupt.send(()).await;
        }
    });
    #[cfg(unix)]
    if let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        tokio::spawn(async move {
            term.recv().await;
            let _ = tx.send(()).await;
        });
    }
    let mut rx = rx;
    rx.recv().await;
}
