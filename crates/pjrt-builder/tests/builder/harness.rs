//! Running a built program on both CPU plugins and comparing with numpy's answers.

#![allow(dead_code)]

use std::sync::OnceLock;

use pjrt_builder::Function;
use pjrt_client::{
    Client, ClientOptions, CompileOptions, ElementType, ExecuteOptions, HostArray, Program, UploadOptions,
};
use pjrt_formats::npz::Npz;

use crate::support;

/// One client per plugin, shared by the tests (clients are `Send + Sync`).
pub fn client(plugin: &'static str) -> &'static Client {
    static CLIENTS: [OnceLock<Client>; 2] = [OnceLock::new(), OnceLock::new()];
    let index = support::PLUGINS.iter().position(|p| *p == plugin).expect("a plugin of support::PLUGINS");
    CLIENTS[index].get_or_init(|| Client::new(&support::plugin(plugin), &ClientOptions::new()).expect("a CPU client"))
}

/// A family's data file, `tests/data/builder/FAMILY.npz`.
pub fn data(family: &str) -> Data {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../tests/data/builder/{family}.npz"));
    Data(Npz::open(&path).unwrap_or_else(|e| panic!("{}: {e} (run tools/gen_builder_testdata.py)", path.display())))
}

/// An opened data file.
pub struct Data(Npz);

impl Data {
    /// An array as a host array.
    pub fn array(&self, name: &str) -> HostArray {
        let member = self.0.get(name).unwrap_or_else(|| panic!("no array {name} in {}", self.0.path().display()));
        member.to_array().to_host_array(None).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// An array's values.
    pub fn values<T: pjrt_client::NativeType>(&self, name: &str) -> Vec<T> {
        self.array(name).to_vec::<T>().unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// An array's dimensions.
    pub fn dims(&self, name: &str) -> Vec<i64> {
        self.array(name).dims().to_vec()
    }
}

/// Runs `program` on each CPU plugin with `inputs`; checks the function's StableHLO version
/// against the plugin first. Returns `(plugin, outputs)` per plugin.
pub fn run_on_both(f: &Function, program: &Program, inputs: &[HostArray]) -> Vec<(&'static str, Vec<HostArray>)> {
    support::PLUGINS
        .iter()
        .map(|&name| {
            let client = client(name);
            f.check_plugin(client.plugin()).unwrap_or_else(|e| panic!("{name}: {e}"));
            let exe = client
                .compile(program, &CompileOptions::new())
                .unwrap_or_else(|e| panic!("{name} rejected the program: {e}\n{}", program.text().unwrap_or("")));
            let buffers: Vec<_> =
                inputs.iter().map(|a| client.upload_with(a, &UploadOptions::new()).expect("upload")).collect();
            let refs: Vec<_> = buffers.iter().collect();
            let outputs = exe.execute(&refs, &ExecuteOptions::new()).unwrap_or_else(|e| panic!("{name}: execute: {e}"));
            (name, outputs.iter().map(|b| b.to_host_array().expect("download")).collect())
        })
        .collect()
}

/// Asserts `got` equals `want` bit for bit (integers, i1, exact float results), dims included.
pub fn assert_exact(plugin: &str, what: &str, got: &HostArray, want: &HostArray) {
    assert_eq!(got.element_type(), want.element_type(), "{plugin}: {what}: element type");
    assert_eq!(got.dims(), want.dims(), "{plugin}: {what}: dimensions");
    assert_eq!(got.data(), want.data(), "{plugin}: {what}: values");
}

/// Asserts f32 values agree within `rel` relative error (or `abs` absolute, for values near
/// zero); NaN must meet NaN and infinities the same infinity.
pub fn assert_close_f32(plugin: &str, what: &str, got: &HostArray, want: &HostArray, rel: f32, abs: f32) {
    assert_eq!(got.element_type(), ElementType::F32, "{plugin}: {what}: element type");
    assert_eq!(got.dims(), want.dims(), "{plugin}: {what}: dimensions");
    let (g, w) = (got.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        let ok = if b.is_nan() {
            a.is_nan()
        } else if b.is_infinite() {
            a == b
        } else {
            (a - b).abs() <= abs.max(rel * b.abs())
        };
        assert!(ok, "{plugin}: {what}[{i}]: got {a}, want {b} (rel {rel}, abs {abs})\ngot  {g:?}\nwant {w:?}");
    }
}

/// Asserts f32 values are the same numbers bit for bit, except that any NaN matches any NaN
/// (their sign and payload are not specified across conversions).
pub fn assert_same_f32(plugin: &str, what: &str, got: &HostArray, want: &HostArray) {
    assert_close_f32(plugin, what, got, want, 0.0, 0.0);
    let (g, w) = (got.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(a.is_nan() && b.is_nan() || a.to_bits() == b.to_bits(), "{plugin}: {what}[{i}]: got {a:e}, want {b:e}");
    }
}
