//! `pjrt run` as one process of a multi-process (multi-host) job: the processes meet through an
//! etcd key-value store (`--kv-store etcd+https://HOST:PORT,...`, `--job-id`, `--process I/N`),
//! which the plugin also uses for its own exchange (topology, NCCL ids). Certificates and
//! credentials come from files named by flags or from `PJRT_ETCD_*` environment variables, never
//! from the command line itself.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::Error;
use pjrt_client::{Client, ClientOptions, KeyValueStore, KvError, Plugin};
use pjrt_etcd::{EtcdStore, TlsConfig};

use crate::cli::MultiProcessArgs;
use crate::plugins::plugin_is_cpu;
use crate::ui::invalid;

/// One process of a job: its store and place.
pub struct Job {
    /// The store, under the job's prefix.
    pub store: EtcdStore,
    /// The job's id.
    pub id: String,
    /// This process's index.
    pub process: i64,
    /// The job's process count.
    pub count: i64,
    /// How long the rendezvous took (every process joined).
    pub rendezvous_ms: f64,
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

fn kv_error(e: KvError) -> Error {
    pjrt_client::Error::Pjrt {
        function: "the etcd key-value store",
        code: e.code(),
        message: e.message().to_string(),
        payloads: Vec::new(),
    }
    .into()
}

/// Parses `I/N`.
fn parse_process(text: &str) -> Result<(i64, i64), Error> {
    let parsed =
        text.split_once('/').and_then(|(i, n)| Some((i.trim().parse::<i64>().ok()?, n.trim().parse::<i64>().ok()?)));
    match parsed {
        Some((i, n)) if n >= 1 && (0..n).contains(&i) => Ok((i, n)),
        _ => Err(invalid(format!("--process {text}: expected I/N with 0 <= I < N, e.g. 0/4"))),
    }
}

/// The store the arguments describe (connected: authenticated, lease granted), or `None`
/// without `--kv-store`.
pub fn connect(args: &MultiProcessArgs) -> Result<Option<Job>, Error> {
    let Some(url) = &args.kv_store else { return Ok(None) };
    let (job_id, process) = match (&args.job_id, &args.process) {
        (Some(j), Some(p)) => (j, p),
        _ => return Err(invalid("--kv-store needs --job-id ID and --process I/N")),
    };
    if job_id.is_empty() || job_id.contains(['/', '\0']) {
        return Err(invalid(format!("--job-id {job_id:?}: give a non-empty id without '/'")));
    }
    let (process, count) = parse_process(process)?;
    let (scheme, hosts) = url
        .split_once("://")
        .ok_or_else(|| invalid(format!("--kv-store {url}: expected etcd+https://HOST:PORT[,HOST:PORT...]")))?;
    let mut builder = EtcdStore::builder().prefix(format!("jobs/{job_id}/"));
    let scheme = match scheme {
        "etcd+https" => "https",
        "etcd+http" => {
            builder = builder.allow_plain_http(); // the user chose plain HTTP by its scheme
            "http"
        }
        _ => {
            return Err(invalid(format!(
                "--kv-store {url}: the only store is etcd: etcd+https://HOST:PORT[,...] (or etcd+http:// for plain \
                 HTTP on a trusted network)"
            )))
        }
    };
    for host in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
        builder = builder.endpoint(format!("{scheme}://{host}"));
    }
    let ca = args.etcd_ca.clone().or_else(|| env_path("PJRT_ETCD_CA"));
    let cert = args.etcd_cert.clone().or_else(|| env_path("PJRT_ETCD_CERT"));
    let key = args.etcd_key.clone().or_else(|| env_path("PJRT_ETCD_KEY"));
    match (&ca, &cert, &key) {
        (Some(ca), Some(cert), Some(key)) => {
            builder = builder.tls(TlsConfig::from_pem_files(ca, Some((cert, key))).map_err(kv_error)?)
        }
        (Some(ca), None, None) => builder = builder.tls(TlsConfig::from_ca_file(ca).map_err(kv_error)?),
        (None, None, None) if scheme == "http" => {}
        (None, _, _) => {
            return Err(invalid(
                "--kv-store etcd+https needs the CA bundle that signs the etcd members' certificates: --etcd-ca FILE \
                 or PJRT_ETCD_CA",
            ))
        }
        _ => return Err(invalid("a client certificate needs its key and vice versa: give both --etcd-cert and --etcd-key (or PJRT_ETCD_CERT and PJRT_ETCD_KEY)")),
    }
    let user = args.etcd_user.clone().or_else(|| std::env::var("PJRT_ETCD_USER").ok().filter(|u| !u.is_empty()));
    if let Some(user) = user {
        builder = builder.credentials(user, password(args)?);
    }
    let store = builder.lease_ttl(Duration::from_secs(args.kv_lease_ttl.max(1))).connect().map_err(kv_error)?;
    // Rendezvous: every process announces itself, then waits for all the others.
    let started = Instant::now();
    let timeout = Duration::from_secs(args.kv_timeout);
    store.put(&format!("pjrt-run/joined/{process}"), b"").map_err(kv_error)?;
    for other in 0..count {
        store.get(&format!("pjrt-run/joined/{other}"), timeout).map_err(|e| {
            kv_error(KvError::new(
                e.code(),
                format!("process {other} of job {job_id} did not join within {timeout:?}: {}", e.message()),
            ))
        })?;
    }
    let rendezvous_ms = started.elapsed().as_secs_f64() * 1e3;
    Ok(Some(Job { store, id: job_id.clone(), process, count, rendezvous_ms }))
}

/// The password: PJRT_ETCD_PASSWORD, else the file of --etcd-password-file or
/// PJRT_ETCD_PASSWORD_FILE (its first line).
fn password(args: &MultiProcessArgs) -> Result<String, Error> {
    if let Some(file) = args.etcd_password_file.clone().or_else(|| env_path("PJRT_ETCD_PASSWORD_FILE")) {
        return read_password(&file);
    }
    match std::env::var("PJRT_ETCD_PASSWORD") {
        Ok(p) if !p.is_empty() => Ok(p),
        _ => Err(invalid(
            "an etcd user was given without a password: set PJRT_ETCD_PASSWORD, or name a file with \
             --etcd-password-file / PJRT_ETCD_PASSWORD_FILE",
        )),
    }
}

fn read_password(file: &Path) -> Result<String, Error> {
    let text =
        std::fs::read_to_string(file).map_err(|e| pjrt_client::Error::Io { path: file.to_path_buf(), source: e })?;
    Ok(text.lines().next().unwrap_or("").to_string())
}

/// The client of one process of `job`: the plugin's exchange goes through its store.
pub fn client(plugin: &Plugin, devices: i64, job: &Job) -> Result<Client, Error> {
    let mut options = ClientOptions::new();
    if devices > 1 && plugin_is_cpu(plugin) {
        options = options.cpu_device_count(devices);
    }
    Ok(Client::builder(plugin).options(options).kv_store(job.store.clone()).process(job.process, job.count).build()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_and_store_arguments() {
        assert_eq!(parse_process("1/4").unwrap(), (1, 4));
        for bad in ["4/4", "-1/2", "1", "a/b", "0/0"] {
            assert!(parse_process(bad).is_err(), "{bad}");
        }
        let args = |url: &str| MultiProcessArgs {
            kv_store: Some(url.into()),
            job_id: Some("j".into()),
            process: Some("0/1".into()),
            ..Default::default()
        };
        let message = |a: &MultiProcessArgs| connect(a).err().unwrap().to_string();
        assert!(message(&args("redis://h:1")).contains("the only store is etcd"));
        assert!(message(&args("etcd+https://127.0.0.1:1")).contains("--etcd-ca"));
        let mut a = args("etcd+https://127.0.0.1:1");
        a.job_id = Some("a/b".into());
        assert!(message(&a).contains("--job-id"));
    }
}
