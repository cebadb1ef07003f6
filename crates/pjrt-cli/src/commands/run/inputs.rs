//! The inputs of `pjrt run`: `--input` (`.npy` files, `FILE.safetensors:NAME` or
//! `FILE.npz:NAME`) and `--params FILE.safetensors` or `FILE.npz` (bound to the program's
//! arguments by [`pjrt_formats::binding::bind`]: by name, or by dtype and shape when no name
//! matches and they leave one assignment), read and uploaded.
//!
//! Every file is read once into memory of its own (`SafeTensors::open`, `MappedNpy::open`,
//! `Npz::open`), never memory-mapped (`open_mapped`): a command cannot promise that no other
//! process rewrites or truncates the user's files while it runs, which a mapping needs (a
//! rewrite would silently change the inputs, a truncation end the process with SIGBUS). The
//! read costs about as much as copying the bytes once, and uploads then use that memory in
//! place.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use pjrt_client::{Buffer, Client, ElementType, HostArray, LoadedExecutable, Placement, UploadOptions};
use pjrt_formats::binding::{self, Argument, BoundBy, NamedTensor};
use pjrt_formats::jax_export::{InputShape, JaxExport, ModuleArgument};
use pjrt_formats::npy::{MappedNpy, NpyArray};
use pjrt_formats::npz::{Npz, NpzArray};
use pjrt_formats::safetensors::{SafeTensors, TensorView};
use pjrt_formats::ClientExt;

use crate::compiling::ProgramSource;
use crate::error::Error;
use crate::ui::{self, invalid};

/// The suffix that marks a safetensors file in `--input FILE.safetensors:NAME`.
const SAFETENSORS_SUFFIX: &str = ".safetensors";
/// The suffix that marks an `.npz` archive in `--input FILE.npz:NAME` and `--params FILE.npz`.
const NPZ_SUFFIX: &str = ".npz";

/// One `--input` argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputSource {
    /// A `.npy` file.
    Npy(PathBuf),
    /// One tensor of a safetensors file.
    Tensor {
        /// The file.
        file: PathBuf,
        /// The tensor's name.
        name: String,
    },
    /// One array of an `.npz` archive.
    NpzMember {
        /// The archive.
        file: PathBuf,
        /// The array's name (its member name without `.npy`).
        name: String,
    },
}

impl InputSource {
    /// Reads `FILE.safetensors:NAME` as a tensor (the name may itself hold `:`), anything else
    /// as a `.npy` path. A bare `FILE.safetensors` is an error: it names no tensor.
    pub fn parse(arg: &Path) -> Result<InputSource, Error> {
        let text = arg.to_string_lossy();
        if let Some(at) = text.find(&format!("{SAFETENSORS_SUFFIX}:")) {
            let split = at + SAFETENSORS_SUFFIX.len();
            return Ok(InputSource::Tensor {
                file: PathBuf::from(&text[..split]),
                name: text[split + 1..].to_string(),
            });
        }
        if let Some(at) = text.find(&format!("{NPZ_SUFFIX}:")) {
            let split = at + NPZ_SUFFIX.len();
            return Ok(InputSource::NpzMember {
                file: PathBuf::from(&text[..split]),
                name: text[split + 1..].to_string(),
            });
        }
        if text.ends_with(SAFETENSORS_SUFFIX) || text.ends_with(NPZ_SUFFIX) {
            return Err(invalid(format!(
                "--input {text}: name the tensor (`{text}:NAME`), or pass the whole file with --params"
            )));
        }
        Ok(InputSource::Npy(arg.to_path_buf()))
    }
}

/// Opens each safetensors file and `.npz` archive once.
#[derive(Default)]
struct OpenFiles(HashMap<PathBuf, SafeTensors>, HashMap<PathBuf, Npz>);

impl OpenFiles {
    fn get(&mut self, path: &Path) -> Result<&SafeTensors, Error> {
        if !self.0.contains_key(path) {
            let file = SafeTensors::open(path)?;
            self.0.insert(path.to_path_buf(), file);
        }
        Ok(&self.0[path])
    }

    fn get_npz(&mut self, path: &Path) -> Result<&Npz, Error> {
        if !self.1.contains_key(path) {
            let file = Npz::open(path)?;
            self.1.insert(path.to_path_buf(), file);
        }
        Ok(&self.1[path])
    }

    /// Array `name` of the archive `file`, which [`OpenFiles::get_npz`] opened.
    fn npz_array(&self, file: &Path, name: &str) -> Result<&NpzArray, Error> {
        let open = self.1.get(file).ok_or_else(|| invalid(format!("{} is not open", file.display())))?;
        open.get(name).ok_or_else(|| {
            invalid(format!(
                "{} has no array '{name}' (it has: {})",
                file.display(),
                open.names().collect::<Vec<_>>().join(", ")
            ))
        })
    }

    /// The safetensors file `file`, which [`OpenFiles::get`] opened.
    fn file(&self, file: &Path) -> Result<&SafeTensors, Error> {
        self.0.get(file).ok_or_else(|| invalid(format!("{} is not open", file.display())))
    }

    /// Tensor `name` of `file`, which [`OpenFiles::get`] opened.
    fn tensor(&self, file: &Path, name: &str) -> Result<TensorView<'_>, Error> {
        Ok(self.file(file)?.tensor(name)?)
    }
}

/// A tensor as a `.npy` array (bf16 as ml_dtypes' `V2`, which uploads as bf16).
fn tensor_array(file: &Path, name: &str, view: TensorView<'_>) -> Result<NpyArray, Error> {
    view.to_npy().map_err(|e| invalid(format!("tensor '{name}' of {}: {e}", file.display())))
}

/// One input of `pjrt run`: a host array, a `.npy` file held as stored, or a tensor left in its
/// safetensors file (these two upload from the file's bytes when every device takes the whole
/// input).
#[derive(Debug)]
pub enum Input {
    /// An array in host memory.
    Host(NpyArray),
    /// An array already of its parameter's element type (a shard of a host array).
    Array(HostArray),
    /// A `.npy` file held as stored (uploaded from its bytes, in place where aligned).
    Npy(MappedNpy),
    /// Tensor `name` of the safetensors file `file` (opened in [`Inputs`]).
    Tensor {
        /// The file.
        file: PathBuf,
        /// The tensor's name.
        name: String,
    },
    /// Array `name` of the `.npz` archive `file` (opened in [`Inputs`]; stored members stay in
    /// its bytes).
    NpzMember {
        /// The archive.
        file: PathBuf,
        /// The array's name.
        name: String,
    },
}

/// The program's inputs in parameter order, a label for each (for error messages), and the
/// safetensors files their tensors live in.
pub struct Inputs {
    files: OpenFiles,
    /// The inputs, in parameter order.
    pub items: Vec<Input>,
    /// What each input came from: a path, or `FILE:NAME`.
    pub labels: Vec<String>,
}

impl Inputs {
    /// Host arrays only, with their labels.
    pub fn host(arrays: Vec<NpyArray>, labels: Vec<String>) -> Inputs {
        Inputs { files: OpenFiles::default(), items: arrays.into_iter().map(Input::Host).collect(), labels }
    }

    /// Arrays already of their parameters' element types (a device's shards), with labels.
    pub fn arrays(arrays: Vec<HostArray>, labels: Vec<String>) -> Inputs {
        Inputs { files: OpenFiles::default(), items: arrays.into_iter().map(Input::Array).collect(), labels }
    }

    /// How many inputs there are.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Every input as a host array (what sharding and `jax.export` models work on); `.npy`
    /// files and stored members are copied here. Fails for tensors with no `.npy` dtype (f8).
    pub fn into_host_arrays(mut self) -> Result<(Vec<NpyArray>, Vec<String>), Error> {
        let files = std::mem::take(&mut self.files);
        self.into_host_arrays_with(&files)
    }

    /// [`Inputs::into_host_arrays`], tensors and `.npz` members read from `files`.
    fn into_host_arrays_with(self, files: &OpenFiles) -> Result<(Vec<NpyArray>, Vec<String>), Error> {
        let arrays = self
            .items
            .into_iter()
            .map(|input| -> Result<NpyArray, Error> {
                Ok(match input {
                    Input::Host(array) => array,
                    Input::Array(array) => NpyArray::from_host_array(&array)?,
                    Input::Npy(file) => file.to_array(),
                    Input::Tensor { file, name } => tensor_array(&file, &name, files.tensor(&file, &name)?)?,
                    Input::NpzMember { file, name } => files.npz_array(&file, &name)?.to_array(),
                })
            })
            .collect::<Result<_, Error>>()?;
        Ok((arrays, self.labels))
    }

    /// Uploads input `index` for a parameter of element type `wanted` (when known), tensors
    /// straight from the file's bytes. A dtype other than the parameter's is an error, except
    /// 2-byte raw bits (`u16`) for a bf16 parameter and, for a sub-byte parameter, int8/uint8
    /// values in its range (`.npy` arrays also ml_dtypes' `|V1`; see
    /// [`pjrt_formats::ClientExt::upload_npy`]).
    pub fn upload(
        &self,
        client: &Client,
        index: usize,
        wanted: Option<ElementType>,
        placement: Placement<'_>,
    ) -> Result<Buffer, Error> {
        Ok(match &self.items[index] {
            Input::Host(array) => client.upload_npy(array, wanted, placement)?,
            Input::Array(array) => client.upload_with(array, &UploadOptions::new().placement(placement))?,
            Input::Npy(file) => client.upload_mapped_npy(file, wanted, placement)?,
            Input::NpzMember { file, name } => match self.files.npz_array(file, name)? {
                NpzArray::Mapped(mapped) => client.upload_mapped_npy(mapped, wanted, placement)?,
                NpzArray::Loaded(array) => client.upload_npy(array, wanted, placement)?,
                _ => {
                    return Err(invalid(format!(
                        "{}:{name}: an .npz array of a kind this command does not know",
                        file.display()
                    )))
                }
            },
            Input::Tensor { file, name } => {
                let view = self.files.tensor(file, name)?;
                let element_type = match wanted {
                    Some(ElementType::BF16) if view.dtype() == ElementType::U16 => ElementType::BF16,
                    // Widened sub-byte values: the .npy rules check them (a copy, but a small one).
                    Some(w) if w.is_sub_byte() && matches!(view.dtype(), ElementType::S8 | ElementType::U8) => {
                        return Ok(client.upload_npy(&tensor_array(file, name, view)?, wanted, placement)?);
                    }
                    Some(w) if w != view.dtype() => {
                        return Err(invalid(format!("the tensor is {}, but the parameter is {w}", view.dtype())))
                    }
                    _ => view.dtype(),
                };
                // Straight from the file's bytes, in place where aligned; the upload does not wait
                // for a copy, so the next input's starts meanwhile (executions wait for all).
                client.upload_tensor(self.files.file(file)?, name, Some(element_type), placement)?
            }
        })
    }
}

impl Inputs {
    /// Each input's shape, for refining a program with dynamic dimensions: its dims, and the
    /// element type `wanted(i)` gives (the parameter's: the upload converts to it or refuses),
    /// else the file's.
    pub fn shapes(&self, wanted: impl Fn(usize) -> Option<ElementType>) -> Result<Vec<InputShape>, Error> {
        let of = pjrt_formats::element_type_of;
        self.items
            .iter()
            .enumerate()
            .map(|(i, input)| {
                let (stored, dims) = match input {
                    Input::Host(a) => (of(a.dtype), a.dims.clone()),
                    Input::Array(a) => (a.element_type(), a.dims().to_vec()),
                    Input::Npy(f) => (of(f.dtype()), f.dims().to_vec()),
                    Input::Tensor { file, name } => {
                        let view = self.files.tensor(file, name)?;
                        (view.dtype(), view.dims().to_vec())
                    }
                    Input::NpzMember { file, name } => match self.files.npz_array(file, name)? {
                        NpzArray::Mapped(m) => (of(m.dtype()), m.dims().to_vec()),
                        NpzArray::Loaded(a) => (of(a.dtype), a.dims.clone()),
                        _ => {
                            return Err(invalid(format!(
                                "{}:{name}: an .npz array of a kind this command does not know",
                                file.display()
                            )))
                        }
                    },
                };
                Ok((wanted(i).unwrap_or(stored), dims))
            })
            .collect()
    }

    /// A `jax.export` model's module arguments from its inputs (every input, in the order of its
    /// `in_avals`): each checked against its aval, the ones the module keeps in its order, the
    /// platform index first where the export has several platforms. Tensors stay in their
    /// files (uploaded from there); other inputs become host arrays (`.npy` inputs are
    /// small: tokens, not weights). Also returns the shape of every input as it uploads (for
    /// [`JaxExport::program_for`]).
    pub fn into_module_arguments(self, model: &JaxExport, platform: &str) -> Result<(Inputs, Vec<InputShape>), Error> {
        model.check_runnable(platform)?;
        if self.items.len() != model.in_avals().len() {
            let avals: Vec<String> = model.in_avals().iter().map(|a| a.to_string()).collect();
            return Err(invalid(format!(
                "the model takes {} inputs ({}) but {} were given; give all of them in order, unused ones too",
                avals.len(),
                avals.join(", "),
                self.items.len()
            )));
        }
        let Inputs { files, items, labels } = self;
        let mut checked = Vec::with_capacity(items.len());
        let mut shapes = Vec::with_capacity(items.len());
        for (i, (input, label)) in items.into_iter().zip(&labels).enumerate() {
            let input = match input {
                Input::Tensor { file, name } => {
                    let view = files.tensor(&file, &name)?;
                    let wanted = model.in_avals()[i].element_type;
                    let element_type = match wanted {
                        Some(ElementType::BF16) if view.dtype() == ElementType::U16 => ElementType::BF16,
                        Some(w) if w.is_sub_byte() && matches!(view.dtype(), ElementType::S8 | ElementType::U8) => w,
                        _ => view.dtype(),
                    };
                    model.check_input(i, element_type, view.dims()).map_err(|e| in_input(e, label))?;
                    shapes.push((element_type, view.dims().to_vec()));
                    Input::Tensor { file, name }
                }
                other => {
                    let (mut arrays, _) =
                        Inputs { files: OpenFiles::default(), items: vec![other], labels: Vec::new() }
                            .into_host_arrays_with(&files)?;
                    let array = arrays.pop().ok_or_else(|| invalid("an input went missing"))?;
                    model.check_npy_input(i, &array).map_err(|e| in_input(e, label))?;
                    // Checked: it uploads as the aval's element type.
                    let element_type =
                        model.in_avals()[i].element_type.ok_or_else(|| invalid("an input has no type"))?;
                    shapes.push((element_type, array.dims.clone()));
                    Input::Host(array)
                }
            };
            checked.push(Some(input));
        }
        let module_arguments = model.module_arguments();
        let mut arguments = Vec::with_capacity(module_arguments.len());
        let mut argument_labels = Vec::with_capacity(module_arguments.len());
        let platform_index = model.platform_index(platform)?;
        for argument in module_arguments {
            match argument {
                ModuleArgument::PlatformIndex => {
                    let index = platform_index.ok_or_else(|| invalid("the model has no platform index"))?;
                    arguments.push(Input::Array(HostArray::from_elements(Vec::new(), &[index])?));
                    argument_labels.push("<platform index>".to_owned());
                }
                ModuleArgument::Input(i) => {
                    let input = checked.get_mut(i).and_then(Option::take).ok_or_else(|| {
                        invalid(format!("the model keeps input {i} twice, or one it does not have: export it again"))
                    })?;
                    arguments.push(input);
                    argument_labels.push(labels[i].clone());
                }
                // Refused by `check_runnable` (ordered effects).
                _ => return Err(invalid("the model takes token arguments, which pjrt run does not pass")),
            }
        }
        Ok((Inputs { files, items: arguments, labels: argument_labels }, shapes))
    }
}

/// Names the input an aval check failed for.
pub(super) fn in_input(e: pjrt_formats::Error, label: &str) -> Error {
    match e {
        pjrt_formats::Error::JaxExport(e) => invalid(format!("{e} (--input {label})")),
        e => match e.invalid_argument() {
            Some(m) => invalid(format!("{m} (--input {label})")),
            None => e.into(),
        },
    }
}

/// The arguments `--params` binds to: a `jax.export` model's inputs, else the program's
/// parameters as its text or bytecode names them ([`binding::program_arguments`]); `None` for
/// an artifact or HLO, whose parameters are known once loaded ([`executable_arguments`]).
pub fn program_arguments(program: &ProgramSource, model: Option<&JaxExport>) -> Option<Vec<Argument>> {
    match model {
        Some(model) => Some(model.arguments()),
        None => program.program().and_then(binding::program_arguments),
    }
}

/// An executable's parameters as arguments for `--params` (no names: bound by dtype and shape).
/// The dimensions are left unknown when the executable is partitioned (its parameters are
/// per-device shards; the files hold whole arrays).
pub fn executable_arguments(exe: &LoadedExecutable, partitioned: bool) -> Option<Vec<Argument>> {
    let shapes = exe.parameter_shapes()?;
    Some(
        shapes
            .iter()
            .map(|p| {
                let mut argument = Argument::unnamed();
                argument.element_type = p.element_type;
                argument.dims = (!partitioned).then(|| p.dims.iter().map(|&d| Some(d)).collect());
                argument
            })
            .collect(),
    )
}

/// The inputs for the program's arguments (`arguments`, where known): the tensors of
/// `--params` and the `--input` arrays. [`binding::bind`] decides which argument each tensor
/// feeds (by name; by dtype and shape only when no name matches and they leave one
/// assignment, which is then noted on stderr); the `--input` arrays fill the other arguments
/// in order. Tensors stay in their files' bytes (read once, never mapped).
pub fn gather_inputs(
    arguments: Option<&[Argument]>,
    params: Option<&Path>,
    inputs: &[PathBuf],
) -> Result<Inputs, Error> {
    let mut files = OpenFiles::default();
    let mut explicit: Vec<(Input, String)> = Vec::new();
    for arg in inputs {
        match InputSource::parse(arg)? {
            InputSource::Npy(path) => explicit.push((Input::Npy(MappedNpy::open(&path)?), path.display().to_string())),
            InputSource::Tensor { file, name } => {
                files.get(&file)?.tensor(&name).map_err(|e| invalid(format!("--input {}: {e}", arg.display())))?;
                explicit.push((Input::Tensor { file, name }, arg.display().to_string()));
            }
            InputSource::NpzMember { file, name } => {
                files.get_npz(&file)?;
                files.npz_array(&file, &name).map_err(|e| invalid(format!("--input {}: {e}", arg.display())))?;
                explicit.push((Input::NpzMember { file, name }, arg.display().to_string()));
            }
        }
    }
    let Some(params_path) = params else {
        let (items, labels) = explicit.into_iter().unzip();
        return Ok(Inputs { files, items, labels });
    };
    let is_npz = params_path.to_string_lossy().ends_with(NPZ_SUFFIX);
    let names: Vec<String> = if is_npz {
        files.get_npz(params_path)?.names().map(String::from).collect()
    } else {
        files.get(params_path)?.names().map(String::from).collect()
    };
    let mut shapes: Vec<(ElementType, Vec<i64>)> = Vec::with_capacity(names.len());
    for name in &names {
        shapes.push(if is_npz {
            match files.npz_array(params_path, name)? {
                NpzArray::Mapped(m) => (pjrt_formats::element_type_of(m.dtype()), m.dims().to_vec()),
                NpzArray::Loaded(a) => (pjrt_formats::element_type_of(a.dtype), a.dims.clone()),
                _ => {
                    return Err(invalid(format!(
                        "{}:{name}: an .npz array of a kind this command does not know",
                        params_path.display()
                    )))
                }
            }
        } else {
            let view = files.tensor(params_path, name)?;
            (view.dtype(), view.dims().to_vec())
        });
    }
    let tensors: Vec<NamedTensor<'_>> = names
        .iter()
        .zip(&shapes)
        .map(|(name, (element_type, dims))| NamedTensor { name, element_type: *element_type, dims })
        .collect();
    // Parameters not known (a program whose signature cannot be read): as many as are given,
    // of any type (one tensor binds; several are refused as ambiguous).
    let unknown;
    let arguments = match arguments {
        Some(arguments) => arguments,
        None => {
            unknown = vec![Argument::unnamed(); tensors.len() + explicit.len()];
            &unknown[..]
        }
    };
    let binding =
        binding::bind(arguments, &tensors).map_err(|e| invalid(format!("--params {}: {e}", params_path.display())))?;
    if let Some(note) = binding.note() {
        ui::log_line(&format!("note: --params {}: {note}", params_path.display()));
    }
    let free = binding.caller_arguments();
    if explicit.len() != free.len() {
        let mut left: Vec<String> = free
            .iter()
            .take(8)
            .map(|&i| match &arguments[i].name {
                Some(name) => format!("{i}: {name}"),
                None => i.to_string(),
            })
            .collect();
        if free.len() > 8 {
            left.push("...".to_owned());
        }
        let how = match binding.by() {
            BoundBy::Name => "by name",
            _ => "by dtype and shape",
        };
        let which = if left.is_empty() { String::new() } else { format!(" (arguments {})", left.join(", ")) };
        return Err(invalid(format!(
            "the program takes {} parameters; {} are bound {how} to tensors of {}, so {} must come from \
             --input{which}, but {} were given",
            arguments.len(),
            arguments.len() - free.len(),
            params_path.display(),
            free.len(),
            explicit.len()
        )));
    }
    let mut explicit = explicit.into_iter();
    let mut items = Vec::with_capacity(arguments.len());
    let mut labels = Vec::with_capacity(arguments.len());
    for tensor in binding.tensors() {
        let (input, text) = match tensor {
            Some(t) => {
                let name = names[*t].clone();
                let label = format!("{}:{name}", params_path.display());
                let input = match is_npz {
                    true => Input::NpzMember { file: params_path.to_path_buf(), name },
                    false => Input::Tensor { file: params_path.to_path_buf(), name },
                };
                (input, label)
            }
            None => explicit.next().ok_or_else(|| invalid("too few --input arrays"))?,
        };
        items.push(input);
        labels.push(text);
    }
    Ok(Inputs { files, items, labels })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_arguments() {
        assert_eq!(InputSource::parse(Path::new("a.npy")).unwrap(), InputSource::Npy("a.npy".into()));
        assert_eq!(
            InputSource::parse(Path::new("dir/w.safetensors:layer.0:w")).unwrap(),
            InputSource::Tensor { file: "dir/w.safetensors".into(), name: "layer.0:w".into() }
        );
        assert!(InputSource::parse(Path::new("w.safetensors")).is_err());
        assert_eq!(
            InputSource::parse(Path::new("dir/w.npz:layer:w")).unwrap(),
            InputSource::NpzMember { file: "dir/w.npz".into(), name: "layer:w".into() }
        );
        assert!(InputSource::parse(Path::new("w.npz")).is_err());
    }
}
