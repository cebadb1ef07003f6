//! Providers of built-in handlers (`pjrt_client::ffi::BuiltinProvider`) on both CPU plugins:
//! `Client::compile` and `deserialize_and_load` let a client's providers and the process's
//! prepare a program before the plugin sees it, a provider's refusal stops the compile, and a
//! program calling one of JAX's LAPACK kernels with no provider of them is refused with the line
//! that installs one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use pjrt_client::ffi::{self, BuiltinProvider, Call, Handler, Rank, Signature};
use pjrt_client::{Client, ClientOptions, CompileOptions, Error, ExecuteOptions, Program};

use crate::support;

/// A provider of one target, `y = x + 1` on f32 vectors, that counts the programs it prepares,
/// and of those the ones that call its target.
struct PlusOne {
    name: String,
    target: String,
    handler: Handler,
    prepared: AtomicUsize,
    calling: AtomicUsize,
}

impl PlusOne {
    fn new(name: &str, target: &str) -> Arc<PlusOne> {
        let signature = Signature::new().arg::<f32>(Rank::Any).ret::<f32>(Rank::Any);
        let handler = Handler::new(target, signature, |call: &Call| {
            let x = call.arg::<f32>(0)?;
            call.ret::<f32>(0)?.copy_from_iter(x.as_slice().iter().map(|v| v + 1.0));
            Ok(())
        });
        let (prepared, calling) = (AtomicUsize::new(0), AtomicUsize::new(0));
        Arc::new(PlusOne { name: name.into(), target: target.into(), handler, prepared, calling })
    }
}

impl BuiltinProvider for PlusOne {
    fn name(&self) -> &str {
        &self.name
    }

    fn provides(&self, target: &str) -> bool {
        target == self.target
    }

    fn prepare(&self, client: &Client, code: &[u8]) -> pjrt_client::Result<()> {
        self.prepared.fetch_add(1, Ordering::SeqCst);
        if code.windows(self.target.len()).any(|w| w == self.target.as_bytes()) {
            self.calling.fetch_add(1, Ordering::SeqCst);
            ffi::register_builtin(client, &self.target, &self.handler)?;
        }
        Ok(())
    }
}

fn calling(target: &str) -> Program {
    Program::mlir_text(format!(
        "func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {{\n  %y = stablehlo.custom_call @{target}(%x) \
         {{api_version = 4 : i32}} : (tensor<3xf32>) -> tensor<3xf32>\n  return %y : tensor<3xf32>\n}}"
    ))
    .unwrap()
}

fn run_plus_one(client: &Client, exe: &pjrt_client::LoadedExecutable) -> Vec<f32> {
    let x = client.upload(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    exe.execute(&[&x], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap()
}

#[test]
fn a_client_s_provider_registers_what_its_programs_call() {
    for plugin in support::PLUGINS {
        let target = format!("pjrt_test_provider_client_{}", plugin.replace(['-', '.'], "_"));
        let provider = PlusOne::new("test-plus-one", &target);
        let options = ClientOptions::new().builtin_provider(provider.clone());
        let client = Client::new(&support::plugin(plugin), &options).unwrap();
        // A program that calls nothing of it: prepared, nothing registered.
        let add = Program::mlir_text(support::ADD_F32).unwrap();
        client.compile(&add, &CompileOptions::new()).unwrap();
        assert_eq!(provider.prepared.load(Ordering::SeqCst), 1, "{plugin}");
        let exe = client.compile(&calling(&target), &CompileOptions::new()).unwrap();
        assert_eq!(provider.prepared.load(Ordering::SeqCst), 2, "{plugin}");
        assert_eq!(run_plus_one(&client, &exe), [2.0, 3.0, 4.0], "{plugin}");
        // Loading a serialized executable consults it too.
        let bytes = exe.serialize().unwrap();
        let again = client.deserialize_and_load(&bytes).unwrap();
        assert_eq!(provider.prepared.load(Ordering::SeqCst), 3, "{plugin}");
        assert_eq!(run_plus_one(&client, &again), [2.0, 3.0, 4.0], "{plugin}");
    }
}

#[test]
fn a_client_without_the_provider_does_not_consult_it() {
    for plugin in support::PLUGINS {
        let target = format!("pjrt_test_provider_absent_{}", plugin.replace(['-', '.'], "_"));
        let provider = PlusOne::new("test-plus-one-absent", &target);
        let with =
            Client::new(&support::plugin(plugin), &ClientOptions::new().builtin_provider(provider.clone())).unwrap();
        let without = support::client(plugin, 1);
        // Before any registration, the plain client's compile fails at the plugin, unprepared.
        let e = without.compile(&calling(&target), &CompileOptions::new()).unwrap_err();
        assert!(matches!(e, Error::Pjrt { .. }), "{plugin}: {e}");
        assert!(e.to_string().contains(&target), "{plugin}: {e}");
        assert_eq!(provider.prepared.load(Ordering::SeqCst), 0, "{plugin}");
        // Registered through the other client, the handler is the plugin's, for every client.
        with.compile(&calling(&target), &CompileOptions::new()).unwrap();
        let exe = without.compile(&calling(&target), &CompileOptions::new()).unwrap();
        assert_eq!(run_plus_one(&without, &exe), [2.0, 3.0, 4.0], "{plugin}");
        assert_eq!(provider.prepared.load(Ordering::SeqCst), 1, "{plugin}");
    }
}

#[test]
fn a_process_provider_serves_every_client_once_per_name() {
    let target = "pjrt_test_provider_process";
    let provider = PlusOne::new("test-plus-one-process", target);
    assert!(ffi::add_provider(provider.clone()));
    assert!(!ffi::add_provider(PlusOne::new("test-plus-one-process", "pjrt_test_provider_process_other")));
    assert!(ffi::providers().contains(&"test-plus-one-process".to_owned()));
    for plugin in support::PLUGINS {
        let client = support::client(plugin, 1);
        let exe = client.compile(&calling(target), &CompileOptions::new()).unwrap();
        assert_eq!(run_plus_one(&client, &exe), [2.0, 3.0, 4.0], "{plugin}");
    }
    // A client's own provider of the same name is consulted instead of the process's.
    let own = PlusOne::new("test-plus-one-process", target);
    let client = Client::new(&support::plugin("cpu"), &ClientOptions::new().builtin_provider(own.clone())).unwrap();
    // (Other tests' compiles consult the process's provider too: count the programs calling it.)
    let before = provider.calling.load(Ordering::SeqCst);
    assert_eq!(before, support::PLUGINS.len());
    client.compile(&calling(target), &CompileOptions::new()).unwrap();
    assert_eq!((own.calling.load(Ordering::SeqCst), provider.calling.load(Ordering::SeqCst)), (1, before));
}

/// Refuses every program that names `forbidden`.
struct Refuser;

impl BuiltinProvider for Refuser {
    fn name(&self) -> &str {
        "test-refuser"
    }

    fn provides(&self, _: &str) -> bool {
        false
    }

    fn prepare(&self, _: &Client, code: &[u8]) -> pjrt_client::Result<()> {
        if code.windows(9).any(|w| w == b"forbidden") {
            return Err(Error::UnsupportedCustomCall { target: "forbidden".into(), advice: "is refused by the test" });
        }
        Ok(())
    }
}

#[test]
fn a_provider_s_refusal_stops_the_compile() {
    for plugin in support::PLUGINS {
        let client =
            Client::new(&support::plugin(plugin), &ClientOptions::new().builtin_provider(Arc::new(Refuser))).unwrap();
        let e = client.compile(&calling("forbidden"), &CompileOptions::new()).unwrap_err();
        assert!(matches!(&e, Error::UnsupportedCustomCall { target, .. } if target == "forbidden"), "{plugin}: {e}");
        client.compile(&Program::mlir_text(support::ADD_F32).unwrap(), &CompileOptions::new()).unwrap();
    }
}

/// What `jnp.linalg.cholesky` lowers to on CPU (its custom call).
const CHOLESKY: &str = r#"
func.func public @main(%a: tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<i32>) {
  %l, %info = stablehlo.custom_call @lapack_dpotrf_ffi(%a) {api_version = 4 : i32,
      mhlo.backend_config = {uplo = 76 : ui8},
      operand_layouts = [dense<[0, 1]> : tensor<2xindex>],
      result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]}
      : (tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<i32>)
  return %l, %info : tensor<2x2xf64>, tensor<i32>
}"#;

#[test]
fn a_lapack_target_without_a_provider_is_refused_with_the_line_that_installs_one() {
    // This test binary has no LAPACK provider: pjrt-client has none of its own.
    assert!(!ffi::providers().contains(&"pjrt-lapack".to_owned()));
    for plugin in support::PLUGINS {
        let client = support::client(plugin, 1);
        let e = client.compile(&Program::mlir_text(CHOLESKY).unwrap(), &CompileOptions::new()).unwrap_err();
        let Error::MissingBuiltinProvider { target, line, plugin_error, .. } = &e else { panic!("{plugin}: {e}") };
        assert_eq!(target, "lapack_dpotrf_ffi", "{plugin}");
        assert_eq!(*line, "pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()))");
        assert!(matches!(**plugin_error, Error::Pjrt { .. }), "{plugin}: the plugin's refusal is kept: {e}");
        assert!(e.to_string().contains(line) && e.to_string().contains("lapack_dpotrf_ffi"), "{plugin}: {e}");
    }
}

#[test]
fn another_failure_of_a_program_calling_lapack_is_left_as_it_is() {
    // A syntax error the plugin names without the target: not about a missing provider.
    let broken = CHOLESKY.replace("return %l, %info", "return %l, %nope");
    for plugin in support::PLUGINS {
        let client = support::client(plugin, 1);
        let e = client.compile(&Program::mlir_text(&broken).unwrap(), &CompileOptions::new()).unwrap_err();
        assert!(matches!(e, Error::Pjrt { .. }), "{plugin}: {e}");
    }
}
