//! Named-value conversion (`PJRT_NamedValue`).
//!
//! 1. The raw conversion: `RawNamedValues` (how client and topology options are handed to a
//!    plugin) read back with `read_named_values` (how plugin, device and topology attributes
//!    are read) must give back every name and value, through raw pointers and unions. Reached
//!    through the hidden `Value::fuzz_named_values_round_trip`.
//! 2. The public `ClientOptions` builder: `set` replaces an option of the same name and keeps
//!    the others in order, checked against a simple model.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use pjrt_client::{ClientOptions, Value};

#[derive(Arbitrary, Debug, Clone)]
enum V {
    String(String),
    Int64(i64),
    Int64List(Vec<i64>),
    Float(f32),
    Bool(bool),
    Unknown(i32),
}

impl From<V> for Value {
    fn from(v: V) -> Value {
        match v {
            V::String(s) => Value::String(s),
            V::Int64(i) => Value::Int64(i),
            V::Int64List(l) => Value::Int64List(l),
            V::Float(f) => Value::Float(f),
            V::Bool(b) => Value::Bool(b),
            V::Unknown(t) => Value::Unknown(t),
        }
    }
}

/// Equality with floats compared bit for bit (NaN != NaN otherwise).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

fuzz_target!(|input: Vec<(String, V)>| {
    let options: Vec<(String, Value)> = input.into_iter().map(|(n, v)| (n, v.into())).collect();

    let back = Value::fuzz_named_values_round_trip(&options);
    assert_eq!(back.len(), options.len());
    for ((name, value), (name2, value2)) in options.iter().zip(&back) {
        assert_eq!(name, name2);
        if let Value::Unknown(t @ 0..=4) = value {
            // `Unknown` with the code of a known type: reading never makes one and every caller
            // refuses `Unknown` before building raw values. It is sent as that type with an
            // empty payload (no pointer is read), so only check that it reads back as one.
            assert_eq!(value2.type_name(), ["string", "int64", "int64 list", "float", "bool"][*t as usize]);
            continue;
        }
        assert!(same(value, value2), "{name:?}: {value:?} came back as {value2:?}");
        assert_eq!(value.type_name(), value2.type_name());
    }

    let mut client = ClientOptions::new();
    let mut model: Vec<(String, Value)> = Vec::new();
    for (name, value) in &options {
        client = client.set(name.as_str(), value.clone());
        model.retain(|(n, _)| n != name);
        model.push((name.clone(), value.clone()));
    }
    let got = client.options();
    assert_eq!(got.len(), model.len());
    for ((n1, v1), (n2, v2)) in got.iter().zip(&model) {
        assert_eq!(n1, n2);
        assert!(same(v1, v2));
    }
});
