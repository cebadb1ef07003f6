//! Scenarios: what this copy of the plugin does ([`Config`]), decided once from the sidecar file
//! next to the library.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr::{null, null_mut};
use std::sync::OnceLock;

use pjrt_client_sys as sys;

use crate::calls::lock;
use crate::faults::{parse_directives, FAULTS};
use crate::GetPjrtApi;

/// What this copy of the plugin does, decided once from its sidecar file.
#[derive(Debug)]
pub(crate) struct Config {
    /// The scenario's name, reported as the `fake_scenario` plugin attribute.
    pub(crate) name: String,
    pub(crate) major: i32,
    pub(crate) minor: i32,
    /// `PJRT_Api.struct_size`; the words after the last slot it covers hold non-NULL garbage.
    pub(crate) struct_size: usize,
    /// `GetPjrtApi` returns NULL.
    pub(crate) null_api: bool,
    /// `PJRT_Plugin_Initialize` fails with this message.
    pub(crate) initialize_error: Option<String>,
    /// The `PJRT_Client_Create` slot is NULL.
    pub(crate) null_client_create: bool,
    /// `PJRT_Client_Create` fails with INVALID_ARGUMENT "fake: bad option".
    pub(crate) client_create_error: bool,
    /// Buffer ready events complete with INTERNAL "fake: transfer failed".
    pub(crate) event_error: bool,
    /// The answers of the `hostile*` and `old_extensions` scenarios.
    pub(crate) hostile: Hostile,
    /// `extension_start` lists a CustomPartitioner extension (scenario `custom_partitioner`).
    pub(crate) custom_partitioner: bool,
    /// `extension_start` lists a Profiler extension (scenario `profiler`).
    pub(crate) profiler: bool,
    /// What `PJRT_Executable_OptimizedProgram` answers.
    pub(crate) optimized: Optimized,
    /// The client's and the topology's platform name: `fake`, `cpu` (scenarios `cpu_0_106*`), or
    /// `cuda` for a GPU-like client (scenarios `gpu_like*`), whose memories are then a GPU's:
    /// `device` and `pinned_host`.
    pub(crate) platform_name: &'static str,
    /// `PJRT_Executable_DeserializeAndLoad` logs to fd 2 the lines the XLA CPU plugin logs when
    /// the host CPU's tuning features include `prefer-no-gather` and `prefer-no-scatter`
    /// (scenario `cpu_0_106_tuning_lines`), so that what follows them is tested on any host.
    pub(crate) logs_tuning_lines_on_load: bool,
    /// The kind of the shared memory 2 (`pinned_host`; `fake_scratch` in `gpu_like_odd_memory`,
    /// a kind DLPack has no device type for).
    pub(crate) shared_memory_kind: &'static str,
}

/// The optimized program the fake reports: an HLO module (as the CPU plugins do), or MLIR, as
/// a plugin that optimizes at the MLIR level may.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Optimized {
    /// Format `hlo`, parameters f32[4] × 2.
    #[default]
    Hlo,
    /// Format `mlir`, text: `@main(%a: tensor<4xf32>, %b: tensor<4xf32>)`.
    MlirText,
    /// Format `mlir`, bytecode (a header only: its signature cannot be read without MLIR).
    MlirBytecode,
}

/// What the hostile scenarios change: answers real plugins may give, or a buggy one could, that
/// the C API does not rule out. The fake itself still does nothing undefined: it writes only
/// where it was given room, and hands out only memory it owns.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Hostile {
    /// PRED bytes copied to the host (`ToHostBuffer`, `CopyRawToHost`, raw copies whose
    /// destination comes later) say true with 2 (even positions) or 0xff (odd ones), not 1.
    pub(crate) pred: bool,
    /// Every slot that hands out an event (upload done events, downloads, raw copies, ready
    /// events, execution completion, transfer-manager pieces, stream chunks, user events) hands
    /// out NULL; the work itself is done at once, so the answers can still be checked.
    pub(crate) null_events: bool,
    /// Sizes that disagree with the data (see [`SizeLie`]).
    pub(crate) sizes: Option<SizeLie>,
    /// `PJRT_Api.extension_start` lists older forms of extensions (see [`old_extensions`](crate::old_extensions)).
    pub(crate) old_extensions: bool,
    /// `bool` answers say true with the byte 2, not 1 (see [`set_bool`]).
    pub(crate) bools: bool,
}

/// Writes a C `bool` answer: 0 or 1, or for true the byte 2 in the `hostile_bools` scenario (C
/// code may leave any nonzero byte there). Written as a byte, through a raw pointer: the fake
/// never reads it back as a Rust `bool`.
pub(crate) fn set_bool(field: *mut bool, value: bool) {
    let byte = match (value, config().hostile.bools) {
        (false, _) => 0u8,
        (true, false) => 1,
        (true, true) => 2,
    };
    // SAFETY: `field` is a one-byte field of an args struct the client handed us to fill.
    unsafe { field.cast::<u8>().write(byte) };
}

/// How the size queries lie: `OnDeviceSizeInBytes` reports half the data and a transfer
/// manager's `BufferSize` 8 bytes more than the buffer holds in both cases; the
/// `ToHostBuffer` size query reports 8 bytes more than the dense size, or 1 fewer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SizeLie {
    More,
    Fewer,
}

/// `struct_size` of a table with `slots` slots.
const fn table_size(slots: usize) -> usize {
    sys::FIRST_SLOT_OFFSET + 8 * slots
}

impl Config {
    fn from_name(name: &str) -> Config {
        let mut config = Config {
            name: name.to_owned(),
            major: 0,
            minor: 115,
            struct_size: table_size(sys::SLOT_COUNT),
            null_api: false,
            initialize_error: None,
            null_client_create: false,
            client_create_error: false,
            event_error: false,
            hostile: Hostile::default(),
            custom_partitioner: false,
            profiler: false,
            optimized: Optimized::Hlo,
            platform_name: "fake",
            logs_tuning_lines_on_load: false,
            shared_memory_kind: "pinned_host",
        };
        let all_hostile =
            Hostile { pred: true, null_events: true, sizes: Some(SizeLie::More), old_extensions: true, bools: false };
        match name {
            // A plugin that does enough for clients, devices, memories, buffers, compilation,
            // execution and events (API 0.115, 138 slots).
            "working" => {}
            // The same, shaped like the real 0.106 CPU plugin: 136 slots, garbage after them.
            "working_0_106" => {
                config.minor = 106;
                config.struct_size = table_size(136);
            }
            // A GPU-like client: platform `cuda`, device memory and pinned host memory.
            "gpu_like" => config.platform_name = "cuda",
            // The same, with memory 2 of a kind no framework knows (`fake_scratch`).
            "gpu_like_odd_memory" => {
                config.platform_name = "cuda";
                config.shared_memory_kind = "fake_scratch";
            }
            // The 0.106 CPU plugin as `pjrt run` sees it: platform `cpu`, API 0.106. Loading a
            // serialized executable is quiet (as on a host without those tuning features, e.g. an
            // AMD EPYC Zen 3), or logs the two tuning-feature lines (as on a host with them).
            "cpu_0_106" | "cpu_0_106_tuning_lines" => {
                config.minor = 106;
                config.struct_size = table_size(136);
                config.platform_name = "cpu";
                config.logs_tuning_lines_on_load = name == "cpu_0_106_tuning_lines";
            }
            // Ready events complete with an error.
            "event_error" => config.event_error = true,
            "major_1" => config.major = 1,
            // Any claimed minor version (`minor_40`, `minor_65`, ...): the full table otherwise.
            _ if name.strip_prefix("minor_").is_some_and(|n| n.parse::<i32>().is_ok()) => {
                config.minor = name["minor_".len()..].parse().unwrap_or(config.minor);
            }
            // Everything hostile at once: PRED bytes, NULL events, lying sizes, old extensions.
            "hostile" => config.hostile = all_hostile,
            "hostile_pred" => config.hostile.pred = true,
            "hostile_bools" => config.hostile.bools = true,
            "hostile_events" => config.hostile.null_events = true,
            "hostile_sizes" => config.hostile.sizes = Some(SizeLie::More),
            "hostile_sizes_fewer" => config.hostile.sizes = Some(SizeLie::Fewer),
            "old_extensions" => config.hostile.old_extensions = true,
            // A CustomPartitioner extension whose functions count registrations.
            "custom_partitioner" => config.custom_partitioner = true,
            // A Profiler extension that records executions.
            "profiler" => config.profiler = true,
            // The optimized program is MLIR, as text or as bytecode.
            "optimized_mlir_text" => config.optimized = Optimized::MlirText,
            "optimized_mlir_bytecode" => config.optimized = Optimized::MlirBytecode,
            // Slots 0..10 only (up to PJRT_Event_OnReady); PJRT_Client_Create is garbage.
            "short_table" => config.struct_size = table_size(10),
            "null_client_create" => config.null_client_create = true,
            "client_create_error" => config.client_create_error = true,
            "initialize_error" => {
                config.initialize_error = Some(format!("fake: initialize failed (scenario `{name}`)"))
            }
            "null_api" => config.null_api = true,
            "tiny_table" => config.struct_size = 16,
            // An unknown name: load fails in PJRT_Plugin_Initialize, naming the scenario.
            _ => config.initialize_error = Some(format!("fake: initialize failed (unknown scenario `{name}`)")),
        }
        config
    }

    /// A sidecar file: the scenario's name, then fault directives.
    fn from_sidecar(text: &str) -> Config {
        let mut lines = text.lines().map(|l| l.split('#').next().unwrap_or("").trim()).filter(|l| !l.is_empty());
        let name = lines.next().unwrap_or("working");
        let mut config = Config::from_name(name);
        let directives: Vec<&str> = lines.collect();
        match parse_directives(&directives.join("\n")) {
            Ok(faults) => *lock(&FAULTS) = faults,
            Err(message) => config.initialize_error = Some(format!("fake: bad sidecar directives: {message}")),
        }
        config
    }
}

#[repr(C)]
struct DlInfo {
    dli_fname: *const c_char,
    dli_fbase: *mut c_void,
    dli_sname: *const c_char,
    dli_saddr: *mut c_void,
}

extern "C" {
    fn dladdr(addr: *const c_void, info: *mut DlInfo) -> c_int;
}

/// The path of the file this copy of the plugin was loaded from.
fn own_path() -> Option<String> {
    let mut info = DlInfo { dli_fname: null(), dli_fbase: null_mut(), dli_sname: null(), dli_saddr: null_mut() };
    // SAFETY: `dladdr` only writes `info`; the address is one of this library's own functions.
    let found = unsafe { dladdr(GetPjrtApi as *const c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: `dli_fname` is a NUL-terminated string owned by the loader, valid while this
    // library stays loaded (we copy it at once).
    Some(unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned())
}

pub(crate) fn config() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| {
        let text = own_path()
            .and_then(|path| std::fs::read_to_string(format!("{path}.scenario")).ok())
            .unwrap_or_else(|| "working".to_owned());
        Config::from_sidecar(&text)
    })
}
