//! The uploads behind [`crate::ClientExt::upload_tensor_view`], `upload_tensor` and
//! `upload_safetensors`: tensors of a safetensors file onto a client's devices.

use pjrt_client::{Buffer, Client, ElementType, HostSource, Placement, UploadOptions};

use crate::error::Result;
use crate::safetensors::{Entry, Progress, SafeTensors, SafetensorsError, TensorView};

/// Uploads one tensor: [`crate::ClientExt::upload_tensor_view`].
pub(crate) fn upload_tensor_view(client: &Client, tensor: &TensorView<'_>, placement: Placement<'_>) -> Result<Buffer> {
    let bytes = tensor.host_bytes()?;
    Ok(client.upload_with(
        HostSource::bytes(&bytes, tensor.dtype(), tensor.dims()),
        &UploadOptions::new().placement(placement),
    )?)
}

/// Uploads one tensor of a file: [`crate::ClientExt::upload_tensor`].
pub(crate) fn upload_tensor(
    client: &Client,
    file: &SafeTensors,
    name: &str,
    element_type: Option<ElementType>,
    placement: Placement<'_>,
) -> Result<Buffer> {
    let entry = file.entries.iter().find(|e| e.name == name).ok_or_else(|| SafetensorsError::NotFound {
        name: name.to_string(),
        available: file.names().map(String::from).collect(),
    })?;
    upload_entry(client, file, entry, element_type, placement)
}

fn upload_entry(
    client: &Client,
    file: &SafeTensors,
    entry: &Entry,
    element_type: Option<ElementType>,
    placement: Placement<'_>,
) -> Result<Buffer> {
    let dtype = entry.dtype;
    let element_type = match element_type {
        None => dtype,
        Some(wanted) if wanted == dtype => dtype,
        // Another type of the same width reads the same bytes (bf16 stored as u16 bits, say).
        Some(wanted) if !wanted.is_sub_byte() && !dtype.is_sub_byte() && wanted.bits() == dtype.bits() => wanted,
        Some(wanted) => {
            return Err(crate::Error::invalid(format!(
                "tensor '{}' is {dtype}, which cannot be read as {wanted}: convert the file",
                entry.name
            )))
        }
    };
    if dtype.is_sub_byte() {
        // Packed two to a byte in the file; PJRT takes one element per byte: unpacked copy.
        return upload_tensor_view(client, &file.view(entry), placement);
    }
    Ok(client.upload_with(
        HostSource::shared(file.shared_entry(entry)?, element_type, &entry.dims),
        &UploadOptions::new().placement(placement),
    )?)
}

/// Uploads every tensor of a file: [`crate::ClientExt::upload_safetensors`].
pub(crate) fn upload_safetensors(
    client: &Client,
    file: &SafeTensors,
    placement: Placement<'_>,
    mut progress: impl FnMut(Progress<'_>),
) -> Result<Vec<(String, Buffer)>> {
    let mut out = Vec::with_capacity(file.len());
    let mut bytes_done = 0u64;
    // Every upload is started before any is awaited: in place, or copied by the plugin's
    // threads while the next ones start.
    for entry in &file.entries {
        let name = entry.name.as_str();
        let buffer = upload_entry(client, file, entry, None, placement)
            .map_err(|e| e.context(format_args!("tensor '{name}'")))?;
        bytes_done += (entry.end - entry.start) as u64;
        out.push((name.to_string(), buffer));
        progress(Progress {
            tensor: name,
            tensors_done: out.len(),
            tensors_total: file.len(),
            bytes_done,
            bytes_total: file.data_bytes(),
        });
    }
    for (name, buffer) in &out {
        let ready = buffer.ready_event().and_then(|event| event.wait());
        ready.map_err(|e| crate::Error::from(e).context(format_args!("tensor '{name}'")))?;
    }
    Ok(out)
}
