//! The server's models: loading (a config, every model of a repository folder, or a folder of
//! the server's repository by name for a client, with model control), unloading, and the
//! index of what is served and what did not load. What the server's `load` methods and both
//! front ends' repository calls share.

use std::path::Path;
use std::sync::Arc;

use pjrt_formats::compile_cache::CompileCache;
use tokio::sync::Semaphore;

use crate::batching;
use crate::config::{self, ModelConfig};
use crate::error::{self, ServeError};
use crate::model::ServedModel;
use crate::state::{Entry, Shared};

/// Loads (or reloads) a model: reads it, uploads its weights, compiles a static one. A reload
/// replaces the model for new requests; those in flight finish on the old one. Blocks while it
/// compiles.
pub(crate) fn load(shared: &Arc<Shared>, config: ModelConfig) -> Result<(), ServeError> {
    let name = config.name.clone();
    let cache = match &shared.options.compile_cache {
        Some(dir) => Some(CompileCache::open(dir).map_err(|e| ServeError::load(name.clone(), e))?),
        None => None,
    };
    match ServedModel::load(&shared.client, config, cache, shared.options.replicas) {
        Ok(model) => {
            let model = Arc::new(model);
            let max_queue = shared.options.max_queue;
            let batcher = model.batching().map(|_| batching::start(model.clone(), Arc::downgrade(shared), max_queue));
            let entry = Entry { model, queue: Arc::new(Semaphore::new(max_queue)), batcher };
            shared.models.write().unwrap_or_else(|e| e.into_inner()).insert(name.clone(), entry);
            shared.failed.lock().unwrap_or_else(|e| e.into_inner()).remove(&name);
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

/// Keeps why model `name` did not load, for the repository index: without the server's paths
/// (the caller has the whole error).
fn record_failure(shared: &Shared, name: String, e: &ServeError) {
    let reason = error::without_paths(&e.to_string());
    shared.failed.lock().unwrap_or_else(|e| e.into_inner()).insert(name, reason);
}

/// Stops serving a model (requests in flight finish); false if there was none.
pub(crate) fn unload(shared: &Shared, name: &str) -> bool {
    shared.models.write().unwrap_or_else(|e| e.into_inner()).remove(name).is_some()
}

/// A model of the repository index: served, or not loaded and why.
pub(crate) struct Indexed {
    pub name: String,
    /// Its version (served models).
    pub version: Option<String>,
    /// Why it did not load (the others are ready).
    pub reason: Option<String>,
}

/// The repository index: the models served, then (unless `ready_only`) those that did not load.
pub(crate) fn index(shared: &Shared, ready_only: bool) -> Vec<Indexed> {
    let mut index = Vec::new();
    for entry in shared.models.read().unwrap_or_else(|e| e.into_inner()).values() {
        let (name, version) = (entry.model.name().to_string(), Some(entry.model.version().to_string()));
        index.push(Indexed { name, version, reason: None });
    }
    if !ready_only {
        for (name, reason) in shared.failed.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            index.push(Indexed { name: name.clone(), version: None, reason: Some(reason.clone()) });
        }
    }
    index
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

/// Whether `folder` looks like a model's: a folder with a `config.json` or a `.jaxexport` file.
fn is_model_folder(folder: &Path) -> bool {
    folder.join("config.json").is_file()
        || std::fs::read_dir(folder)
            .is_ok_and(|entries| entries.flatten().any(|e| e.path().extension().is_some_and(|x| x == "jaxexport")))
}

/// A client's load: (re)loads model folder `name` of the server's repository, with model
/// control, off the async runtime. What the client is told has no server paths, and a name that
/// is not a model folder (none there, a file, a folder of something else) is answered alike:
/// the log has the whole error.
pub(crate) async fn load_by_name(shared: Arc<Shared>, name: String) -> Result<(), ServeError> {
    check_model_control(&shared)?;
    let Some(root) = shared.options.repository.clone() else {
        return Err(ServeError::BadRequest(
            "the server has no model repository to load from (start it with one)".into(),
        ));
    };
    if name.is_empty() || name.contains(['/', '\\', '\0']) || name.starts_with('.') {
        return Err(ServeError::BadRequest(format!("{name:?} is not a model folder's name")));
    }
    let loading = (shared.clone(), name.clone());
    let loaded = tokio::task::spawn_blocking(move || {
        let (shared, name) = loading;
        let folder = root.join(&name);
        if !is_model_folder(&folder) {
            return Ok(Err(format!("{} is not a model folder (no config.json or .jaxexport file)", folder.display())));
        }
        let config = ModelConfig::from_folder(&folder)?;
        load(&shared, config).map(Ok)
    })
    .await;
    match loaded {
        Ok(Ok(Ok(()))) => Ok(()),
        Ok(Ok(Err(why))) => {
            shared.options.log(&format!("load {name:?}: {why}"));
            Err(ServeError::NotFound(format!("no model {name:?} in the repository")))
        }
        Ok(Err(e)) => {
            shared.options.log(&format!("load {name:?}: {e}"));
            Err(ServeError::BadRequest(error::without_paths(&e.to_string())))
        }
        Err(e) => Err(ServeError::task("load", e)),
    }
}

/// A client's unload: stops serving model `name`, with model control.
pub(crate) fn unload_by_name(shared: &Shared, name: &str) -> Result<(), ServeError> {
    check_model_control(shared)?;
    if unload(shared, name) {
        Ok(())
    } else {
        Err(ServeError::NotFound(format!("no model {name:?} is loaded")))
    }
}
