//! Model control's parameters, as Triton's repository extension has them, from either front end:
//! a load's `config` (a JSON model config used in place of the folder's `config.json`), an
//! unload's `unload_dependents` (this server has no ensembles: nothing depends on a model), the
//! index's `ready`. `file:` overrides (a model's files sent with the request) are refused by
//! name, as is any other parameter: none is ignored.

use serde_json::Value;

use crate::error::ServeError;

/// A parameter's value, as either front end gives it.
#[derive(Debug)]
pub(crate) enum Param {
    /// A string (HTTP: a JSON string; gRPC: `string_param`).
    Text(String),
    /// A boolean (HTTP: `true`/`false`; gRPC: `bool_param`), whichever.
    Bool,
    /// A JSON object (HTTP only): a `config` given as an object, not a string holding one.
    Object(String),
    /// Any other type, by its name.
    Other(&'static str),
}

fn bad(message: String) -> ServeError {
    ServeError::BadRequest(message)
}

/// The config override of a load of `name` among `params` (sorted by name, so that the same
/// request is always refused for the same parameter).
pub(crate) fn load_config(name: &str, mut params: Vec<(String, Param)>) -> Result<Option<String>, ServeError> {
    params.sort_by(|a, b| a.0.cmp(&b.0));
    let mut config = None;
    for (key, value) in params {
        if key.starts_with("file:") {
            // A failed load, as Triton answers a file it cannot take (gRPC INTERNAL, HTTP 500,
            // "failed to poll from model repository"): its clients check those.
            return Err(ServeError::load(
                name,
                format!(
                    "failed to poll from model repository: file: overrides are not supported: parameter '{key}' would \
                     send a file of model '{name}' with the request; put the model's files in its folder of the \
                     repository and load it by name (with \"config\" to override its config.json)"
                ),
            ));
        }
        if key != "config" {
            return Err(bad(format!(
                "Unrecognized load parameter '{key}': this server takes \"config\" (a JSON model config, in place of \
                 the model folder's config.json)"
            )));
        }
        config = Some(match value {
            Param::Text(text) | Param::Object(text) => text,
            Param::Bool => return Err(config_type(name, "bool")),
            Param::Other(kind) => return Err(config_type(name, kind)),
        });
    }
    Ok(config)
}

fn config_type(name: &str, kind: &str) -> ServeError {
    bad(format!(
        "failed to load '{name}': Config parameter 'config' must have string type for its value (a JSON model \
         config), not {kind}"
    ))
}

/// Checks an unload's `params`: `unload_dependents` (a boolean) only.
pub(crate) fn unload_params(mut params: Vec<(String, Param)>) -> Result<(), ServeError> {
    params.sort_by(|a, b| a.0.cmp(&b.0));
    for (key, value) in params {
        match (key.as_str(), value) {
            ("unload_dependents", Param::Bool) => {}
            ("unload_dependents", _) => {
                return Err(bad("Unable to parse 'unload_dependents': it must be a boolean".into()));
            }
            _ => {
                return Err(bad(format!(
                    "Unrecognized unload parameter '{key}': this server takes \"unload_dependents\" (a boolean)"
                )));
            }
        }
    }
    Ok(())
}

/// The JSON object of an HTTP repository call's body (`what`: `load`, `unload`, `index`);
/// empty for an empty body.
fn body_object(body: &[u8], what: &str) -> Result<serde_json::Map<String, Value>, ServeError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Default::default());
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(bad(format!("the {what} request's body must be a JSON object"))),
        Err(e) => Err(bad(format!("the {what} request's body is not JSON: {e}"))),
    }
}

/// The parameters of an HTTP load or unload request's body (`{"parameters": {...}}`; other
/// members are ignored, as Triton does).
pub(crate) fn http_params(body: &[u8], what: &str) -> Result<Vec<(String, Param)>, ServeError> {
    let mut object = body_object(body, what)?;
    let params = match object.remove("parameters") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(params)) => params,
        Some(_) => return Err(bad(format!("the {what} request's \"parameters\" must be a JSON object"))),
    };
    let params = params.into_iter().map(|(key, value)| {
        let value = match value {
            Value::String(text) => Param::Text(text),
            Value::Bool(_) => Param::Bool,
            Value::Object(_) => Param::Object(value.to_string()),
            Value::Number(_) => Param::Other("a number"),
            Value::Array(_) => Param::Other("a list"),
            Value::Null => Param::Other("null"),
        };
        (key, value)
    });
    Ok(params.collect())
}

/// The `ready` member of an HTTP index request's body (default false: every model).
pub(crate) fn http_index_ready(body: &[u8]) -> Result<bool, ServeError> {
    match body_object(body, "index")?.get("ready") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(ready)) => Ok(*ready),
        Some(_) => Err(bad("the index request's \"ready\" must be a boolean".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_parameters_are_the_config_or_refused_by_name() {
        let config = vec![("config".to_string(), Param::Text("{}".into()))];
        assert_eq!(load_config("m", config).unwrap().as_deref(), Some("{}"));
        assert_eq!(load_config("m", Vec::new()).unwrap(), None);
        let file = vec![("file:1/model.onnx".to_string(), Param::Text("AAAA".into()))];
        let e = load_config("m", file).unwrap_err();
        assert!(e.to_string().contains("failed to poll from model repository: file: overrides are not supported"));
        assert_eq!(e.status(), 500);
        let other = vec![("priority".to_string(), Param::Bool)];
        assert!(load_config("m", other).unwrap_err().to_string().contains("'priority'"));
        let typed = vec![("config".to_string(), Param::Other("a number"))];
        assert!(load_config("m", typed).unwrap_err().to_string().contains("failed to load 'm'"));
    }

    #[test]
    fn http_bodies_give_their_parameters() {
        let body = br#"{"parameters": {"config": "{\"inputs\": [\"x\"]}", "unload_dependents": false}}"#;
        let params = http_params(body, "load").unwrap();
        assert_eq!(params.len(), 2);
        assert!(http_params(b"", "load").unwrap().is_empty());
        assert!(http_params(b"{}", "load").unwrap().is_empty());
        assert!(http_params(b"{nope", "load").unwrap_err().to_string().contains("not JSON"));
        assert!(
            unload_params(http_params(br#"{"parameters": {"unload_dependents": true}}"#, "unload").unwrap()).is_ok()
        );
        assert!(unload_params(http_params(br#"{"parameters": {"x": 1}}"#, "unload").unwrap()).is_err());
        assert!(http_index_ready(br#"{"ready": true}"#).unwrap());
        assert!(!http_index_ready(b"").unwrap());
    }
}
