//! Compiling for GPUs without one: the CUDA 12 plugin (installed with its ptxas and libdevice on
//! first use, like the CPU plugins) makes topologies for GPU targets and compiles against them
//! on this CPU-only machine.

use pjrt_client::{CompileOptions, DebugOption, Error, ErrorCode, GpuTarget, GpuTopologyShape, Program, Topology};

use crate::support::{plugin, ADD_F32};

/// The MLP training step of `examples/mlp`.
fn mlp() -> Program {
    Program::from_file(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/mlp/train_step.mlir")).unwrap()
}

fn compile_for(name: &str, shape: GpuTopologyShape, program: &Program, options: &CompileOptions) -> Vec<u8> {
    let cuda = plugin("cuda12");
    let target = GpuTarget::builtin(name).unwrap();
    let topology = Topology::for_gpu_target(&cuda, &target, shape).unwrap();
    topology.compile(program, options, None).unwrap().serialize().unwrap()
}

#[test]
fn a_cuda_plugin_makes_a_topology_for_each_built_in_target_without_a_gpu() {
    let cuda = plugin("cuda12");
    for name in GpuTarget::builtin_names() {
        let target = GpuTarget::builtin(name).unwrap();
        let topology = Topology::for_gpu_target(&cuda, &target, GpuTopologyShape::devices(8).unwrap()).unwrap();
        assert_eq!(topology.platform_name().unwrap(), "cuda");
        assert_eq!(topology.device_count().unwrap(), 8, "{name}");
        // The description's device name is what the topology reports.
        let kind = topology.device_descriptions().unwrap()[0].kind().unwrap();
        assert!(target.text().contains(&format!("device_description_str: \"{kind}\"")), "{name}: {kind}");
        // ptxas and libdevice were installed beside the plugin, and ptxas can run.
        let dir = topology.cuda_data_dir().expect("the compiler pieces beside cuda12");
        let ptxas = std::process::Command::new(dir.join("bin/ptxas")).arg("--version").output().unwrap();
        assert!(String::from_utf8_lossy(&ptxas.stdout).contains("Cuda compilation tools"), "{ptxas:?}");
    }
}

#[test]
fn the_target_is_really_used_an_h100_executable_differs_from_an_a100_one() {
    let one = GpuTopologyShape::devices(1).unwrap();
    let h100 = compile_for("h100", one, &mlp(), &CompileOptions::new());
    let a100 = compile_for("a100", one, &mlp(), &CompileOptions::new());
    assert!(!h100.is_empty() && !a100.is_empty());
    assert_ne!(h100, a100);
}

#[test]
fn partitioned_programs_compile_for_eight_gpus() {
    let program = Program::mlir_text(ADD_F32).unwrap();
    let options = CompileOptions::new().num_partitions(8).use_spmd_partitioning(true);
    let cuda = plugin("cuda12");
    let topology =
        Topology::for_gpu_target(&cuda, &GpuTarget::builtin("h100").unwrap(), "1x1x8".parse().unwrap()).unwrap();
    let exe = topology.compile(&program, &options, None).unwrap();
    assert_eq!(exe.num_partitions().unwrap(), 8);
    let replicas = CompileOptions::new().num_replicas(4);
    assert_eq!(topology.compile(&program, &replicas, None).unwrap().num_replicas().unwrap(), 4);
}

#[test]
#[cfg(unix)]
fn the_cuda_data_dir_is_a_per_compilation_option() {
    use std::os::unix::fs::PermissionsExt;
    // A data folder whose ptxas is a script that leaves a mark and fails: options naming it
    // reach XLA for this compilation (the folder the topology found is then not used). XLA
    // recovers from the failing ptxas by itself (the plugin carries other ways to assemble
    // PTX), so only the mark tells.
    let cuda = plugin("cuda12");
    let h100 = GpuTarget::builtin("h100").unwrap();
    let topology = Topology::for_gpu_target(&cuda, &h100, GpuTopologyShape::devices(1).unwrap()).unwrap();
    let real = topology.cuda_data_dir().unwrap().to_path_buf();
    let fake = std::env::temp_dir().join(format!("pjrt-fake-cuda-dir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&fake);
    std::fs::create_dir_all(fake.join("bin")).unwrap();
    std::os::unix::fs::symlink(real.join("nvvm"), fake.join("nvvm")).unwrap();
    let mark = fake.join("ptxas-ran");
    let ptxas = fake.join("bin/ptxas");
    std::fs::write(&ptxas, format!("#!/bin/sh\ntouch '{}'\nexit 3\n", mark.display())).unwrap();
    std::fs::set_permissions(&ptxas, std::fs::Permissions::from_mode(0o755)).unwrap();
    // A program no other test compiles (XLA keeps compiled kernels per process).
    let program = Program::mlir_text(
        "func.func @main(%a: tensor<7xf32>) -> tensor<7xf32> {\n  %0 = stablehlo.tanh %a : tensor<7xf32>\n  %1 = stablehlo.multiply %0, %a : tensor<7xf32>\n  return %1 : tensor<7xf32>\n}",
    )
    .unwrap();
    let fake_options = CompileOptions::new().debug_option(DebugOption::GpuCudaDataDir(fake.display().to_string()));
    let result = topology.compile(&program, &fake_options, None);
    assert!(mark.exists(), "XLA did not run the ptxas of the folder the options named ({:?})", result.err());
    // The same program with the topology's own folder compiles.
    assert!(!topology.compile(&program, &CompileOptions::new(), None).unwrap().serialize().unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&fake);
}

#[test]
fn what_the_plugin_cannot_read_is_its_error_not_a_crash() {
    let cuda = plugin("cuda12");
    let bad = GpuTarget::from_text("bad", "gpu_device_info { no_such_field: 1 }").unwrap();
    let e = Topology::for_gpu_target(&cuda, &bad, GpuTopologyShape::devices(1).unwrap()).unwrap_err();
    assert!(matches!(e, Error::Pjrt { .. }), "{e}");
    // Refused before the plugin: not a description at all, or a shape with no devices.
    assert!(GpuTarget::from_text("x", "platform_name: \"CUDA\"").is_err());
    assert!(GpuTopologyShape::new(1, 0, 8).is_err());
    assert!(GpuTopologyShape::devices(1 << 20).is_err());
    // A shape with a zero made by hand is checked again before it reaches the plugin.
    let zero = GpuTopologyShape { partitions: 1, hosts: 1, devices_per_host: 0 };
    let h100 = GpuTarget::builtin("h100").unwrap();
    assert!(matches!(Topology::for_gpu_target(&cuda, &h100, zero), Err(Error::InvalidArgument(_))));
}

#[test]
fn a_cpu_plugin_refuses_gpu_targets_with_a_clear_message() {
    let cpu = plugin("cpu");
    let e = Topology::for_gpu_target(&cpu, &GpuTarget::builtin("h100").unwrap(), GpuTopologyShape::devices(1).unwrap())
        .unwrap_err();
    assert!(e.to_string().contains("use a CUDA plugin"), "{e}");
    assert_eq!(pjrt_plugins::cuda_data_dir(cpu.path()), None);
}

#[test]
fn without_a_gpu_the_cuda_plugin_refuses_a_client_cleanly() {
    let cuda = plugin("cuda12");
    let e = pjrt_client::Client::new(&cuda, &pjrt_client::ClientOptions::new()).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::FailedPrecondition), "{e}");
}
