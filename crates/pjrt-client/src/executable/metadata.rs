//! Metadata of a compiled program, shared by loaded and unloaded executables: output shapes,
//! memory statistics, the optimized program, device assignment, cost analysis; and, for a loaded
//! one, its parameter shapes (what the argument checks compare against) and fingerprint.

use std::ffi::c_char;

use prost::Message;

use crate::call::named_value::{read_named_values, Value};
use crate::call::{checked_slice, checked_string, pjrt_call, Api};
use crate::compile_options::{proto::DeviceAssignmentProto, CompileOptions, DeviceAssignment};
use crate::error::{Error, Result};
use crate::executable::hlo;
use crate::executable::{ArrayShape, LoadedExecutable};
use crate::program::mlir_main_parameters;
use crate::sys::{self, Args};

/// Memory the compiled program needs, as the plugin estimates it
/// (`PJRT_Executable_GetCompiledMemoryStats`). Fields newer than the plugin's API version, or
/// that it did not write, are `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompiledMemoryStats {
    /// Size of the generated code in device memory.
    pub generated_code_size_in_bytes: i64,
    /// Size of the arguments.
    pub argument_size_in_bytes: i64,
    /// Size of the outputs.
    pub output_size_in_bytes: i64,
    /// How much of the arguments is reused for outputs.
    pub alias_size_in_bytes: i64,
    /// Size of temporaries.
    pub temp_size_in_bytes: i64,
    /// Host memory: generated code (0.43).
    pub host_generated_code_size_in_bytes: Option<i64>,
    /// Host memory: arguments (0.43).
    pub host_argument_size_in_bytes: Option<i64>,
    /// Host memory: outputs (0.43).
    pub host_output_size_in_bytes: Option<i64>,
    /// Host memory: aliased arguments (0.43).
    pub host_alias_size_in_bytes: Option<i64>,
    /// Host memory: temporaries (0.43).
    pub host_temp_size_in_bytes: Option<i64>,
    /// Peak device memory (0.72).
    pub peak_memory_in_bytes: Option<i64>,
    /// Total device memory (0.90).
    pub total_size_in_bytes: Option<i64>,
    /// Total allocations (0.104).
    pub total_allocation_bytes: Option<i64>,
    /// Allocations that live for the whole program (0.104).
    pub indefinite_allocations: Option<i64>,
    /// Peak heap size without padding (0.104).
    pub peak_unpadded_heap_bytes: Option<i64>,
}

/// The program after the plugin's optimisations ([`LoadedExecutable::optimized_program`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptimizedProgram {
    /// The serialized program.
    pub code: Vec<u8>,
    /// Its format, e.g. `hlo_with_config` (a serialized `HloModuleProtoWithConfig`; the XLA CPU
    /// plugins always answer this) or `hlo` (`HloModuleProto`).
    pub format: String,
}

/// The logical position of one addressable device in an execution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LogicalDeviceId {
    /// The replica.
    pub replica: i32,
    /// The partition.
    pub partition: i32,
}

/// What a plugin filled in the memory-stats struct: a value no plugin writes marks "not written".
pub(crate) const UNWRITTEN: i64 = i64::MIN;

impl CompiledMemoryStats {
    /// Reads what a plugin of API `minor` wrote into `args` (whose optional fields were set to
    /// [`UNWRITTEN`] before the call).
    pub(super) fn from_raw(args: &sys::PJRT_Executable_GetCompiledMemoryStats_Args, minor: i32) -> Self {
        let since = |added: i32, value: i64| (minor >= added && value != UNWRITTEN).then_some(value);
        CompiledMemoryStats {
            generated_code_size_in_bytes: args.generated_code_size_in_bytes,
            argument_size_in_bytes: args.argument_size_in_bytes,
            output_size_in_bytes: args.output_size_in_bytes,
            alias_size_in_bytes: args.alias_size_in_bytes,
            temp_size_in_bytes: args.temp_size_in_bytes,
            host_generated_code_size_in_bytes: since(43, args.host_generated_code_size_in_bytes),
            host_argument_size_in_bytes: since(43, args.host_argument_size_in_bytes),
            host_output_size_in_bytes: since(43, args.host_output_size_in_bytes),
            host_alias_size_in_bytes: since(43, args.host_alias_size_in_bytes),
            host_temp_size_in_bytes: since(43, args.host_temp_size_in_bytes),
            peak_memory_in_bytes: since(72, args.peak_memory_in_bytes),
            total_size_in_bytes: since(90, args.total_size_in_bytes),
            total_allocation_bytes: since(104, args.total_allocation_bytes),
            indefinite_allocations: since(104, args.indefinite_allocations),
            peak_unpadded_heap_bytes: since(104, args.peak_unpadded_heap_bytes),
        }
    }
}

/// The queries every compiled program answers, loaded ([`LoadedExecutable`]) or not
/// ([`crate::Executable`], from [`crate::Topology::compile`]): `PJRT_Executable_*`.
macro_rules! executable_metadata {
    ($($ty:ty),+) => {$(
impl $ty {
    /// Size of the generated code in bytes (`PJRT_Executable_SizeOfGeneratedCodeInBytes`; the
    /// CPU plugins say 0).
    pub fn generated_code_size(&self) -> Result<i64> {
        let mut args = sys::PJRT_Executable_SizeOfGeneratedCodeInBytes_Args::new();
        args.executable = self.metadata_raw();
        pjrt_call!(self.metadata_api(), PJRT_Executable_SizeOfGeneratedCodeInBytes, &mut args)?;
        Ok(args.size_in_bytes)
    }

    /// The plugin's cost estimates, by name (`PJRT_Executable_GetCostAnalysis`; plugin-specific
    /// names such as `flops`; the CPU plugins say UNIMPLEMENTED).
    pub fn cost_analysis(&self) -> Result<Vec<(String, Value)>> {
        let mut args = sys::PJRT_Executable_GetCostAnalysis_Args::new();
        args.executable = self.metadata_raw();
        pjrt_call!(self.metadata_api(), PJRT_Executable_GetCostAnalysis, &mut args)?;
        // SAFETY: owned by the executable; checked and copied at once.
        let properties = unsafe {
            checked_slice(args.properties, args.num_properties, "PJRT_Executable_GetCostAnalysis", "properties")
        }?;
        // SAFETY: each named value is the plugin's, valid while the executable lives.
        Ok(unsafe { read_named_values(properties.as_ptr(), properties.len()) })
    }

    /// Memory kind of each output, e.g. `device` or `pinned_host`
    /// (`PJRT_Executable_OutputMemoryKinds`; UNIMPLEMENTED on the 0.106 CPU plugin).
    pub fn output_memory_kinds(&self) -> Result<Vec<String>> {
        let mut args = sys::PJRT_Executable_OutputMemoryKinds_Args::new();
        args.executable = self.metadata_raw();
        pjrt_call!(self.metadata_api(), PJRT_Executable_OutputMemoryKinds, &mut args)?;
        // SAFETY: arrays owned by the executable, of the count the plugin reported.
        unsafe {
            read_kinds(args.memory_kinds, args.memory_kind_sizes, args.num_outputs, "PJRT_Executable_OutputMemoryKinds")
        }
    }

    /// Memory kind of each parameter (`PJRT_Executable_ParameterMemoryKinds`, 0.102;
    /// UNIMPLEMENTED on the 0.106 CPU plugin).
    pub fn parameter_memory_kinds(&self) -> Result<Vec<String>> {
        let mut args = sys::PJRT_Executable_ParameterMemoryKinds_Args::new();
        args.executable = self.metadata_raw();
        pjrt_call!(self.metadata_api(), PJRT_Executable_ParameterMemoryKinds, &mut args)?;
        // SAFETY: arrays owned by the executable, of the count the plugin reported.
        unsafe {
            read_kinds(
                args.memory_kinds,
                args.memory_kind_sizes,
                args.num_parameters,
                "PJRT_Executable_ParameterMemoryKinds",
            )
        }
    }

    /// The plugin's memory estimates (`PJRT_Executable_GetCompiledMemoryStats`, 0.40). The full
    /// struct of 0.104+ is sent (plugins accept any size from the 0.72 one on and write what
    /// fits); fields newer than the plugin's version, or left unwritten, are `None`.
    pub fn compiled_memory_stats(&self) -> Result<CompiledMemoryStats> {
        let minor = self.metadata_api().version().minor;
        let mut args = sys::PJRT_Executable_GetCompiledMemoryStats_Args::new();
        args.executable = self.metadata_raw();
        for field in [
            &mut args.host_generated_code_size_in_bytes,
            &mut args.host_argument_size_in_bytes,
            &mut args.host_output_size_in_bytes,
            &mut args.host_alias_size_in_bytes,
            &mut args.host_temp_size_in_bytes,
            &mut args.peak_memory_in_bytes,
            &mut args.total_size_in_bytes,
            &mut args.total_allocation_bytes,
            &mut args.indefinite_allocations,
            &mut args.peak_unpadded_heap_bytes,
        ] {
            *field = UNWRITTEN;
        }
        pjrt_call!(self.metadata_api(), PJRT_Executable_GetCompiledMemoryStats, &mut args)?;
        Ok(CompiledMemoryStats::from_raw(&args, minor))
    }

    /// The optimised program (`PJRT_Executable_OptimizedProgram`: the size is asked first, then
    /// the plugin fills a buffer of that size).
    pub fn optimized_program(&self) -> Result<OptimizedProgram> {
        const FUNCTION: &str = "PJRT_Executable_OptimizedProgram";
        let api = self.metadata_api();
        let mut program = sys::PJRT_Program::new();
        let mut args = sys::PJRT_Executable_OptimizedProgram_Args::new();
        args.executable = self.metadata_raw();
        args.program = &mut program;
        // First call: the plugin reports the size.
        pjrt_call!(api, PJRT_Executable_OptimizedProgram, &mut args)?;
        let size = program.code_size;
        let mut code = Vec::new();
        if size > isize::MAX as usize || code.try_reserve_exact(size).is_err() {
            return Err(Error::invalid(format!("{FUNCTION} reports a program of {size} bytes")));
        }
        code.resize(size, 0);
        program.code = code.as_mut_ptr() as *mut c_char;
        pjrt_call!(api, PJRT_Executable_OptimizedProgram, &mut args)?;
        // The second call reports the size it wrote; more than the buffer would be a plugin bug.
        if program.code_size > size {
            return Err(Error::invalid(format!(
                "{FUNCTION} wrote {} bytes into a buffer of the {size} bytes it asked for",
                program.code_size
            )));
        }
        code.truncate(program.code_size);
        // SAFETY: the format string is owned by the plugin (static); copied at once.
        let format = unsafe { checked_string(program.format, program.format_size, FUNCTION, "the format") }?;
        Ok(OptimizedProgram { code, format })
    }

    /// The serialized `CompileOptionsProto` the executable was built with, as the plugin reports
    /// it (`PJRT_Executable_GetCompileOptions`, 0.87): the plugin fills in what it decided, e.g.
    /// the result layout.
    pub fn compile_options_bytes(&self) -> Result<Vec<u8>> {
        let mut args = sys::PJRT_Executable_GetCompileOptions_Args::new();
        args.executable = self.metadata_raw();
        pjrt_call!(self.metadata_api(), PJRT_Executable_GetCompileOptions, &mut args)?;
        // SAFETY: the bytes live until the deleter runs, right after the copy.
        let bytes = unsafe {
            checked_slice(
                args.serialized_bytes as *const u8,
                args.serialized_bytes_size,
                "PJRT_Executable_GetCompileOptions",
                "the options",
            )
        }
        .map(<[u8]>::to_vec);
        if let Some(deleter) = args.serialized_compile_options_deleter {
            // SAFETY: called once, on the object the plugin handed out.
            unsafe { deleter(args.serialized_compile_options) };
        }
        bytes
    }

    /// The compile options the executable was built with, decoded
    /// ([`Self::compile_options_bytes`] through [`CompileOptions::from_proto_bytes`]).
    pub fn compile_options(&self) -> Result<CompileOptions> {
        CompileOptions::from_proto_bytes(&self.compile_options_bytes()?)
    }
}
    )+};
}

executable_metadata!(LoadedExecutable, crate::executable::unloaded::Executable);

impl LoadedExecutable {
    fn metadata_api(&self) -> &Api {
        self.client.api()
    }

    fn metadata_raw(&self) -> *mut sys::PJRT_Executable {
        self.executable.as_ptr()
    }

    /// Which device runs which replica and partition
    /// (`PJRT_LoadedExecutable_GetDeviceAssignment`, 0.79).
    pub fn device_assignment(&self) -> Result<DeviceAssignment> {
        let mut args = sys::PJRT_LoadedExecutable_GetDeviceAssignment_Args::new();
        args.executable = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_LoadedExecutable_GetDeviceAssignment, &mut args)?;
        // SAFETY: the bytes live until the deleter runs, right after the decode.
        let decoded = unsafe {
            checked_slice(
                args.serialized_bytes as *const u8,
                args.serialized_bytes_size,
                "PJRT_LoadedExecutable_GetDeviceAssignment",
                "the assignment",
            )
        }
        .and_then(|bytes| {
            DeviceAssignmentProto::decode(bytes)
                .map_err(|source| Error::Decode { what: "DeviceAssignmentProto", source })
        });
        if let Some(deleter) = args.serialized_device_assignment_deleter {
            // SAFETY: called once, on the object the plugin handed out.
            unsafe { deleter(args.serialized_device_assignment) };
        }
        device_assignment_from_proto(&decoded?)
    }

    /// The (replica, partition) of each addressable device, in the order of
    /// [`LoadedExecutable::addressable_devices`] (`PJRT_LoadedExecutable_AddressableDeviceLogicalIds`,
    /// 0.96).
    pub fn addressable_device_logical_ids(&self) -> Result<Vec<LogicalDeviceId>> {
        let mut args = sys::PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args::new();
        args.executable = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_LoadedExecutable_AddressableDeviceLogicalIds, &mut args)?;
        // SAFETY: owned by the executable; copied at once.
        let ids = unsafe {
            checked_slice(
                args.addressable_device_logical_ids,
                args.num_addressable_device_logical_ids,
                "PJRT_LoadedExecutable_AddressableDeviceLogicalIds",
                "logical ids",
            )
        }?;
        Ok(ids.iter().map(|id| LogicalDeviceId { replica: id.replica, partition: id.partition }).collect())
    }

    /// The per-device parameter shapes, read once: from the optimized program the plugin reports
    /// (an HLO module, or MLIR text), else from the signature of the MLIR text compiled. `None`
    /// when neither can be read; execution then relies on the plugin's own checks, and
    /// [`LoadedExecutable::argument_checks_off_because`] says why.
    pub fn parameter_shapes(&self) -> Option<&[ArrayShape]> {
        self.parameter_result().as_ref().ok().map(Vec::as_slice)
    }

    /// Why the arguments of an execution are not checked against the parameters before the
    /// plugin sees them (`None`: they are). E.g. the plugin reports its optimized program as MLIR
    /// bytecode and the program compiled was bytecode too.
    ///
    /// ```
    /// use pjrt_client::{CompileOptions, Program};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let program = Program::mlir_text("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> }")?;
    /// let exe = client.compile(&program, &CompileOptions::new())?;
    /// assert_eq!(exe.argument_checks_off_because(), None);
    /// assert_eq!(exe.parameter_shapes().unwrap()[0].dims, [2]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn argument_checks_off_because(&self) -> Option<&str> {
        self.parameter_result().as_ref().err().map(String::as_str)
    }

    fn parameter_result(&self) -> &std::result::Result<Vec<ArrayShape>, String> {
        self.parameters.get_or_init(|| {
            let optimized = self.read_parameter_shapes();
            let result = match optimized {
                Ok(shapes) => Ok(shapes),
                Err(why) => self
                    .source_parameters
                    .clone()
                    .map_err(|source| format!("argument checks are off: {why}, and {source}")),
            };
            // Recorded (argument_checks_off_because) and logged: never off silently.
            #[cfg(feature = "tracing")]
            if let Err(why) = &result {
                tracing::warn!(executable = %self.name, "{why}");
            }
            result
        })
    }

    /// The parameters from the optimized program, or why they cannot be read from it.
    fn read_parameter_shapes(&self) -> std::result::Result<Vec<ArrayShape>, String> {
        let OptimizedProgram { code, format } =
            self.optimized_program().map_err(|e| format!("the optimized program is not available ({e})"))?;
        let module = match format.as_str() {
            "hlo_with_config" => {
                hlo::HloModuleProtoWithConfig::decode(code.as_slice())
                    .map_err(|e| format!("the optimized HloModuleProtoWithConfig does not decode ({e})"))?
                    .hlo_module
            }
            "hlo" => Some(
                hlo::HloModuleProto::decode(code.as_slice())
                    .map_err(|e| format!("the optimized HloModuleProto does not decode ({e})"))?,
            ),
            "mlir" if code.starts_with(b"ML\xefR") => {
                return Err("the plugin reports its optimized program as MLIR bytecode, whose signature this \
                            crate cannot read without MLIR"
                    .to_owned())
            }
            "mlir" => {
                let text = std::str::from_utf8(&code)
                    .map_err(|_| "the plugin's optimized MLIR program is neither text nor bytecode".to_owned())?;
                let params =
                    mlir_main_parameters(text).map_err(|why| format!("in the optimized MLIR program, {why}"))?;
                return Ok(params.into_iter().map(|(element_type, dims)| ArrayShape { element_type, dims }).collect());
            }
            other => return Err(format!("the plugin reports its optimized program in format `{other}`, unknown here")),
        };
        let shape = module
            .and_then(|m| m.host_program_shape)
            .ok_or("the optimized HLO module carries no host_program_shape")?;
        if shape.parameters.iter().any(|p| !p.tuple_shapes.is_empty() || p.element_type == hlo::TUPLE) {
            return Err("the program takes tupled parameters".to_owned());
        }
        Ok(shape
            .parameters
            .iter()
            .map(|p| ArrayShape { element_type: hlo::element_type(p.element_type), dims: p.dimensions.clone() })
            .collect())
    }

    /// A fingerprint of the compiled program as text (see [`LoadedExecutable::fingerprint_bytes`];
    /// bytes that are not UTF-8 are replaced, so prefer the bytes where a plugin returns binary
    /// fingerprints, as the TPU plugin does).
    pub fn fingerprint(&self) -> Result<String> {
        Ok(String::from_utf8_lossy(&self.fingerprint_bytes()?).into_owned())
    }

    /// A fingerprint of the compiled program (`PJRT_Executable_Fingerprint`; where that is
    /// missing or fails, the deprecated `PJRT_LoadedExecutable_Fingerprint`). When both fail, the
    /// first one's error is returned, unless the plugin lacks that function altogether. The CPU
    /// plugins return a decimal number as text, the TPU plugin binary bytes.
    pub fn fingerprint_bytes(&self) -> Result<Vec<u8>> {
        let api = self.client.api();
        let mut args = sys::PJRT_Executable_Fingerprint_Args::new();
        args.executable = self.executable.as_ptr();
        let first = match pjrt_call!(api, PJRT_Executable_Fingerprint, &mut args) {
            // SAFETY: owned by the executable; copied at once.
            Ok(()) => {
                return unsafe {
                    checked_slice(
                        args.executable_fingerprint as *const u8,
                        args.executable_fingerprint_size,
                        "PJRT_Executable_Fingerprint",
                        "the fingerprint",
                    )
                }
                .map(<[u8]>::to_vec)
            }
            Err(e) => e,
        };
        let mut old = sys::PJRT_LoadedExecutable_Fingerprint_Args::new();
        old.executable = self.raw.as_ptr();
        match pjrt_call!(api, PJRT_LoadedExecutable_Fingerprint, &mut old) {
            // SAFETY: owned by the executable; copied at once.
            Ok(()) => unsafe {
                checked_slice(
                    old.executable_fingerprint as *const u8,
                    old.executable_fingerprint_size,
                    "PJRT_LoadedExecutable_Fingerprint",
                    "the fingerprint",
                )
            }
            .map(<[u8]>::to_vec),
            Err(fallback) if matches!(first, Error::Unsupported { .. }) => Err(fallback),
            Err(_) => Err(first),
        }
    }
}

/// Reads a (strings, sizes) pair of arrays returned by the plugin.
///
/// # Safety
/// `kinds` and `sizes` must be NULL or point to `n` valid values each, every string readable for
/// its size.
pub(crate) unsafe fn read_kinds(
    kinds: *const *const c_char,
    sizes: *const usize,
    n: usize,
    function: &'static str,
) -> Result<Vec<String>> {
    // SAFETY: the caller's guarantee.
    let (kinds, sizes) =
        unsafe { (checked_slice(kinds, n, function, "memory kinds")?, checked_slice(sizes, n, function, "sizes")?) };
    kinds
        .iter()
        .zip(sizes)
        // SAFETY: the caller's guarantee.
        .map(|(kind, size)| unsafe { checked_string(*kind, *size, function, "a memory kind") })
        .collect()
}

/// `DeviceAssignmentProto` → [`DeviceAssignment`], checking the counts against the ids present
/// before building anything of their size (the bytes come from the plugin).
pub(crate) fn device_assignment_from_proto(proto: &DeviceAssignmentProto) -> Result<DeviceAssignment> {
    let bad = || {
        Error::invalid(format!(
            "the plugin returned an inconsistent device assignment ({} replicas × {} partitions, {} partition lists)",
            proto.replica_count,
            proto.computation_count,
            proto.computation_devices.len()
        ))
    };
    let replicas = usize::try_from(proto.replica_count).ok().filter(|&r| r >= 1).ok_or_else(bad)?;
    let partitions = usize::try_from(proto.computation_count).ok().filter(|&c| c >= 1).ok_or_else(bad)?;
    if proto.computation_devices.len() != partitions
        || proto.computation_devices.iter().any(|c| c.replica_device_ids.len() != replicas)
    {
        return Err(bad());
    }
    DeviceAssignment::new(
        (0..replicas).map(|r| proto.computation_devices.iter().map(|c| c.replica_device_ids[r]).collect()).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile_options::proto::ComputationDevice;

    fn stats_args(fill: i64, unwritten_from_total: bool) -> sys::PJRT_Executable_GetCompiledMemoryStats_Args {
        let mut args = sys::PJRT_Executable_GetCompiledMemoryStats_Args::new();
        args.generated_code_size_in_bytes = 1;
        args.argument_size_in_bytes = 2;
        args.output_size_in_bytes = 3;
        args.alias_size_in_bytes = 4;
        args.temp_size_in_bytes = 5;
        args.host_generated_code_size_in_bytes = fill;
        args.host_argument_size_in_bytes = fill;
        args.host_output_size_in_bytes = fill;
        args.host_alias_size_in_bytes = fill;
        args.host_temp_size_in_bytes = fill;
        args.peak_memory_in_bytes = fill;
        let rest = if unwritten_from_total { UNWRITTEN } else { fill };
        args.total_size_in_bytes = rest;
        args.total_allocation_bytes = rest;
        args.indefinite_allocations = rest;
        args.peak_unpadded_heap_bytes = rest;
        args
    }

    #[test]
    fn memory_stats_fields_newer_than_the_plugin_or_unwritten_are_absent() {
        // A 0.115 plugin that wrote everything.
        let all = CompiledMemoryStats::from_raw(&stats_args(9, false), 115);
        assert_eq!(
            (all.temp_size_in_bytes, all.peak_memory_in_bytes, all.peak_unpadded_heap_bytes),
            (5, Some(9), Some(9))
        );
        // A plugin that stopped writing at its own (0.72) size although it claims 0.115.
        let short = CompiledMemoryStats::from_raw(&stats_args(9, true), 115);
        assert_eq!(
            (short.peak_memory_in_bytes, short.total_size_in_bytes, short.indefinite_allocations),
            (Some(9), None, None)
        );
        // A 0.90 plugin: its fields are there, the 0.104 ones are not, whatever the bytes say.
        let old = CompiledMemoryStats::from_raw(&stats_args(9, false), 90);
        assert_eq!((old.total_size_in_bytes, old.total_allocation_bytes), (Some(9), None));
        // A 0.60 plugin: no peak either; the base fields are always there.
        let older = CompiledMemoryStats::from_raw(&stats_args(9, false), 60);
        assert_eq!(
            (older.host_temp_size_in_bytes, older.peak_memory_in_bytes, older.argument_size_in_bytes),
            (Some(9), None, 2)
        );
    }

    #[test]
    fn device_assignment_protos_are_checked_before_use() {
        let proto = |replicas: i32, partitions: i32, ids: Vec<Vec<i64>>| DeviceAssignmentProto {
            replica_count: replicas,
            computation_count: partitions,
            computation_devices: ids
                .into_iter()
                .map(|replica_device_ids| ComputationDevice { replica_device_ids })
                .collect(),
        };
        // Two replicas of one partition: [[0], [1]] per replica.
        let two = device_assignment_from_proto(&proto(2, 1, vec![vec![0, 1]])).unwrap();
        assert_eq!((two.num_replicas(), two.num_partitions(), two.device(1, 0)), (2, 1, Some(1)));
        // One replica, two partitions.
        let spmd = device_assignment_from_proto(&proto(1, 2, vec![vec![3], vec![5]])).unwrap();
        assert_eq!(spmd.device_ids().collect::<Vec<_>>(), [3, 5]);
        // Counts that the ids do not back are refused without allocating their size.
        for bad in [
            proto(i32::MAX, 1, vec![vec![0]]),
            proto(1, 0, vec![]),
            proto(-1, 1, vec![vec![0]]),
            proto(2, 1, vec![vec![0]]),
        ] {
            assert!(matches!(device_assignment_from_proto(&bad), Err(Error::InvalidArgument(_))), "{bad:?}");
        }
    }
}
