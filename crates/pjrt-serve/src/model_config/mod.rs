//! Triton's model configuration extension (`GET /v2/models/NAME[/versions/V]/config`, gRPC
//! `ModelConfig`): a served model described as Triton's `inference.ModelConfig`, derived from
//! its export, its `config.json` and the server's devices, for the tools that read it
//! (`perf_analyzer` will not run without it; model_analyzer, genai-perf and Triton's example
//! clients read `max_batch_size` from it).
//!
//! - `max_batch_size`: a batched model's (`config.json`'s `batching`) when every input a request
//!   gives leads with the batch dimension (its outputs all do), and then each tensor's `dims`
//!   leave that dimension out, as Triton's do; otherwise 0 and `dims` are the whole shape (a
//!   batched model with an input that every request of a batch gives alike keeps its dynamic
//!   batching, but Triton's implied batch dimension would be wrong for that input). `-1` stands
//!   for a symbolic dimension, as in the model's metadata, so a tool that drops the metadata's
//!   first dimension when `max_batch_size` is over 0 (`perf_analyzer`) finds `dims`.
//! - `dynamic_batching`: the batch sizes executions are padded to (`preferred_batch_size`,
//!   when `max_batch_size` is over 0: Triton allows none over it) and the gathering window
//!   (`max_queue_delay_microseconds`).
//! - `instance_group`: the server's execution slots on the model's devices: `KIND_CPU` with
//!   their count on a CPU plugin, `KIND_GPU` with the count on each GPU (`gpus`: their
//!   hardware ids) on a CUDA or ROCm one, `KIND_MODEL` on any other. The slots are the
//!   server's, shared by its models.
//! - `platform` is the metadata's (`pjrt_cpu`, ...), `backend` is `pjrt`, one version is served
//!   (`version_policy.latest.num_versions` 1), one response per request.
//!
//! Over HTTP the configuration is the JSON Triton answers: its field names, enums by name
//! (`TYPE_FP32`, `KIND_CPU`), every scalar field of the messages filled even at its default (as
//! protobuf's `always_print_primitive_fields` prints them) and 64-bit integers as numbers.

use serde_json::{json, Value};

use crate::datatype::Datatype;
use crate::model::{ServedModel, TensorSpec};
use crate::state::Shared;

pub(crate) mod messages;

use messages::{
    DataType, InputFormat, InstanceKind, LatestVersions, ModelConfig, ModelDynamicBatching, ModelInput,
    ModelInstanceGroup, ModelOutput, ModelTransactionPolicy, ModelVersionPolicy,
};

/// The configuration of `model` as served by `shared`'s server.
pub(crate) fn of(shared: &Shared, model: &ServedModel) -> ModelConfig {
    let batching = model.batching();
    // Outputs all lead with the batch dimension (checked at load); the inputs may not.
    let leading = batching.is_some() && model.batched_inputs().iter().all(|&b| b);
    let max_batch_size = match batching {
        Some(b) if leading => i32::try_from(b.max_batch_size).unwrap_or(i32::MAX),
        _ => 0,
    };
    let dims = |spec: &TensorSpec| if leading { spec.shape[1..].to_vec() } else { spec.shape.clone() };
    let dynamic_batching = batching.map(|b| ModelDynamicBatching {
        preferred_batch_size: if leading {
            b.buckets().into_iter().map(|n| i32::try_from(n).unwrap_or(i32::MAX)).collect()
        } else {
            Vec::new()
        },
        max_queue_delay_microseconds: u64::try_from(b.max_queue_delay.as_micros()).unwrap_or(u64::MAX),
        ..Default::default()
    });
    ModelConfig {
        name: model.name().into(),
        platform: format!("pjrt_{}", shared.client.platform_name()),
        backend: "pjrt".into(),
        version_policy: Some(ModelVersionPolicy { latest: Some(LatestVersions { num_versions: 1 }) }),
        max_batch_size,
        input: model
            .inputs()
            .iter()
            .map(|s| ModelInput {
                name: s.name.clone(),
                data_type: data_type(s.datatype) as i32,
                format: InputFormat::FormatNone as i32,
                dims: dims(s),
                ..Default::default()
            })
            .collect(),
        output: model
            .outputs()
            .iter()
            .map(|s| ModelOutput {
                name: s.name.clone(),
                data_type: data_type(s.datatype) as i32,
                dims: dims(s),
                ..Default::default()
            })
            .collect(),
        instance_group: instance_groups(shared, model),
        default_model_filename: model
            .program_path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        dynamic_batching,
        model_transaction_policy: Some(ModelTransactionPolicy { decoupled: false }),
        runtime: String::new(),
    }
}

/// Triton's `DataType` of a protocol datatype.
pub(crate) fn data_type(datatype: Datatype) -> DataType {
    match datatype {
        Datatype::Bool => DataType::TypeBool,
        Datatype::U8 => DataType::TypeUint8,
        Datatype::U16 => DataType::TypeUint16,
        Datatype::U32 => DataType::TypeUint32,
        Datatype::U64 => DataType::TypeUint64,
        Datatype::I8 => DataType::TypeInt8,
        Datatype::I16 => DataType::TypeInt16,
        Datatype::I32 => DataType::TypeInt32,
        Datatype::I64 => DataType::TypeInt64,
        Datatype::F16 => DataType::TypeFp16,
        Datatype::F32 => DataType::TypeFp32,
        Datatype::F64 => DataType::TypeFp64,
        Datatype::Bf16 => DataType::TypeBf16,
    }
}

/// The execution slots on the model's devices, as instance groups (see the module's doc).
fn instance_groups(shared: &Shared, model: &ServedModel) -> Vec<ModelInstanceGroup> {
    let per_replica = shared.devices.per_replica();
    let per_replica = &per_replica[..model.replicas().clamp(1, per_replica.len())];
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let platform = shared.client.platform_name().to_ascii_lowercase();
    let kind = match platform.as_str() {
        "cpu" => InstanceKind::KindCpu,
        "cuda" | "rocm" | "gpu" => InstanceKind::KindGpu,
        _ => InstanceKind::KindModel,
    };
    if kind != InstanceKind::KindGpu {
        return vec![ModelInstanceGroup {
            name: model.name().into(),
            count: count(per_replica.iter().sum()),
            kind: kind as i32,
            ..Default::default()
        }];
    }
    // A group per slot count: the first devices may have one slot more than the others.
    let devices = shared.client.addressable_devices();
    let gpu = |i: usize| devices.get(i).and_then(|d| d.local_hardware_id().ok()).unwrap_or(count(i));
    let mut groups: Vec<(usize, Vec<i32>)> = Vec::new();
    for (i, &slots) in per_replica.iter().enumerate() {
        match groups.last_mut() {
            Some((n, gpus)) if *n == slots => gpus.push(gpu(i)),
            _ => groups.push((slots, vec![gpu(i)])),
        }
    }
    let named = groups.len() > 1;
    groups
        .into_iter()
        .enumerate()
        .map(|(i, (slots, gpus))| ModelInstanceGroup {
            name: if named { format!("{}_{i}", model.name()) } else { model.name().into() },
            count: count(slots),
            gpus,
            kind: kind as i32,
            ..Default::default()
        })
        .collect()
}

/// An enum field's name, `fallback` for a value the enum does not have.
fn enum_name<E: TryFrom<i32>>(value: i32, name: impl Fn(E) -> &'static str, fallback: &'static str) -> &'static str {
    E::try_from(value).map(name).unwrap_or(fallback)
}

/// The configuration as Triton's HTTP endpoint answers it (see the module's doc).
pub(crate) fn to_json(config: &ModelConfig) -> Value {
    let data_type = |v: i32| enum_name(v, DataType::as_str_name, "TYPE_INVALID");
    let mut json = json!({
        "name": config.name,
        "platform": config.platform,
        "backend": config.backend,
        "runtime": config.runtime,
        "max_batch_size": config.max_batch_size,
        "input": config.input.iter().map(|i| json!({
            "name": i.name,
            "data_type": data_type(i.data_type),
            "format": enum_name(i.format, InputFormat::as_str_name, "FORMAT_NONE"),
            "dims": i.dims,
            "is_shape_tensor": i.is_shape_tensor,
            "allow_ragged_batch": i.allow_ragged_batch,
            "optional": i.optional,
            "is_non_linear_format_io": i.is_non_linear_format_io,
        })).collect::<Vec<_>>(),
        "output": config.output.iter().map(|o| json!({
            "name": o.name,
            "data_type": data_type(o.data_type),
            "dims": o.dims,
            "label_filename": o.label_filename,
            "is_shape_tensor": o.is_shape_tensor,
            "is_non_linear_format_io": o.is_non_linear_format_io,
        })).collect::<Vec<_>>(),
        "batch_input": [],
        "batch_output": [],
        "instance_group": config.instance_group.iter().map(|g| json!({
            "name": g.name,
            "kind": enum_name(g.kind, InstanceKind::as_str_name, "KIND_AUTO"),
            "count": g.count,
            "gpus": g.gpus,
            "secondary_devices": [],
            "profile": g.profile,
            "passive": g.passive,
            "host_policy": g.host_policy,
        })).collect::<Vec<_>>(),
        "default_model_filename": config.default_model_filename,
        "cc_model_filenames": {},
        "metric_tags": {},
        "parameters": {},
        "model_warmup": [],
    });
    let object = json.as_object_mut().expect("an object");
    if let Some(policy) = &config.version_policy {
        let latest = policy.latest.as_ref().map(|l| json!({ "latest": { "num_versions": l.num_versions } }));
        object.insert("version_policy".into(), latest.unwrap_or_else(|| json!({})));
    }
    if let Some(b) = &config.dynamic_batching {
        object.insert(
            "dynamic_batching".into(),
            json!({
                "preferred_batch_size": b.preferred_batch_size,
                "max_queue_delay_microseconds": b.max_queue_delay_microseconds,
                "preserve_ordering": b.preserve_ordering,
                "priority_levels": b.priority_levels,
                "default_priority_level": b.default_priority_level,
                "priority_queue_policy": {},
            }),
        );
    }
    if let Some(t) = &config.model_transaction_policy {
        object.insert("model_transaction_policy".into(), json!({ "decoupled": t.decoupled }));
    }
    json
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_datatype_has_its_triton_type_of_the_same_name() {
        for name in [
            "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16", "FP32", "FP64",
            "BF16",
        ] {
            let datatype: Datatype = name.parse().unwrap();
            assert_eq!(data_type(datatype).as_str_name(), format!("TYPE_{name}"));
        }
    }

    #[test]
    fn the_json_names_enums_and_writes_64_bit_integers_as_numbers() {
        let config = ModelConfig {
            name: "m".into(),
            max_batch_size: 8,
            input: vec![ModelInput {
                name: "x".into(),
                data_type: DataType::TypeBf16 as i32,
                dims: vec![-1, 3],
                ..Default::default()
            }],
            dynamic_batching: Some(ModelDynamicBatching { max_queue_delay_microseconds: 2000, ..Default::default() }),
            instance_group: vec![ModelInstanceGroup {
                kind: InstanceKind::KindGpu as i32,
                count: 2,
                gpus: vec![0],
                ..Default::default()
            }],
            ..Default::default()
        };
        let json = to_json(&config);
        assert_eq!(json["input"][0]["data_type"], "TYPE_BF16");
        assert_eq!(json["input"][0]["format"], "FORMAT_NONE");
        assert_eq!(json["input"][0]["dims"], json!([-1, 3]));
        assert_eq!(json["dynamic_batching"]["max_queue_delay_microseconds"], 2000);
        assert_eq!(json["instance_group"][0]["kind"], "KIND_GPU");
        assert!(json.get("version_policy").is_none() && json.get("model_transaction_policy").is_none());
    }
}
