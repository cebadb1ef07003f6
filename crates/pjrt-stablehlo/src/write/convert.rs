//! StableHLO ops → VHLO ops (what StableHLO's `stablehlo-legalize-to-vhlo` does, the inverse
//! of `crate::vhlo::legalize`): the op version for the target, struct attributes exploded
//! into the op's fields, the defaults StableHLO leaves out filled in, lists as tensors and
//! symbols as strings.

use std::sync::Arc;

use super::error::WriteError;
use crate::ir::{Attr, Dim, ElementType, EnumAttr, Op, TensorType, Type};
use crate::vhlo::DefaultValue;
use pjrt_types::StableHloVersion;

type R<T> = Result<T, WriteError>;

/// A VHLO op ready to encode: its name (`add_v1`), its properties in property order, and its
/// discardable attributes.
pub(crate) struct VhloOp {
    pub name: &'static str,
    pub properties: Vec<(&'static str, Attr)>,
    pub discardable: Vec<(String, Attr)>,
}

/// The VHLO base name (`add`) of a StableHLO-level op name.
fn base_name(op: &str) -> Option<&str> {
    match op {
        "func.func" => Some("func"),
        "func.call" => Some("call"),
        "func.return" | "stablehlo.return" => Some("return"),
        _ => op.strip_prefix("stablehlo."),
    }
}

/// Struct attributes whose fields VHLO holds as the op's own attributes.
const EXPLODED: &[&str] = &["conv", "gather", "scatter", "dot", "dot_algorithm"];
/// The StableHLO attributes that are VHLO structs exploded (or a channel handle split).
const STRUCT_NAMES: &[&str] =
    &["dimension_numbers", "dot_dimension_numbers", "scatter_dimension_numbers", "algorithm", "channel_handle"];

fn i64_type() -> Type {
    Type::Scalar(ElementType::S64)
}

fn tensor(dims: Vec<u64>, element: ElementType) -> Type {
    Type::Tensor(TensorType {
        dims: dims.into_iter().map(Dim::Fixed).collect(),
        element: Box::new(Type::Scalar(element)),
        encoding: None,
    })
}

fn dense_i64(values: &[i64], dims: Vec<u64>) -> Attr {
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    Attr::Dense { ty: tensor(dims, ElementType::S64), data: Arc::from(data) }
}

/// An attribute as a VHLO op's property holds it: integer and boolean lists as 1-D tensors,
/// symbols as strings, a unit flag as `true`.
fn as_property(a: Attr) -> Attr {
    match a {
        Attr::I64Array(v) => {
            let n = v.len() as u64;
            dense_i64(&v, vec![n])
        }
        Attr::BoolArray(v) => {
            let n = v.len() as u64;
            let data: Vec<u8> = v.iter().map(|&b| u8::from(b)).collect();
            Attr::Dense { ty: tensor(vec![n], ElementType::PRED), data: Arc::from(data) }
        }
        Attr::SymbolRef(s) => Attr::String(s.into_bytes()),
        Attr::Unit => Attr::Bool(true),
        Attr::Array(items) => Attr::Array(
            items
                .into_iter()
                .map(|x| if let Attr::SymbolRef(s) = x { Attr::String(s.into_bytes()) } else { x })
                .collect(),
        ),
        other => other,
    }
}

fn precision_default() -> Attr {
    let p = Attr::Enum(EnumAttr { kind: "precision", value: "DEFAULT" });
    Attr::Array(vec![p.clone(), p])
}

fn list_len(flat: &[(String, String, Attr)], name: &str) -> Option<u64> {
    flat.iter().find(|(n, _, _)| n == name).and_then(|(_, _, a)| match a {
        Attr::I64Array(v) => Some(v.len() as u64),
        // (Bounded by the data, which holds at least a byte per element: a hand-built type
        // cannot size a huge default.)
        Attr::Dense { ty: Type::Tensor(t), data } => match t.dims.first() {
            Some(Dim::Fixed(n)) => Some((*n).min(data.len() as u64)),
            _ => None,
        },
        _ => None,
    })
}

/// The value VHLO holds for property `name` of `base` when StableHLO leaves it out (the one
/// VHLO table's default, sized by the other fields where it is a list per spatial dimension).
fn default(base: &str, name: &str, flat: &[(String, String, Attr)]) -> Option<Attr> {
    let (value, _) = crate::vhlo::default_of(base, name)?;
    let spatial = || match base {
        "convolution" | "dynamic_conv" => list_len(flat, "input_spatial_dimensions"),
        _ => list_len(flat, "window_dimensions"),
    };
    Some(match value {
        DefaultValue::EmptyString => Attr::String(Vec::new()),
        DefaultValue::EmptyArray => Attr::Array(Vec::new()),
        DefaultValue::EmptyDict => Attr::Dict(Vec::new()),
        DefaultValue::EmptyTensor => dense_i64(&[], vec![0]),
        DefaultValue::EmptyBackendConfig => {
            let typed_ffi =
                flat.iter().any(|(n, _, a)| n == "api_version" && matches!(a, Attr::Integer { value: 4, .. }));
            if typed_ffi {
                Attr::Dict(Vec::new())
            } else {
                Attr::String(Vec::new())
            }
        }
        DefaultValue::False => Attr::Bool(false),
        DefaultValue::I32(value) => Attr::Integer { value, ty: Type::Scalar(ElementType::S32) },
        DefaultValue::I64(value) => Attr::Integer { value, ty: i64_type() },
        DefaultValue::Enum(kind, value) => Attr::Enum(EnumAttr { kind, value }),
        DefaultValue::Precision => precision_default(),
        DefaultValue::Ones => {
            let n = spatial()?;
            dense_i64(&vec![1; n as usize], vec![n])
        }
        DefaultValue::Padding => {
            let n = spatial()?;
            dense_i64(&vec![0; 2 * n as usize], vec![n, 2])
        }
        DefaultValue::NoReversal => {
            let n = spatial()?;
            Attr::Dense { ty: tensor(vec![n], ElementType::PRED), data: Arc::from(vec![0u8; n as usize]) }
        }
        DefaultValue::Accuracy => {
            let zero = Attr::Float { bits: 0, ty: Type::Scalar(ElementType::F64) };
            Attr::Struct {
                mnemonic: "result_accuracy",
                fields: vec![
                    ("atol", zero.clone()),
                    ("rtol", zero),
                    ("ulps", Attr::Integer { value: 0, ty: i64_type() }),
                    ("mode", Attr::Enum(EnumAttr { kind: "result_accuracy_mode", value: "DEFAULT" })),
                ],
            }
        }
        DefaultValue::NoneType => Attr::Type(Type::None),
    })
}

/// The VHLO form of `op` at `target`: the newest version of the op `target` has, with its
/// properties; NotInVersion when the op (or one of its attributes) is newer than `target`.
pub(crate) fn to_vhlo(op: &Op, target: StableHloVersion) -> R<VhloOp> {
    let base = base_name(&op.name).ok_or_else(|| WriteError::Unrepresentable {
        what: format!("the op {} (only builtin.module, func and stablehlo ops have VHLO forms)", op.name),
    })?;
    let versions = crate::vhlo::op_versions(base);
    let Some(oldest) = versions.first() else {
        return Err(WriteError::Unrepresentable { what: format!("the op {} (no VHLO op {base}_vN)", op.name) });
    };
    let Some(chosen) = versions.iter().rev().find(|o| o.contains(target)) else {
        return Err(WriteError::NotInVersion { what: format!("the op {}", op.name), needs: oldest.since, target });
    };
    let (name, props) = (chosen.name, chosen.attributes);
    let inherent = |n: &str| STRUCT_NAMES.contains(&n) || versions.iter().any(|o| o.attributes.contains(&n));
    // (field name, the StableHLO attribute it came from, value).
    let mut flat: Vec<(String, String, Attr)> = Vec::new();
    let mut discardable = Vec::new();
    for (n, a) in &op.attributes {
        if !inherent(n) {
            discardable.push((n.clone(), a.clone()));
            continue;
        }
        match a {
            Attr::Struct { mnemonic, fields } if EXPLODED.contains(mnemonic) => {
                for (f, v) in fields {
                    flat.push((f.to_string(), n.clone(), v.clone()));
                }
            }
            Attr::Struct { mnemonic: "channel_handle", fields } => {
                for (f, v) in fields {
                    let field = match *f {
                        "handle" => "channel_id",
                        "type" if matches!(base, "send" | "recv") => "channel_type",
                        // A collective's channel type is implied by the op.
                        _ => continue,
                    };
                    flat.push((field.to_string(), n.clone(), v.clone()));
                }
            }
            _ => flat.push((n.clone(), n.clone(), a.clone())),
        }
    }
    // Defaults are sized by other fields (spatial dimensions), looked up before any is taken.
    let given = flat.clone();
    let mut properties = Vec::with_capacity(props.len());
    for &p in props {
        let value = match flat.iter().position(|(n, _, _)| n == p) {
            Some(i) => as_property(flat.remove(i).2),
            None => as_property(default(base, p, &given).ok_or_else(|| WriteError::Unrepresentable {
                what: format!("{} without its {p} attribute", op.name),
            })?),
        };
        properties.push((p, value));
    }
    if let Some((field, origin, _)) = flat.first() {
        let needs = versions.iter().find(|o| o.attributes.contains(&field.as_str())).map(|o| o.since);
        return Err(match needs {
            Some(needs) if target < needs => {
                WriteError::NotInVersion { what: format!("{} with the attribute {origin}", op.name), needs, target }
            }
            _ => WriteError::Unrepresentable { what: format!("the attribute {origin} of {}", op.name) },
        });
    }
    Ok(VhloOp { name, properties, discardable })
}
