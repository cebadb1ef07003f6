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

/// A provider of one target, `y = x + 1` on f32 vectors, that counts the programs it prepares.
struct PlusOne {
    name: String,
    target: String,
    handler: Handler,
    prepared: AtomicUsize,
}

impl PlusOne {
    fn new(name: &str, target: &str) -> Arc<PlusOne> {
        let signature = Signature::new().arg::<f32>(Rank::Any).ret::<f32>(Rank::Any);
        let handler = Handler::new(target, signature, |call: &Call| {
            let x = call.arg::<f32>(0)?;
            call.ret::<f32>(0)?.copy_from_iter(x.as_slice().iter().map(|v| v + 1.0));
            Ok(())
        });
        Arc::new(PlusOne { name: name.into(), target: target.into(), handler, prepared: AtomicUsize::new(0) })
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
    let before = provider.prepared.load(Ordering::SeqCst);
    client.compile(&calling(target), &CompileOptions::new()).unwrap();
    assert_eq!((own.prepared.load(Ordering::SeqCst), provider.prepared.load(Ordering::SeqCst)), (1, before));
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
