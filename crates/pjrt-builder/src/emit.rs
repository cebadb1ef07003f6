//! The attributes ops carry, as [`pjrt_stablehlo::ir`] attributes: what every op file builds
//! its attributes with (the IR is printed by [`pjrt_stablehlo::print`], the one printer), in
//! the forms StableHLO 1.x reads and both CPU plugins here compile (StableHLO 1.17 in jaxlib
//! 0.10.6, 1.20 in 0.11.5).
//!
//! Integer-list attributes are dense arrays (`array<i64: 1, 2>`: StableHLO moved from
//! `dense<...> : tensor<Nxi64>` to them in 2024; both plugins read only the new form for these
//! ops); padding, replica groups and source-target pairs stay dense elements.

use std::sync::Arc;

use pjrt_stablehlo::ir::{Attr, EnumAttr, Location, Type as IrType};
use pjrt_types::ElementType;

use crate::error::BuildError;
use crate::types::{ir_tensor, Type};

/// An attribute a user adds: built here, or MLIR text the user gave (read into the IR, and
/// checked, when the op or parameter is added).
#[derive(Clone, Debug)]
pub(crate) enum AttributeValue {
    Built(Attr),
    Text(String),
}

/// `array<i64: 1, 2>` (`array<i64>` when empty).
pub(crate) fn i64_array(values: &[i64]) -> Attr {
    Attr::I64Array(values.to_vec())
}

/// `array<i1: true, false>` (`array<i1>` when empty).
pub(crate) fn bool_array(values: &[bool]) -> Attr {
    Attr::BoolArray(values.to_vec())
}

/// `dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>`: an integer matrix (padding, replica groups,
/// source-target pairs: attributes StableHLO still spells as dense elements). Every row has
/// `columns` entries; no rows is `dense<> : tensor<0xCOLUMNSxi64>`.
pub(crate) fn i64_matrix(rows: &[Vec<i64>], columns: usize) -> Attr {
    let ty = ir_tensor(ElementType::S64, &[rows.len() as u64, columns as u64]);
    let data: Vec<u8> = rows.iter().flatten().flat_map(|v| v.to_le_bytes()).collect();
    // Every row has `columns` entries (the callers' checks): the data is the type's.
    Attr::dense_elements(ty, data).unwrap_or(Attr::Unit)
}

/// `3 : i64`
pub(crate) fn i64_attr(value: i64) -> Attr {
    Attr::Integer { value, ty: IrType::Scalar(ElementType::S64) }
}

/// `3 : i32`
pub(crate) fn i32_attr(value: i32) -> Attr {
    Attr::Integer { value: value.into(), ty: IrType::Scalar(ElementType::S32) }
}

/// `true` / `false`
pub(crate) fn bool_attr(value: bool) -> Attr {
    Attr::Bool(value)
}

/// `#stablehlo<comparison_direction LT>`: an enum attribute.
pub(crate) fn enum_attr(kind: &'static str, value: &'static str) -> Attr {
    Attr::Enum(EnumAttr { kind, value })
}

/// `#stablehlo.MNEMONIC<field = value, ...>`: a struct attribute (`dot`, `gather`, `scatter`,
/// `conv`, `channel_handle`), its fields in StableHLO's order.
pub(crate) fn struct_attr(mnemonic: &'static str, fields: Vec<(&'static str, Attr)>) -> Attr {
    Attr::Struct { mnemonic, fields }
}

/// A string attribute.
pub(crate) fn string_attr(value: &str) -> Attr {
    Attr::String(value.as_bytes().to_vec())
}

/// The location every op gets: the builder records none.
pub(crate) fn unknown_location() -> Arc<Location> {
    Arc::new(Location::Unknown)
}

/// Whether `name` is an MLIR bare identifier (`mhlo.sharding`, `main`): a letter or `_`, then
/// letters, digits, `_`, `$` and `.`.
pub(crate) fn is_bare_identifier(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$'))
}

/// An attribute a user gives as text (`name = mlir_value`) for `op`, read into the IR: the name
/// must be a bare identifier and the value exactly one attribute ([`pjrt_stablehlo::parse_attribute`]:
/// nothing before or after it), so that neither can add an attribute or a parameter. The plugin
/// judges what the attribute means (and names it in its error).
pub(crate) fn user_attribute(op: &'static str, name: &str, mlir_value: &str) -> Result<Attr, BuildError> {
    if !is_bare_identifier(name) {
        return Err(BuildError::InvalidAttribute {
            op,
            message: format!(
                "{name:?} is not an attribute name (a letter or `_`, then letters, digits, `_`, `.` and `$`)"
            ),
        });
    }
    let problem = match pjrt_stablehlo::parse_attribute(mlir_value) {
        // A comment would be dropped silently: the text is not what it seems.
        Ok(_) if has_comment(mlir_value) => "`//` starts a comment".to_string(),
        Ok(attr) => return Ok(attr),
        Err(e) => e.to_string(),
    };
    Err(BuildError::InvalidAttribute {
        op,
        message: format!(
            "the value of attribute {name}, {mlir_value:?}, is not one MLIR attribute: {problem}; give a single \
             attribute (`1 : i32`, `\"text\"`, `[1, 2]`, `{{a = 1}}`), quoting text as an MLIR string"
        ),
    })
}

/// Whether `text` has `//` outside its strings.
fn has_comment(text: &str) -> bool {
    let mut in_string = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if in_string => {
                chars.next();
            }
            '"' => in_string = !in_string,
            '/' if !in_string && chars.peek() == Some(&'/') => return true,
            _ => {}
        }
    }
    false
}

/// Types joined for messages: `tensor<2xf32> and tensor<3xf32>`, `a, b and c`.
pub(crate) fn types_for_message<'a>(types: impl IntoIterator<Item = &'a Type>) -> String {
    let items: Vec<String> = types.into_iter().map(|t| t.to_string()).collect();
    match items.len() {
        0 => "(none)".to_string(),
        1 => items[0].clone(),
        n => format!("{} and {}", items[..n - 1].join(", "), items[n - 1]),
    }
}

#[cfg(test)]
mod tests {
    use super::user_attribute;

    #[test]
    fn user_attributes_are_one_attribute_each() {
        for good in [
            "1 : i32",
            "\"{devices=[2,1]<=[2]}\"",
            "\"a \\\" } , // b\"",
            "[1, 2]",
            "{a = 1, b = \"x\"}",
            "dense<[1, 2]> : tensor<2xi64>",
            "#sdy.sharding<@mesh, [{\"x\"}, {}]>",
        ] {
            assert!(user_attribute("op", "my.note", good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "1 : i32}, %evil: tensor<2xf32> {my.other = 2",
            "1 : i32, tf.aliasing_output = 0 : i32",
            "1 // the rest",
            "\"open",
            "[1, 2",
            "(1]",
        ] {
            let e = user_attribute("op", "my.note", bad).unwrap_err().to_string();
            assert!(e.contains("is not one MLIR attribute"), "{bad:?}: {e}");
        }
        assert!(user_attribute("op", "a} = 1 {", "1").unwrap_err().to_string().contains("is not an attribute name"));
    }
}
