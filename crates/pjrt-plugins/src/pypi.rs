//! Finding and downloading a pinned wheel without Python: from a PEP 503 "simple" package index
//! over HTTPS (rustls, trusting the system's certificates plus `SSL_CERT_FILE` and `PIP_CERT`,
//! through `HTTPS_PROXY` unless `NO_PROXY` says otherwise), from a folder of wheels, or from
//! wheel files the user names.
//!
//! The simple index, not PyPI's JSON API: it is what `PIP_INDEX_URL` names (private mirrors
//! such as devpi, Artifactory or Nexus serve it), it carries each file's SHA-256 in its links,
//! and some proxies pass it but not the JSON API.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::trust::hex;

/// The largest wheel we download (the CUDA plugins' are about 300 MB).
/// Where [`install_from`](crate::install_from) looks for a plugin's wheels.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WheelSource {
    /// A PEP 503 "simple" package index, such as `https://pypi.org/simple` or what
    /// `PIP_INDEX_URL` names. Each wheel is checked against the SHA-256 in the index's link.
    Index(String),
    /// A folder of wheel files, like pip's `PIP_FIND_LINKS`.
    Folder(PathBuf),
    /// Wheel files the user has (`pjrt plugin install cpu --wheel FILE`).
    Files(Vec<PathBuf>),
}

const MAX_WHEEL_BYTES: u64 = 4 << 30;
/// The largest index page we read.
const MAX_PAGE_BYTES: u64 = 16 << 20;

/// A PEP 503 project name: lowercase, runs of `-`, `_`, `.` as one `-`.
pub(crate) fn normalized(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// Whether `filename` is a wheel of `package` at `version` that runs on this machine.
pub(crate) fn wheel_matches(filename: &str, package: &str, version: &str) -> bool {
    let Some(stem) = filename.strip_suffix(".whl") else { return false };
    let parts: Vec<&str> = stem.split('-').collect();
    if parts.len() < 5 || normalized(parts[0]) != normalized(package) || parts[1] != version {
        return false;
    }
    let platform = parts[parts.len() - 1];
    platform.split('.').any(platform_tag_fits)
}

/// Whether a wheel platform tag fits this machine.
fn platform_tag_fits(tag: &str) -> bool {
    if tag == "any" {
        return true;
    }
    let arch = std::env::consts::ARCH;
    match std::env::consts::OS {
        "linux" => tag.starts_with("manylinux") && tag.ends_with(arch),
        "macos" => {
            let arch = if arch == "aarch64" { "arm64" } else { arch };
            tag.starts_with("macosx") && (tag.ends_with(arch) || tag.ends_with("universal2"))
        }
        _ => false,
    }
}

/// A wheel found in an index page: where to get it and the SHA-256 the index gives.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Link {
    pub url: String,
    pub filename: String,
    pub sha256: Option<String>,
}

/// The links of a PEP 503 project page, resolved against the page's URL.
pub(crate) fn parse_simple_page(page_url: &str, html: &str) -> Vec<Link> {
    let mut links = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find("href=") {
        rest = &rest[at + 5..];
        let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else { continue };
        let Some(end) = rest[1..].find(quote) else { break };
        let href = rest[1..1 + end].replace("&amp;", "&");
        rest = &rest[1 + end..];
        let (location, fragment) = href.split_once('#').unwrap_or((&href, ""));
        let filename = location.rsplit('/').next().unwrap_or("").to_owned();
        let sha256 = fragment.strip_prefix("sha256=").map(|h| h.to_ascii_lowercase());
        links.push(Link { url: join_url(page_url, location), filename, sha256 });
    }
    links
}

/// `href` resolved against `base` (absolute, scheme-relative, host-relative or relative).
fn join_url(base: &str, href: &str) -> String {
    if href.contains("://") {
        return href.to_owned();
    }
    let (scheme, after) = base.split_once("://").unwrap_or(("https", base));
    if let Some(rest) = href.strip_prefix("//") {
        return format!("{scheme}://{rest}");
    }
    let host_end = after.find('/').unwrap_or(after.len());
    let (host, path) = after.split_at(host_end);
    if href.starts_with('/') {
        return format!("{scheme}://{host}{href}");
    }
    let mut segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if !path.ends_with('/') {
        segments.pop();
    }
    for part in href.split('/') {
        match part {
            "." | "" => {}
            ".." => {
                segments.pop();
            }
            other => segments.push(other),
        }
    }
    format!("{scheme}://{host}/{}", segments.join("/"))
}

/// The HTTPS client: rustls with ring, the system's roots (or `SSL_CERT_FILE`/`SSL_CERT_DIR`,
/// which `rustls-native-certs` reads instead when set) plus the bundles named by
/// `SSL_CERT_FILE` and `PIP_CERT`, and the proxy of `HTTPS_PROXY`/`ALL_PROXY` minus `NO_PROXY`.
pub(crate) fn new_agent() -> Result<ureq::Agent, String> {
    use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig, TlsProvider};
    let mut roots: Vec<Certificate<'static>> = Vec::new();
    let native = rustls_native_certs::load_native_certs();
    roots.extend(native.certs.iter().map(|der| Certificate::from_der(der.as_ref()).to_owned()));
    for variable in ["SSL_CERT_FILE", "PIP_CERT"] {
        let Some(path) = std::env::var_os(variable).filter(|p| !p.is_empty()) else { continue };
        let pem = std::fs::read(&path)
            .map_err(|e| format!("cannot read the certificates of {variable}={}: {e}", Path::new(&path).display()))?;
        for item in ureq::tls::parse_pem(&pem) {
            if let Ok(PemItem::Certificate(cert)) = item {
                roots.push(cert);
            }
        }
    }
    if roots.is_empty() {
        return Err("no trusted certificates found (system store, SSL_CERT_FILE, PIP_CERT); set SSL_CERT_FILE to a \
                    PEM bundle"
            .to_owned());
    }
    let tls = TlsConfig::builder()
        .provider(TlsProvider::Rustls)
        .root_certs(RootCerts::Specific(Arc::new(roots)))
        .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .build();
    let config = ureq::Agent::config_builder()
        .tls_config(tls)
        .proxy(ureq::Proxy::try_from_env())
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_recv_response(Some(Duration::from_secs(120)))
        .build();
    Ok(ureq::Agent::new_with_config(config))
}

/// Finds the wheel of `package==version` for this machine in `source`; downloads it into
/// `downloads` when it comes from an index. Returns the local file and, for a download, the
/// SHA-256 it was checked against.
pub(crate) fn obtain(
    source: &WheelSource,
    package: &str,
    version: &str,
    downloads: &Path,
    agent: &mut Option<ureq::Agent>,
    log: &mut dyn FnMut(&str),
) -> Result<Option<PathBuf>, String> {
    match source {
        WheelSource::Files(files) => Ok(files
            .iter()
            .find(|f| f.file_name().and_then(|n| n.to_str()).is_some_and(|n| wheel_matches(n, package, version)))
            .cloned()),
        WheelSource::Folder(dir) => {
            let Ok(entries) = std::fs::read_dir(dir) else { return Ok(None) };
            let mut names: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            names.sort();
            Ok(names
                .into_iter()
                .find(|f| f.file_name().and_then(|n| n.to_str()).is_some_and(|n| wheel_matches(n, package, version))))
        }
        WheelSource::Index(base) => {
            if agent.is_none() {
                *agent = Some(new_agent()?);
            }
            let agent = agent.as_ref().expect("set above");
            let page_url = format!("{}/{}/", base.trim_end_matches('/'), normalized(package));
            let mut response =
                agent.get(&page_url).call().map_err(|e| format!("cannot read the package index {page_url}: {e}"))?;
            if response.status() == 404 {
                return Ok(None);
            }
            if response.status() != 200 {
                return Err(format!("the package index {page_url} answered HTTP {}", response.status()));
            }
            let html = response
                .body_mut()
                .with_config()
                .limit(MAX_PAGE_BYTES)
                .read_to_string()
                .map_err(|e| format!("cannot read the package index {page_url}: {e}"))?;
            let Some(link) =
                parse_simple_page(&page_url, &html).into_iter().find(|l| wheel_matches(&l.filename, package, version))
            else {
                return Ok(None);
            };
            let target = downloads.join(format!("{}-{version}.whl", normalized(package)));
            log(&format!("downloading {}", link.url));
            download(agent, &link, &target)?;
            Ok(Some(target))
        }
    }
}

/// Downloads `link` to `target`, checking its length and the index's SHA-256. A download cut
/// off half way or with another hash fails (and leaves `target` for the caller to remove).
fn download(agent: &ureq::Agent, link: &Link, target: &Path) -> Result<(), String> {
    let Some(expected) = &link.sha256 else {
        return Err(format!("the index gives no SHA-256 for {}; refusing to download it unchecked", link.url));
    };
    let mut response = agent.get(&link.url).call().map_err(|e| format!("cannot download {}: {e}", link.url))?;
    if response.status() != 200 {
        return Err(format!("downloading {} answered HTTP {}", link.url, response.status()));
    }
    let length = response.body().content_length();
    let mut reader = response.body_mut().with_config().limit(MAX_WHEEL_BYTES).reader();
    let mut out = std::fs::File::create(target).map_err(|e| format!("cannot create {}: {e}", target.display()))?;
    let mut hasher = Sha256::new();
    let mut chunk = vec![0u8; 1 << 20];
    let mut received = 0u64;
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(n) => n,
            Err(e) => {
                return Err(format!(
                    "the download of {} was cut off after {received} bytes ({e}); nothing was installed, try again",
                    link.url
                ))
            }
        };
        if n == 0 {
            break;
        }
        received += n as u64;
        hasher.update(&chunk[..n]);
        out.write_all(&chunk[..n]).map_err(|e| format!("cannot write {}: {e}", target.display()))?;
    }
    if let Some(length) = length.filter(|l| *l != received) {
        return Err(format!(
            "the download of {} was cut off after {received} of {length} bytes; nothing was installed, try again",
            link.url
        ));
    }
    let digest = hex(&hasher.finalize());
    if &digest != expected {
        return Err(format!(
            "SHA-256 mismatch for {}: the index says {expected}, got {digest}; refusing to use it",
            link.url
        ));
    }
    out.sync_all().map_err(|e| format!("cannot write {}: {e}", target.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_wheel_files_match_as_pip_does() {
        assert_eq!(normalized("Jax_CUDA12.pjrt"), "jax-cuda12-pjrt");
        let arch = std::env::consts::ARCH;
        let name = format!("lammps_jax_pjrt_cpu-0.11.2-py3-none-manylinux_2_27_{arch}.whl");
        assert_eq!(wheel_matches(&name, "lammps-jax-pjrt-cpu", "0.11.2"), cfg!(target_os = "linux"));
        assert!(!wheel_matches(&name, "lammps-jax-pjrt-cpu", "0.11.1"));
        assert!(!wheel_matches("lammps_jax_pjrt_cpu-0.11.2-py3-none-win_amd64.whl", "lammps-jax-pjrt-cpu", "0.11.2"));
        assert!(wheel_matches("x-1.0-py3-none-any.whl", "x", "1.0"));
    }

    #[test]
    fn simple_index_links_are_resolved_with_their_hashes() {
        let html = r#"<a href="../../files/x-1.0-py3-none-any.whl#sha256=ABCD">x</a><br/>
            <a href='https://cdn.example/x-2.0-py3-none-any.whl'>y</a> <a href="/p/x-3.0-py3-none-any.whl#md5=00">z</a>"#;
        let links = parse_simple_page("https://idx.example/simple/x/", html);
        assert_eq!(links[0].url, "https://idx.example/files/x-1.0-py3-none-any.whl");
        assert_eq!(links[0].sha256.as_deref(), Some("abcd"));
        assert_eq!(links[1].url, "https://cdn.example/x-2.0-py3-none-any.whl");
        assert_eq!(links[1].sha256, None);
        assert_eq!(links[2].url, "https://idx.example/p/x-3.0-py3-none-any.whl");
        assert_eq!(links[2].filename, "x-3.0-py3-none-any.whl");
    }
}
