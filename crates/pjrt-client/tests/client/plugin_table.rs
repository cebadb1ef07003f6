//! A plugin from a function table obtained elsewhere (`Plugin::from_table`): the fake plugin
//! linked into this test binary (no `dlopen`), and the tables of the real CPU plugins; refusals
//! go through the checks of `Plugin::load`.

use std::ffi::CStr;

use pjrt_client::{
    ApiVersion, Client, ClientOptions, CompileOptions, Error, ExecuteOptions, LoadError, Plugin, PluginSource, Program,
    TableInit, Value,
};

use crate::{fake_support, support};

/// A counter of the fake linked into this binary (its own statics, not a loaded copy's).
fn linked_fake_counter(name: &CStr) -> i64 {
    // SAFETY: `fake_counter` reads a NUL-terminated string.
    unsafe { fake_plugin::fake_counter(name.as_ptr()) }
}

#[test]
fn the_linked_in_fake_table_makes_a_working_plugin_initialised_once() {
    let table = fake_plugin::GetPjrtApi();
    // SAFETY: the fake's table is a leaked static of this binary, valid until the process exits.
    let plugin = unsafe { Plugin::from_table(table, TableInit::CallInitialize) }.unwrap();
    assert_eq!(plugin.source(), PluginSource::Table(table));
    assert_eq!(plugin.raw_api(), table);
    assert_eq!(plugin.path().to_string_lossy(), format!("<PJRT_Api table at {table:p}>"));
    assert_eq!(plugin.api_version(), ApiVersion { major: 0, minor: 115 });
    // No sidecar file next to this binary: the fake runs its `working` scenario.
    assert_eq!(plugin.attribute("fake_scenario"), Some(&Value::String("working".into())));

    // A second plugin on the same table is the same plugin, and the table is not initialised again
    // even when asked to.
    // SAFETY: as above.
    let again = unsafe { Plugin::from_table(table, TableInit::CallInitialize) }.unwrap();
    assert!(again.is_same(&plugin) && plugin.is_same(&again));
    assert_eq!(linked_fake_counter(c"initialize_calls"), 1);

    let client = Client::new(&again, &ClientOptions::new()).unwrap();
    assert_eq!(client.platform_name(), "fake");
    assert!(client.plugin().is_same(&plugin));
    let exe = fake_support::compile(&client, 1).unwrap();
    let a = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
    let b = client.upload(&[10f32, 20., 30., 40.], &[4]).unwrap();
    let out = exe.execute(&[&a, &b], &ExecuteOptions::new()).unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), [11., 22., 33., 44.]);
}

#[test]
fn the_tables_of_the_cpu_plugins_make_plugins_that_compile_and_run() {
    for name in support::PLUGINS {
        let loaded = support::plugin(name);
        // SAFETY: the table belongs to a library that is never unloaded; `Plugin::load`
        // initialised it.
        let plugin = unsafe { Plugin::from_table(loaded.raw_api(), TableInit::AlreadyInitialized) }.unwrap();
        assert_eq!(plugin.source(), PluginSource::Table(loaded.raw_api()), "{name}");
        assert_eq!(loaded.source(), PluginSource::Library(loaded.path()), "{name}");
        assert_ne!(plugin.path(), loaded.path(), "{name}: a table has no file");
        assert!(plugin.is_same(&loaded), "{name}: one table, one plugin");
        assert_eq!(plugin.api_version(), loaded.api_version(), "{name}");
        assert_eq!(plugin.slot_count(), loaded.slot_count(), "{name}");
        assert_eq!(plugin.attributes(), loaded.attributes(), "{name}");
        assert_eq!(plugin.extensions(), loaded.extensions(), "{name}");

        let client = Client::new(&plugin, &ClientOptions::new().cpu_device_count(2)).unwrap();
        assert_eq!(client.platform_name(), "cpu", "{name}");
        assert_eq!(client.addressable_devices().len(), 2, "{name}");
        let exe = client.compile(&Program::mlir_text(support::ADD_F32).unwrap(), &CompileOptions::new()).unwrap();
        let a = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
        let b = client.upload(&[10f32, 20., 30., 40.], &[4]).unwrap();
        let out = exe.execute(&[&a, &b], &ExecuteOptions::new()).unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), [11., 22., 33., 44.], "{name}");

        // Objects move between the two handles of one plugin: an extension of one reads the other's
        // buffers.
        let layouts = loaded.layouts_extension().expect("both CPU plugins have Layouts");
        assert_eq!(layouts.buffer_layout(&a).unwrap().as_str(), Some("{0}"), "{name}");
        let other_client = Client::new(&loaded, &ClientOptions::new()).unwrap();
        let topology = other_client.topology().unwrap();
        assert!(topology.plugin().is_same(&plugin), "{name}");
        // A topology through the table plugin (XLA's `GetCApiTopology` on a table): the CPU plugins
        // give a client's topology, and answer UNIMPLEMENTED to making one by name.
        let from_table = client.topology().unwrap();
        assert_eq!(from_table.platform_name().unwrap(), "cpu", "{name}");
        assert_eq!(from_table.platform_id().unwrap(), client.platform_id(), "{name}");
        let by_name = pjrt_client::Topology::create(&plugin, "cpu", &[]).unwrap_err();
        assert_eq!(by_name.code(), Some(pjrt_client::ErrorCode::Unimplemented), "{name}: {by_name}");
    }
}

/// A table built here: a header with `struct_size`, `major.minor` and no functions.
fn table(struct_size: usize, major: i32, minor: i32) -> &'static pjrt_client::sys::PJRT_Api {
    // SAFETY: every field of `PJRT_Api` is an integer, a raw pointer or an `Option` of a function
    // pointer, all valid when zero.
    let table: &'static mut pjrt_client::sys::PJRT_Api = Box::leak(Box::new(unsafe { std::mem::zeroed() }));
    table.struct_size = struct_size;
    table.pjrt_api_version.struct_size = 24;
    table.pjrt_api_version.major_version = major;
    table.pjrt_api_version.minor_version = minor;
    table
}

fn table_load_error(raw: *const pjrt_client::sys::PJRT_Api) -> LoadError {
    // SAFETY: NULL, or a leaked table readable for its `struct_size` whose functions are never
    // called (each is refused before any call).
    match unsafe { Plugin::from_table(raw, TableInit::AlreadyInitialized) } {
        Err(Error::Load { path, source }) => {
            assert!(path.to_string_lossy().starts_with("<PJRT_Api table at"), "{}", path.display());
            source
        }
        other => panic!("expected a load error, got {other:?}"),
    }
}

#[test]
fn tables_get_the_checks_of_load() {
    assert!(matches!(table_load_error(std::ptr::null()), LoadError::NullApi));
    assert!(matches!(table_load_error(table(16, 0, 115)), LoadError::TableTooSmall { struct_size: 16, .. }));
    let full = std::mem::size_of::<pjrt_client::sys::PJRT_Api>();
    assert!(matches!(table_load_error(table(full, 1, 0)), LoadError::IncompatibleVersion { major: 1, .. }));
    assert!(matches!(table_load_error(table(full, 0, 56)), LoadError::IncompatibleVersion { minor: 56, .. }));
}

#[test]
fn a_table_whose_initialize_fails_is_refused() {
    let fake = fake_support::Fake::new("initialize_error");
    // The fake copy's own table, taken without `Plugin::load`.
    // SAFETY: the fake's initialisers are Rust std's only.
    let library = unsafe { libloading::Library::new(&fake.path) }.unwrap();
    // SAFETY: the fake exports `GetPjrtApi` with the PJRT signature.
    let get: libloading::Symbol<unsafe extern "C" fn() -> *const pjrt_client::sys::PJRT_Api> =
        unsafe { library.get(b"GetPjrtApi\0") }.unwrap();
    // SAFETY: the fake's entry point; the copy stays loaded (the harness never closes its handle).
    let raw = unsafe { get() };
    // SAFETY: a table of a library that stays loaded (the harness holds it open).
    match unsafe { Plugin::from_table(raw, TableInit::CallInitialize) } {
        Err(Error::Load { source: LoadError::Initialize(inner), .. }) => {
            assert!(inner.to_string().contains("fake: initialize failed"), "{inner}");
        }
        other => panic!("expected an initialize failure, got {other:?}"),
    }
    assert_eq!(fake.counter("initialize_calls"), 1);
    // The caller says it was initialised: nothing is called, the plugin is usable.
    // SAFETY: as above.
    let plugin = unsafe { Plugin::from_table(raw, TableInit::AlreadyInitialized) }.unwrap();
    assert_eq!(plugin.api_version().minor, 115);
    assert_eq!(fake.counter("initialize_calls"), 1);
    std::mem::forget(library);
}
