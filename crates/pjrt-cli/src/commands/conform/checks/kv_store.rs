//! `kv_store.*`: a client made with a key-value store.

use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, InMemoryStore, Plugin, Program};

use super::{f32s, ADD};
use crate::commands::conform::report::{expect, Report};

/// A client whose plugin may use a key-value store (`PJRT_Client_Create` with the kv callbacks).
pub(crate) fn kv_store_checks(r: &mut Report, plugin: &Plugin, options: &ClientOptions) {
    r.check("kv_store.client_with_in_memory_store", || {
        let store = InMemoryStore::new();
        let client = Client::builder(plugin).options(options.clone()).kv_store(store.clone()).build()?;
        let exe = client.compile(&Program::mlir_text(ADD)?, &CompileOptions::new())?;
        let a = client.upload(&[1f32, 2., 3., 4.], &[4])?;
        expect(f32s(&exe.execute(&[&a, &a], &ExecuteOptions::new())?[0])? == [2., 4., 6., 8.], "wrong sum")?;
        let calls = client.kv_callbacks().map(|kv| kv.call_counts());
        Ok(format!("{} keys; calls {calls:?}", store.len()))
    });
}
