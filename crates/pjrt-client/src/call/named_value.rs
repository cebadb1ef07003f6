//! `PJRT_NamedValue`: typed key/value pairs for plugin attributes and client options.

use std::ffi::c_char;

use crate::call::{slice_from_raw, string_from_raw};
use crate::sys;

/// A typed value as PJRT passes it in options and attributes.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// `kString`
    String(String),
    /// `kInt64`
    Int64(i64),
    /// `kInt64List`
    Int64List(Vec<i64>),
    /// `kFloat`
    Float(f32),
    /// `kBool`
    Bool(bool),
    /// A type this crate does not know (from a newer plugin); the raw type is kept.
    Unknown(i32),
}

impl Value {
    /// The name of the value's type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::String(_) => "string",
            Value::Int64(_) => "int64",
            Value::Int64List(_) => "int64 list",
            Value::Float(_) => "float",
            Value::Bool(_) => "bool",
            Value::Unknown(_) => "unknown",
        }
    }

    /// Reads one raw named value.
    ///
    /// # Safety
    /// `raw` must be a valid `PJRT_NamedValue` whose pointers are readable for the sizes given.
    pub(crate) unsafe fn from_raw(raw: &sys::PJRT_NamedValue) -> (String, Value) {
        // SAFETY: guaranteed by the caller for every pointer read below.
        unsafe {
            let name = string_from_raw(raw.name, raw.name_size);
            let value = match raw.type_ {
                sys::PJRT_NamedValue_Type::String => {
                    Value::String(string_from_raw(raw.value.string_value, raw.value_size))
                }
                sys::PJRT_NamedValue_Type::Int64 => Value::Int64(raw.value.int64_value),
                sys::PJRT_NamedValue_Type::Int64List => {
                    Value::Int64List(slice_from_raw(raw.value.int64_array_value, raw.value_size).to_vec())
                }
                sys::PJRT_NamedValue_Type::Float => Value::Float(raw.value.float_value),
                // The byte, not a `bool`: the plugin may have written any byte (`plugin_bool`).
                sys::PJRT_NamedValue_Type::Bool => Value::Bool(super::plugin_bool(&raw const raw.value.bool_value)),
                other => Value::Unknown(other.0),
            };
            (name, value)
        }
    }
}

impl Value {
    /// Builds the raw `PJRT_NamedValue` structs for `options`, as client and topology options are
    /// handed to a plugin, and reads them back as plugin attributes are read. For the fuzz
    /// targets in `fuzz/` (the raw conversion is crate-private); not part of the supported API.
    #[doc(hidden)]
    pub fn fuzz_named_values_round_trip(options: &[(String, Value)]) -> Vec<(String, Value)> {
        let raw = RawNamedValues::new(options);
        // SAFETY: `raw` holds `raw.len()` valid structs pointing into its own storage, alive here.
        unsafe { read_named_values(raw.as_ptr(), raw.len()) }
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::String(v.to_owned())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::String(v)
    }
}
impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int64(v)
    }
}
impl From<Vec<i64>> for Value {
    fn from(v: Vec<i64>) -> Self {
        Value::Int64List(v)
    }
}
impl From<f32> for Value {
    fn from(v: f32) -> Self {
        Value::Float(v)
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}

/// Owned storage for a list of named values, and the raw structs pointing into it.
/// The raw structs are valid while `self` lives and is not mutated.
pub(crate) struct RawNamedValues {
    _names: Vec<String>,
    _values: Vec<Value>,
    raw: Vec<sys::PJRT_NamedValue>,
}

impl RawNamedValues {
    pub(crate) fn new(options: &[(String, Value)]) -> Self {
        let names: Vec<String> = options.iter().map(|(n, _)| n.clone()).collect();
        let values: Vec<Value> = options.iter().map(|(_, v)| v.clone()).collect();
        let mut raw = Vec::with_capacity(options.len());
        for (name, value) in names.iter().zip(&values) {
            use sys::Args;
            let mut nv = sys::PJRT_NamedValue::new();
            nv.name = name.as_ptr() as *const c_char;
            nv.name_size = name.len();
            match value {
                Value::String(s) => {
                    nv.type_ = sys::PJRT_NamedValue_Type::String;
                    nv.value.string_value = s.as_ptr() as *const c_char;
                    nv.value_size = s.len();
                }
                Value::Int64(i) => {
                    nv.type_ = sys::PJRT_NamedValue_Type::Int64;
                    nv.value.int64_value = *i;
                    nv.value_size = 1;
                }
                Value::Int64List(list) => {
                    nv.type_ = sys::PJRT_NamedValue_Type::Int64List;
                    nv.value.int64_array_value = list.as_ptr();
                    nv.value_size = list.len();
                }
                Value::Float(f) => {
                    nv.type_ = sys::PJRT_NamedValue_Type::Float;
                    nv.value.float_value = *f;
                    nv.value_size = 1;
                }
                Value::Bool(b) => {
                    nv.type_ = sys::PJRT_NamedValue_Type::Bool;
                    nv.value.bool_value = *b;
                    nv.value_size = 1;
                }
                Value::Unknown(t) => {
                    nv.type_ = sys::PJRT_NamedValue_Type(*t);
                }
            }
            raw.push(nv);
        }
        // The String/Vec heap buffers do not move when the outer Vecs are moved into `Self`.
        Self { _names: names, _values: values, raw }
    }

    pub(crate) fn as_ptr(&self) -> *const sys::PJRT_NamedValue {
        if self.raw.is_empty() {
            std::ptr::null()
        } else {
            self.raw.as_ptr()
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.raw.len()
    }
}

/// Reads an array of named values returned by the plugin.
///
/// # Safety
/// `ptr` must be NULL or point to `len` valid named values.
pub(crate) unsafe fn read_named_values(ptr: *const sys::PJRT_NamedValue, len: usize) -> Vec<(String, Value)> {
    // SAFETY: guaranteed by the caller.
    unsafe { slice_from_raw(ptr, len).iter().map(|nv| Value::from_raw(nv)).collect() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_round_trip_keeps_names_and_values() {
        let options: Vec<(String, Value)> = vec![
            ("s".into(), Value::String("h\u{e9}llo".into())),
            ("".into(), Value::String(String::new())),
            ("i".into(), Value::Int64(i64::MIN)),
            ("l".into(), Value::Int64List(vec![1, -2, i64::MAX])),
            ("e".into(), Value::Int64List(vec![])),
            ("f".into(), Value::Float(-0.0)),
            ("b".into(), Value::Bool(true)),
            ("u".into(), Value::Unknown(99)),
        ];
        let back = Value::fuzz_named_values_round_trip(&options);
        assert_eq!(back, options);
        assert!(Value::fuzz_named_values_round_trip(&[]).is_empty());
        let nan = Value::fuzz_named_values_round_trip(&[("n".into(), Value::Float(f32::NAN))]);
        assert!(matches!(nan[0].1, Value::Float(f) if f.is_nan()));
    }
}
