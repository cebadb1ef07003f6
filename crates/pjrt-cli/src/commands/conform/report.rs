//! The report of `pjrt conform`: each check's status (pass, fail, unsupported) and detail, as JSON
//! and as text, and the difference between two reports.

use crate::out::outln;
use std::path::Path;

use pjrt_client::{Error, ErrorCode};
use serde_json::{json, Value as Json};

/// The outcome of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The capability works.
    Pass,
    /// The capability gave a wrong answer or an unexpected error.
    Fail,
    /// The plugin does not offer it (UNIMPLEMENTED, or missing from its version).
    Unsupported,
}
impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Unsupported => "unsupported",
        }
    }
}
/// Why a check did not pass.
pub enum Problem {
    /// Not offered by the plugin.
    Unsupported(String),
    /// Wrong.
    Fail(String),
}
impl From<Error> for Problem {
    fn from(e: Error) -> Self {
        match &e {
            Error::Unsupported { .. } => Problem::Unsupported(e.to_string()),
            Error::Pjrt { code: ErrorCode::Unimplemented, .. } => Problem::Unsupported(e.to_string()),
            // A plugin built without a topology compiler says so with NOT_FOUND.
            Error::Pjrt { code: ErrorCode::NotFound, message, .. } if message.contains("No compiler factory") => {
                Problem::Unsupported(e.to_string())
            }
            _ => Problem::Fail(e.to_string()),
        }
    }
}
pub(crate) type Outcome = Result<String, Problem>;
pub(crate) fn expect(ok: bool, what: impl Into<String>) -> Result<(), Problem> {
    if ok {
        Ok(())
    } else {
        Err(Problem::Fail(what.into()))
    }
}
/// The report being built.
#[derive(Default)]
pub struct Report {
    checks: Vec<(String, Status, String)>,
}
impl Report {
    pub(crate) fn check(&mut self, name: &str, f: impl FnOnce() -> Outcome) {
        let (status, detail) = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            Ok(Ok(detail)) => (Status::Pass, detail),
            Ok(Err(Problem::Unsupported(d))) => (Status::Unsupported, d),
            Ok(Err(Problem::Fail(d))) => (Status::Fail, d),
            Err(_) => (Status::Fail, "the check panicked".to_owned()),
        };
        self.checks.push((name.to_owned(), status, detail));
    }

    /// Number of failed checks.
    pub fn failures(&self) -> usize {
        self.checks.iter().filter(|c| c.1 == Status::Fail).count()
    }
}
/// The JSON report.
pub fn report_json(plugin: Json, report: &Report) -> Json {
    let checks: Vec<Json> =
        report.checks.iter().map(|(n, s, d)| json!({ "name": n, "status": s.as_str(), "detail": d })).collect();
    json!({ "plugin": plugin, "checks": checks })
}
/// Prints a report for people.
pub fn print_text(json: &Json) -> Result<(), crate::out::StdoutError> {
    let plugin = &json["plugin"];
    outln!(
        "conformance of {} (PJRT {}, platform {})",
        plugin["path"].as_str().unwrap_or("?"),
        plugin["api_version"].as_str().unwrap_or("?"),
        plugin["platform"].as_str().unwrap_or("?")
    )?;
    let mut counts = [0usize; 3];
    for c in json["checks"].as_array().into_iter().flatten() {
        let status = c["status"].as_str().unwrap_or("?");
        let mark = match status {
            "pass" => {
                counts[0] += 1;
                "PASS"
            }
            "fail" => {
                counts[1] += 1;
                "FAIL"
            }
            _ => {
                counts[2] += 1;
                "n/a "
            }
        };
        let detail = c["detail"].as_str().unwrap_or("");
        let detail: String = detail.chars().take(100).collect();
        outln!("  {mark}  {:<45} {detail}", c["name"].as_str().unwrap_or(""))?;
    }
    outln!(
        "{} checks: {} passed, {} failed, {} unsupported",
        counts.iter().sum::<usize>(),
        counts[0],
        counts[1],
        counts[2]
    )?;
    Ok(())
}
/// Compares two reports: prints the checks whose status differs. Returns the number of them.
pub fn diff(a: &Json, b: &Json) -> Result<usize, crate::out::StdoutError> {
    let status = |r: &Json| -> std::collections::BTreeMap<String, String> {
        r["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| (c["name"].as_str().unwrap_or("").to_owned(), c["status"].as_str().unwrap_or("").to_owned()))
            .collect()
    };
    let (sa, sb) = (status(a), status(b));
    outln!(
        "A: {} (PJRT {})\nB: {} (PJRT {})",
        a["plugin"]["path"].as_str().unwrap_or("?"),
        a["plugin"]["api_version"].as_str().unwrap_or("?"),
        b["plugin"]["path"].as_str().unwrap_or("?"),
        b["plugin"]["api_version"].as_str().unwrap_or("?")
    )?;
    let mut names: Vec<&String> = sa.keys().chain(sb.keys()).collect();
    names.sort();
    names.dedup();
    let mut differences = 0;
    for name in names {
        let (x, y) = (sa.get(name).map(String::as_str).unwrap_or("-"), sb.get(name).map(String::as_str).unwrap_or("-"));
        if x != y {
            differences += 1;
            outln!("  {name:<45} {x:<12} -> {y}")?;
        }
    }
    outln!("{differences} checks differ")?;
    Ok(differences)
}
/// The checks whose status differs between two reports, as JSON: `{"a": plugin, "b": plugin,
/// "differences": [{"name", "a", "b"}]}`, where `a` and `b` are the reports' `plugin` objects and
/// a status is `null` where a report lacks the check.
pub fn diff_json(a: &Json, b: &Json) -> Json {
    let status = |r: &Json| -> std::collections::BTreeMap<String, Json> {
        r["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| (c["name"].as_str().unwrap_or("").to_owned(), c["status"].clone()))
            .collect()
    };
    let (sa, sb) = (status(a), status(b));
    let mut names: Vec<&String> = sa.keys().chain(sb.keys()).collect();
    names.sort();
    names.dedup();
    let differences: Vec<Json> = names
        .into_iter()
        .filter_map(|name| {
            let (x, y) = (sa.get(name).cloned().unwrap_or(Json::Null), sb.get(name).cloned().unwrap_or(Json::Null));
            (x != y).then(|| json!({ "name": name, "a": x, "b": y }))
        })
        .collect();
    json!({ "a": a["plugin"], "b": b["plugin"], "differences": differences })
}
/// Reads a report written with `--json`.
pub fn read_report(path: &Path) -> Result<Json, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::Io { path: path.to_path_buf(), source: e })?;
    serde_json::from_str(&text)
        .map_err(|e| Error::InvalidArgument(format!("{}: not a conformance report: {e}", path.display())))
}
