//! A model's warm-up, as its `config.json` says (`warmup`): on by default, `false` for none,
//! or `{"samples": {...}}` naming the `.npy` files run in place of zeros.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// A model's warm-up (`config.json`'s `warmup`): on unless `false`; `{"samples": {"INPUT":
/// "FILE.npy", ...}}` names `.npy` files (relative to the model's folder) run in place of zeros.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("serve-warmup-doc-{}", std::process::id()));
/// std::fs::create_dir_all(dir.join("mlp"))?;
/// std::fs::write(dir.join("mlp/model.jaxexport"), b"")?;
/// std::fs::write(dir.join("mlp/config.json"), br#"{"warmup": {"samples": {"x": "x.npy"}}}"#)?;
/// let config = pjrt_serve::ModelConfig::from_folder(&dir.join("mlp")).unwrap();
/// assert!(config.warmup.enabled);
/// assert_eq!(config.warmup.samples, [("x".to_string(), dir.join("mlp/x.npy"))]);
/// std::fs::write(dir.join("mlp/config.json"), br#"{"warmup": false}"#)?;
/// assert!(!pjrt_serve::ModelConfig::from_folder(&dir.join("mlp")).unwrap().warmup.enabled);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WarmupConfig {
    /// Whether the model warms up before it is served (default: yes).
    pub enabled: bool,
    /// Request inputs (by name) and the `.npy` files whose arrays they are given in place of
    /// zeros where their shapes are the signature's; when every request input has one, their
    /// shapes are one more signature compiled at load.
    pub samples: Vec<(String, PathBuf)>,
}

impl Default for WarmupConfig {
    fn default() -> WarmupConfig {
        WarmupConfig { enabled: true, samples: Vec::new() }
    }
}

impl WarmupConfig {
    /// No warm-up: the model is served as soon as it is compiled.
    pub fn off() -> WarmupConfig {
        WarmupConfig { enabled: false, samples: Vec::new() }
    }

    /// With input `name` given the array of `.npy` file `path` in place of zeros.
    pub fn with_sample(mut self, name: impl Into<String>, path: impl Into<PathBuf>) -> WarmupConfig {
        self.samples.push((name.into(), path.into()));
        self
    }

    /// `config.json`'s `warmup` (`value`), its paths relative to `folder`.
    pub(crate) fn from_json(value: Option<&Value>, folder: &Path, what: &str) -> Result<WarmupConfig, String> {
        let bad = || format!("{what}: \"warmup\" must be true, false or {{\"samples\": {{\"INPUT\": \"FILE.npy\"}}}}");
        match value {
            None | Some(Value::Bool(true)) => Ok(WarmupConfig::default()),
            Some(Value::Bool(false)) => Ok(WarmupConfig::off()),
            Some(Value::Object(fields)) => {
                if let Some(key) = fields.keys().find(|k| k.as_str() != "samples") {
                    return Err(format!("{what}: warmup's {key:?} is not supported by pjrt serve (known: samples)"));
                }
                let mut config = WarmupConfig::default();
                if let Some(samples) = fields.get("samples") {
                    let Value::Object(samples) = samples else { return Err(bad()) };
                    for (name, file) in samples {
                        let file = file.as_str().ok_or_else(bad)?;
                        config.samples.push((name.clone(), folder.join(file)));
                    }
                }
                Ok(config)
            }
            Some(_) => Err(bad()),
        }
    }
}
