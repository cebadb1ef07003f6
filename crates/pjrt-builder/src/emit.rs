//! The one attribute writer every op uses: MLIR's generic op form and attribute spellings that
//! both CPU plugins here parse (StableHLO 1.17 in jaxlib 0.10.6, 1.20 in 0.11.5).
//!
//! Integer-list attributes are `array<i64: 1, 2>` (StableHLO moved from `dense<...> :
//! tensor<Nxi64>` to dense arrays in 2024; both plugins read only the new form for these ops).

use std::fmt::Write;

use crate::error::BuildError;
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

/// Whether `name` is an MLIR bare identifier (`mhlo.sharding`, `main`): a letter or `_`, then
/// letters, digits, `_`, `$` and `.`. Written bare, such a name cannot end a dictionary, an
/// argument list or a symbol early.
pub(crate) fn is_bare_identifier(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$'))
}

/// Checks an attribute a user gives as text (`name = mlir_value`) before it is written into an
/// attribute dictionary of `op`: the name must be a bare identifier and the value one attribute
/// whose brackets and strings close within it, so that neither can end the dictionary, add an
/// attribute or a parameter, or comment out the rest of the line. The value is not parsed
/// further: the plugin's parser judges it (and names it in its error).
pub(crate) fn check_user_attribute(op: &'static str, name: &str, mlir_value: &str) -> Result<(), BuildError> {
    if !is_bare_identifier(name) {
        return Err(BuildError::InvalidAttribute {
            op,
            message: format!(
                "{name:?} is not an attribute name (a letter or `_`, then letters, digits, `_`, `.` and `$`)"
            ),
        });
    }
    match value_problem(mlir_value) {
        None => Ok(()),
        Some(problem) => Err(BuildError::InvalidAttribute {
            op,
            message: format!(
                "the value of attribute {name}, {mlir_value:?}, is not one MLIR attribute: {problem}; give a single \
                 attribute (`1 : i32`, `\"text\"`, `[1, 2]`, `{{a = 1}}`), quoting text as an MLIR string"
            ),
        }),
    }
}

/// What keeps `value` from being one self-contained attribute's text: an empty value, a bracket
/// (`()[]{}<>`) that closes what it did not open or is left open, a string left open, a `,` outside
/// every bracket (a second attribute), `//` outside a string (a comment to the end of the line) or
/// a control character outside a string. `->` and `>=` are not closing brackets.
fn value_problem(value: &str) -> Option<String> {
    if value.trim().is_empty() {
        return Some("it is empty".to_string());
    }
    let mut open: Vec<char> = Vec::new();
    let mut chars = value.chars().peekable();
    let mut previous = ' ';
    while let Some(c) = chars.next() {
        match c {
            '"' => loop {
                match chars.next() {
                    Some('\\') => {
                        chars.next();
                    }
                    Some('"') => break,
                    Some(_) => {}
                    None => return Some("a string is not closed".to_string()),
                }
            },
            '(' | '[' | '{' | '<' => open.push(c),
            '>' if previous == '-' || chars.peek() == Some(&'=') => {}
            ')' | ']' | '}' | '>' => {
                let opener = match c {
                    ')' => '(',
                    ']' => '[',
                    '}' => '{',
                    _ => '<',
                };
                if open.pop() != Some(opener) {
                    return Some(format!("`{c}` closes a bracket it did not open"));
                }
            }
            ',' if open.is_empty() => return Some("`,` outside brackets starts another attribute".to_string()),
            '/' if chars.peek() == Some(&'/') => return Some("`//` starts a comment".to_string()),
            c if c.is_control() => return Some(format!("control character {:?} outside a string", c)),
            _ => {}
        }
        previous = c;
    }
    open.last().map(|c| format!("`{c}` is not closed"))
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

#[cfg(test)]
mod tests {
    use super::value_problem;

    #[test]
    fn attribute_values_that_stay_inside_their_attribute() {
        for good in [
            "1 : i32",
            "\"{devices=[2,1]<=[2]}\"",
            "\"a \\\" } , // b\"",
            "[1, 2]",
            "{a = 1, b = \"x\"}",
            "dense<[1, 2]> : tensor<2xi64>",
            "#sdy.sharding<@mesh, [{\"x\"}, {}]>",
            "affine_map<(d0) -> (d0)>",
            "(i32, f32) -> i32",
        ] {
            assert_eq!(value_problem(good), None, "{good}");
        }
        for (bad, why) in [
            ("", "empty"),
            ("1 : i32}, %evil: tensor<2xf32> {my.other = 2", "closes"),
            ("1 : i32, tf.aliasing_output = 0 : i32", "another attribute"),
            ("1 // the rest", "comment"),
            ("\"open", "string"),
            ("[1, 2", "not closed"),
            ("(1]", "closes"),
            ("1\n", "control"),
        ] {
            let problem = value_problem(bad).unwrap_or_else(|| panic!("{bad:?} passed"));
            assert!(problem.contains(why), "{bad:?}: {problem}");
        }
    }
}
