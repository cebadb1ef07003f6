//! A program's arguments as [`super::bind`] takes them: the parameters of its `@main`, named
//! from MLIR text (`jax.arg_info`, locations, SSA names) or bytecode (`jax.arg_info`, locations).

use pjrt_client::{ElementType, Program};

use super::{parse_path, Argument};

/// A program's arguments for [`bind`](super::bind): the parameters of its `@main` (dimension
/// parameters, `jax.global_constant`, left out: `--dim` gives them), each with its name where the
/// program has one and its type. Names come from MLIR text's `jax.arg_info = "..."`, else the
/// argument's location `loc("params['w']")` (as `jax.export` lowers with debug info), else its
/// SSA name unless it is the generic `%argN`; from bytecode, `jax.arg_info` or the argument's
/// location. `None` for HLO, or when no `@main` is found.
///
/// ```
/// let program = pjrt_client::Program::mlir_text(
///     r#"func.func public @main(%arg0: tensor<2x?xf32> loc("params['w']"), %bias: tensor<i32>) -> tensor<i32> {
///   return %bias : tensor<i32>
/// }"#,
/// )?;
/// let arguments = pjrt_formats::binding::program_arguments(&program).unwrap();
/// assert_eq!(arguments[0].name.as_deref(), Some("params['w']"));
/// assert_eq!(arguments[0].dims, Some(vec![Some(2), None]));
/// assert_eq!(arguments[1].name.as_deref(), Some("bias"));
/// assert_eq!(arguments[1].element_type, Some(pjrt_client::ElementType::S32));
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub fn program_arguments(program: &Program) -> Option<Vec<Argument>> {
    match program.text() {
        Some(text) => text_arguments(text),
        None if program.format() == pjrt_client::ProgramFormat::Mlir => bytecode_arguments(program.code()),
        None => None,
    }
}

/// [`program_arguments`] of MLIR text, read from the `@main` signature.
fn text_arguments(text: &str) -> Option<Vec<Argument>> {
    let start = text.find("@main(")? + "@main(".len();
    let mut arguments = Vec::new();
    for arg in split_arguments(&text[start..])? {
        let arg = arg.trim();
        if arg.is_empty() || arg.contains("jax.global_constant") {
            continue;
        }
        let info = arg
            .find("jax.arg_info = \"")
            .and_then(|at| read_mlir_string(&arg[at + "jax.arg_info = ".len()..]))
            .or_else(|| location_name(text, arg));
        let (ssa, ty) = arg.strip_prefix('%').and_then(|rest| rest.split_once(':')).unwrap_or(("", arg));
        let ssa = Some(ssa.trim()).filter(|n| !is_generic_ssa_name(n)).map(String::from);
        let mut argument = with_root_group(info.or(ssa));
        if let Some((element_type, dims)) = tensor_type(ty.trim()) {
            argument.element_type = Some(element_type);
            argument.dims = Some(dims);
        }
        arguments.push(argument);
    }
    Some(arguments)
}

/// An argument named `name`, in the group of its root (`params` for `params['w']`): the
/// Python argument it is a leaf of.
fn with_root_group(name: Option<String>) -> Argument {
    let group = name.as_deref().and_then(parse_path).and_then(|(root, _)| root.map(str::to_owned));
    Argument { name, group, ..Argument::default() }
}

/// `tensor<2x?xf32>` at the start of `ty`: its element type and dimensions.
pub(super) fn tensor_type(ty: &str) -> Option<(ElementType, Vec<Option<i64>>)> {
    let body = ty.strip_prefix("tensor<")?;
    // The element type may itself hold `<...>` (`complex<f32>`); an encoding follows a comma.
    let mut depth = 0;
    let end = body.char_indices().find_map(|(i, c)| match c {
        '<' => {
            depth += 1;
            None
        }
        '>' if depth == 0 => Some(i),
        '>' => {
            depth -= 1;
            None
        }
        ',' if depth == 0 => Some(i),
        _ => None,
    })?;
    let body = &body[..end];
    let mut parts: Vec<&str> = Vec::new();
    let mut rest = body;
    // Dimensions are `N` or `?` followed by `x`; what is left is the element type.
    loop {
        let dim_end = rest.find('x');
        match dim_end {
            Some(i) if i > 0 && (rest[..i] == *"?" || rest[..i].bytes().all(|b| b.is_ascii_digit())) => {
                parts.push(&rest[..i]);
                rest = &rest[i + 1..];
            }
            _ => break,
        }
    }
    let element_type = ElementType::ALL.iter().copied().find(|e| e.mlir_name() == Some(rest.trim()))?;
    let dims = parts.iter().map(|p| p.parse::<i64>().ok()).collect();
    Some((element_type, dims))
}

/// [`program_arguments`] of a portable artifact.
fn bytecode_arguments(bytes: &[u8]) -> Option<Vec<Argument>> {
    use pjrt_stablehlo::ir::{Attr, Type};
    let module = pjrt_stablehlo::read_bytecode(bytes).ok()?;
    let main = module
        .walk()
        .find(|op| op.name == "func.func" && matches!(op.attr("sym_name"), Some(Attr::String(s)) if s == b"main"))?;
    let Some(Attr::Type(Type::Function { inputs, .. })) = main.attr("function_type") else { return None };
    let locations = pjrt_stablehlo::argument_locations(bytes, "main").ok().flatten().unwrap_or_default();
    let infos: Vec<Option<String>> = match main.attr("arg_attrs") {
        Some(Attr::Array(items)) => items
            .iter()
            .map(|item| match item {
                Attr::Dict(entries) => entries.iter().find_map(|(k, v)| match v {
                    Attr::String(s) if k == "jax.arg_info" => Some(String::from_utf8_lossy(s).into_owned()),
                    _ => None,
                }),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let skip: Vec<usize> = pjrt_stablehlo::dimension_parameters(&module).into_iter().map(|(i, _)| i).collect();
    let arguments = inputs
        .iter()
        .enumerate()
        .filter(|(i, _)| !skip.contains(i))
        .map(|(i, ty)| {
            let name = infos.get(i).cloned().flatten().or_else(|| locations.get(i).and_then(|l| name_of_location(l)));
            let mut argument = with_root_group(name);
            if let Type::Tensor(t) = ty {
                if let Some(element_type) = t.element_type() {
                    argument.element_type = Some(element_type);
                    argument.dims = Some(
                        t.dims
                            .iter()
                            .map(|d| match d {
                                pjrt_stablehlo::ir::Dim::Fixed(n) => i64::try_from(*n).ok(),
                                _ => None,
                            })
                            .collect(),
                    );
                }
            }
            argument
        })
        .collect();
    Some(arguments)
}

/// The name a location gives (JAX's `loc("params['w']")`), if it is a name.
pub(crate) fn name_of_location(location: &pjrt_stablehlo::ir::Location) -> Option<String> {
    match location {
        pjrt_stablehlo::ir::Location::Name { name, .. } if !name.is_empty() => Some(name.clone()),
        _ => None,
    }
}

/// The name JAX gives an argument as its location when it lowers with debug info (as
/// `jax.export` does): `%arg0: tensor<4xf32> loc("params['w']")`, or `loc(#loc3)` with
/// `#loc3 = loc("params['w']")` at the end of the module. File locations (`loc("f.py":3:1)`)
/// are not names.
fn location_name(module: &str, arg: &str) -> Option<String> {
    let at = arg.rfind("loc(")?;
    let inner = &arg[at + "loc(".len()..];
    // The literal must be the whole location: `"name")`.
    let name_of =
        |text: &str| read_mlir_string_and_rest(text).and_then(|(name, rest)| rest.starts_with(')').then_some(name));
    if inner.starts_with('"') {
        return name_of(inner);
    }
    let alias = inner.strip_prefix('#')?.split(')').next()?;
    let definition = format!("#{alias} = loc(");
    let line = module.lines().find(|l| l.trim_start().starts_with(&definition))?;
    let start = line.find(&definition)? + definition.len();
    name_of(&line[start..])
}

/// Empty, or `argN` as MLIR prints unnamed arguments: names nothing.
fn is_generic_ssa_name(name: &str) -> bool {
    name.is_empty() || name.strip_prefix("arg").is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
}

/// The top-level comma-separated pieces of an argument list, up to its closing `)`.
fn split_arguments(text: &str) -> Option<Vec<&str>> {
    let bytes = text.as_bytes();
    let (mut depth, mut in_string, mut escaped, mut piece_start) = (0i32, false, false, 0);
    let mut pieces = Vec::new();
    for (i, &c) in bytes.iter().enumerate() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'(' | b'[' | b'{' | b'<' => depth += 1,
            // `->` inside a type is an arrow, not a closing bracket.
            b'>' if i > 0 && bytes[i - 1] == b'-' => {}
            b')' if depth == 0 => {
                pieces.push(&text[piece_start..i]);
                return Some(pieces);
            }
            b')' | b']' | b'}' | b'>' => depth -= 1,
            b',' if depth == 0 => {
                pieces.push(&text[piece_start..i]);
                piece_start = i + 1;
            }
            _ => {}
        }
    }
    None
}

/// The contents of an MLIR string literal that starts `text` (`"..."`, with `\"` and `\\`).
fn read_mlir_string(text: &str) -> Option<String> {
    read_mlir_string_and_rest(text).map(|(s, _)| s)
}

/// As [`read_mlir_string`], plus the text after the closing quote.
fn read_mlir_string_and_rest(text: &str) -> Option<(String, &str)> {
    let body = text.strip_prefix('"')?;
    let mut chars = body.char_indices();
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &body[i + 1..])),
            '\\' => out.push(chars.next()?.1),
            c => out.push(c),
        }
    }
    None
}
