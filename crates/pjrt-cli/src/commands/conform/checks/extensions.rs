//! `extension.*` on a client: default and buffer layouts, memory descriptions, shardings, FFI
//! type registration.

use pjrt_client::{Client, CompileOptions, ElementType, Program};

use super::ADD;
use crate::commands::conform::report::{Problem, Report};

pub(crate) fn extension_checks(r: &mut Report, client: &Client) {
    let plugin = client.plugin();
    r.check("extension.layouts.default_layout", || {
        let ext = plugin.layouts_extension().ok_or(Problem::Unsupported("no Layouts extension".into()))?;
        let layout = ext.client_default_layout(client, ElementType::F32, &[2, 3])?;
        Ok(layout.as_str().unwrap_or("?").to_owned())
    });
    r.check("extension.layouts.buffer_layout", || {
        let ext = plugin.layouts_extension().ok_or(Problem::Unsupported("no Layouts extension".into()))?;
        let b = client.upload(&[1f32, 2.], &[2])?;
        Ok(ext.buffer_layout(&b)?.as_str().unwrap_or("?").to_owned())
    });
    r.check("extension.memory_descriptions", || {
        let ext = plugin
            .memory_descriptions_extension()
            .ok_or(Problem::Unsupported("no MemoryDescriptions extension".into()))?;
        Ok(format!("{}", ext.device_memory_descriptions(&client.addressable_devices()[0])?.len()))
    });
    r.check("extension.shardings", || {
        let ext = plugin.shardings_extension().ok_or(Problem::Unsupported("no Shardings extension".into()))?;
        let exe = client.compile(&Program::mlir_text(ADD)?, &CompileOptions::new())?;
        Ok(format!("{}", ext.output_shardings(&exe)?.count))
    });
    r.check("extension.ffi.register_type", || {
        let ext = plugin.ffi_extension().ok_or(Problem::Unsupported("no FFI extension".into()))?;
        Ok(ext.register_type("pjrt_conform_type")?.to_string())
    });
}
