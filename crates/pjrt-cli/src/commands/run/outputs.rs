//! What `pjrt run` writes and prints: the output files (`.npy`, or one `.safetensors` per
//! device), checked before anything runs, and the text summary (a line per output with a preview
//! of its values, and what the compile cache did).

use std::path::{Path, PathBuf};

use pjrt_client::{ArrayShape, ElementType};
use pjrt_formats::atomic_file::StagedFile;
use pjrt_formats::npy::{Dtype, NpyArray};
use pjrt_formats::safetensors::{self, TensorView};
use pjrt_formats::{dtype_of, element_type_of};

use crate::error::Error;
use crate::out::outln;
use serde_json::Value as Json;

use crate::cli::OutputFormat;
use crate::ui::invalid;

/// The element type an output is stored as in a safetensors file: sub-byte integers widened to
/// I8/U8 (the format has no 4-, 2- or 1-bit integers) as in `.npy`, the 6-bit floats as U8
/// bit codes (the format names them but defines no packing), F4 packed as the format's `F4`.
fn tensor_type(element_type: ElementType) -> ElementType {
    match element_type {
        ElementType::F4E2M1FN => element_type,
        t if t.is_sub_byte() => dtype_of(t).map_or(t, element_type_of),
        t => t,
    }
}

/// [`output_dtype`] of every output of a program (`shapes`: its output shapes): what `pjrt run`
/// checks before uploading or running anything, so that no output fails after the work is done.
pub fn output_dtypes(format: OutputFormat, shapes: &[ArrayShape]) -> Result<Vec<&'static str>, Error> {
    shapes.iter().enumerate().map(|(i, shape)| output_dtype(format, i, shape)).collect()
}

/// The dtype output `index` (of per-device type and shape `shape`) is written as in `format`:
/// the `.npy` dtype (`int8` for an S4 output) or the safetensors dtype (`I8`, `F4`, ...). An
/// error says why it cannot be written, so that `pjrt run` refuses it before running anything.
pub fn output_dtype(format: OutputFormat, index: usize, shape: &ArrayShape) -> Result<&'static str, Error> {
    let cannot = |why: String| invalid(format!("output {index} is {shape}, which {why}"));
    let element_type = shape.element_type.ok_or_else(|| cannot("has an element type pjrt does not know".into()))?;
    // Every output is downloaded as a .npy array first.
    let npy = dtype_of(element_type)
        .ok_or_else(|| cannot(format!("pjrt run cannot write: {element_type} has no .npy dtype")))?;
    match format {
        OutputFormat::Npy => Ok(npy.name()),
        OutputFormat::Safetensors => {
            let stored = tensor_type(element_type);
            let name = safetensors::dtype_name(stored)
                .ok_or_else(|| cannot("safetensors cannot store (write it with --output-format npy)".into()))?;
            // Whether count * bits fills whole bytes, without forming a product that may overflow.
            let count_mod_8 = shape.dims.iter().fold(1u64, |m, d| m * d.rem_euclid(8) as u64 % 8);
            let bits = stored.bits().unwrap_or(8) as u64;
            if count_mod_8 * bits % 8 != 0 {
                let count = shape.dims.iter().fold(1u64, |n, d| n.saturating_mul(u64::try_from(*d).unwrap_or(0)));
                return Err(cannot(format!(
                    "safetensors cannot store: it packs {stored} {} per byte and needs whole bytes, but the output has \
                     {count} elements (write it with --output-format npy)",
                    8 / bits
                )));
            }
            Ok(name)
        }
    }
}

/// The files `pjrt run` writes in `dir` for `outputs` outputs of one device.
pub fn output_files(format: OutputFormat, dir: &Path, outputs: usize) -> Vec<PathBuf> {
    match format {
        OutputFormat::Npy => (0..outputs).map(|i| dir.join(format!("out{i}.npy"))).collect(),
        OutputFormat::Safetensors => vec![dir.join(SAFETENSORS_FILE)],
    }
}

/// Checks, before anything runs, that each of `files` can be written: creates its folder and a
/// temporary file beside it (removed again). A failure names the file.
pub fn check_writable(files: &[PathBuf]) -> Result<(), Error> {
    for file in files {
        if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| pjrt_client::Error::Io { path: dir.to_path_buf(), source: e })?;
        }
        StagedFile::create(file).map_err(|e| pjrt_client::Error::Io { path: file.clone(), source: e })?;
    }
    Ok(())
}

const SAFETENSORS_FILE: &str = "outputs.safetensors";

/// Collects one device's outputs in the chosen format, staged: nothing appears until every
/// output of every device is written and the caller commits them all ([`OutputSink::finish`]).
pub struct OutputSink {
    format: OutputFormat,
    dir: PathBuf,
    /// Safetensors outputs: name, stored type, shape, bytes as the file holds them.
    pending: Vec<(String, ElementType, Vec<i64>, Vec<u8>)>,
    /// `.npy` outputs, written to temporary files.
    staged: Vec<StagedFile>,
}

impl OutputSink {
    /// Outputs go to `dir` (which must exist).
    pub fn new(format: OutputFormat, dir: &Path) -> Self {
        OutputSink { format, dir: dir.to_path_buf(), pending: Vec::new(), staged: Vec::new() }
    }

    /// Adds output `index`: `array` as [`pjrt_formats::BufferExt::to_npy`] gives it
    /// (bf16 as raw bits, sub-byte types widened), `element_type` the buffer's. Returns the
    /// file it goes to and, for safetensors, the tensor name in it.
    pub fn add(
        &mut self,
        index: usize,
        element_type: ElementType,
        array: NpyArray,
    ) -> Result<(PathBuf, Option<String>), Error> {
        let name = format!("out{index}");
        match self.format {
            OutputFormat::Npy => {
                let file = self.dir.join(format!("{name}.npy"));
                self.staged.push(array.stage(&file)?);
                Ok((file, None))
            }
            OutputFormat::Safetensors => {
                let stored = tensor_type(element_type);
                // F4 arrives as one bit code per byte: the file packs two per byte.
                let bytes = if stored.is_sub_byte() {
                    safetensors::pack_sub_byte(stored, &array.data)
                        .map_err(|e| invalid(format!("output {name}: {e}")))?
                } else {
                    array.data
                };
                self.pending.push((name.clone(), stored, array.dims, bytes));
                Ok((self.file(), Some(name)))
            }
        }
    }

    fn file(&self) -> PathBuf {
        self.dir.join(SAFETENSORS_FILE)
    }

    /// The staged files of this device's outputs (the safetensors file written now), for the
    /// caller to commit once every device's outputs are staged.
    pub fn finish(self) -> Result<Vec<StagedFile>, Error> {
        if self.format != OutputFormat::Safetensors {
            return Ok(self.staged);
        }
        let views: Vec<(&str, TensorView<'_>)> = self
            .pending
            .iter()
            .map(|(name, element_type, dims, bytes)| {
                let view = TensorView::new(*element_type, dims, bytes)
                    .map_err(|e| invalid(format!("output {name} cannot be written as safetensors: {e}")))?;
                Ok((name.as_str(), view))
            })
            .collect::<Result<_, Error>>()?;
        Ok(vec![safetensors::stage(self.file(), &views, &[("producer", "pjrt run")])?])
    }
}

/// Renames every staged output over its file: the last step of an all-or-nothing write.
pub fn commit_all(staged: Vec<StagedFile>) -> Result<(), Error> {
    for file in staged {
        let target = file.target().to_path_buf();
        file.commit().map_err(|e| pjrt_client::Error::Io { path: target, source: e })?;
    }
    Ok(())
}

/// The text summary of `pjrt run`: one line per output (`rows` as in its `--json` report), each
/// prefixed with its device when there are several (`per_device`).
pub(crate) fn print_summary(rows: &[Json], per_device: bool) -> Result<(), crate::out::StdoutError> {
    for o in rows {
        let shape: Vec<String> = o["shape"].as_array().into_iter().flatten().map(|d| d.to_string()).collect();
        let element_type = o["element_type"].as_str().unwrap_or("");
        // Sub-byte outputs are stored widened: say as what.
        let widened = ElementType::from_name(element_type)
            .filter(|t| t.is_sub_byte())
            .map(|t| {
                let stored = o["stored_as"].as_str().unwrap_or("?");
                let codes = if t.is_integral() || stored == "F4" { "" } else { " bit codes" };
                format!(" (as {stored}{codes})")
            })
            .unwrap_or_default();
        outln!(
            "{}{}: {}[{}] = {}  -> {}{}{widened}",
            if per_device { format!("device{} ", o["device"]) } else { String::new() },
            format_args!("out{}", o["index"]),
            element_type,
            shape.join(","),
            o["preview"].as_str().unwrap_or(""),
            Path::new(o["file"].as_str().unwrap_or("")).display(),
            o["tensor"].as_str().map(|t| format!(":{t}")).unwrap_or_default()
        )?;
    }
    Ok(())
}

/// What the compile cache did, in one line: `compile cache: hit (loaded in 21.1 ms)`.
pub(crate) fn cache_line(cache: &str, compile_ms: f64, load_ms: f64, artifact: bool) -> String {
    match cache {
        _ if artifact => format!("compile cache: off (artifact loaded in {load_ms:.1} ms)"),
        "hit" => format!("compile cache: hit (loaded in {load_ms:.1} ms)"),
        "miss" => format!("compile cache: miss (compiled in {compile_ms:.1} ms)"),
        other => format!("compile cache: {other} (compiled in {compile_ms:.1} ms)"),
    }
}

/// A float as a reader wants it: plain decimals for everyday magnitudes, exponent notation for
/// tiny and huge ones (`4e-323`, not a line of 323 zeros). Shortest text that reads back exactly.
fn float_text<T: std::fmt::Display + std::fmt::LowerExp + Into<f64> + Copy>(value: T) -> String {
    let magnitude = value.into().abs();
    if magnitude != 0.0 && magnitude.is_finite() && !(1e-4..1e16).contains(&magnitude) {
        format!("{value:e}")
    } else {
        value.to_string()
    }
}

/// `re+imi`, each part as [`float_text`] writes it.
fn complex_text<T: std::fmt::Display + std::fmt::LowerExp + Into<f64> + Copy>(re: T, im: T) -> String {
    let im_text = float_text(im);
    let sign = if im_text.starts_with('-') || im_text.starts_with("NaN") { "" } else { "+" };
    format!("{}{sign}{im_text}i", float_text(re))
}

/// The first few values of an array, as text.
pub(crate) fn preview(array: &NpyArray, bf16: bool) -> String {
    const SHOWN: usize = 6;
    let size = array.dtype.size();
    let count = array.element_count();
    let values: Vec<String> = array
        .data
        .chunks_exact(size)
        .take(SHOWN)
        .map(|c| match array.dtype {
            Dtype::Bool => (c[0] != 0).to_string(),
            Dtype::I8 => (c[0] as i8).to_string(),
            Dtype::U8 => c[0].to_string(),
            Dtype::I16 => i16::from_le_bytes([c[0], c[1]]).to_string(),
            Dtype::U16 if bf16 => float_text(half::bf16::from_le_bytes([c[0], c[1]]).to_f32()),
            Dtype::U16 => u16::from_le_bytes([c[0], c[1]]).to_string(),
            Dtype::I32 => i32::from_le_bytes([c[0], c[1], c[2], c[3]]).to_string(),
            Dtype::U32 => u32::from_le_bytes([c[0], c[1], c[2], c[3]]).to_string(),
            Dtype::I64 => i64::from_le_bytes(c.try_into().unwrap_or([0; 8])).to_string(),
            Dtype::U64 => u64::from_le_bytes(c.try_into().unwrap_or([0; 8])).to_string(),
            Dtype::F16 => float_text(half::f16::from_le_bytes([c[0], c[1]]).to_f32()),
            Dtype::F32 => float_text(f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            Dtype::F64 => float_text(f64::from_le_bytes(c.try_into().unwrap_or([0; 8]))),
            Dtype::C64 => {
                complex_text(f32::from_le_bytes([c[0], c[1], c[2], c[3]]), f32::from_le_bytes([c[4], c[5], c[6], c[7]]))
            }
            Dtype::C128 => complex_text(
                f64::from_le_bytes(c[..8].try_into().unwrap_or([0; 8])),
                f64::from_le_bytes(c[8..].try_into().unwrap_or([0; 8])),
            ),
            _ => format!("{c:02x?}"),
        })
        .collect();
    let more = if count > SHOWN { ", ..." } else { "" };
    if array.dims.is_empty() {
        values.first().cloned().unwrap_or_default()
    } else {
        format!("[{}{more}]", values.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_output_type_has_a_file_form_or_a_reason() {
        use ElementType as T;
        let shape = |t: T, dims: &[i64]| ArrayShape { element_type: Some(t), dims: dims.to_vec() };
        let npy = |t: T| output_dtype(OutputFormat::Npy, 0, &shape(t, &[3]));
        let st = |t: T, dims: &[i64]| output_dtype(OutputFormat::Safetensors, 0, &shape(t, dims));
        assert_eq!(npy(T::S4).unwrap(), "int8");
        assert_eq!(npy(T::S1).unwrap(), "int8");
        assert_eq!(npy(T::U2).unwrap(), "uint8");
        assert_eq!(npy(T::F4E2M1FN).unwrap(), "uint8");
        assert_eq!(npy(T::F6E3M2FN).unwrap(), "uint8");
        assert_eq!(npy(T::BF16).unwrap(), "uint16");
        assert_eq!(st(T::S4, &[3]).unwrap(), "I8");
        assert_eq!(st(T::U1, &[3]).unwrap(), "U8");
        assert_eq!(st(T::F6E2M3FN, &[3]).unwrap(), "U8");
        assert_eq!(st(T::F4E2M1FN, &[2, 2]).unwrap(), "F4");
        assert_eq!(st(T::BF16, &[3]).unwrap(), "BF16");
        // An odd number of F4 elements leaves half a byte, which safetensors cannot store.
        let e = st(T::F4E2M1FN, &[3]).unwrap_err().to_string();
        assert!(e.contains("output 0 is f4e2m1fn[3]") && e.contains("--output-format npy"), "{e}");
        // Huge shapes decide by parity, without overflowing.
        assert!(st(T::F4E2M1FN, &[i64::MAX, 3]).is_err());
        assert_eq!(st(T::F4E2M1FN, &[i64::MAX, 4]).unwrap(), "F4");
        let e = npy(T::F8E4M3FN).unwrap_err().to_string();
        assert!(e.contains("f8e4m3fn"), "{e}");
        assert!(st(T::C128, &[1]).is_err());
        let unknown = ArrayShape { element_type: None, dims: vec![1] };
        assert!(output_dtype(OutputFormat::Npy, 2, &unknown).unwrap_err().to_string().contains("output 2"));
    }

    #[test]
    fn previews_use_exponents_for_tiny_and_huge_values() {
        assert_eq!(float_text(4e-323f64), "4e-323");
        assert_eq!(float_text(1.5e300f64), "1.5e300");
        assert_eq!(float_text(-2.5e-7f32), "-2.5e-7");
        assert_eq!(float_text(0.1f32), "0.1");
        assert_eq!(float_text(123456.5f64), "123456.5");
        assert_eq!(float_text(0f64), "0");
        assert_eq!(float_text(f64::INFINITY), "inf");
        assert_eq!(complex_text(1f32, -2e-9), "1-2e-9i");
        assert_eq!(complex_text(1f64, 2.0), "1+2i");
        let tiny = NpyArray::from_elements(vec![2], &[4e-323f64, 1.0]).unwrap();
        assert_eq!(preview(&tiny, false), "[4e-323, 1]");
    }

    #[test]
    fn cache_line_says_what_happened() {
        assert_eq!(cache_line("hit", 0.0, 21.14, false), "compile cache: hit (loaded in 21.1 ms)");
        assert_eq!(cache_line("miss", 887.0, 0.0, false), "compile cache: miss (compiled in 887.0 ms)");
        assert_eq!(cache_line("off", 12.0, 0.0, false), "compile cache: off (compiled in 12.0 ms)");
        assert_eq!(cache_line("off", 0.0, 3.0, true), "compile cache: off (artifact loaded in 3.0 ms)");
    }
}
