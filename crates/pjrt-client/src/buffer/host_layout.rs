//! How an upload reads its host data and lays it out on the device ([`HostLayout`]): byte
//! strides, [`HostBufferSemantics`], the device layout, and their checks against the data.

use crate::buffer::layout::{dense_byte_size, MemoryLayout};
use crate::buffer::raw_layout::RawLayout;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::sys;
use pjrt_types::ElementType;

/// How long the plugin may read the host data of an upload. Both variants are safe with a
/// borrowed slice: the upload returns only once the plugin no longer reads it. (Zero-copy
/// semantics need host memory the buffer can own; they are not offered on borrowed slices.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostBufferSemantics {
    /// The plugin copies the data during the call (`kImmutableOnlyDuringCall`).
    #[default]
    CopyDuringCall,
    /// The plugin may copy asynchronously; the upload waits for its done event before returning
    /// (`kImmutableUntilTransferCompletes`).
    CopyUntilTransferCompletes,
}

/// How to read a host array for an upload, and how to lay it out on the device: the layout part
/// of [`UploadOptions`].
#[derive(Clone, Debug, Default)]
pub(crate) struct HostLayout {
    /// Byte strides per dimension; `None` means dense row-major.
    pub(crate) byte_strides: Option<Vec<i64>>,
    /// How long the plugin may read the data (borrowed uploads only).
    pub(crate) semantics: HostBufferSemantics,
    /// The layout the buffer gets on the device; `None`: the plugin's default.
    pub(crate) device_layout: Option<MemoryLayout>,
}

impl HostLayout {
    pub(crate) fn check(
        &self,
        client: &Client,
        element_type: ElementType,
        dims: &[i64],
        len: usize,
    ) -> Result<Option<RawLayout>> {
        let size = dense_byte_size(element_type, dims)?;
        match &self.byte_strides {
            None if len != size => {
                return Err(Error::invalid(format!(
                    "the host data has {len} bytes but shape {dims:?} of {element_type} needs {size} \
                     (one byte per element for sub-byte types)"
                )))
            }
            None => {}
            Some(strides) => check_strided(element_type, dims, strides, len)?,
        }
        let Some(layout) = &self.device_layout else { return Ok(None) };
        let raw = RawLayout::new(layout, element_type, dims)?;
        check_device_layout_honoured(client, layout, element_type, dims)?;
        Ok(Some(raw))
    }

    /// Puts the strides and the device layout into upload args. `device_layout` must outlive the
    /// call, as must `self` (the strides are borrowed).
    pub(crate) fn fill(
        &self,
        args: &mut sys::PJRT_Client_BufferFromHostBuffer_Args,
        device_layout: Option<&mut RawLayout>,
    ) {
        if let Some(strides) = &self.byte_strides {
            args.byte_strides = strides.as_ptr();
            args.num_byte_strides = strides.len();
        }
        if let Some(layout) = device_layout {
            args.device_layout = layout.as_mut_ptr();
        }
    }

    /// Refuses a semantics setting an upload with fixed semantics would otherwise ignore.
    pub(crate) fn require_default_semantics(&self, upload: &str) -> Result<()> {
        if self.semantics != HostBufferSemantics::default() {
            return Err(Error::invalid(format!(
                "{upload} fixes its own host-buffer semantics; leave UploadOptions::semantics at its default \
                 (or upload borrowed data: HostSource::slice, HostSource::bytes)"
            )));
        }
        Ok(())
    }
}

/// The first CPU plugin minor whose uploads were measured to store the data in the device layout
/// they were given. The 0.106 CPU plugin takes a column-major `device_layout`, reports it, and
/// stores the data row-major all the same, so every read of the buffer transposes it wrongly.
const CPU_DEVICE_LAYOUT_MINOR: i32 = 115;

/// Refuses a device layout other than the client's default where the plugin is known to store
/// the data in another order than it reports (CPU plugins before [`CPU_DEVICE_LAYOUT_MINOR`]).
/// Strided device layouts are left to the plugin, which refuses them without reading the data.
fn check_device_layout_honoured(
    client: &Client,
    layout: &MemoryLayout,
    element_type: ElementType,
    dims: &[i64],
) -> Result<()> {
    let api = client.api();
    if client.platform_name() != "cpu"
        || api.version().minor >= CPU_DEVICE_LAYOUT_MINOR
        || matches!(layout, MemoryLayout::Strides { .. })
    {
        return Ok(());
    }
    // Without the Layouts extension, XLA's CPU default: dense row-major.
    let default = client.default_memory_layout(element_type, dims).unwrap_or_else(|_| MemoryLayout::dense(dims.len()));
    if *layout == default {
        return Ok(());
    }
    Err(api.unsupported_feature(
        "a device layout other than the default on a CPU plugin upload (older CPU plugins store the data \
         row-major whatever layout they report; upload row-major and let computations pick layouts)",
        CPU_DEVICE_LAYOUT_MINOR,
    ))
}

/// Checks that a host slice of `len` bytes can be read with the given strides.
fn check_strided(element_type: ElementType, dims: &[i64], strides: &[i64], len: usize) -> Result<()> {
    if strides.len() != dims.len() {
        return Err(Error::invalid(format!(
            "{} byte strides given for {} dimensions; give one stride per dimension",
            strides.len(),
            dims.len()
        )));
    }
    let bits = element_type.bits().unwrap_or(0);
    if bits < 8 {
        return Err(Error::invalid(format!("byte strides are not supported for sub-byte type {element_type}")));
    }
    let elem = bits / 8;
    if dims.contains(&0) {
        return Ok(());
    }
    // The furthest byte touched: sum of (d-1)*stride over dims, for non-negative strides.
    let mut last: i128 = 0;
    for (&d, &s) in dims.iter().zip(strides) {
        if s < 0 {
            return Err(Error::invalid("negative byte strides are not supported"));
        }
        if s % elem as i64 != 0 && d > 1 {
            return Err(Error::invalid(format!("byte stride {s} is not a multiple of the element size {elem}")));
        }
        last += (d as i128 - 1) * s as i128;
    }
    if last + elem as i128 > len as i128 {
        return Err(Error::invalid(format!(
            "the host data has {len} bytes but shape {dims:?} with byte strides {strides:?} reads up to byte {}",
            last + elem as i128
        )));
    }
    Ok(())
}
