//! A `jax.export` model bound to a client, with its executables kept per input signature (as
//! `jax.jit` keeps one per set of argument shapes): a shape-polymorphic model is refined and
//! compiled once for each new signature, and a repeated one costs a lookup.

use std::sync::Arc;

use pjrt_client::{Client, CompileOptions, ExecuteOptions, LoadedExecutable, UploadOptions};

use super::kept::KeptExecutables;
use super::polymorphic::InputShape;
use super::{JaxExport, JaxExportError};
use crate::binding::{self, Binding};
use crate::compile_cache::CompileCache;
use crate::npy::NpyArray;
use crate::safetensors::SafeTensors;
use crate::{Error, Result};

/// Weights bound to some of a model's inputs.
struct Params {
    binding: Binding,
    /// For each input of the model, its weight (read from the file), if a tensor feeds it.
    arrays: Vec<Option<NpyArray>>,
}

/// A model and a client, with the executables compiled so far for each input signature
/// (bounded; the least recently used goes first).
///
/// `Send + Sync`: the cache is behind a mutex, and clients and executables are thread-safe.
///
/// ```
/// use pjrt_formats::jax_export::{JaxExport, Runner};
/// use pjrt_formats::npy::NpyArray;
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/jax_export/jax-0.10.2/symbolic_batch/model.jaxexport");
/// let runner = Runner::new(JaxExport::read(path)?, &client); // sum(x * 2, axis=0), x: f32[b, 4]
/// for batch in [1, 3, 3] {
///     let x = NpyArray::from_elements(vec![batch, 4], &vec![1f32; batch as usize * 4])?;
///     let out = runner.run(&[x])?;
///     assert_eq!(out[0].to_vec::<f32>()?, vec![2.0 * batch as f32; 4]);
/// }
/// assert_eq!(runner.cached(), 2); // batch 1 and batch 3
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Runner {
    model: Arc<JaxExport>,
    client: Client,
    compile_cache: Option<CompileCache>,
    /// Options compiled with instead of the model's own.
    compile_options: Option<CompileOptions>,
    /// The executables compiled so far.
    kept: KeptExecutables,
    /// Weights that feed some inputs ([`Runner::with_params`]).
    params: Option<Params>,
}

impl Runner {
    /// How many executables a runner keeps unless told otherwise.
    pub const DEFAULT_CAPACITY: usize = 64;

    /// A runner of `model` on `client`, keeping up to [`Runner::DEFAULT_CAPACITY`] executables.
    ///
    /// With the default `lapack` feature, the first runner of the process installs the provider
    /// of JAX's LAPACK kernels (`pjrt_lapack::register`, with scipy's OpenBLAS installed on first
    /// need), unless one is installed already.
    pub fn new(model: impl Into<Arc<JaxExport>>, client: &Client) -> Runner {
        crate::lapack::install_provider();
        Runner {
            model: model.into(),
            client: client.clone(),
            compile_cache: None,
            compile_options: None,
            kept: KeptExecutables::new(Self::DEFAULT_CAPACITY),
            params: None,
        }
    }

    /// Feeds the model's inputs that `file`'s tensors are for, bound by name
    /// ([`JaxExport::bind_params`]; by dtype and shape only when no tensor name matches and
    /// that leaves one assignment, which [`Binding::note`] of [`Runner::params`] then says):
    /// [`Runner::run`] takes only the other inputs, in order. The tensors are read into memory
    /// here, checked against their inputs, and uploaded with each run.
    ///
    /// ```
    /// use pjrt_formats::jax_export::{JaxExport, Runner};
    /// use pjrt_formats::npy::NpyArray;
    /// use pjrt_formats::safetensors::SafeTensors;
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/weights/mixed");
    /// // f(params, x), params a nested dict of f32, i32 and bf16 weights, saved by Python's
    /// // safetensors (sorted by dtype, then name) under dotted keys: `block_0.kernel`, ...
    /// let weights = SafeTensors::open(format!("{dir}/params_dotted.safetensors"))?;
    /// let runner = Runner::new(JaxExport::read(format!("{dir}/model.jaxexport"))?, &client).with_params(&weights)?;
    /// assert_eq!(runner.params().unwrap().caller_arguments(), [8]); // x
    /// let out = runner.run(&[NpyArray::read(format!("{dir}/x.npy").as_ref())?])?;
    /// let want = NpyArray::read(format!("{dir}/out0.npy").as_ref())?.to_vec::<f32>()?;
    /// for (got, want) in out[0].to_vec::<f32>()?.iter().zip(&want) {
    ///     assert!((got - want).abs() <= 1e-5 + 1e-5 * want.abs());
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_params(mut self, file: &SafeTensors) -> Result<Runner> {
        let tensors = binding::safetensors_tensors(file);
        let binding = self.model.bind_params(&tensors)?;
        let mut arrays = vec![None; self.model.in_avals().len()];
        for (i, tensor) in binding.tensors().iter().enumerate() {
            let Some(t) = *tensor else { continue };
            let name = tensors[t].name;
            let array = file.tensor(name)?.to_npy()?;
            self.model.check_npy_input(i, &array).map_err(|e| match e {
                Error::JaxExport(e) => JaxExportError::InTensor { tensor: name.to_owned(), source: Box::new(e) }.into(),
                other => other,
            })?;
            arrays[i] = Some(array);
        }
        self.params = Some(Params { binding, arrays });
        Ok(self)
    }

    /// How [`Runner::with_params`] bound its weights (`None` without weights).
    pub fn params(&self) -> Option<&Binding> {
        self.params.as_ref().map(|p| &p.binding)
    }

    /// Compiles with `options` instead of [`JaxExport::compile_options`] (start from those):
    /// a device assignment that puts a one-device model on another device than the first, say.
    ///
    /// ```
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new().cpu_device_count(2))?;
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/jax_export/jax-0.10.2/symbolic_batch/model.jaxexport");
    /// use pjrt_client::DeviceAssignment;
    /// use pjrt_formats::jax_export::{JaxExport, Runner};
    /// let model = JaxExport::read(path)?;
    /// let second = client.addressable_devices()[1].id()? as i64;
    /// let options = model.compile_options(client.platform_name()).device_assignment(&DeviceAssignment::new(vec![vec![second]])?);
    /// let runner = Runner::new(model, &client).with_compile_options(options);
    /// let exe = runner.executable(&[(pjrt_client::ElementType::F32, vec![3, 4])])?;
    /// assert_eq!(exe.addressable_devices()[0].id()?, second as i32);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_compile_options(mut self, options: CompileOptions) -> Runner {
        self.compile_options = Some(options);
        self
    }

    /// Keeps up to `capacity` executables (at least one).
    ///
    /// ```
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/jax_export/jax-0.10.2/symbolic_batch/model.jaxexport");
    /// let runner = pjrt_formats::jax_export::Runner::new(pjrt_formats::jax_export::JaxExport::read(path).unwrap(), &client)
    ///     .with_capacity(8);
    /// assert_eq!(runner.capacity(), 8);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_capacity(mut self, capacity: usize) -> Runner {
        self.kept = KeptExecutables::new(capacity);
        self
    }

    /// Compiles through `cache`: a signature seen by an earlier process (the same refined
    /// program, options and plugin) is loaded instead of compiled.
    ///
    /// ```
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/jax_export/jax-0.10.2/symbolic_batch/model.jaxexport");
    /// use pjrt_formats::compile_cache::CompileCache;
    /// use pjrt_formats::jax_export::{JaxExport, Runner};
    /// let dir = std::env::temp_dir().join(format!("runner-cache-doc-{}", std::process::id()));
    /// let model = JaxExport::read(path)?;
    /// let shapes = [(pjrt_client::ElementType::F32, vec![5, 4])];
    /// for _ in 0..2 {
    ///     // A new runner (as a new process would have) loads what the first one compiled.
    ///     let runner = Runner::new(model.clone(), &client).with_compile_cache(CompileCache::open(&dir)?);
    ///     runner.executable(&shapes)?;
    /// }
    /// assert_eq!(CompileCache::open(&dir)?.info()?.entries, 1);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_compile_cache(mut self, cache: CompileCache) -> Runner {
        self.compile_cache = Some(cache);
        self
    }

    /// The most executables kept.
    pub fn capacity(&self) -> usize {
        self.kept.capacity()
    }

    /// How many executables are kept now.
    pub fn cached(&self) -> usize {
        self.kept.len()
    }

    /// The model.
    pub fn model(&self) -> &JaxExport {
        &self.model
    }

    /// The executable for inputs of these shapes (every input, in the order of
    /// [`JaxExport::in_avals`]): the one kept for them, or the model refined
    /// ([`JaxExport::program_for`]) and compiled with [`JaxExport::compile_options`] now
    /// (through the compile cache, when given one).
    pub fn executable(&self, shapes: &[InputShape]) -> Result<Arc<LoadedExecutable>> {
        if let Some(exe) = self.kept.get(shapes) {
            return Ok(exe);
        }
        self.model.check_runnable(self.client.platform_name())?;
        let program = self.model.program_for(shapes)?;
        let options = match &self.compile_options {
            Some(options) => options.clone(),
            None => self.model.compile_options(self.client.platform_name()),
        };
        let exe = Arc::new(match &self.compile_cache {
            Some(cache) => cache.compile(&self.client, &program, &options)?.executable,
            None => self.client.compile(&program, &options)?,
        });
        // Another thread may have compiled the same signature meanwhile: one is kept.
        self.kept.insert(shapes, exe.clone());
        Ok(exe)
    }

    /// Runs the model on `inputs` (every input, in the order of [`JaxExport::in_avals`]; with
    /// [`Runner::with_params`], the inputs the weights do not feed), on
    /// the client's first device or on as many devices as the model was exported for; the
    /// outputs come back in the order of [`JaxExport::out_avals`]. See [`JaxExport::run`].
    pub fn run(&self, inputs: &[NpyArray]) -> Result<Vec<NpyArray>> {
        let model = &*self.model;
        let all: Vec<&NpyArray> = match &self.params {
            None => inputs.iter().collect(),
            Some(params) => {
                let free = params.binding.caller_arguments();
                if inputs.len() != free.len() {
                    return Err(JaxExportError::InputCountBesidesWeights {
                        given: inputs.len(),
                        expected: free.iter().map(|&i| (i, model.in_avals()[i].to_string())).collect(),
                    }
                    .into());
                }
                let mut given = inputs.iter();
                params
                    .arrays
                    .iter()
                    .map(|weight| weight.as_ref().or_else(|| given.next()))
                    .collect::<Option<_>>()
                    .ok_or_else(|| Error::invalid("an input went missing"))?
            }
        };
        let arguments = model.arrange_input_refs(self.client.platform_name(), &all)?;
        let exe = self.executable(&model.input_shapes_of(all.iter().copied()))?;
        if model.nr_devices > 1 {
            let (input_shardings, output_shardings) = model.device_shardings()?;
            let buffers = exe.upload_sharded(&arguments, &input_shardings)?;
            let outputs = exe.execute_sharded(&buffers, &ExecuteOptions::new())?;
            let outputs = pjrt_client::sharding::gather_outputs(&outputs, &output_shardings)?;
            model.check_output_count(outputs.len())?;
            return outputs.iter().map(NpyArray::from_host_array).collect();
        }
        let device = exe
            .addressable_devices()
            .into_iter()
            .next()
            .ok_or_else(|| Error::invalid("the compiled model has no addressable device"))?;
        let mut buffers = Vec::with_capacity(arguments.len());
        for array in &arguments {
            buffers.push(self.client.upload_with(array, &UploadOptions::new().device(&device))?);
        }
        let refs: Vec<&pjrt_client::Buffer> = buffers.iter().collect();
        let outputs = exe.execute(&refs, &ExecuteOptions::new())?;
        model.check_output_count(outputs.len())?;
        use crate::BufferExt as _;
        outputs.iter().map(|o| o.to_npy()).collect()
    }
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("model", &self.model.function_name())
            .field("platform", &self.client.platform_name())
            .field("capacity", &self.capacity())
            .field("cached", &self.cached())
            .field("compile_cache", &self.compile_cache.as_ref().map(|c| c.dir()))
            .field("params", &self.params.as_ref().map(|p| p.binding.tensors().iter().flatten().count()))
            .finish()
    }
}

impl JaxExport {
    /// Compiles and runs the model once (keep a [`Runner`] to run it again without compiling
    /// again); on the client's first device, or on as many devices as it
    /// was exported for, with inputs split and outputs gathered by [`JaxExport::device_shardings`]):
    /// `inputs` are every input in
    /// the order of [`JaxExport::in_avals`]; the outputs come back in the order of
    /// [`JaxExport::out_avals`] (bf16 as `<u2` bits, sub-byte types widened to `int8`/`uint8`).
    pub fn run(&self, client: &Client, inputs: &[NpyArray]) -> Result<Vec<NpyArray>> {
        Runner::new(self.clone(), client).run(inputs)
    }
}
