//! MLIR text programs with dynamic shapes (`tensor<?x4xf32>`, what `exported.mlir_module()`
//! prints for a shape-polymorphic export), made static for the inputs at hand as
//! [`crate::jax_export::JaxExport::program_for`] does for `.jaxexport` models. Dimension
//! values that come in as `@main` arguments (`tensor<i64> {jax.global_constant = "b"}`) are
//! given by name, or inferred when exactly one assignment fits the inputs.

use std::path::Path;

use pjrt_client::{ElementType, Program};
use pjrt_stablehlo::ir::{Attr, Module, Type};

use crate::error::{Error, Result};
use crate::jax_export::InputShape;

/// How many dimension assignments inference tries before it asks for `--dim`.
const MAX_ASSIGNMENTS: usize = 4096;

/// An MLIR text program, parsed.
///
/// ```
/// use pjrt_client::ElementType;
/// use pjrt_formats::mlir_text::TextProgram;
///
/// let text = r#"func.func public @main(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
///   %0 = stablehlo.add %x, %x : tensor<?x2xf32>
///   return %0 : tensor<?x2xf32>
/// }"#;
/// let program = TextProgram::parse(text, "add.mlir")?;
/// assert!(program.is_dynamic());
/// let static_program = program.program_for(&[(ElementType::F32, vec![3, 2])], &[])?;
/// assert_eq!(static_program.declared_parameters(), Some(&[(ElementType::F32, vec![3, 2])][..]));
/// let text = pjrt_formats::mlir_text::program_text(&static_program)?;
/// assert!(text.contains("tensor<3x2xf32>"), "{text}");
/// # Ok::<(), pjrt_formats::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct TextProgram {
    module: Module,
    label: String,
}

/// A program's MLIR text: a text program's own, or the text of a StableHLO portable artifact
/// (the input program as its producer wrote it, in the generic op form; a compiled
/// executable's optimized module is [`pjrt_client::LoadedExecutable`]'s to give). HLO and
/// bytecode that is not a portable artifact are refused.
///
/// ```
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/formats/tanh_mul.portable-1.0.0.mlirbc");
/// let program = pjrt_client::Program::from_file(path)?;
/// let text = pjrt_formats::mlir_text::program_text(&program)?;
/// assert!(text.contains("\"stablehlo.tanh\""));
/// # Ok::<(), pjrt_formats::Error>(())
/// ```
pub fn program_text(program: &Program) -> Result<String> {
    if let Some(text) = program.text() {
        return Ok(text.to_string());
    }
    if program.format() != pjrt_client::ProgramFormat::Mlir {
        return Err(Error::invalid("an HLO program has no MLIR text: give a StableHLO program"));
    }
    let module = pjrt_stablehlo::read_bytecode(program.code())
        .map_err(|e| Error::invalid(format!("the program's bytecode cannot be read as text: {e}")))?;
    Ok(pjrt_stablehlo::print(&module))
}

/// Whether MLIR text may have dynamic shapes or dimension parameters: the cheap test a
/// caller makes before it parses a program it would otherwise hand to the plugin as it is.
///
/// ```
/// assert!(pjrt_formats::mlir_text::may_be_dynamic("func.func @main(%x: tensor<?xf32>)"));
/// assert!(!pjrt_formats::mlir_text::may_be_dynamic("func.func @main(%x: tensor<2xf32>)"));
/// ```
pub fn may_be_dynamic(text: &str) -> bool {
    text.contains("<?") || text.contains("x?") || text.contains("jax.global_constant")
}

impl TextProgram {
    /// Parses `text`; `label` (a file name) starts the messages of syntax errors
    /// (`model.mlir:3:14: expected ...`).
    pub fn parse(text: &str, label: &str) -> Result<TextProgram> {
        let module = pjrt_stablehlo::parse_text(text).map_err(|e| syntax_error(label, e))?;
        Ok(TextProgram { module, label: label.to_string() })
    }

    /// A program's module: its MLIR text parsed, or its StableHLO portable artifact read
    /// (`.mlirbc`, as `jax.export` serializes its module: `?` dimensions and all); `label` (a
    /// file name) starts the messages. HLO and bytecode that is not a portable artifact are
    /// refused ([`program_text`]).
    ///
    /// ```
    /// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/formats/tanh_mul.portable-1.0.0.mlirbc");
    /// let program = pjrt_client::Program::from_file(path)?;
    /// let parsed = pjrt_formats::mlir_text::TextProgram::from_program(&program, "tanh_mul.mlirbc")?;
    /// assert!(!parsed.is_dynamic());
    /// assert_eq!(parsed.parameter_element_types(), vec![Some(pjrt_client::ElementType::F32); 2]);
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    pub fn from_program(program: &Program, label: &str) -> Result<TextProgram> {
        if let Some(text) = program.text() {
            return TextProgram::parse(text, label);
        }
        if program.format() != pjrt_client::ProgramFormat::Mlir {
            return Err(Error::invalid(format!(
                "{label}: an HLO program has no StableHLO module: give a StableHLO program"
            )));
        }
        let module = pjrt_stablehlo::read_bytecode(program.code())
            .map_err(|e| Error::invalid(format!("{label}: the bytecode is not a StableHLO portable artifact: {e}")))?;
        Ok(TextProgram { module, label: label.to_string() })
    }

    /// Reads and parses a `.mlir` file.
    ///
    /// ```
    /// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/formats/tanh_mul.mlir");
    /// let program = pjrt_formats::mlir_text::TextProgram::read(path)?;
    /// assert!(!program.is_dynamic());
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    pub fn read(path: impl AsRef<Path>) -> Result<TextProgram> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| pjrt_client::Error::Io { path: path.to_path_buf(), source: e })?;
        let text = std::str::from_utf8(&bytes).map_err(|e| {
            Error::invalid(format!("{}: MLIR text that is not UTF-8 (at byte {})", path.display(), e.valid_up_to()))
        })?;
        TextProgram::parse(text, &path.display().to_string())
    }

    /// The parsed module.
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// True if `@main` has `?` dimensions anywhere in the module, or dimension parameters:
    /// [`TextProgram::program_for`] makes it static.
    pub fn is_dynamic(&self) -> bool {
        pjrt_stablehlo::is_polymorphic(&self.module) || !self.dimension_variables().is_empty()
    }

    /// The dimension variables `@main` takes as arguments (`{jax.global_constant = "b"}`), in
    /// parameter order.
    pub fn dimension_variables(&self) -> Vec<String> {
        pjrt_stablehlo::dimension_parameters(&self.module).into_iter().map(|(_, n)| n).collect()
    }

    /// The element type of each data parameter of `@main` (the dimension parameters left out),
    /// `None` where it is not a tensor of an element type PJRT has.
    ///
    /// ```
    /// let text = "func.func @main(%n: tensor<i32> {jax.global_constant = \"n\"}, %x: tensor<?xbf16>) {\n  return\n}";
    /// let program = pjrt_formats::mlir_text::TextProgram::parse(text, "f.mlir")?;
    /// assert_eq!(program.parameter_element_types(), vec![Some(pjrt_client::ElementType::BF16)]);
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    pub fn parameter_element_types(&self) -> Vec<Option<ElementType>> {
        let skip: Vec<usize> = pjrt_stablehlo::dimension_parameters(&self.module).into_iter().map(|(i, _)| i).collect();
        let Some((inputs, _)) = self.main_type() else {
            return Vec::new();
        };
        inputs
            .iter()
            .enumerate()
            .filter(|(i, _)| !skip.contains(i))
            .map(|(_, t)| match t {
                Type::Tensor(t) => t.element_type(),
                _ => None,
            })
            .collect()
    }

    /// The type of each result of `@main`: its element type (`None` where it is not a tensor of
    /// an element type PJRT has) and its dimensions (`None` for a `?` one, known once the
    /// program is refined for its inputs). Empty when no `@main` is found.
    ///
    /// ```
    /// use pjrt_client::ElementType;
    /// let text = "func.func @main(%x: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<i32>) {\n  %c = stablehlo.constant dense<1> : tensor<i32>\n  return %x, %c : tensor<?x2xf32>, tensor<i32>\n}";
    /// let program = pjrt_formats::mlir_text::TextProgram::parse(text, "f.mlir")?;
    /// assert_eq!(
    ///     program.result_types(),
    ///     vec![(Some(ElementType::F32), vec![None, Some(2)]), (Some(ElementType::S32), vec![])]
    /// );
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    pub fn result_types(&self) -> Vec<(Option<ElementType>, Vec<Option<i64>>)> {
        let Some((_, outputs)) = self.main_type() else {
            return Vec::new();
        };
        outputs
            .iter()
            .map(|t| match t {
                Type::Tensor(t) => (
                    t.element_type(),
                    t.dims
                        .iter()
                        .map(|d| match d {
                            pjrt_stablehlo::ir::Dim::Fixed(n) => i64::try_from(*n).ok(),
                            pjrt_stablehlo::ir::Dim::Dynamic => None,
                        })
                        .collect(),
                ),
                _ => (None, Vec::new()),
            })
            .collect()
    }

    /// `@main`'s parameter and result types.
    fn main_type(&self) -> Option<(&[Type], &[Type])> {
        let main = self
            .module
            .walk()
            .find(|op| op.name == "func.func" && matches!(op.attr("sym_name"), Some(Attr::String(s)) if s == b"main"));
        match main.and_then(|m| m.attr("function_type")) {
            Some(Attr::Type(Type::Function { inputs, outputs })) => Some((inputs, outputs)),
            _ => None,
        }
    }

    /// The program to compile for inputs of `inputs` (one per data parameter of `@main`, the
    /// dimension parameters left out) and dimension values `dims` (by name): the module
    /// refined to static shapes ([`crate::jax_export::refined_program`]). A dimension variable `dims` does not give is
    /// inferred when exactly one assignment of the inputs' sizes refines; otherwise the error
    /// asks for it by name.
    pub fn program_for(&self, inputs: &[InputShape], dims: &[(String, i64)]) -> Result<Program> {
        let variables = self.dimension_variables();
        for (name, _) in dims {
            if !variables.contains(name) {
                return Err(Error::invalid(format!(
                    "{}: --dim {name}: the program has no dimension parameter {name} (it has {})",
                    self.label,
                    if variables.is_empty() { "none".to_string() } else { variables.join(", ") }
                )));
            }
        }
        let args: Vec<Type> = inputs
            .iter()
            .map(|(e, d)| Type::tensor(*e, &d.iter().map(|&x| x.max(0) as u64).collect::<Vec<_>>()))
            .collect();
        let missing: Vec<&String> = variables.iter().filter(|v| !dims.iter().any(|(n, _)| n == *v)).collect();
        let refined = if missing.is_empty() {
            self.refine_with(&args, dims)?
        } else {
            self.infer(&args, inputs, dims, &missing)?
        };
        let program = crate::jax_export::refined_program(&refined)?;
        // One device sees `@main`'s parameters as they are; several see their shards.
        Ok(if partitions(&refined) > 1 { program } else { program.with_parameters(inputs.iter().cloned()) })
    }

    fn refine_with(&self, args: &[Type], dims: &[(String, i64)]) -> Result<Module> {
        let bound = pjrt_stablehlo::bind_dimensions(&self.module, dims)?;
        Ok(pjrt_stablehlo::refine(&bound, args)?)
    }

    /// Tries every assignment of the inputs' sizes to the `missing` variables.
    fn infer(
        &self,
        args: &[Type],
        inputs: &[InputShape],
        dims: &[(String, i64)],
        missing: &[&String],
    ) -> Result<Module> {
        let mut sizes: Vec<i64> = inputs.iter().flat_map(|(_, d)| d.iter().copied()).collect();
        sizes.sort_unstable();
        sizes.dedup();
        let ask = |why: &str| {
            let names: Vec<String> = missing.iter().map(|n| format!("--dim {n}=VALUE")).collect();
            Error::invalid(format!("{}: {why}; give {}", self.label, names.join(" ")))
        };
        let tries = sizes.len().checked_pow(missing.len() as u32).filter(|&n| n <= MAX_ASSIGNMENTS && n > 0);
        let Some(tries) = tries else {
            return Err(ask("the dimension values cannot be inferred from the inputs"));
        };
        let mut fits = Vec::new();
        let mut first = None;
        for k in 0..tries {
            let mut assignment: Vec<(String, i64)> = dims.to_vec();
            let mut rest = k;
            for name in missing {
                assignment.push(((*name).clone(), sizes[rest % sizes.len()]));
                rest /= sizes.len();
            }
            if let Ok(m) = self.refine_with(args, &assignment) {
                fits.push(assignment[dims.len()..].to_vec());
                first.get_or_insert(m);
                if fits.len() > 1 {
                    break;
                }
            }
        }
        match (fits.len(), first) {
            (1, Some(m)) => Ok(m),
            (0, _) => Err(ask("no assignment of the inputs' sizes to the dimension variables fits the inputs")),
            _ => {
                let show =
                    |a: &[(String, i64)]| a.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join(" ");
                Err(ask(&format!(
                    "more than one assignment fits the inputs ({} and {})",
                    show(&fits[0]),
                    show(&fits[1])
                )))
            }
        }
    }
}

/// `mhlo.num_partitions` of the module (1 when absent).
fn partitions(m: &Module) -> i64 {
    let top = m.ops.iter().find(|op| op.name == "builtin.module");
    match top.and_then(|op| op.attr("mhlo.num_partitions")) {
        Some(pjrt_stablehlo::ir::Attr::Integer { value, .. }) => *value,
        _ => 1,
    }
}

/// A parse error with the file's name in front, as compilers write them.
fn syntax_error(label: &str, e: pjrt_stablehlo::Error) -> Error {
    match e {
        pjrt_stablehlo::Error::Syntax { line, column, what, .. } => {
            Error::invalid(format!("{label}:{line}:{column}: {what}"))
        }
        other => Error::invalid(format!("{label}: {other}")),
    }
}
