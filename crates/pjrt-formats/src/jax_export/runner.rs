//! A `jax.export` model bound to a client, with its executables kept per input signature (as
//! `jax.jit` keeps one per set of argument shapes): a shape-polymorphic model is refined and
//! compiled once for each new signature, and a repeated one costs a lookup.

use std::sync::{Arc, Mutex};

use pjrt_client::{Client, ExecuteOptions, LoadedExecutable, UploadOptions};

use super::polymorphic::InputShape;
use super::JaxExport;
use crate::error::{Error, Result};
use crate::npy::NpyArray;

/// How many executables a [`Runner`] keeps unless told otherwise.
pub const DEFAULT_CAPACITY: usize = 64;

/// A model and a client, with the executables compiled so far for each input signature
/// (bounded; the least recently used goes first).
///
/// `Send + Sync`: the cache is behind a mutex, and clients and executables are thread-safe.
///
/// ```
/// use pjrt_formats::jax_export::{JaxExport, Runner};
/// use pjrt_formats::npy::NpyArray;
/// # let plugin = pjrt_client::Plugin::load(pjrt_client::locate::resolve_or_install(None, |_| ())?.path)?;
/// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/jax_export/jax-0.10.2/symbolic_batch/model.jaxexport");
/// let runner = Runner::new(JaxExport::read(path)?, &client);
/// for batch in [1, 3, 3] {
///     let x = NpyArray::from_elements(vec![batch, 4], &vec![1f32; batch as usize * 4])?;
///     let out = runner.run(&[x])?;
///     assert_eq!(out[0].dims[0], batch);
/// }
/// assert_eq!(runner.cached(), 2); // batch 1 and batch 3
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Runner {
    model: Arc<JaxExport>,
    client: Client,
    capacity: usize,
    /// Most recently used last.
    cache: Mutex<Vec<(Vec<InputShape>, Arc<LoadedExecutable>)>>,
}

impl Runner {
    /// A runner of `model` on `client`, keeping up to [`DEFAULT_CAPACITY`] executables.
    pub fn new(model: impl Into<Arc<JaxExport>>, client: &Client) -> Runner {
        Runner {
            model: model.into(),
            client: client.clone(),
            capacity: DEFAULT_CAPACITY,
            cache: Mutex::new(Vec::new()),
        }
    }

    /// Keeps up to `capacity` executables (at least one).
    ///
    /// ```
    /// # let plugin = pjrt_client::Plugin::load(pjrt_client::locate::resolve_or_install(None, |_| ())?.path)?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/jax_export/jax-0.10.2/symbolic_batch/model.jaxexport");
    /// let runner = pjrt_formats::jax_export::Runner::new(pjrt_formats::jax_export::JaxExport::read(path).unwrap(), &client)
    ///     .with_capacity(8);
    /// assert_eq!(runner.capacity(), 8);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_capacity(mut self, capacity: usize) -> Runner {
        self.capacity = capacity.max(1);
        self
    }

    /// The most executables kept.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many executables are kept now.
    pub fn cached(&self) -> usize {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// The model.
    pub fn model(&self) -> &JaxExport {
        &self.model
    }

    /// The executable for inputs of these shapes (every input, in the order of
    /// [`JaxExport::in_avals`]): the one kept for them, or the model refined
    /// ([`JaxExport::program_for`]) and compiled with [`JaxExport::compile_options`] now.
    pub fn executable(&self, shapes: &[InputShape]) -> Result<Arc<LoadedExecutable>> {
        {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = cache.iter().position(|(s, _)| s == shapes) {
                let entry = cache.remove(i);
                let exe = entry.1.clone();
                cache.push(entry);
                return Ok(exe);
            }
        }
        self.model.check_runnable(self.client.platform_name())?;
        let program = self.model.program_for(shapes)?;
        let exe = Arc::new(self.client.compile(&program, &self.model.compile_options(self.client.platform_name()))?);
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        // Another thread may have compiled the same signature meanwhile: keep one.
        cache.retain(|(s, _)| s != shapes);
        if cache.len() >= self.capacity {
            cache.remove(0);
        }
        cache.push((shapes.to_vec(), exe.clone()));
        Ok(exe)
    }

    /// Runs the model on `inputs` (every input, in the order of [`JaxExport::in_avals`]), on
    /// the client's first device or on as many devices as the model was exported for; the
    /// outputs come back in the order of [`JaxExport::out_avals`]. See [`JaxExport::run`].
    pub fn run(&self, inputs: &[NpyArray]) -> Result<Vec<NpyArray>> {
        let model = &*self.model;
        let arguments = model.arrange_inputs(self.client.platform_name(), inputs)?;
        let exe = self.executable(&model.input_shapes(inputs))?;
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
