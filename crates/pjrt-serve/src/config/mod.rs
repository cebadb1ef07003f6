//! What to serve: a model repository folder (one folder per model, with an optional
//! `config.json`) and `NAME=PATH[:params=WEIGHTS.safetensors]` specs.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::ServeError;

mod warmup;
pub use warmup::WarmupConfig;

/// One model to serve.
///
/// ```
/// use pjrt_serve::ModelConfig;
/// let config: ModelConfig = "mlp=model.jaxexport:params=w.safetensors".parse().unwrap();
/// assert_eq!(config.name, "mlp");
/// assert_eq!(config.params.as_deref(), Some(std::path::Path::new("w.safetensors")));
/// assert_eq!(config.version, "1");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelConfig {
    /// The name clients call it by.
    pub name: String,
    /// Its version (`1` unless the config says).
    pub version: String,
    /// The program: a `.jaxexport` file, an `.mlir` or `.mlirbc` program, or an AOT artifact of
    /// `pjrt compile` (told by its bytes).
    pub program: PathBuf,
    /// A safetensors file whose tensors (the model's weights) feed the model's inputs by name
    /// ([`pjrt_formats::binding`]), uploaded once at load; requests give the other inputs.
    pub params: Option<PathBuf>,
    /// Names of the inputs requests give (default `input0`, `input1`, ...).
    pub input_names: Vec<String>,
    /// Names of the outputs (default `output0`, ...).
    pub output_names: Vec<String>,
    /// Dynamic batching, for a model whose first dimension is symbolic.
    pub batching: Option<BatchingConfig>,
    /// Bounds on the sizes requests may give the model's symbolic dimensions, and how many
    /// input signatures requests may have compiled (`config.json`'s `symbolic_dims` and
    /// `max_request_shapes`).
    pub shapes: ShapeLimits,
    /// Its warm-up before it is served (`config.json`'s `warmup`; on by default).
    pub warmup: WarmupConfig,
}

/// What requests may make a shape-polymorphic model compile: each new input signature is
/// refined and compiled once (outside the device's execution slots, one compile at a time) and
/// kept, at most `max_request_shapes` of them for the model's life (more are refused, 400;
/// those compiled at load, a static model's or a batched one's buckets, are apart and always
/// kept). `symbolic_dims` bounds a symbolic dimension by name (`b`, `t`, as the model was
/// exported): a range, or a list of the sizes allowed; a request outside is refused before its
/// data is decoded.
///
/// ```
/// use pjrt_serve::config::{DimBound, ShapeLimits};
/// let limits = ShapeLimits::default().with_dim("b", DimBound::range(1, 64)).with_dim("t", DimBound::sizes([128, 256]));
/// assert_eq!(limits.max_request_shapes, 32);
/// assert!(limits.dims[0].1.allows(64) && !limits.dims[0].1.allows(65));
/// assert!(limits.dims[1].1.allows(256) && !limits.dims[1].1.allows(200));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShapeLimits {
    /// Bounds by symbolic dimension name.
    pub dims: Vec<(String, DimBound)>,
    /// Most input signatures requests may have compiled, over the model's life.
    pub max_request_shapes: usize,
}

impl Default for ShapeLimits {
    fn default() -> ShapeLimits {
        ShapeLimits { dims: Vec::new(), max_request_shapes: 32 }
    }
}

impl ShapeLimits {
    /// With a bound on symbolic dimension `name`.
    pub fn with_dim(mut self, name: impl Into<String>, bound: DimBound) -> ShapeLimits {
        self.dims.push((name.into(), bound));
        self
    }

    fn from_json(json: &serde_json::Map<String, Value>, what: &str) -> Result<ShapeLimits, String> {
        let mut limits = ShapeLimits::default();
        if let Some(v) = json.get("max_request_shapes") {
            limits.max_request_shapes = v
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| format!("{what}: \"max_request_shapes\" must be a count (0 or more)"))?;
        }
        let Some(dims) = json.get("symbolic_dims") else { return Ok(limits) };
        let Value::Object(dims) = dims else { return Err(format!("{what}: \"symbolic_dims\" must be an object")) };
        for (name, bound) in dims {
            let bad = || {
                format!(
                    "{what}: symbolic_dims {name:?} must be {{\"min\": N, \"max\": N}} (either may be left out) or \
                     {{\"sizes\": [N, ...]}}"
                )
            };
            let Value::Object(bound) = bound else { return Err(bad()) };
            let size = |v: &Value| v.as_u64().and_then(|n| i64::try_from(n).ok());
            if bound.keys().any(|k| !["min", "max", "sizes"].contains(&k.as_str())) {
                return Err(bad());
            }
            let bound = match (bound.get("sizes"), bound.get("min"), bound.get("max")) {
                (Some(sizes), None, None) => {
                    let sizes = sizes.as_array().map(|l| l.iter().map(size).collect::<Option<Vec<i64>>>());
                    match sizes.flatten() {
                        Some(sizes) if !sizes.is_empty() => DimBound::sizes(sizes),
                        _ => return Err(bad()),
                    }
                }
                (None, min, max) => {
                    let min = min.map(|v| size(v).ok_or_else(bad)).transpose()?.unwrap_or(0);
                    let max = max.map(|v| size(v).ok_or_else(bad)).transpose()?.unwrap_or(i64::MAX);
                    if min > max {
                        return Err(format!("{what}: symbolic_dims {name:?} has min {min} over max {max}"));
                    }
                    DimBound::range(min, max)
                }
                _ => return Err(bad()),
            };
            limits.dims.push((name.clone(), bound));
        }
        Ok(limits)
    }
}

/// The sizes a symbolic dimension may take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DimBound {
    /// From `min` to `max`, both included.
    Range {
        /// The least size.
        min: i64,
        /// The largest size.
        max: i64,
    },
    /// Only these.
    Sizes(Vec<i64>),
}

impl DimBound {
    /// From `min` to `max`, both included.
    pub fn range(min: i64, max: i64) -> DimBound {
        DimBound::Range { min, max }
    }

    /// Only these sizes.
    pub fn sizes(sizes: impl IntoIterator<Item = i64>) -> DimBound {
        let mut sizes: Vec<i64> = sizes.into_iter().collect();
        sizes.sort_unstable();
        sizes.dedup();
        DimBound::Sizes(sizes)
    }

    /// Whether `size` is allowed.
    pub fn allows(&self, size: i64) -> bool {
        match self {
            DimBound::Range { min, max } => (*min..=*max).contains(&size),
            DimBound::Sizes(sizes) => sizes.binary_search(&size).is_ok(),
        }
    }
}

impl std::fmt::Display for DimBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DimBound::Range { min, max } if *max == i64::MAX => write!(f, "{min} or more"),
            DimBound::Range { min, max } => write!(f, "{min} to {max}"),
            DimBound::Sizes(sizes) => {
                let sizes: Vec<String> = sizes.iter().map(i64::to_string).collect();
                write!(f, "one of {}", sizes.join(", "))
            }
        }
    }
}

/// How requests to a model are batched: queued, concatenated along their first (symbolic)
/// dimension up to `max_batch_size` rows, padded with zero rows to the next of the `buckets`
/// (so that at most one executable per bucket is compiled), run, and split back.
///
/// Only for models whose rows are independent: padding and batching change the outputs of a
/// model that reduces over its first dimension, so the config must say
/// `"batch_independent": true`. `config.json` takes the gathering window and the batch sizes
/// by our names (`max_queue_delay_ms`, `preferred_batch_sizes`) or by Triton's, in its units
/// (`max_queue_delay_microseconds`, `preferred_batch_size`); one name per knob.
///
/// A config in Triton's terms says the same at its top level: `max_batch_size` over 0 (a
/// number, or a string of one as protobuf's JSON writes it) declares the first dimension a
/// batch of independent rows, as Triton's models do, and batches requests without waiting;
/// `dynamic_batching` (with `preferred_batch_size`, `max_queue_delay_microseconds`) sets the
/// window. `max_batch_size` 0 is no batching. A config gives `batching` or Triton's fields, not
/// both.
///
/// ```
/// let b = pjrt_serve::config::BatchingConfig::new(8);
/// assert_eq!(b.buckets(), [1, 2, 4, 8]);
/// assert_eq!(b.bucket_for(3), Some(4));
/// assert_eq!(b.bucket_for(9), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BatchingConfig {
    /// The most rows in one execution (a request of more is refused).
    pub max_batch_size: usize,
    /// How long the first request of a batch waits for others (`config.json`'s
    /// `max_queue_delay_ms`, or Triton's `max_queue_delay_microseconds`).
    pub max_queue_delay: std::time::Duration,
    /// The batch sizes executions are padded to (default: powers of two up to
    /// `max_batch_size`, and it; `config.json`'s `preferred_batch_sizes`, or Triton's
    /// `preferred_batch_size`).
    pub preferred_batch_sizes: Vec<usize>,
}

impl BatchingConfig {
    /// Batches of up to `max_batch_size` rows, waiting up to 2 ms.
    pub fn new(max_batch_size: usize) -> BatchingConfig {
        BatchingConfig {
            max_batch_size: max_batch_size.max(1),
            max_queue_delay: std::time::Duration::from_millis(2),
            preferred_batch_sizes: Vec::new(),
        }
    }

    /// The sizes executions are padded to, ascending, the last `max_batch_size`.
    pub fn buckets(&self) -> Vec<usize> {
        let mut sizes: Vec<usize> = if self.preferred_batch_sizes.is_empty() {
            std::iter::successors(Some(1usize), |n| n.checked_mul(2)).take_while(|&n| n < self.max_batch_size).collect()
        } else {
            self.preferred_batch_sizes.iter().copied().filter(|&n| n >= 1 && n < self.max_batch_size).collect()
        };
        sizes.push(self.max_batch_size);
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }

    /// The bucket `rows` rows are padded to; `None` above `max_batch_size`.
    pub fn bucket_for(&self, rows: usize) -> Option<usize> {
        self.buckets().into_iter().find(|&b| b >= rows)
    }

    fn from_json(value: &Value, what: &str) -> Result<BatchingConfig, String> {
        let Value::Object(b) = value else { return Err(format!("{what}: \"batching\" must be an object")) };
        const KNOWN: [&str; 6] = [
            "batch_independent",
            "max_batch_size",
            "max_queue_delay_ms",
            "max_queue_delay_microseconds",
            "preferred_batch_sizes",
            "preferred_batch_size",
        ];
        if let Some(key) = b.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(format!("{what}: unknown batching field {key:?} (known: {})", KNOWN.join(", ")));
        }
        if b.get("batch_independent") != Some(&Value::Bool(true)) {
            return Err(format!(
                "{what}: batching pads and concatenates requests, which changes the outputs of a model that reduces over \
                 its first dimension: say \"batch_independent\": true if each row's outputs depend on that row alone"
            ));
        }
        let size = |v: &Value| v.as_u64().and_then(|n| usize::try_from(n).ok()).filter(|&n| n >= 1);
        let max_batch_size = b
            .get("max_batch_size")
            .and_then(size)
            .ok_or_else(|| format!("{what}: batching needs \"max_batch_size\", a count of rows (1 or more)"))?;
        let mut config = BatchingConfig::new(max_batch_size);
        // Each knob by our name or by Triton's (its units), not both.
        let either = |ours: &'static str, triton: &'static str| match (b.get(ours), b.get(triton)) {
            (Some(_), Some(_)) => {
                Err(format!("{what}: batching gives both {ours:?} and {triton:?} (Triton's name for it): give one"))
            }
            (Some(v), None) => Ok(Some((ours, v))),
            (None, Some(v)) => Ok(Some((triton, v))),
            (None, None) => Ok(None),
        };
        if let Some((key, v)) = either("max_queue_delay_ms", "max_queue_delay_microseconds")? {
            let n = v.as_u64().ok_or_else(|| format!("{what}: {key:?} must be a whole number of its unit"))?;
            config.max_queue_delay = if key == "max_queue_delay_ms" {
                std::time::Duration::from_millis(n)
            } else {
                std::time::Duration::from_micros(n)
            };
        }
        if let Some((key, v)) = either("preferred_batch_sizes", "preferred_batch_size")? {
            let list = v.as_array().map(|l| l.iter().map(size).collect::<Option<Vec<usize>>>());
            config.preferred_batch_sizes =
                list.flatten().ok_or_else(|| format!("{what}: {key:?} must be a list of row counts (1 or more)"))?;
        }
        Ok(config)
    }
    /// Triton's top-level `max_batch_size` and `dynamic_batching` of a config (either given):
    /// the batching they declare, `None` for `max_batch_size` 0.
    fn from_triton(
        max_batch_size: Option<&Value>,
        dynamic_batching: Option<&Value>,
        what: &str,
    ) -> Result<Option<BatchingConfig>, String> {
        // Protobuf's JSON writes 64-bit integers as strings, and takes either for any integer.
        let count = |key: &str, v: &Value| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse::<u64>().ok()))
                .ok_or_else(|| format!("{what}: {key:?} must be a whole number (or a string of one), not {v}"))
        };
        let max_batch_size = match max_batch_size {
            None => 0,
            Some(v) => usize::try_from(count("max_batch_size", v)?).unwrap_or(usize::MAX),
        };
        if max_batch_size == 0 {
            return match dynamic_batching {
                None => Ok(None),
                Some(_) => Err(format!(
                    "{what}: \"dynamic_batching\" needs \"max_batch_size\" over 0 (the most rows of an execution), as \
                     Triton's does"
                )),
            };
        }
        // Without dynamic_batching Triton runs each request as it comes: no gathering window.
        let mut config =
            BatchingConfig { max_queue_delay: std::time::Duration::ZERO, ..BatchingConfig::new(max_batch_size) };
        let Some(dynamic) = dynamic_batching else { return Ok(Some(config)) };
        let Value::Object(d) = dynamic else { return Err(format!("{what}: \"dynamic_batching\" must be an object")) };
        const KNOWN: [&str; 2] = ["preferred_batch_size", "max_queue_delay_microseconds"];
        if let Some(key) = d.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(format!(
                "{what}: dynamic_batching's {key:?} is not supported by pjrt serve (known: {})",
                KNOWN.join(", ")
            ));
        }
        if let Some(v) = d.get("max_queue_delay_microseconds") {
            config.max_queue_delay = std::time::Duration::from_micros(count("max_queue_delay_microseconds", v)?);
        }
        if let Some(v) = d.get("preferred_batch_size") {
            let sizes = v.as_array().ok_or_else(|| format!("{what}: \"preferred_batch_size\" must be a list"))?;
            config.preferred_batch_sizes = sizes
                .iter()
                .map(|n| count("preferred_batch_size", n).map(|n| usize::try_from(n).unwrap_or(usize::MAX)))
                .collect::<Result<_, _>>()?;
            if let Some(&n) = config.preferred_batch_sizes.iter().find(|&&n| n == 0 || n > max_batch_size) {
                return Err(format!(
                    "{what}: preferred_batch_size {n} is not between 1 and max_batch_size ({max_batch_size})"
                ));
            }
        }
        Ok(Some(config))
    }
}

impl ModelConfig {
    /// A model named `name` read from `program`.
    pub fn new(name: impl Into<String>, program: impl Into<PathBuf>) -> ModelConfig {
        ModelConfig {
            name: name.into(),
            version: "1".into(),
            program: program.into(),
            params: None,
            input_names: Vec::new(),
            output_names: Vec::new(),
            batching: None,
            shapes: ShapeLimits::default(),
            warmup: WarmupConfig::default(),
        }
    }

    /// With bounds on what requests may make it compile.
    pub fn with_shape_limits(mut self, shapes: ShapeLimits) -> ModelConfig {
        self.shapes = shapes;
        self
    }

    /// With dynamic batching.
    pub fn with_batching(mut self, batching: BatchingConfig) -> ModelConfig {
        self.batching = Some(batching);
        self
    }

    /// With this warm-up ([`WarmupConfig::off`]: none).
    pub fn with_warmup(mut self, warmup: WarmupConfig) -> ModelConfig {
        self.warmup = warmup;
        self
    }

    /// With a weights file.
    pub fn with_params(mut self, params: impl Into<PathBuf>) -> ModelConfig {
        self.params = Some(params.into());
        self
    }

    /// A model folder of a repository: `config.json` (optional: `name`, `version`, `program`,
    /// `params`, `inputs` and `outputs` as lists of names, `batching` ([`BatchingConfig`]:
    /// `batch_independent`, `max_batch_size`, `max_queue_delay_ms` or Triton's
    /// `max_queue_delay_microseconds`, `preferred_batch_sizes` or Triton's
    /// `preferred_batch_size`), `symbolic_dims`, `max_request_shapes`, `warmup`
    /// ([`WarmupConfig`]); relative paths are the
    /// folder's; Triton's `config.pbtxt` is not read),
    /// else the folder's one program file (`.jaxexport`, `.mlir`, `.mlirbc`, or `.pjrt`: an AOT
    /// artifact of `pjrt compile`) and its `params.safetensors` if there is one.
    /// The name defaults to the folder's.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("serve-config-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(dir.join("mlp"))?;
    /// std::fs::write(dir.join("mlp/model.jaxexport"), b"")?;
    /// std::fs::write(dir.join("mlp/config.json"), br#"{"version": "3", "inputs": ["x"]}"#)?;
    /// let config = pjrt_serve::ModelConfig::from_folder(&dir.join("mlp")).unwrap();
    /// assert_eq!((config.name.as_str(), config.version.as_str()), ("mlp", "3"));
    /// assert_eq!(config.input_names, ["x"]);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn from_folder(folder: &Path) -> Result<ModelConfig, ServeError> {
        ModelConfig::read_folder(folder, None)
    }

    /// A model folder of a repository with `config` (a JSON object of `config.json`'s fields)
    /// in place of the folder's `config.json`, as Triton's load with a `config` parameter: what
    /// `config` leaves out takes its default, not the file's value. Its `program` and `params`
    /// must be files of the folder (a name, no `..`); its errors name "the config override".
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("serve-override-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(dir.join("mlp"))?;
    /// std::fs::write(dir.join("mlp/model.jaxexport"), b"")?;
    /// std::fs::write(dir.join("mlp/config.json"), br#"{"version": "3", "inputs": ["x"]}"#)?;
    /// let config = pjrt_serve::ModelConfig::from_folder_with_override(&dir.join("mlp"), r#"{"inputs": ["features"]}"#);
    /// let config = config.unwrap();
    /// assert_eq!((config.version.as_str(), config.input_names.as_slice()), ("1", &["features".to_string()][..]));
    /// let bad = pjrt_serve::ModelConfig::from_folder_with_override(&dir.join("mlp"), r#"{"program": "../x.jaxexport"}"#);
    /// assert!(bad.unwrap_err().to_string().contains("the config override"));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn from_folder_with_override(folder: &Path, config: &str) -> Result<ModelConfig, ServeError> {
        ModelConfig::read_folder(folder, Some(config))
    }

    /// A model folder, with its `config.json` or the `config` given in its place.
    fn read_folder(folder: &Path, config: Option<&str>) -> Result<ModelConfig, ServeError> {
        let folder_name = folder.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let bad = |m: String| ServeError::load(folder_name.clone(), m);
        let config_path = folder.join("config.json");
        let json = match config {
            Some(text) => {
                serde_json::from_str::<Value>(text).map_err(|e| bad(format!("the config override is not JSON: {e}")))?
            }
            None => match std::fs::read(&config_path) {
                Ok(bytes) => serde_json::from_slice::<Value>(&bytes)
                    .map_err(|e| bad(format!("{} is not JSON: {e}", config_path.display())))?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Object(Default::default()),
                Err(e) => return Err(bad(format!("{}: {e}", config_path.display()))),
            },
        };
        // (An override's errors name it where they would name the file.)
        let config_path = if config.is_some() { PathBuf::from("the config override") } else { config_path };
        if let (Some(_), Value::Object(json)) = (config, &json) {
            let outside = |v: &Value| {
                v.as_str()
                    .is_some_and(|p| !Path::new(p).components().all(|c| matches!(c, std::path::Component::Normal(_))))
            };
            if let Some(key) = ["program", "params"].into_iter().find(|k| json.get(*k).is_some_and(outside)) {
                return Err(bad(format!("the config override: {key:?} must name a file of the model's folder")));
            }
            let samples = json.get("warmup").and_then(|w| w.get("samples")).and_then(Value::as_object);
            if samples.is_some_and(|s| s.values().any(outside)) {
                return Err(bad("the config override: warmup samples must name files of the model's folder".into()));
            }
        }
        let Value::Object(json) = json else {
            return Err(bad(format!("{} must hold a JSON object", config_path.display())));
        };
        const KNOWN: [&str; 12] = [
            "name",
            "version",
            "program",
            "params",
            "inputs",
            "outputs",
            "batching",
            "symbolic_dims",
            "max_request_shapes",
            "max_batch_size",
            "dynamic_batching",
            "warmup",
        ];
        if let Some(key) = json.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(bad(format!("{}: unknown field {key:?} (known: {})", config_path.display(), KNOWN.join(", "))));
        }
        let text = |key: &str| -> Result<Option<String>, ServeError> {
            match json.get(key) {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(bad(format!("{}: {key:?} must be a string", config_path.display()))),
            }
        };
        let names = |key: &str| -> Result<Vec<String>, ServeError> {
            match json.get(key) {
                None => Ok(Vec::new()),
                Some(Value::Array(list)) if list.iter().all(Value::is_string) => {
                    Ok(list.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
                }
                Some(_) => Err(bad(format!("{}: {key:?} must be a list of names", config_path.display()))),
            }
        };
        let program = match text("program")? {
            Some(p) => folder.join(p),
            None => {
                let mut found = Vec::new();
                let entries = std::fs::read_dir(folder).map_err(|e| bad(format!("{}: {e}", folder.display())))?;
                for entry in entries {
                    let path = entry.map_err(|e| bad(format!("{}: {e}", folder.display())))?.path();
                    if is_program_file(&path) {
                        found.push(path);
                    }
                }
                match found.len() {
                    1 => found.remove(0),
                    n => {
                        return Err(bad(format!(
                            "{} holds {n} program files ({}): name the program in config.json (\"program\")",
                            folder.display(),
                            PROGRAM_EXTENSIONS.map(|x| format!(".{x}")).join(", ")
                        )))
                    }
                }
            }
        };
        let params = match text("params")? {
            Some(p) => Some(folder.join(p)),
            None => Some(folder.join("params.safetensors")).filter(|p| p.is_file()),
        };
        Ok(ModelConfig {
            name: text("name")?.unwrap_or(folder_name.clone()),
            version: text("version")?.unwrap_or_else(|| "1".into()),
            program,
            params,
            input_names: names("inputs")?,
            output_names: names("outputs")?,
            batching: {
                let what = config_path.display().to_string();
                let triton = (json.get("max_batch_size"), json.get("dynamic_batching"));
                match (json.get("batching"), triton) {
                    (None, (None, None)) => None,
                    (Some(b), (None, None)) => Some(BatchingConfig::from_json(b, &what).map_err(bad)?),
                    (None, (max, dynamic)) => BatchingConfig::from_triton(max, dynamic, &what).map_err(bad)?,
                    (Some(_), _) => {
                        return Err(bad(format!(
                        "{what}: give \"batching\" or Triton's \"max_batch_size\" and \"dynamic_batching\", not both"
                    )))
                    }
                }
            },
            shapes: ShapeLimits::from_json(&json, &config_path.display().to_string()).map_err(bad)?,
            warmup: WarmupConfig::from_json(json.get("warmup"), folder, &config_path.display().to_string())
                .map_err(bad)?,
        })
    }
}

impl std::str::FromStr for ModelConfig {
    type Err = String;

    /// `NAME=PATH[:params=WEIGHTS]`.
    fn from_str(spec: &str) -> Result<ModelConfig, String> {
        let (name, rest) = spec
            .split_once('=')
            .filter(|(n, p)| !n.is_empty() && !p.is_empty())
            .ok_or_else(|| format!("{spec:?}: give NAME=PATH[:params=WEIGHTS.safetensors]"))?;
        let (path, params) = match rest.split_once(":params=") {
            Some((path, params)) => (path, Some(PathBuf::from(params))),
            None => (rest, None),
        };
        let mut config = ModelConfig::new(name, path);
        config.params = params;
        Ok(config)
    }
}

/// The endings of the files a model folder's program is found as (without `program` in its
/// `config.json`): a `jax.export` model, MLIR text, a StableHLO portable artifact, an AOT
/// artifact of `pjrt compile` (told apart by their bytes, not their names, once read).
pub(crate) const PROGRAM_EXTENSIONS: [&str; 4] = ["jaxexport", "mlir", "mlirbc", "pjrt"];

/// Whether `path` is named as a model's program ([`PROGRAM_EXTENSIONS`]).
pub(crate) fn is_program_file(path: &Path) -> bool {
    path.extension().and_then(|x| x.to_str()).is_some_and(|x| PROGRAM_EXTENSIONS.contains(&x))
}

/// Every model folder of a repository (its subfolders, sorted by name), each as its config
/// or as the error that keeps it from being one.
pub fn read_repository(root: &Path) -> Result<Vec<Result<ModelConfig, ServeError>>, ServeError> {
    let entries = std::fs::read_dir(root).map_err(|e| {
        ServeError::load(String::new(), crate::error::context(format!("the model repository {}", root.display()), e))
    })?;
    let mut folders: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
    folders.sort();
    Ok(folders.iter().map(|f| ModelConfig::from_folder(f)).collect())
}
