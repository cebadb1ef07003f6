//! The one attribute writer every op uses: MLIR's generic op form and attribute spellings that
//! both CPU plugins here parse (StableHLO 1.17 in jaxlib 0.10.6, 1.20 in 0.11.5).
//!
//! Integer-list attributes are `array<i64: 1, 2>` (StableHLO moved from `dense<...> :
//! tensor<Nxi64>` to dense arrays in 2024; both plugins read only the new form for these ops).

use std::fmt::Write;

use crate::types::Type;

/// `array<i64: 1, 2>` (`array<i64>` when empty).
pub(crate) fn i64_array(values: &[i64]) -> String {
    if values.is_empty() {
        return "array<i64>".to_string();
    }
    let mut s = String::from("array<i64: ");
    join_into(&mut s, values.iter());
    s.push('>');
    s
}

/// `array<i1: true, false>` (`array<i1>` when empty).
pub(crate) fn bool_array(values: &[bool]) -> String {
    if values.is_empty() {
        return "array<i1>".to_string();
    }
    let mut s = String::from("array<i1: ");
    join_into(&mut s, values.iter());
    s.push('>');
    s
}

/// `dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>`: an integer matrix (padding, replica groups,
/// source-target pairs: attributes StableHLO still spells as dense elements). Every row has
/// `columns` entries; no rows is `dense<> : tensor<0xCOLUMNSxi64>`.
pub(crate) fn i64_matrix(rows: &[Vec<i64>], columns: usize) -> String {
    if rows.is_empty() {
        return format!("dense<> : tensor<0x{columns}xi64>");
    }
    let mut s = String::from("dense<[");
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        s.push('[');
        join_into(&mut s, row.iter());
        s.push(']');
    }
    let _ = write!(s, "]> : tensor<{}x{columns}xi64>", rows.len());
    s
}

/// `[1, 2]`: a list inside a struct attribute such as `#stablehlo.dot<...>`.
pub(crate) fn list(values: &[i64]) -> String {
    let mut s = String::from("[");
    join_into(&mut s, values.iter());
    s.push(']');
    s
}

/// `3 : i64`
pub(crate) fn i64_attr(value: i64) -> String {
    format!("{value} : i64")
}

/// `3 : i32`
pub(crate) fn i32_attr(value: i32) -> String {
    format!("{value} : i32")
}

/// `#stablehlo<comparison_direction LT>`: an enum attribute.
pub(crate) fn enum_attr(kind: &str, value: &str) -> String {
    format!("#stablehlo<{kind} {value}>")
}

/// A quoted MLIR string, escaped.
pub(crate) fn string_attr(value: &str) -> String {
    let mut s = String::with_capacity(value.len() + 2);
    s.push('"');
    for c in value.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\{:02X}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// `{a = x, b = y}`, or nothing when empty.
pub(crate) fn attr_dict(attributes: &[(&str, String)]) -> String {
    if attributes.is_empty() {
        return String::new();
    }
    let mut s = String::from(" {");
    for (i, (name, value)) in attributes.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{name} = {value}");
    }
    s.push('}');
    s
}

/// `(t1, t2) -> t3` (results in parentheses unless exactly one non-function type).
pub(crate) fn function_type(operands: &[&Type], results: &[Type]) -> String {
    let mut s = String::from("(");
    join_into(&mut s, operands.iter());
    s.push_str(") -> ");
    if results.len() == 1 {
        let _ = write!(s, "{}", results[0]);
    } else {
        s.push('(');
        join_into(&mut s, results.iter());
        s.push(')');
    }
    s
}

/// `0x0000803F`: bytes as MLIR's hex form of a dense attribute (the raw little-endian buffer).
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut s = String::with_capacity(2 + 2 * bytes.len());
    s.push_str("0x");
    for &b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

pub(crate) fn join_into<T: std::fmt::Display>(s: &mut String, items: impl Iterator<Item = T>) {
    for (i, item) in items.enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{item}");
    }
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
