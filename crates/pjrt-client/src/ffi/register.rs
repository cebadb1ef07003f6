//! Registering handlers on a client's plugin, each registration proven by compiling a probe
//! program.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::client::Client;
use crate::compile_options::CompileOptions;
use crate::error::{Error, RegistrationErrorKind, Result};
use crate::program::Program;
use crate::sys::xla_ffi as x;

use super::handler::{Handler, HandlerInner};
use super::trampoline::{self, MAX_HANDLERS};

/// The XLA platform name handlers of a client's platform are registered for: `Host` for `cpu`,
/// `CUDA` for `cuda`, `ROCM` for `rocm`, the platform name itself otherwise.
///
/// ```
/// assert_eq!(pjrt_client::ffi::xla_platform("cpu"), "Host");
/// assert_eq!(pjrt_client::ffi::xla_platform("cuda"), "CUDA");
/// ```
pub fn xla_platform(pjrt_platform: &str) -> String {
    match pjrt_platform {
        "cpu" | "host" => "Host".to_owned(),
        "cuda" | "gpu" => "CUDA".to_owned(),
        "rocm" => "ROCM".to_owned(),
        other => other.to_owned(),
    }
}

/// (plugin table address, target, platform).
type RegistryKey = (usize, String, String);

/// What holds a registered name.
#[derive(Clone)]
pub(crate) enum Identity {
    /// A handler of this process's copy of this crate.
    Ours(Arc<HandlerInner>),
    /// An entry point of a handler library (its address), and the library.
    Library(usize, std::path::PathBuf),
    /// A handler registered otherwise (found by the probe), left in place for a built-in one.
    Elsewhere,
}

impl Identity {
    fn same(&self, other: &Identity) -> bool {
        match (self, other) {
            (Identity::Ours(a), Identity::Ours(b)) => Arc::ptr_eq(a, b),
            (Identity::Library(a, _), Identity::Library(b, _)) => a == b,
            _ => false,
        }
    }

    fn describe(&self) -> String {
        match self {
            Identity::Ours(h) => format!("the handler `{}`", h.name),
            Identity::Library(_, path) => format!("a handler of the library {}", path.display()),
            Identity::Elsewhere => "a handler not registered through pjrt_client::ffi".to_owned(),
        }
    }
}

/// What this process registered: per plugin table, per (target, platform), the handler.
fn registry() -> &'static Mutex<HashMap<RegistryKey, Identity>> {
    static REGISTRY: OnceLock<Mutex<HashMap<RegistryKey, Identity>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// The one-op program that proves a registration: it calls `target` with no operands (the
/// handler never runs; compiling is what finds it). Target names are limited to ASCII letters,
/// digits, `_`, `.`, `-` and `$`.
///
/// ```
/// let probe = pjrt_client::ffi::probe_program("my_op")?;
/// assert!(probe.text().unwrap().contains("stablehlo.custom_call @\"my_op\"()"));
/// assert!(pjrt_client::ffi::probe_program("my op").is_err());
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub fn probe_program(target: &str) -> Result<Program> {
    if target.is_empty() || !target.chars().all(|c| c.is_ascii_alphanumeric() || "_.-$".contains(c)) {
        return Err(Error::InvalidArgument(format!(
            "the custom-call target {target:?} must be non-empty ASCII letters, digits, `_`, `.`, `-` or `$`"
        )));
    }
    Program::mlir_text(format!(
        "module @pjrt_ffi_probe {{\n  func.func public @main() {{\n    stablehlo.custom_call @\"{target}\"() \
         {{api_version = 4 : i32, has_side_effect = true}} : () -> ()\n    return\n  }}\n}}\n"
    ))
}

/// Registers `handler` for the custom-call target `target` on the client's plugin, for the
/// client's platform ([`xla_platform`]). See the module docs, "Registration": once per loaded
/// plugin, refused for a different handler, proven by compiling a probe program.
///
/// ```
/// use pjrt_client::ffi::{self, Call, Handler, Signature};
/// use pjrt_client::{Client, ClientOptions, CompileOptions, Plugin};
/// # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// let client = Client::new(&plugin, &ClientOptions::new())?;
/// let probe = ffi::probe_program("doc_register_example")?;
/// assert!(client.compile(&probe, &CompileOptions::new()).is_err()); // no handler yet
/// ffi::register(&client, "doc_register_example", &Handler::new("noop", Signature::new(), |_: &Call| Ok(())))?;
/// client.compile(&probe, &CompileOptions::new())?; // found now, by every client of the plugin
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub fn register(client: &Client, target: &str, handler: &Handler) -> Result<()> {
    register_for_platform(client, target, &xla_platform(client.platform_name()), handler)
}

/// [`register`] for an explicit XLA platform name (`Host`, `CUDA`, ...).
///
/// ```
/// use pjrt_client::ffi::{self, Call, Handler, Signature};
/// use pjrt_client::{Client, ClientOptions, Plugin};
/// # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// let client = Client::new(&plugin, &ClientOptions::new())?;
/// let noop = Handler::new("noop", Signature::new(), |_: &Call| Ok(()));
/// ffi::register_for_platform(&client, "doc_platform_example", "Host", &noop)?;
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub fn register_for_platform(client: &Client, target: &str, platform: &str, handler: &Handler) -> Result<()> {
    register_entry(client, target, platform, Identity::Ours(handler.inner.clone()), false, || {
        trampoline::claim(handler.inner.clone())
    })
}

/// [`register`] for a built-in handler (what a [`BuiltinProvider`](super::BuiltinProvider) registers): a name some other
/// handler holds already (a plugin built with its own, a handler library) is left to it, and
/// this returns `Ok` without registering.
///
/// ```
/// use pjrt_client::ffi::{self, Call, Handler, Signature};
/// use pjrt_client::{Client, ClientOptions, CompileOptions, Plugin};
/// # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// let client = Client::new(&plugin, &ClientOptions::new())?;
/// let noop = Handler::new("noop", Signature::new(), |_: &Call| Ok(()));
/// ffi::register(&client, "doc_builtin_example", &noop)?;
/// // Another handler for the same name: an error for `register`, left alone here.
/// let other = Handler::new("other", Signature::new(), |_: &Call| Ok(()));
/// assert!(ffi::register(&client, "doc_builtin_example", &other).is_err());
/// ffi::register_builtin(&client, "doc_builtin_example", &other)?;
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub fn register_builtin(client: &Client, target: &str, handler: &Handler) -> Result<()> {
    let platform = xla_platform(client.platform_name());
    register_entry(client, target, &platform, Identity::Ours(handler.inner.clone()), true, || {
        trampoline::claim(handler.inner.clone())
    })
}

/// Where an entry point comes from: claimed only when it is about to be registered.
pub(crate) trait EntrySource {
    fn entry(self) -> Option<x::XLA_FFI_Handler>;
}

impl EntrySource for x::XLA_FFI_Handler {
    fn entry(self) -> Option<x::XLA_FFI_Handler> {
        Some(self)
    }
}

impl<F: FnOnce() -> Option<x::XLA_FFI_Handler>> EntrySource for F {
    fn entry(self) -> Option<x::XLA_FFI_Handler> {
        self()
    }
}

pub(crate) fn register_entry(
    client: &Client,
    target: &str,
    platform: &str,
    identity: Identity,
    theirs_is_fine: bool,
    entry: impl EntrySource,
) -> Result<()> {
    let probe = probe_program(target)?;
    let plugin = client.plugin();
    let key = (plugin.raw_api() as usize, target.to_owned(), platform.to_owned());
    let fail = |kind: RegistrationErrorKind, message: String| Error::FfiRegistration {
        target: target.to_owned(),
        platform: platform.to_owned(),
        kind,
        message,
    };
    // Held across probing and registering: two threads never register the same target at once.
    let mut registered = registry().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(existing) = registered.get(&key) {
        // A built-in handler defers to whatever holds the name.
        if theirs_is_fine || existing.same(&identity) {
            return Ok(());
        }
        return Err(fail(
            RegistrationErrorKind::Conflict,
            format!("{} is registered for it on this plugin already", existing.describe()),
        ));
    }
    let ffi = plugin
        .ffi_extension()
        .ok_or_else(|| fail(RegistrationErrorKind::NoFfiExtension, "the plugin has no FFI extension".into()))?;
    let options = CompileOptions::new();
    // Probes compile without `Client::compile`'s own registration of built-in handlers.
    if client.compile_program(&probe, &options).is_ok() {
        if theirs_is_fine {
            registered.insert(key, Identity::Elsewhere);
            return Ok(());
        }
        return Err(fail(
            RegistrationErrorKind::TakenElsewhere,
            "a program calling it compiles before registering: a handler not registered through pjrt_client::ffi \
             holds the name (the plugin's registry is permanent); choose another target name"
                .into(),
        ));
    }
    let entry = entry.entry().ok_or_else(|| {
        fail(RegistrationErrorKind::NoFreeSlot, format!("{MAX_HANDLERS} handlers are registered already"))
    })?;
    // SAFETY: `entry` is an `XLA_FFI_Handler` that stays callable for the process (a function of
    // this crate, or of a handler library that is never unloaded) and reads frames as the XLA
    // FFI ABI describes them, of any FFI 0.x version.
    unsafe { ffi.register_handler(target, platform, entry as *mut std::ffi::c_void, false) }.map_err(|e| match e {
        Error::Unsupported { .. } => fail(RegistrationErrorKind::NoFfiExtension, e.to_string()),
        other => other,
    })?;
    if let Err(e) = client.compile_program(&probe, &options) {
        return Err(fail(
            RegistrationErrorKind::NotProven,
            format!("the plugin answered OK, but a program calling it does not compile: {e}"),
        ));
    }
    registered.insert(key, identity);
    Ok(())
}
