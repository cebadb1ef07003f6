//! Fault directives: their parser, the per-slot call counts, and the helpers with which a call
//! applies its fault to its outputs; [`fake_set_faults`] replaces the directives at run time.

use std::collections::BTreeMap;
use std::ffi::{c_char, CStr};
use std::panic::catch_unwind;
use std::ptr::{null, null_mut};
use std::sync::Mutex;
use std::time::Duration;

use pjrt_client_sys::{self as sys, PJRT_Error, PJRT_Error_Code};

use crate::calls::lock;
use crate::counters::{bump, COUNTERS};
use crate::errors::{new_error, FakeError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    Fail,
    /// The call answers UNIMPLEMENTED, as a plugin without the feature does.
    Unimplemented,
    NullOutput,
    BadCount,
}

#[derive(Debug)]
struct Rule {
    fault: Fault,
    slot: String,
    /// Calls let through before the fault applies.
    after: u64,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Completion {
    Ready,
    Late(Duration),
    Never,
}

#[derive(Clone, Debug)]
pub(crate) struct EventRule {
    /// The slot whose events this rule shapes (all when `None`).
    pub(crate) source: Option<String>,
    pub(crate) completion: Completion,
    pub(crate) failure: Option<(PJRT_Error_Code, String)>,
}

#[derive(Debug)]
pub(crate) struct Faults {
    rules: Vec<Rule>,
    pub(crate) events: Vec<EventRule>,
    /// Calls per slot since the directives were set.
    calls: BTreeMap<String, u64>,
    /// Payloads attached to injected failures.
    payloads: Vec<(String, Vec<u8>)>,
}

pub(crate) static FAULTS: Mutex<Faults> =
    Mutex::new(Faults { rules: Vec::new(), events: Vec::new(), calls: BTreeMap::new(), payloads: Vec::new() });

/// More elements than fit in an address space, whatever their size (2^63 > isize::MAX).
pub(crate) const IMPOSSIBLE_COUNT: usize = usize::MAX / 2 + 1;

fn known_slot(name: &str) -> Result<String, String> {
    if sys::SLOTS.iter().any(|s| s.name == name) {
        Ok(name.to_owned())
    } else {
        Err(format!("unknown slot `{name}`"))
    }
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("bad duration `{text}` (write e.g. 200ms or 1s)");
    if let Some(ms) = text.strip_suffix("ms") {
        ms.parse().map(Duration::from_millis).map_err(|_| bad())
    } else if let Some(s) = text.strip_suffix('s') {
        s.parse().map(Duration::from_secs).map_err(|_| bad())
    } else {
        Err(bad())
    }
}

pub(crate) fn parse_directives(text: &str) -> Result<Faults, String> {
    let mut faults = Faults { rules: Vec::new(), events: Vec::new(), calls: BTreeMap::new(), payloads: Vec::new() };
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let fault = match words[0] {
            "fail" => Some(Fault::Fail),
            "unimplemented" => Some(Fault::Unimplemented),
            "null_output" => Some(Fault::NullOutput),
            "bad_count" => Some(Fault::BadCount),
            "event" => None,
            "payload" => match words[1..] {
                [key, value] => {
                    faults.payloads.push((key.to_owned(), value.as_bytes().to_vec()));
                    continue;
                }
                _ => return Err(format!("expected `payload KEY VALUE`, got `{line}`")),
            },
            other => return Err(format!("unknown directive `{other}` in `{line}`")),
        };
        if let Some(fault) = fault {
            let (slot, after) = match words[1..] {
                [slot] => (slot, 0),
                [slot, "after", n] => (slot, n.parse().map_err(|_| format!("bad count in `{line}`"))?),
                _ => return Err(format!("expected `{} SLOT [after N]`, got `{line}`", words[0])),
            };
            faults.rules.push(Rule { fault, slot: known_slot(slot)?, after });
            continue;
        }
        let mut rule = EventRule { source: None, completion: Completion::Ready, failure: None };
        let mut rest = words[1..].iter();
        while let Some(word) = rest.next() {
            match *word {
                "ready" => rule.completion = Completion::Ready,
                "never" => rule.completion = Completion::Never,
                "late" => {
                    let delay = rest.next().ok_or_else(|| format!("`late` needs a delay in `{line}`"))?;
                    rule.completion = Completion::Late(parse_duration(delay)?);
                }
                "error" => rule.failure = Some((PJRT_Error_Code::INTERNAL, "fake: event failed".to_owned())),
                "for" => {
                    let slot = rest.next().ok_or_else(|| format!("`for` needs a slot in `{line}`"))?;
                    rule.source = Some(known_slot(slot)?);
                }
                other => return Err(format!("unknown event option `{other}` in `{line}`")),
            }
        }
        faults.events.push(rule);
    }
    Ok(faults)
}

/// Replaces the fault directives (see the crate docs) with `text` and resets the per-slot call
/// counts. Returns the number of directives, or -1 (and changes nothing) if `text` is NULL or
/// does not parse; the reason is printed to stderr.
///
/// # Safety
/// `text` must be NULL or point to a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn fake_set_faults(text: *const c_char) -> i64 {
    if text.is_null() {
        return -1;
    }
    // SAFETY: the caller passes a NUL-terminated string (checked non-NULL above).
    let text = unsafe { CStr::from_ptr(text) };
    catch_unwind(|| match parse_directives(&text.to_string_lossy()) {
        Ok(faults) => {
            let n = (faults.rules.len() + faults.events.len()) as i64;
            *lock(&FAULTS) = faults;
            n
        }
        Err(message) => {
            eprintln!("fake plugin: {message}");
            -1
        }
    })
    .unwrap_or(-1)
}

/// Counts a call of `slot` and returns the fault that applies to it, if any.
pub(crate) fn fault_for(slot: &str) -> Option<Fault> {
    let mut faults = lock(&FAULTS);
    let calls = faults.calls.entry(slot.to_owned()).or_insert(0);
    *calls += 1;
    let n = *calls;
    faults.rules.iter().find(|r| r.slot == slot && n > r.after).map(|r| r.fault)
}

/// Whether `fault` is `wanted`; counts it as injected when it is.
pub(crate) fn injects(fault: Option<Fault>, wanted: Fault) -> bool {
    let yes = fault == Some(wanted);
    if yes {
        bump(&COUNTERS.faults_injected);
    }
    yes
}

pub(crate) fn injected_failure(slot: &str, fault: Fault) -> *mut PJRT_Error {
    bump(&COUNTERS.faults_injected);
    let payloads = lock(&FAULTS).payloads.clone();
    let error = if fault == Fault::Unimplemented {
        new_error(PJRT_Error_Code::UNIMPLEMENTED, format!("fake: {slot} is not implemented (injected)"))
    } else {
        new_error(PJRT_Error_Code::INTERNAL, format!("fake: injected failure in {slot}"))
    };
    // SAFETY: just made by `new_error`, not shared yet.
    unsafe { (*error.cast::<FakeError>()).payloads = payloads };
    error
}

/// Applies `null_output` / `bad_count` to an array out-parameter.
pub(crate) fn shape_array<T>(fault: Option<Fault>, ptr: &mut *const T, count: &mut usize) {
    if injects(fault, Fault::NullOutput) {
        *ptr = null();
    } else if injects(fault, Fault::BadCount) {
        *count = IMPOSSIBLE_COUNT;
    }
}

/// Applies `null_output` to a handle out-parameter.
pub(crate) fn null_handle<T>(fault: Option<Fault>, handle: *mut T) -> *mut T {
    if injects(fault, Fault::NullOutput) {
        null_mut()
    } else {
        handle
    }
}

/// Sets a (pointer, length) string out-parameter, shaped by `null_output` / `bad_count`.
pub(crate) fn set_string(fault: Option<Fault>, text: &'static str, ptr: &mut *const c_char, len: &mut usize) {
    *ptr = text.as_ptr().cast();
    *len = text.len();
    shape_array(fault, ptr, len);
}
