//! Programs to compile: StableHLO/MLIR (text or bytecode) and serialized HLO modules; with the
//! `stablehlo` feature, through the StableHLO IR as well (`stablehlo.rs`).

#[cfg(feature = "stablehlo")]
mod stablehlo;

#[cfg(not(feature = "stablehlo"))]
use std::borrow::Cow;
use std::path::Path;

use crate::error::{Error, Result};
use pjrt_types::{ElementType, StableHloVersion};

/// The magic that starts MLIR bytecode.
const MLIR_BYTECODE_MAGIC: &[u8] = b"ML\xefR";

/// The program formats PJRT compiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProgramFormat {
    /// MLIR (StableHLO or MHLO), as text or bytecode: PJRT format `"mlir"`.
    Mlir,
    /// A serialized `xla.HloModuleProto`: PJRT format `"hlo"`.
    Hlo,
}

impl ProgramFormat {
    /// The format string PJRT expects (compared by length, no NUL).
    pub fn as_pjrt_str(self) -> &'static str {
        match self {
            ProgramFormat::Mlir => "mlir",
            ProgramFormat::Hlo => "hlo",
        }
    }
}

/// A program and its format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    format: ProgramFormat,
    code: Vec<u8>,
    /// Parameters the caller declared ([`Program::with_parameters`]).
    parameters: Option<Vec<(ElementType, Vec<i64>)>>,
}

impl Program {
    /// StableHLO/MLIR text.
    pub fn mlir_text(text: impl Into<String>) -> Result<Program> {
        let text = text.into();
        if text.trim().is_empty() {
            return Err(Error::invalid("the MLIR program is empty"));
        }
        Ok(Program { format: ProgramFormat::Mlir, code: text.into_bytes(), parameters: None })
    }

    /// MLIR bytecode (including StableHLO portable artifacts).
    pub fn mlir_bytecode(bytes: Vec<u8>) -> Result<Program> {
        if !bytes.starts_with(MLIR_BYTECODE_MAGIC) {
            return Err(Error::invalid("not MLIR bytecode: it does not start with the bytecode magic `ML\\xefR`"));
        }
        Ok(Program { format: ProgramFormat::Mlir, code: bytes, parameters: None })
    }

    /// A serialized `xla.HloModuleProto`.
    pub fn hlo_module_proto(bytes: Vec<u8>) -> Result<Program> {
        if bytes.is_empty() {
            return Err(Error::invalid("the HLO module is empty"));
        }
        Ok(Program { format: ProgramFormat::Hlo, code: bytes, parameters: None })
    }

    /// Reads a program from a file: MLIR bytecode is recognised by its magic, `.pb`/`.hlo`
    /// files are HLO module protos, anything else must be MLIR text.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Program> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        if bytes.starts_with(MLIR_BYTECODE_MAGIC) {
            return Program::mlir_bytecode(bytes);
        }
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if ext == "pb" || ext == "hlo" {
            return Program::hlo_module_proto(bytes);
        }
        match String::from_utf8(bytes) {
            Ok(text) => Program::mlir_text(text).map_err(|e| match e {
                Error::InvalidArgument(m) => Error::invalid(format!("{}: {m}", path.display())),
                other => other,
            }),
            Err(_) => Err(Error::invalid(format!(
                "{} is neither MLIR text (it is not UTF-8) nor MLIR bytecode (no `ML\\xefR` magic); \
                 for a serialized HloModuleProto use the extension .pb",
                path.display()
            ))),
        }
    }

    /// Declares the program's parameters (element type and dimensions of each, in order), for
    /// programs whose signature this crate cannot read itself (MLIR bytecode, HLO): an
    /// executable compiled from it checks its arguments against them when the plugin's optimized
    /// program does not tell its parameters either (see
    /// [`crate::LoadedExecutable::argument_checks_off_because`]). The plugin's own answer wins
    /// where it gives one. `pjrt_formats` declares a `jax.export` model's parameters from its
    /// avals this way.
    ///
    /// ```
    /// use pjrt_client::{ElementType, Program};
    ///
    /// let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/formats/tanh_mul.mlirbc"))?;
    /// let program = Program::mlir_bytecode(bytes)?.with_parameters([(ElementType::F32, vec![4]), (ElementType::F32, vec![4])]);
    /// assert_eq!(program.declared_parameters().map(|p| p.len()), Some(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_parameters(mut self, parameters: impl IntoIterator<Item = (ElementType, Vec<i64>)>) -> Program {
        self.parameters = Some(parameters.into_iter().collect());
        self
    }

    /// The parameters declared with [`Program::with_parameters`].
    pub fn declared_parameters(&self) -> Option<&[(ElementType, Vec<i64>)]> {
        self.parameters.as_deref()
    }

    /// The format.
    pub fn format(&self) -> ProgramFormat {
        self.format
    }

    /// The program bytes.
    pub fn code(&self) -> &[u8] {
        &self.code
    }

    /// The text, for MLIR text programs.
    pub fn text(&self) -> Option<&str> {
        if self.format == ProgramFormat::Mlir && !self.code.starts_with(MLIR_BYTECODE_MAGIC) {
            std::str::from_utf8(&self.code).ok()
        } else {
            None
        }
    }

    /// The producer string in an MLIR bytecode header (after the magic and the bytecode
    /// version): `StableHLO_v1.0.0` for a StableHLO portable artifact, `MLIR23.0.0git` for
    /// plain bytecode. `None` for text, HLO, or a header that does not parse.
    pub fn bytecode_producer(&self) -> Option<&str> {
        let rest = self.code.strip_prefix(MLIR_BYTECODE_MAGIC)?;
        let rest = rest.get(mlir_varint_len(*rest.first()?)?..)?;
        // A producer is short; a NUL within the first 256 bytes or no producer at all.
        let end = rest.iter().take(256).position(|&b| b == 0)?;
        std::str::from_utf8(&rest[..end]).ok()
    }

    /// The StableHLO version a portable artifact was serialized for, read from its producer
    /// (`StableHLO_v1.0.0`). `None` for anything else: MLIR text and plain bytecode carry no
    /// StableHLO version (they are read as the plugin's own).
    ///
    /// ```
    /// use pjrt_client::{Program, StableHloVersion};
    ///
    /// let artifact = Program::from_file(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/formats/tanh_mul.portable-1.0.0.mlirbc"))?;
    /// assert_eq!(artifact.bytecode_producer(), Some("StableHLO_v1.0.0"));
    /// assert_eq!(artifact.stablehlo_target(), Some(StableHloVersion::new(1, 0, 0)));
    /// assert_eq!(Program::mlir_text("func.func @main() { return }")?.stablehlo_target(), None);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn stablehlo_target(&self) -> Option<StableHloVersion> {
        StableHloVersion::of_producer(self.bytecode_producer()?)
    }

    /// The replica and partition counts a lowered module asks for in its attributes
    /// (`mhlo.num_replicas = 2 : i32`, `mhlo.num_partitions = ...`), as JAX writes them. Read
    /// from MLIR text, and from MLIR bytecode with the `stablehlo` feature (nothing for HLO).
    pub fn module_counts(&self) -> ModuleCounts {
        let Some(text) = self.text() else {
            #[cfg(feature = "stablehlo")]
            if self.format == ProgramFormat::Mlir {
                return stablehlo::bytecode_module_counts(&self.code);
            }
            return ModuleCounts::default();
        };
        // Attributes sit on the `module` line, before the first function.
        let header = text.split("func.func").next().unwrap_or("");
        ModuleCounts {
            num_replicas: attribute_count(header, "mhlo.num_replicas"),
            num_partitions: attribute_count(header, "mhlo.num_partitions"),
            uses_shardy: header.contains("sdy.mesh") || text.contains("sdy.sharding"),
        }
    }
}

/// What a module's attributes say about how to compile it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModuleCounts {
    /// `mhlo.num_replicas`
    pub num_replicas: Option<usize>,
    /// `mhlo.num_partitions`
    pub num_partitions: Option<usize>,
    /// Whether the module carries Shardy (`sdy`) shardings.
    pub uses_shardy: bool,
}

/// `program` as a plugin that reads StableHLO up to `current` reads it. With the `stablehlo`
/// feature, a portable artifact newer than `current` is written again for it; without it, and
/// for every other program, the program as it is (the version check refuses what the plugin
/// cannot read).
#[cfg(feature = "stablehlo")]
pub(crate) use stablehlo::{for_plugin, write_target};

/// `program` as a plugin that reads StableHLO up to `current` reads it: without the
/// `stablehlo` feature, always the program as it is.
#[cfg(not(feature = "stablehlo"))]
pub(crate) fn for_plugin(program: &Program, current: Option<StableHloVersion>) -> Result<Cow<'_, Program>> {
    let _ = current;
    Ok(Cow::Borrowed(program))
}

/// The element types whose `dense<...>` literals XLA cannot import: a constant of one that
/// reaches XLA (not folded away by the plugin's StableHLO passes) aborts the 0.115 CPU plugin's
/// process (`array.h:316 Check failed: ... == num_elements() (0 vs. 2)`) where the 0.106 one
/// returns an error ("result #0 type is not supported"). Arrays of these types are fine: as
/// arguments, results and values converted to and from them.
/// Each with its MLIR name, as text spells it.
pub(crate) const LITERAL_TYPES_XLA_CANNOT_IMPORT: [(&str, ElementType); 2] =
    [("f6E2M3FN", ElementType::F6E2M3FN), ("f6E3M2FN", ElementType::F6E3M2FN)];

/// Refuses, before a compile, a program that makes plugins abort instead of returning an error
/// (see [`LITERAL_TYPES_XLA_CANNOT_IMPORT`]): MLIR text is read by the IR (with the `stablehlo`
/// feature) when it names one of the types, or else scanned line by line for a `dense<...>` of
/// one; MLIR bytecode is read by the IR with the feature (without it, it goes unchecked: it
/// has no text to scan). HLO modules pass.
pub(crate) fn refuse_what_aborts_plugins(program: &Program) -> Result<()> {
    if program.format != ProgramFormat::Mlir {
        return Ok(());
    }
    let Some(text) = program.text() else {
        #[cfg(feature = "stablehlo")]
        if let Ok(module) = pjrt_stablehlo::read_bytecode(&program.code) {
            return stablehlo::refuse_literals_xla_cannot_import(&module);
        }
        return Ok(());
    };
    if !LITERAL_TYPES_XLA_CANNOT_IMPORT.iter().any(|(name, _)| text.contains(name)) {
        return Ok(());
    }
    #[cfg(feature = "stablehlo")]
    if let Ok(module) = pjrt_stablehlo::parse_text(text) {
        return stablehlo::refuse_literals_xla_cannot_import(&module);
    }
    // Text the IR does not read (or no IR): any line with a dense literal and one of the types.
    for line in text.lines().filter(|line| line.contains("dense<")) {
        if let Some(&(_, element_type)) = LITERAL_TYPES_XLA_CANNOT_IMPORT.iter().find(|(name, _)| line.contains(name)) {
            let op = line.split_whitespace().find(|word| word.contains('.')).unwrap_or("an op");
            let op = op.split(['(', '<', ' ']).next().unwrap_or(op).trim_matches('"');
            return Err(Error::LiteralXlaCannotImport { element_type, op: op.to_owned() });
        }
    }
    Ok(())
}

/// The parameters of `program`'s `@main`, from its signature: MLIR text, and MLIR bytecode with
/// the `stablehlo` feature. `Err` says why they cannot be read.
pub(crate) fn main_parameters(program: &Program) -> std::result::Result<Vec<MlirParameter>, String> {
    match (program.format, program.text()) {
        (ProgramFormat::Mlir, Some(text)) => mlir_main_parameters(text),
        #[cfg(feature = "stablehlo")]
        (ProgramFormat::Mlir, None) => stablehlo::bytecode_main_parameters(&program.code),
        #[cfg(not(feature = "stablehlo"))]
        (ProgramFormat::Mlir, None) => Err("the program compiled was MLIR bytecode (without the stablehlo feature \
                                            only MLIR text has a signature this crate reads; declare the parameters \
                                            with Program::with_parameters)"
            .to_owned()),
        (ProgramFormat::Hlo, _) => Err("the program compiled was an HLO module (declare its parameters with \
                                        Program::with_parameters)"
            .to_owned()),
    }
}

/// One parameter of an MLIR `@main`: its element type (`None`: a type this crate does not map)
/// and dimensions.
pub(crate) type MlirParameter = (Option<ElementType>, Vec<i64>);

/// The parameters of `func.func ... @main(...)` in MLIR text, from the signature alone: every
/// one must be a static `tensor<...>`. `Err` says why the signature cannot be read (no `@main`,
/// a dynamic dimension, a non-tensor type, unbalanced brackets).
pub(crate) fn mlir_main_parameters(text: &str) -> std::result::Result<Vec<MlirParameter>, String> {
    let at = text
        .match_indices("@main(")
        .map(|(i, m)| i + m.len())
        .find(|&i| text[..i].rsplit("func.func").next().is_some_and(|between| !between.contains('\n')))
        .ok_or("the MLIR has no `func.func @main(`")?;
    let args = top_level_split(&text[at..], ',', ')').ok_or("the parameter list of @main is not balanced")?;
    args.iter()
        .filter(|a| !a.trim().is_empty())
        .map(|arg| {
            let (_, ty) = arg.split_once(':').ok_or_else(|| format!("parameter `{}` has no type", arg.trim()))?;
            tensor_type(ty.trim()).ok_or_else(|| format!("parameter type `{}` is not a static tensor", ty.trim()))
        })
        .collect()
}

/// Splits `text` at `separator` outside brackets and strings, up to the unmatched `end`.
fn top_level_split(text: &str, separator: char, end: char) -> Option<Vec<&str>> {
    let (mut depth, mut in_string, mut escaped, mut start) = (0usize, false, false, 0);
    let mut parts = Vec::new();
    for (i, c) in text.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '(' | '<' | '[' | '{' => depth += 1,
            c if depth == 0 && c == end => {
                parts.push(&text[start..i]);
                return Some(parts);
            }
            ')' | '>' | ']' | '}' => depth = depth.checked_sub(1)?,
            c if depth == 0 && c == separator => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    None
}

/// `tensor<2x3xf32>` (attributes after it ignored) as its element type and dimensions.
fn tensor_type(ty: &str) -> Option<MlirParameter> {
    let body = ty.strip_prefix("tensor<")?;
    let inner = top_level_split(body, '\0', '>')?.pop()?;
    let mut dims = Vec::new();
    let mut rest = inner;
    while let Some((dim, tail)) = rest.split_once('x') {
        match dim.parse::<i64>() {
            Ok(d) if d >= 0 => dims.push(d),
            _ => break, // the element type (`complex<f32>`, `f8E4M3FN`, ...) or `?`
        }
        rest = tail;
    }
    if rest.contains('?') || rest.contains(',') {
        return None; // dynamic, or an encoding (sparse, bounds): not a plain static array
    }
    Some((ElementType::from_mlir_name(rest.trim()).filter(|t| t.is_array_type()), dims))
}

/// The length of an MLIR bytecode varint from its first byte: the number of trailing zero bits
/// says how many bytes follow (none at all: 8 bytes follow the marker byte).
fn mlir_varint_len(first: u8) -> Option<usize> {
    Some(if first == 0 { 9 } else { first.trailing_zeros() as usize + 1 })
}

fn attribute_count(text: &str, name: &str) -> Option<usize> {
    let at = text.find(name)? + name.len();
    let rest = text[at..].trim_start().strip_prefix('=')?.trim_start();
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_jax_module_header() {
        let p = Program::mlir_text(
            "module @jit_f attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {\n\
             func.func public @main() {}\n}",
        )
        .unwrap();
        let c = p.module_counts();
        assert_eq!((c.num_replicas, c.num_partitions), (Some(1), Some(2)));
    }

    #[test]
    fn producer_and_target_come_from_the_bytecode_header() {
        let bytecode = |version: &[u8], producer: &[u8]| {
            Program::mlir_bytecode([MLIR_BYTECODE_MAGIC, version, producer, b"\0rest"].concat()).unwrap()
        };
        let p = bytecode(&[0x0d], b"StableHLO_v1.12.3");
        let v = StableHloVersion::new;
        assert_eq!((p.bytecode_producer(), p.stablehlo_target()), (Some("StableHLO_v1.12.3"), Some(v(1, 12, 3))));
        // A two-byte version varint.
        assert_eq!(bytecode(&[0x02, 0x01], b"StableHLO_v2.0.0").stablehlo_target(), Some(v(2, 0, 0)));
        assert_eq!(bytecode(&[0x0d], b"MLIR23.0.0git").stablehlo_target(), None);
        for bad in [&b"StableHLO_v1.0"[..], b"StableHLO_v1.0.0.0", b"StableHLO_vx.0.0", b"StableHLO_v"] {
            assert_eq!(bytecode(&[0x0d], bad).stablehlo_target(), None, "{bad:?}");
        }
        // Cut short: no NUL, or nothing after the magic.
        assert_eq!(Program::mlir_bytecode(b"ML\xefR\x0dStableHLO_v1.0.0".to_vec()).unwrap().bytecode_producer(), None);
        assert_eq!(Program::mlir_bytecode(b"ML\xefR".to_vec()).unwrap().bytecode_producer(), None);
        assert_eq!(Program::mlir_bytecode(b"ML\xefR\x00".to_vec()).unwrap().bytecode_producer(), None);
    }

    #[test]
    fn f6_literals_are_refused_from_text_the_ir_does_not_read_too() {
        // Unbalanced (no IR reads it): the line scan finds the literal and names the op.
        let text = "func.func @main() -> tensor<2xf6E3M2FN> {\n  %c = \"my.const\"() {value = dense<1.0> : \
                    tensor<2xf6E3M2FN>} : () -> tensor<2xf6E3M2FN>\n";
        let program = Program::mlir_text(text).unwrap();
        match refuse_what_aborts_plugins(&program) {
            Err(Error::LiteralXlaCannotImport { element_type: ElementType::F6E3M2FN, op }) => {
                assert_eq!(op, "my.const")
            }
            other => panic!("{other:?}"),
        }
        // The types elsewhere (a parameter, a converted result) pass; so does HLO.
        let fine = "func.func @main(%a: tensor<2xf6E2M3FN>) -> tensor<2xf32> {\n  \
                    %0 = stablehlo.convert %a : (tensor<2xf6E2M3FN>) -> tensor<2xf32>\n  return %0 : tensor<2xf32>\n}";
        assert!(refuse_what_aborts_plugins(&Program::mlir_text(fine).unwrap()).is_ok());
    }

    #[test]
    fn main_parameters_come_from_the_signature() {
        let jax = "module @jit_f attributes {mhlo.num_partitions = 1 : i32} {\n  func.func private @helper(%x: tensor<7xf32>) \
                   -> tensor<7xf32> {\n return %x : tensor<7xf32>\n }\n  func.func public @main(%arg0: tensor<2x3xf32> \
                   {mhlo.sharding = \"{devices=[2,1]<=[2]}\", jax.arg_info = \"x, y)\"}, %arg1: tensor<i32>, \
                   %arg2: tensor<4xcomplex<f32>>, %arg3: tensor<1x2xui8>, %arg4: tensor<3xi1>, %arg5: tensor<0xf8E4M3FN>, \
                   %arg6: tensor<2xbf16>) -> (tensor<2x3xf32>) {";
        let params = mlir_main_parameters(jax).unwrap();
        assert_eq!(
            params,
            [
                (Some(ElementType::F32), vec![2, 3]),
                (Some(ElementType::S32), vec![]),
                (Some(ElementType::C64), vec![4]),
                (Some(ElementType::U8), vec![1, 2]),
                (Some(ElementType::PRED), vec![3]),
                (Some(ElementType::F8E4M3FN), vec![0]),
                (Some(ElementType::BF16), vec![2]),
            ]
        );
        assert_eq!(mlir_main_parameters("func.func @main() -> () {").unwrap(), []);
        assert_eq!(mlir_main_parameters("func.func @main(%a: tensor<2xf99>) {").unwrap(), [(None, vec![2])]);
        for (bad, why) in [
            ("func.func @main(%a: tensor<?x2xf32>) {", "static tensor"),
            ("func.func @main(%a: !stablehlo.token) {", "static tensor"),
            ("func.func @main(%a: tuple<tensor<2xf32>>) {", "static tensor"),
            ("func.func @main(%a: tensor<2xf32, #sparse>) {", "static tensor"),
            ("func.func @helper(%a: tensor<2xf32>) {", "no `func.func @main("),
            ("func.func @main(%a: tensor<2xf32>", "not balanced"),
            ("func.func @main(%a: tensor<2xf32>>) {", "not balanced"),
            ("func.func @main(%a) {", "has no type"),
        ] {
            let err = mlir_main_parameters(bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn rejects_empty_and_fake_bytecode() {
        assert!(Program::mlir_text("  \n").is_err());
        assert!(Program::mlir_bytecode(b"not bytecode".to_vec()).is_err());
        assert!(Program::hlo_module_proto(vec![]).is_err());
    }
}
