//! The server's models: loading (a config, every model of a repository folder, or a folder of
//! the server's repository by name for a client, with model control), unloading, and the
//! index of what is served and what did not load. What the server's `load` methods and both
//! front ends' repository calls share.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use pjrt_formats::compile_cache::CompileCache;
use tokio::sync::Semaphore;

use crate::batching;
use crate::config::{self, ModelConfig};
use crate::error::{self, ServeError};
use crate::model::ServedModel;
use crate::state::{Entry, NotServed, Shared, UNLOADED};

/// Loads (or reloads) a model: reads it, uploads its weights, compiles a static one. A model not
/// served yet is `LOADING` in the index meanwhile (the server is not ready); a reload keeps
/// serving the old model (`READY`) until the new one replaces it, for new requests (those in
/// flight finish on the old one), and a reload that fails leaves the old one served. Blocks
/// while it compiles.
pub(crate) fn load(shared: &Arc<Shared>, config: ModelConfig) -> Result<(), ServeError> {
    let name = config.name.clone();
    {
        let models = shared.models.read().unwrap_or_else(|e| e.into_inner());
        if !models.contains_key(&name) {
            lock(&shared.not_served).insert(name.clone(), NotServed::Loading);
        }
    }
    let cache = match &shared.options.compile_cache {
        Some(dir) => CompileCache::open(dir).map(Some).map_err(|e| ServeError::load(name.clone(), e)),
        None => Ok(None),
    };
    match cache.and_then(|cache| ServedModel::load(&shared.client, config, cache, shared.options.replicas)) {
        Ok(model) => {
            if let Some(warmed) = model.warmed() {
                shared.metrics.warmed(&name, warmed.executions, warmed.elapsed.as_secs_f64());
            }
            let model = Arc::new(model);
            let max_queue = shared.options.max_queue;
            let batcher = model.batching().map(|_| batching::start(model.clone(), Arc::downgrade(shared), max_queue));
            let entry = Entry { model, queue: Arc::new(Semaphore::new(max_queue)), batcher };
            // (A model replaced is dropped after the locks are let go.)
            let _replaced = {
                let mut models = shared.models.write().unwrap_or_else(|e| e.into_inner());
                lock(&shared.not_served).remove(&name);
                models.insert(name.clone(), entry)
            };
            Ok(())
        }
        Err(e) => {
            record_failure(shared, name, &e);
            Err(e)
        }
    }
}

/// Loads every model of a repository folder: the errors of those that did not load (the others
/// are served).
pub(crate) fn load_all(shared: &Arc<Shared>, root: &Path) -> Result<Vec<ServeError>, ServeError> {
    let mut errors = Vec::new();
    for config in config::read_repository(root)? {
        let loaded = match config {
            Ok(config) => load(shared, config),
            // (`load` records the models that fail to load; here, the folders that are not
            // models at all.)
            Err(e) => {
                if let ServeError::Load { model, .. } = &e {
                    record_failure(shared, model.clone(), &e);
                }
                Err(e)
            }
        };
        errors.extend(loaded.err());
    }
    Ok(errors)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keeps why model `name` did not load, for the repository index: without the server's paths
/// (the caller has the whole error). A model still served (a reload failed) stays `READY`.
fn record_failure(shared: &Shared, name: String, e: &ServeError) {
    let reason = error::without_paths(&e.to_string());
    let models = shared.models.read().unwrap_or_else(|e| e.into_inner());
    let mut not_served = lock(&shared.not_served);
    if models.contains_key(&name) {
        not_served.remove(&name);
    } else {
        not_served.insert(name, NotServed::Unavailable(reason));
    }
}

/// Stops serving model `name` (requests in flight finish) and keeps it in the index as
/// `UNAVAILABLE`, reason `unloaded` (as Triton does); a model that did not load is marked
/// alike (it no longer keeps the server from being ready). Whether a model was served; a model
/// that is loading, or one the server never had, is an error.
pub(crate) fn unload(shared: &Shared, name: &str) -> Result<bool, ServeError> {
    // (The model is dropped after the locks are let go: that may free its device memory.)
    let removed;
    let mut models = shared.models.write().unwrap_or_else(|e| e.into_inner());
    let mut not_served = lock(&shared.not_served);
    removed = models.remove(name);
    if removed.is_some() {
        not_served.insert(name.to_string(), NotServed::Unavailable(UNLOADED.into()));
        return Ok(true);
    }
    match not_served.get_mut(name) {
        Some(NotServed::Loading) => Err(ServeError::Unavailable(format!(
            "failed to unload '{name}': it is loading; unload it once its load is done"
        ))),
        Some(state) => {
            *state = NotServed::Unavailable(UNLOADED.into());
            Ok(false)
        }
        None => Err(crate::dispatch::unknown_model(name, &models)),
    }
}

/// A model of the repository index: served (`READY`), or not and why.
pub(crate) struct Indexed {
    pub name: String,
    /// Its version (served models).
    pub version: Option<String>,
    /// `READY`, `LOADING` or `UNAVAILABLE`.
    pub state: &'static str,
    /// Why it is not ready: empty for the others.
    pub reason: String,
}

/// The repository index: the models served, then (unless `ready_only`) those that are not.
pub(crate) fn index(shared: &Shared, ready_only: bool) -> Vec<Indexed> {
    let models = shared.models.read().unwrap_or_else(|e| e.into_inner());
    let mut index = Vec::new();
    for entry in models.values() {
        let (name, version) = (entry.model.name().to_string(), Some(entry.model.version().to_string()));
        index.push(Indexed { name, version, state: "READY", reason: String::new() });
    }
    if !ready_only {
        for (name, state) in lock(&shared.not_served).iter() {
            let reason = state.reason().to_string();
            index.push(Indexed { name: name.clone(), version: None, state: state.state(), reason });
        }
    }
    index
}

/// Whether the server is ready: with [`crate::ServerOptions::strict_readiness`], every model of
/// the index is served, or was unloaded by a client (as Triton's strict readiness); else it is
/// whenever it runs. When not, the models that are not ready, with their states.
pub(crate) fn server_ready(shared: &Shared) -> Result<(), String> {
    if !shared.options.strict_readiness {
        return Ok(());
    }
    let not_served = lock(&shared.not_served);
    let waiting: Vec<String> = not_served
        .iter()
        .filter(|(_, state)| !matches!(state, NotServed::Unavailable(reason) if reason == UNLOADED))
        .map(|(name, state)| format!("'{name}' is {}", state.state()))
        .collect();
    if waiting.is_empty() {
        return Ok(());
    }
    Err(format!(
        "not every model is ready: {} (the repository index says why; --strict-readiness false makes the server \
         ready regardless)",
        waiting.join(", ")
    ))
}

/// Whether model `name` (at `version`, if given) is ready: `None` when it is, its state when it
/// is in the index but not served (loading, failed, unloaded); an unknown model (or version) is
/// an error, in Triton's words.
pub(crate) fn model_ready(shared: &Shared, name: &str, version: Option<&str>) -> Result<Option<NotServed>, ServeError> {
    match crate::dispatch::find_model(shared, name, version) {
        Ok(_) => Ok(None),
        Err(e) => match lock(&shared.not_served).get(name) {
            Some(state) => Ok(Some(state.clone())),
            None => Err(e),
        },
    }
}

/// The load and unload calls need model control.
pub(crate) fn check_model_control(shared: &Shared) -> Result<(), ServeError> {
    if shared.options.model_control {
        return Ok(());
    }
    Err(ServeError::Forbidden(
        "model control is off: start the server with --model-control explicit to load and unload models".into(),
    ))
}

/// Whether `folder` looks like a model's: a folder with a `config.json` or a program file
/// (`.jaxexport`, `.mlir`, ...: [`config::PROGRAM_EXTENSIONS`]).
fn is_model_folder(folder: &Path) -> bool {
    folder.join("config.json").is_file()
        || std::fs::read_dir(folder).is_ok_and(|entries| entries.flatten().any(|e| config::is_program_file(&e.path())))
}

/// A client's load: (re)loads model folder `name` of the server's repository, with model
/// control, off the async runtime; with `config` (Triton's `config` parameter: a JSON model
/// config), that in place of the folder's `config.json`. What the client is told has no server
/// paths and says `failed to load 'NAME'` (Triton's words), and a name that is not a model
/// folder (none there, a file, a folder of something else) is answered alike: the log has the
/// whole error. A bad override changes nothing (a model served stays served).
pub(crate) async fn load_by_name(shared: Arc<Shared>, name: String, config: Option<String>) -> Result<(), ServeError> {
    check_model_control(&shared)?;
    let Some(root) = shared.options.repository.clone() else {
        return Err(ServeError::BadRequest(format!(
            "failed to load '{name}': the server has no model repository to load from (start it with one)"
        )));
    };
    if name.is_empty() || name.contains(['/', '\\', '\0']) || name.starts_with('.') {
        return Err(ServeError::BadRequest(format!("failed to load {name:?}: it is not a model folder's name")));
    }
    let loading = (shared.clone(), name.clone());
    let loaded = tokio::task::spawn_blocking(move || {
        let (shared, name) = loading;
        let folder = root.join(&name);
        if !is_model_folder(&folder) {
            return Ok(Err(format!("{} is not a model folder (no config.json or .jaxexport file)", folder.display())));
        }
        let model = match &config {
            Some(config) => {
                let model = ModelConfig::from_folder_with_override(&folder, config)?;
                if model.name != name {
                    return Err(ServeError::load(
                        name,
                        format!(
                            "the config override names model '{}': a load's config names the model it loads, or \
                             leaves \"name\" out",
                            model.name
                        ),
                    ));
                }
                model
            }
            None => ModelConfig::from_folder(&folder).inspect_err(|e| record_failure(&shared, name.clone(), e))?,
        };
        load(&shared, model).map(Ok)
    })
    .await;
    match loaded {
        Ok(Ok(Ok(()))) => Ok(()),
        Ok(Ok(Err(why))) => {
            shared.options.log(&format!("load {name:?}: {why}"));
            Err(ServeError::NotFound(format!("failed to load '{name}': no model folder '{name}' in the repository")))
        }
        Ok(Err(e)) => {
            shared.options.log(&format!("load {name:?}: {e}"));
            let why = match &e {
                ServeError::Load { source, .. } => source.to_string(),
                e => e.to_string(),
            };
            Err(ServeError::BadRequest(format!("failed to load '{name}': {}", error::without_paths(&why))))
        }
        Err(e) => Err(ServeError::task("load", e)),
    }
}

/// A client's unload: stops serving model `name`, with model control; it stays in the index as
/// `UNAVAILABLE` (`unloaded`).
pub(crate) fn unload_by_name(shared: &Shared, name: &str) -> Result<(), ServeError> {
    check_model_control(shared)?;
    unload(shared, name).map(drop)
}
