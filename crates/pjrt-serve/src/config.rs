//! What to serve: a model repository folder (one folder per model, with an optional
//! `config.json`) and `NAME=PATH[:params=WEIGHTS.safetensors]` specs.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::ServeError;

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
    /// The `.jaxexport` file.
    pub program: PathBuf,
    /// A safetensors file whose tensors, in file order, are the model's first inputs (its
    /// weights), uploaded once at load; requests give the rest.
    pub params: Option<PathBuf>,
    /// Names of the inputs requests give (default `input0`, `input1`, ...).
    pub input_names: Vec<String>,
    /// Names of the outputs (default `output0`, ...).
    pub output_names: Vec<String>,
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
        }
    }

    /// With a weights file.
    pub fn with_params(mut self, params: impl Into<PathBuf>) -> ModelConfig {
        self.params = Some(params.into());
        self
    }

    /// A model folder of a repository: `config.json` (optional: `name`, `version`, `program`,
    /// `params`, `inputs` and `outputs` as lists of names; relative paths are the folder's),
    /// else the folder's one `.jaxexport` file and its `params.safetensors` if there is one.
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
        let folder_name = folder.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let bad = |m: String| ServeError::Load { model: folder_name.clone(), message: m };
        let config_path = folder.join("config.json");
        let json = match std::fs::read(&config_path) {
            Ok(bytes) => serde_json::from_slice::<Value>(&bytes)
                .map_err(|e| bad(format!("{} is not JSON: {e}", config_path.display())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Object(Default::default()),
            Err(e) => return Err(bad(format!("{}: {e}", config_path.display()))),
        };
        let Value::Object(json) = json else {
            return Err(bad(format!("{} must hold a JSON object", config_path.display())));
        };
        const KNOWN: [&str; 6] = ["name", "version", "program", "params", "inputs", "outputs"];
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
                    if path.extension().is_some_and(|x| x == "jaxexport") {
                        found.push(path);
                    }
                }
                match found.len() {
                    1 => found.remove(0),
                    n => {
                        return Err(bad(format!(
                            "{} holds {n} .jaxexport files: name the program in config.json (\"program\")",
                            folder.display()
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

/// Every model folder of a repository (its subfolders, sorted by name), each as its config
/// or as the error that keeps it from being one.
pub fn read_repository(root: &Path) -> Result<Vec<Result<ModelConfig, ServeError>>, ServeError> {
    let entries = std::fs::read_dir(root).map_err(|e| ServeError::Load {
        model: String::new(),
        message: format!("the model repository {}: {e}", root.display()),
    })?;
    let mut folders: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
    folders.sort();
    Ok(folders.iter().map(|f| ModelConfig::from_folder(f)).collect())
}
