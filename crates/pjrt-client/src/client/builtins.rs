//! Providers of built-in custom-call handlers ([`BuiltinProvider`], public as
//! `pjrt_client::ffi::BuiltinProvider`): what [`Client::compile`] and
//! [`Client::deserialize_and_load`] consult before the plugin sees a program, so the handlers the
//! program calls are registered first. The providers live above this crate (the crate
//! pjrt-lapack's, for JAX's LAPACK kernels, is one) and are installed for one client
//! ([`crate::ClientOptions::builtin_provider`]) or for the process ([`add_provider`]).
//!
//! A program that calls a target of a family whose handlers come from a provider (JAX's LAPACK
//! kernels, `lapack_*_ffi`) with none installed that has it, and that the plugin then refuses,
//! gets [`Error::MissingBuiltinProvider`], which names the line that installs the provider.

use std::fmt;
use std::sync::{Arc, RwLock};

use crate::client::Client;
use crate::error::{Error, Result};

/// A provider of built-in handlers of custom calls: for each program compiled
/// ([`Client::compile`]) or loaded ([`Client::deserialize_and_load`]), it registers the handlers
/// of the targets the program calls (with `pjrt_client::ffi::register_builtin`) before the plugin
/// sees it. Install one for a client with [`crate::ClientOptions::builtin_provider`], or for the
/// process with [`add_provider`].
///
/// Handlers are registered on the plugin, for every client of it (a plugin's registry is global
/// and permanent): a provider decides when a handler is registered, not who may call it.
///
/// ```
/// use std::sync::Arc;
/// use pjrt_client::ffi::{self, BuiltinProvider, Call, Handler, Rank, Signature};
/// use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Program};
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
///
/// /// `doc_twice`: y = 2x on f32 vectors, registered when a program calls it.
/// struct Twice(Handler);
///
/// impl BuiltinProvider for Twice {
///     fn name(&self) -> &str {
///         "doc-twice"
///     }
///     fn provides(&self, target: &str) -> bool {
///         target == "doc_twice"
///     }
///     fn prepare(&self, client: &Client, code: &[u8]) -> pjrt_client::Result<()> {
///         if code.windows(b"doc_twice".len()).any(|w| w == b"doc_twice") {
///             ffi::register_builtin(client, "doc_twice", &self.0)?;
///         }
///         Ok(())
///     }
/// }
///
/// let signature = Signature::new().arg::<f32>(Rank::Exact(1)).ret::<f32>(Rank::Exact(1));
/// let twice = Handler::new("doc_twice", signature, |call: &Call| {
///     let x = call.arg::<f32>(0)?;
///     call.ret::<f32>(0)?.copy_from_iter(x.as_slice().iter().map(|v| 2.0 * v));
///     Ok(())
/// });
/// let client = Client::new(&plugin, &ClientOptions::new().builtin_provider(Arc::new(Twice(twice))))?;
/// let program = Program::mlir_text(r#"
/// func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {
///   %y = stablehlo.custom_call @doc_twice(%x) {api_version = 4 : i32} : (tensor<3xf32>) -> tensor<3xf32>
///   return %y : tensor<3xf32>
/// }"#)?;
/// let exe = client.compile(&program, &CompileOptions::new())?; // registers doc_twice first
/// let x = client.upload(&[1.0f32, 2.0, 3.0], &[3])?;
/// assert_eq!(exe.execute(&[&x], &ExecuteOptions::new())?[0].to_vec::<f32>()?, [2.0, 4.0, 6.0]);
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub trait BuiltinProvider: Send + Sync {
    /// A short name, for messages and to tell providers apart (`"pjrt-lapack"`): a client or the
    /// process holds one provider of each name.
    fn name(&self) -> &str;

    /// Whether `target` is a custom-call target this provider has a handler for.
    fn provides(&self, target: &str) -> bool;

    /// Registers on `client`'s plugin the handlers of the targets that `code` calls (MLIR text or
    /// bytecode, HLO, or a serialized executable: the bytes the plugin is about to be given), and
    /// refuses what it knows cannot run with an error; both before the plugin sees `code`.
    /// Called for every compile and load, so a program that calls none of its targets should
    /// cost little (a scan of the bytes).
    fn prepare(&self, client: &Client, code: &[u8]) -> Result<()>;
}

/// The providers installed for the process ([`add_provider`]), in order.
static PROCESS: RwLock<Vec<Arc<dyn BuiltinProvider>>> = RwLock::new(Vec::new());

/// Installs `provider` for every client of the process (after the providers of each client's
/// own options). Returns whether it was installed: `false` when one of the same
/// [`BuiltinProvider::name`] is installed already, which is kept. Installation is for good.
///
/// ```
/// use std::sync::Arc;
/// use pjrt_client::ffi::{self, BuiltinProvider};
/// struct Nothing;
/// impl BuiltinProvider for Nothing {
///     fn name(&self) -> &str { "doc-nothing" }
///     fn provides(&self, _: &str) -> bool { false }
///     fn prepare(&self, _: &pjrt_client::Client, _: &[u8]) -> pjrt_client::Result<()> { Ok(()) }
/// }
/// assert!(ffi::add_provider(Arc::new(Nothing)));
/// assert!(!ffi::add_provider(Arc::new(Nothing))); // one per name
/// assert!(ffi::providers().contains(&"doc-nothing".to_owned()));
/// ```
pub fn add_provider(provider: Arc<dyn BuiltinProvider>) -> bool {
    let mut installed = PROCESS.write().unwrap_or_else(|p| p.into_inner());
    if installed.iter().any(|p| p.name() == provider.name()) {
        return false;
    }
    installed.push(provider);
    true
}

/// The names of the providers installed for the process ([`add_provider`]), in order.
///
/// ```
/// // Nothing installs a provider by itself: this crate has none of its own.
/// assert!(pjrt_client::ffi::providers().is_empty());
/// ```
pub fn providers() -> Vec<String> {
    PROCESS.read().unwrap_or_else(|p| p.into_inner()).iter().map(|p| p.name().to_owned()).collect()
}

/// The providers a client consults: its own, then the process's of other names.
fn consulted(client: &Client) -> Vec<Arc<dyn BuiltinProvider>> {
    let own = client.builtin_providers();
    let process = PROCESS.read().unwrap_or_else(|p| p.into_inner());
    let mut all = own.to_vec();
    all.extend(process.iter().filter(|p| !own.iter().any(|o| o.name() == p.name())).cloned());
    all
}

/// Lets every provider the client consults prepare `code` (see [`BuiltinProvider::prepare`]).
pub(crate) fn prepare(client: &Client, code: &[u8]) -> Result<()> {
    for provider in consulted(client) {
        provider.prepare(client, code)?;
    }
    Ok(())
}

/// A family of custom calls whose handlers come from a provider: how its targets are named, on
/// which platform, what they are, and the line that installs the provider.
struct Family {
    platform: &'static str,
    prefix: &'static str,
    suffix: &'static str,
    what: &'static str,
    line: &'static str,
}

const FAMILIES: &[Family] = &[Family {
    platform: "cpu",
    prefix: "lapack_",
    suffix: "_ffi",
    what: "one of JAX's LAPACK kernels (jnp.linalg and jax.scipy.linalg on CPU)",
    line: "pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()))",
}];

/// `error`, the plugin's refusal of `code`, as [`Error::MissingBuiltinProvider`] when it names a
/// target of a [`FAMILIES`] member that `code` calls and no provider the client consults has.
pub(crate) fn explain_failure(client: &Client, code: &[u8], error: Error) -> Error {
    let Error::Pjrt { message, .. } = &error else { return error };
    let providers = consulted(client);
    for family in FAMILIES.iter().filter(|f| f.platform == client.platform_name()) {
        let missing = identifiers_with_prefix(code, family.prefix)
            .filter(|name| name.ends_with(family.suffix) && message.contains(name))
            .find(|name| !providers.iter().any(|p| p.provides(name)));
        if let Some(target) = missing {
            return Error::MissingBuiltinProvider {
                target: target.to_owned(),
                what: family.what,
                line: family.line,
                plugin_error: Box::new(error),
            };
        }
    }
    error
}

/// The identifiers (ASCII letters, digits, `_`) in `bytes` that start with `prefix`.
fn identifiers_with_prefix<'a>(bytes: &'a [u8], prefix: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() {
            let start = at;
            let rest = &bytes[start..];
            if !rest.starts_with(prefix.as_bytes()) || (start > 0 && is_ident(bytes[start - 1])) {
                at += 1;
                continue;
            }
            let len = rest.iter().take_while(|&&b| is_ident(b)).count();
            at += len;
            // ASCII only: always UTF-8.
            return std::str::from_utf8(&rest[..len]).ok();
        }
        None
    })
}

/// The providers of one client's options, shown by name.
#[derive(Clone, Default)]
pub(crate) struct Providers(pub(crate) Vec<Arc<dyn BuiltinProvider>>);

impl fmt::Debug for Providers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.iter().map(|p| p.name())).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_start_at_a_boundary() {
        let code = b"@lapack_sgetrf_ffi(%a) xlapack_dgetrf_ffi \"lapack_zheevd_ffi\"\0lapack_";
        let found: Vec<&str> = identifiers_with_prefix(code, "lapack_").collect();
        assert_eq!(found, ["lapack_sgetrf_ffi", "lapack_zheevd_ffi", "lapack_"]);
    }
}
