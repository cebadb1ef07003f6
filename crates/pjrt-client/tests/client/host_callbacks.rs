//! Host send/receive callbacks on both CPU plugins, and on a plugin with a device (a GPU) where
//! one is given (`PJRT_TEST_PLUGIN`, see `support::device_plugin`; `tools/gpu_check.sh`).
//!
//! Neither CPU plugin can compile a program that sends to or receives from the host: the XLA:CPU
//! thunk emitter has no `send`/`recv` (asserted exactly below). What they do accept is callbacks
//! in the execute options, which this file runs end to end; the trampolines themselves (chunks,
//! streams, panics, errors) are exercised by the unit tests in `src/executable/host_callbacks.rs`, which call
//! them as a plugin would.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pjrt_client::{Client, ClientOptions, CompileOptions, Error, ErrorCode, ExecuteOptions, GpuAllocator, Program};

use crate::support;

/// Sends `x + x` to the host on channel 1, receives a tensor<4xf32> on channel 2 and returns
/// it plus `x`: the form JAX lowers host callbacks to on accelerators (DEVICE_TO_HOST = 2,
/// HOST_TO_DEVICE = 3, `is_host_transfer`, the host-transfer frontend attributes).
const SEND_RECV: &str = r#"
module @host_io {
  func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %tok = stablehlo.after_all : !stablehlo.token
    %y = stablehlo.add %x, %x : tensor<4xf32>
    %t1 = "stablehlo.send"(%y, %tok) {
      channel_handle = #stablehlo.channel_handle<handle = 1, type = 2>, is_host_transfer = true,
      mhlo.frontend_attributes = {_xla_host_transfer_handler_name = "pjrt_rendezvous",
                                  _xla_host_transfer_rendezvous = "1"}
    } : (tensor<4xf32>, !stablehlo.token) -> !stablehlo.token
    %r:2 = "stablehlo.recv"(%t1) {
      channel_handle = #stablehlo.channel_handle<handle = 2, type = 3>, is_host_transfer = true,
      mhlo.frontend_attributes = {_xla_host_transfer_handler_name = "pjrt_rendezvous",
                                  _xla_host_transfer_rendezvous = "2"}
    } : (!stablehlo.token) -> (tensor<4xf32>, !stablehlo.token)
    %z = stablehlo.add %r#0, %x : tensor<4xf32>
    return %z : tensor<4xf32>
  }
}"#;

/// Only the receive half of [`SEND_RECV`].
const RECV_ONLY: &str = r#"
module @host_recv {
  func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %tok = stablehlo.after_all : !stablehlo.token
    %r:2 = "stablehlo.recv"(%tok) {
      channel_handle = #stablehlo.channel_handle<handle = 2, type = 3>, is_host_transfer = true,
      mhlo.frontend_attributes = {_xla_host_transfer_handler_name = "pjrt_rendezvous",
                                  _xla_host_transfer_rendezvous = "2"}
    } : (!stablehlo.token) -> (tensor<4xf32>, !stablehlo.token)
    %z = stablehlo.add %r#0, %x : tensor<4xf32>
    return %z : tensor<4xf32>
  }
}"#;

#[test]
fn the_cpu_plugins_cannot_compile_host_send_or_recv() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        for (source, opcode) in [(SEND_RECV, "send"), (RECV_ONLY, "recv")] {
            let result = client.compile(&Program::mlir_text(source).unwrap(), &CompileOptions::new());
            match result {
                Err(Error::Pjrt { function, code: ErrorCode::Unimplemented, message, .. }) => {
                    assert_eq!(function, "PJRT_Client_Compile");
                    assert_eq!(message, format!("HLO opcode `{opcode}` is not supported by XLA:CPU ThunkEmitter"));
                }
                other => panic!("{name}: expected UNIMPLEMENTED for `{opcode}`, got {other:?}"),
            }
        }
    }
}

/// Callbacks that count their calls and the closures' lifetime.
struct Probe {
    calls: Arc<AtomicUsize>,
    alive: Arc<()>,
}

impl Probe {
    fn new() -> Self {
        Probe { calls: Arc::default(), alive: Arc::new(()) }
    }

    fn options(&self) -> ExecuteOptions {
        let (calls, alive) = (self.calls.clone(), self.alive.clone());
        let (calls2, alive2) = (self.calls.clone(), self.alive.clone());
        ExecuteOptions::new()
            .on_send(1, move |_chunk| {
                let _ = &alive;
                calls.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .on_recv(2, move |stream| {
                let _ = &alive2;
                calls2.fetch_add(1, Ordering::SeqCst);
                stream.add_chunk(vec![0; 16]).map(|_| ())
            })
            .on_send(3, |_| panic!("a panicking callback that no program op calls"))
    }
}

#[test]
fn execute_options_with_callbacks_run_on_both_plugins() {
    for name in support::PLUGINS {
        let client = support::client(name, 2);
        let probe = Probe::new();
        let options = probe.options();
        assert_eq!(options.callback_channels(), (vec![1, 3], vec![2]));
        let (a, b) =
            (client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap(), client.upload(&[10f32, 20., 30., 40.], &[4]).unwrap());

        // One device.
        let exe = client.compile(&Program::mlir_text(support::ADD_F32).unwrap(), &CompileOptions::new()).unwrap();
        for _ in 0..3 {
            let out = exe.execute(&[&a, &b], &options).unwrap();
            assert_eq!(out[0].to_vec::<f32>().unwrap(), [11., 22., 33., 44.], "{name}");
        }

        // Two replicas, one callback list per device.
        let replicated = client
            .compile(&Program::mlir_text(support::ADD_F32).unwrap(), &CompileOptions::new().num_replicas(2))
            .unwrap();
        let d1 = replicated.addressable_devices()[1];
        let (a1, b1) = (a.copy_to_device(&d1).unwrap(), b.copy_to_device(&d1).unwrap());
        let run = replicated.execute_sharded(&[[&a, &b], [&b1, &a1]], &options).unwrap();
        assert_eq!(run[1][0].to_vec::<f32>().unwrap(), [11., 22., 33., 44.], "{name}");
        // Dropped before completion: still fine.
        drop(replicated.execute_sharded_async(&[[&a, &b], [&b1, &a1]], &options).unwrap());

        // The program has no host transfers: nothing was called, nothing failed.
        assert_eq!(probe.calls.load(Ordering::SeqCst), 0);
        assert!(options.take_callback_failures().is_empty());
        // The closures live as long as the options and any launch not yet completed; then they
        // are freed (nothing leaks).
        drop(options);
        support::wait_for("the launches to release the callbacks", || Arc::strong_count(&probe.alive) == 1);
    }
}

#[test]
fn only_send_or_only_receive_callbacks() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let exe = client.compile(&Program::mlir_text(support::ADD_F32).unwrap(), &CompileOptions::new()).unwrap();
        let (a, b) =
            (client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap(), client.upload(&[10f32, 20., 30., 40.], &[4]).unwrap());
        let send_only = ExecuteOptions::new().on_send(1, |_| Ok(()));
        let recv_only = ExecuteOptions::new().on_recv(2, |_| Ok(()));
        for options in [send_only, recv_only] {
            let out = exe.execute(&[&a, &b], &options).unwrap();
            assert_eq!(out[0].to_vec::<f32>().unwrap(), [11., 22., 33., 44.], "{name}");
            assert!(options.take_callback_failures().is_empty());
        }
    }
}

fn f32_bytes(values: [f32; 4]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The programs the CPU plugins cannot compile, on a plugin that can: `x + x` reaches the send
/// callback of channel 1, the bytes the receive callback of channel 2 adds come back into the
/// program, for several executions and with only the receive half. Needs a GPU (a plugin with
/// a device that compiles host transfers): `PJRT_TEST_PLUGIN=PATH cargo test -p pjrt-client
/// --test client host_callbacks:: -- --ignored`. The client is created with GPU options, so
/// they are exercised on a real device too.
#[test]
#[ignore = "needs a plugin with a device that compiles host send/recv (a GPU): set PJRT_TEST_PLUGIN; tools/gpu_check.sh runs it"]
fn send_and_recv_callbacks_on_a_device_plugin() {
    let plugin = support::device_plugin();
    let options = ClientOptions::new().allocator(GpuAllocator::Bfc).preallocate(false).memory_fraction(0.5);
    let client = Client::new(&plugin, &options).unwrap();
    let exe = client.compile(&Program::mlir_text(SEND_RECV).unwrap(), &CompileOptions::new()).unwrap();
    for round in 0..3 {
        let base = round as f32;
        let x = client.upload(&[1f32 + base, 2., 3., 4.], &[4]).unwrap();
        let sent = Arc::new(Mutex::new(Vec::new()));
        let (sent_in, recv_calls) = (sent.clone(), Arc::new(AtomicUsize::new(0)));
        let recv_count = recv_calls.clone();
        let options = ExecuteOptions::new()
            .on_send(1, move |chunk| {
                assert_eq!(chunk.channel_id(), 1);
                sent_in.lock().unwrap().extend_from_slice(chunk.data());
                Ok(())
            })
            .on_recv(2, move |stream| {
                recv_count.fetch_add(1, Ordering::SeqCst);
                stream.add_chunk(f32_bytes([10., 20., 30., 40.])).map(|_| ())
            });
        let out = exe.execute(&[&x], &options).unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), [11. + base, 22., 33., 44.], "round {round}");
        assert_eq!(*sent.lock().unwrap(), f32_bytes([2. + 2. * base, 4., 6., 8.]), "round {round}: what was sent");
        assert_eq!(recv_calls.load(Ordering::SeqCst), 1, "round {round}");
        assert!(options.take_callback_failures().is_empty());
    }

    let recv_only = client.compile(&Program::mlir_text(RECV_ONLY).unwrap(), &CompileOptions::new()).unwrap();
    let x = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
    let options = ExecuteOptions::new().on_recv(2, |stream| stream.add_chunk(f32_bytes([5., 5., 5., 5.])).map(|_| ()));
    let out = recv_only.execute(&[&x], &options).unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), [6., 7., 8., 9.]);
    assert!(options.take_callback_failures().is_empty());
}
