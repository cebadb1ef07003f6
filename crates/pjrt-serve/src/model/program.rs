//! What a model is read from: a `jax.export` model, an MLIR program (`.mlir` text, or an
//! `.mlirbc` StableHLO portable artifact, as `jax.export` serializes its module) refined for each
//! request's shapes where it has `?` dimensions, or an AOT artifact of `pjrt compile` (one
//! executable, which only the plugin build and devices it was compiled for load). Its
//! signature is read from the program (`@main`'s arguments and results, or the executable's
//! parameters), its weights bound by name as `pjrt run --params` binds them
//! ([`pjrt_formats::binding`]), and its executables kept per input signature.

use std::path::Path;
use std::sync::Arc;

use pjrt_client::{Client, CompileOptions, ElementType, LoadedExecutable, Program};
use pjrt_formats::artifact::{self, Artifact};
use pjrt_formats::binding::{self, Argument, Binding, NamedTensor};
use pjrt_formats::compile_cache::CompileCache;
use pjrt_formats::jax_export::{Dim, JaxExport, KeptExecutables, ModuleArgument, Runner};
use pjrt_formats::mlir_text::TextProgram;
use pjrt_formats::npy::NpyArray;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Each input's element type and dimensions, in the program's order.
type Shapes = [(ElementType, Vec<i64>)];

/// What a `?` dimension of an MLIR program is called until the model names it
/// (`INPUT.AXIS`, in [`super::ServedModel`]'s load).
pub(crate) const UNNAMED: &str = "?";

/// The type of one input or output of a program: [`Dim::Symbolic`] where a request chooses the
/// size (a `jax.export` symbol; [`UNNAMED`] for an MLIR program's `?`).
#[derive(Clone, Debug)]
pub(crate) struct Param {
    pub element_type: Option<ElementType>,
    pub dims: Vec<Dim>,
}

impl std::fmt::Display for Param {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.element_type {
            Some(t) => write!(f, "{t}")?,
            None => write!(f, "(a type PJRT has no element type for)")?,
        }
        let dims: Vec<String> = self.dims.iter().map(|d| d.to_string()).collect();
        write!(f, "[{}]", dims.join(","))
    }
}

fn param(element_type: Option<ElementType>, dims: &[Option<i64>]) -> Param {
    let dims = dims.iter().map(|d| d.map_or_else(|| Dim::Symbolic(UNNAMED.into()), Dim::Fixed)).collect();
    Param { element_type, dims }
}

/// A model's program.
pub(crate) enum ModelProgram {
    /// A `jax.export` model.
    Export(Arc<JaxExport>),
    /// An MLIR program: text or a portable artifact.
    Mlir(Arc<MlirProgram>),
    /// An AOT artifact, loaded onto the client's devices.
    Artifact { executable: Arc<LoadedExecutable>, inputs: Vec<Param>, outputs: Vec<Param> },
}

/// An MLIR program and its signature.
pub(crate) struct MlirProgram {
    program: Program,
    /// Parsed, for one with `?` dimensions or dimension parameters (refined per signature).
    dynamic: Option<TextProgram>,
    /// `@main`'s data arguments (dimension parameters left out), named where it names them.
    arguments: Vec<Argument>,
    inputs: Vec<Param>,
    outputs: Vec<Param>,
}

impl ModelProgram {
    /// Reads `path`: an AOT artifact when it starts with the artifact magic (loaded onto
    /// `client` now, which checks it was made by this plugin build), an MLIR program when it is
    /// `.mlir` or `.mlirbc`, else a `jax.export` model. `replicas` is how many devices the model
    /// is to serve on: an artifact is compiled for one.
    pub fn read(path: &Path, client: &Client, replicas: usize) -> Result<ModelProgram, BoxError> {
        if artifact::is_artifact_file(path) {
            return read_artifact(path, client, replicas);
        }
        let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if extension == "mlir" || extension == "mlirbc" {
            return Ok(ModelProgram::Mlir(Arc::new(read_mlir(path)?)));
        }
        let model = JaxExport::read(path)?;
        model.check_runnable(client.platform_name())?;
        if model.nr_devices() > 1 {
            return Err(format!(
                "the model was exported for {} devices: pjrt serve runs one-device models",
                model.nr_devices()
            )
            .into());
        }
        Ok(ModelProgram::Export(Arc::new(model)))
    }

    /// Every input (weights' too), in the program's order.
    pub fn inputs(&self) -> Vec<Param> {
        match self {
            ModelProgram::Export(model) => {
                model.in_avals().iter().map(|a| Param { element_type: a.element_type, dims: a.dims.clone() }).collect()
            }
            ModelProgram::Mlir(program) => program.inputs.clone(),
            ModelProgram::Artifact { inputs, .. } => inputs.clone(),
        }
    }

    /// Every output, in order.
    pub fn outputs(&self) -> Vec<Param> {
        match self {
            ModelProgram::Export(model) => {
                model.out_avals().iter().map(|a| Param { element_type: a.element_type, dims: a.dims.clone() }).collect()
            }
            ModelProgram::Mlir(program) => program.outputs.clone(),
            ModelProgram::Artifact { outputs, .. } => outputs.clone(),
        }
    }

    /// The names the program gives its inputs (`None` where it gives none): what a request
    /// calls them unless the config names them. A `jax.export` model's are not used (its
    /// requests name inputs `input0`, ...).
    pub fn input_names(&self) -> Vec<Option<String>> {
        match self {
            ModelProgram::Mlir(program) => program.arguments.iter().map(|a| a.name.clone()).collect(),
            _ => vec![None; self.inputs().len()],
        }
    }

    /// Whether a `jax.export` model (whose symbolic dimensions say which output dimension is
    /// which input's: what batching needs).
    pub fn is_export(&self) -> bool {
        matches!(self, ModelProgram::Export(_))
    }

    /// Whether requests choose some dimensions (an executable is compiled per signature).
    pub fn is_polymorphic(&self) -> bool {
        match self {
            ModelProgram::Export(model) => model.is_polymorphic(),
            ModelProgram::Mlir(program) => program.dynamic.is_some(),
            ModelProgram::Artifact { .. } => false,
        }
    }

    /// Binds the tensors of a weights file to the inputs by name (by dtype and shape only where
    /// that is unambiguous: an artifact's parameters have no names).
    pub fn bind(&self, tensors: &[NamedTensor<'_>]) -> Result<Binding, BoxError> {
        match self {
            ModelProgram::Export(model) => Ok(model.bind_params(tensors)?),
            ModelProgram::Mlir(program) => Ok(binding::bind(&program.arguments, tensors)?),
            ModelProgram::Artifact { inputs, .. } => {
                let arguments: Vec<Argument> = inputs
                    .iter()
                    .map(|p| {
                        let dims: Vec<Option<i64>> =
                            p.dims.iter().map(|d| if let Dim::Fixed(n) = d { Some(*n) } else { None }).collect();
                        match p.element_type {
                            Some(t) => Argument::unnamed().with_type(t, &dims),
                            None => Argument::unnamed(),
                        }
                    })
                    .collect();
                Ok(binding::bind(&arguments, tensors)?)
            }
        }
    }

    /// Checks weight `array` against input `index` (its type and every fixed dimension).
    pub fn check_weight(&self, index: usize, array: &NpyArray) -> Result<(), BoxError> {
        if let ModelProgram::Export(model) = self {
            return Ok(model.check_npy_input(index, array)?);
        }
        let inputs = self.inputs();
        let param = inputs.get(index).ok_or_else(|| format!("the program has no input {index}"))?;
        let host = array.to_host_array(param.element_type)?;
        let fits = host.dims().len() == param.dims.len()
            && host.dims().iter().zip(&param.dims).all(|(&n, d)| !matches!(d, Dim::Fixed(m) if *m != n));
        if Some(host.element_type()) != param.element_type || !fits {
            return Err(format!(
                "it is {}{:?}, but the program's input {index} is {param}",
                host.element_type(),
                host.dims()
            )
            .into());
        }
        Ok(())
    }

    /// Checks a request's input `index` beyond its datatype and fixed dimensions: a
    /// `jax.export` model's constraints on its symbolic dimensions.
    pub fn check_input(&self, index: usize, element_type: ElementType, dims: &[i64]) -> Result<(), BoxError> {
        match self {
            ModelProgram::Export(model) => Ok(model.check_input(index, element_type, dims)?),
            _ => Ok(()),
        }
    }

    /// The module's arguments in order: a `jax.export` model's own (platform index, kept
    /// inputs), else every input.
    pub fn module_arguments(&self) -> Vec<ModuleArgument> {
        match self {
            ModelProgram::Export(model) => model.module_arguments(),
            _ => (0..self.inputs().len()).map(ModuleArgument::Input).collect(),
        }
    }

    /// The value of the platform-index argument a `jax.export` model may take.
    pub fn platform_index(&self, platform: &str) -> Result<Option<i32>, BoxError> {
        match self {
            ModelProgram::Export(model) => Ok(model.platform_index(platform)?),
            _ => Ok(None),
        }
    }

    /// The options its executables are compiled with on `platform` (JAX's defaults, as
    /// `pjrt run` compiles).
    pub fn compile_options(&self, platform: &str) -> CompileOptions {
        match self {
            ModelProgram::Export(model) => model.compile_options(platform),
            _ => CompileOptions::new().jax_defaults(platform),
        }
    }

    /// Its executables on `client`, compiled with `options` (the program's own when `None`),
    /// through `cache` when given, at most `capacity` kept (the runner's default when `None`).
    /// An artifact's one executable is kept only where `keeps_artifact`.
    pub fn executables(
        &self,
        client: &Client,
        options: Option<CompileOptions>,
        cache: Option<CompileCache>,
        capacity: Option<usize>,
        keeps_artifact: bool,
    ) -> Executables {
        match self {
            ModelProgram::Export(model) => {
                let mut runner = Runner::new(model.clone(), client);
                if let Some(capacity) = capacity {
                    runner = runner.with_capacity(capacity);
                }
                if let Some(options) = options {
                    runner = runner.with_compile_options(options);
                }
                if let Some(cache) = cache {
                    runner = runner.with_compile_cache(cache);
                }
                Executables::Export(runner)
            }
            ModelProgram::Mlir(program) => Executables::Program(ProgramExecutables {
                program: program.clone(),
                client: client.clone(),
                options: options.unwrap_or_else(|| self.compile_options(client.platform_name())),
                cache,
                kept: KeptExecutables::new(capacity.unwrap_or(Runner::DEFAULT_CAPACITY)),
            }),
            ModelProgram::Artifact { executable, .. } => {
                Executables::Artifact(keeps_artifact.then(|| executable.clone()))
            }
        }
    }
}

/// Reads an `.mlir` or `.mlirbc` program and its signature.
fn read_mlir(path: &Path) -> Result<MlirProgram, BoxError> {
    let program = Program::from_file(path)?;
    let counts = program.module_counts();
    if counts.num_replicas.unwrap_or(1) > 1 || counts.num_partitions.unwrap_or(1) > 1 {
        return Err(format!(
            "the program runs on {} replicas × {} partitions: pjrt serve runs one-device programs",
            counts.num_replicas.unwrap_or(1),
            counts.num_partitions.unwrap_or(1)
        )
        .into());
    }
    let label = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let parsed = TextProgram::from_program(&program, &label)?;
    let arguments = binding::program_arguments(&program)
        .ok_or_else(|| format!("{label}: no @main function found: its arguments are the model's inputs"))?;
    let mut inputs = Vec::with_capacity(arguments.len());
    for (i, argument) in arguments.iter().enumerate() {
        let Some(dims) = &argument.dims else {
            return Err(format!("{label}: @main's argument {i} is not a tensor of a type PJRT has").into());
        };
        inputs.push(param(argument.element_type, dims));
    }
    let outputs = parsed.result_types().iter().map(|(t, dims)| param(*t, dims)).collect();
    let dynamic = parsed.is_dynamic().then_some(parsed);
    Ok(MlirProgram { program, dynamic, arguments, inputs, outputs })
}

/// Loads an AOT artifact onto `client` (refused when another plugin build made it, when it
/// needs more than one device, or for more than one replica) with its signature.
fn read_artifact(path: &Path, client: &Client, replicas: usize) -> Result<ModelProgram, BoxError> {
    let artifact = Artifact::read(path)?;
    let h = &artifact.header;
    if h.num_replicas != 1 || h.num_partitions != 1 {
        return Err(format!(
            "the artifact was compiled for {} replicas × {} partitions: pjrt serve runs one-device programs",
            h.num_replicas, h.num_partitions
        )
        .into());
    }
    if replicas > 1 {
        return Err(format!(
            "an AOT artifact is compiled for one device; {replicas} replicas need one executable per device: serve \
             the program it was compiled from, or one replica"
        )
        .into());
    }
    let executable = artifact.load(client)?;
    let parameters = executable.parameter_shapes().ok_or_else(|| {
        format!(
            "the plugin does not report the artifact's parameters ({}): serve the program it was compiled from",
            executable.argument_checks_off_because().unwrap_or("no reason given")
        )
    })?;
    let fixed = |s: &pjrt_client::ArrayShape| Param {
        element_type: s.element_type,
        dims: s.dims.iter().map(|&n| Dim::Fixed(n)).collect(),
    };
    let inputs = parameters.iter().map(fixed).collect();
    let outputs = executable.output_shapes().iter().map(fixed).collect();
    Ok(ModelProgram::Artifact { executable: Arc::new(executable), inputs, outputs })
}

/// A model's executables on one device.
pub(crate) enum Executables {
    /// A `jax.export` model's runner.
    Export(Runner),
    /// An MLIR program's.
    Program(ProgramExecutables),
    /// An artifact's one executable (`None`: none kept here).
    Artifact(Option<Arc<LoadedExecutable>>),
}

impl Executables {
    /// The executable for inputs of `shapes` (every input, in the program's order): kept, or
    /// compiled now.
    pub fn executable(&self, shapes: &Shapes) -> Result<Arc<LoadedExecutable>, BoxError> {
        match self {
            Executables::Export(runner) => Ok(runner.executable(shapes)?),
            Executables::Program(program) => program.executable(shapes),
            Executables::Artifact(Some(executable)) => {
                let parameters = executable.parameter_shapes().unwrap_or_default();
                let same = parameters.len() == shapes.len()
                    && parameters.iter().zip(shapes).all(|(p, (t, d))| p.element_type == Some(*t) && &p.dims == d);
                if !same {
                    return Err("an AOT artifact runs only the input shapes it was compiled for".into());
                }
                Ok(executable.clone())
            }
            Executables::Artifact(None) => Err("an AOT artifact runs only the input shapes it was compiled for".into()),
        }
    }

    /// How many executables are kept.
    pub fn cached(&self) -> usize {
        match self {
            Executables::Export(runner) => runner.cached(),
            Executables::Program(program) => program.kept.len(),
            Executables::Artifact(executable) => usize::from(executable.is_some()),
        }
    }
}

/// An MLIR program's executables, one per input signature (bounded; the least recently used
/// goes first, [`KeptExecutables`]), as [`Runner`] keeps a `jax.export` model's.
pub(crate) struct ProgramExecutables {
    program: Arc<MlirProgram>,
    client: Client,
    options: CompileOptions,
    cache: Option<CompileCache>,
    kept: KeptExecutables,
}

impl ProgramExecutables {
    fn executable(&self, shapes: &Shapes) -> Result<Arc<LoadedExecutable>, BoxError> {
        if let Some(exe) = self.kept.get(shapes) {
            return Ok(exe);
        }
        let program = match &self.program.dynamic {
            Some(parsed) => parsed.program_for(shapes, &[])?,
            None => {
                let fixed = |p: &Param, (t, d): &(ElementType, Vec<i64>)| {
                    p.element_type == Some(*t)
                        && p.dims.len() == d.len()
                        && p.dims.iter().zip(d).all(|(dim, n)| matches!(dim, Dim::Fixed(m) if m == n))
                };
                let inputs = &self.program.inputs;
                let same = inputs.len() == shapes.len() && inputs.iter().zip(shapes).all(|(p, s)| fixed(p, s));
                if !same {
                    return Err("the program's inputs have static shapes: only those run".into());
                }
                self.program.program.clone()
            }
        };
        let exe = Arc::new(match &self.cache {
            Some(cache) => cache.compile(&self.client, &program, &self.options)?.executable,
            None => self.client.compile(&program, &self.options)?,
        });
        self.kept.insert(shapes, exe.clone());
        Ok(exe)
    }
}
