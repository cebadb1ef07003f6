//! Downloads: a buffer's contents back on the host. Every way, by what it gives and whether it
//! waits:
//!
//! | you get | waits (refused inside a plugin callback) | returns at once (await it, or `wait()`) |
//! |---|---|---|
//! | a new `Vec<T>` of the element type | [`Buffer::to_vec`] | — |
//! | a [`HostArray`] (type, dimensions, bytes) | [`Buffer::to_host_array`] | — |
//! | the values, in the caller's `&mut [T]` | [`Buffer::copy_to_slice`] | — |
//! | dense row-major bytes, in the caller's `&mut [u8]` (any alignment) | [`Buffer::copy_to_bytes`] | — |
//! | bytes, dense row-major or in a host [`MemoryLayout`] | [`Buffer::to_bytes`] | [`Buffer::to_bytes_async`] ([`HostTransfer`]) |
//! | raw on-device bytes `offset..offset + size` | [`Buffer::to_bytes`] with [`DownloadOptions::raw`] | [`Buffer::to_bytes_async`] with [`DownloadOptions::raw`] |
//! | raw on-device bytes into memory given later | — | [`Buffer::raw_copy_request`] ([`crate::RawCopyRequest`]) |
//!
//! [`DownloadOptions::destination`] reuses a vector of the caller's for the bytes (resized to
//! the copy's size), so that a loop of downloads allocates once. The sizes the plugin reports
//! are checked before it writes: it is never given a destination smaller than the copy.
//!
//! With the `ndarray` feature, `HostArray::to_ndarray` turns a download into an `ArrayD`.

use crate::buffer::host_transfer::HostTransfer;
use crate::buffer::layout::MemoryLayout;
use crate::buffer::{Buffer, DOWNLOAD_INSTEAD};
use crate::call::release::refuse_in_callback;
use crate::call::trace::span;
use crate::error::{Error, Result};
use crate::host_array::HostArray;
use pjrt_types::{native_values, NativeType};

/// How [`Buffer::to_bytes`] and [`Buffer::to_bytes_async`] copy: the host layout or a raw byte
/// range, and the vector to copy into. Taken by value: it may own the destination.
///
/// ```
/// use pjrt_client::{DownloadOptions, MemoryLayout};
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
/// let x = client.upload(&[1u8, 2, 3, 4, 5, 6], &[2, 3])?;
/// assert_eq!(x.to_bytes(DownloadOptions::new())?, [1, 2, 3, 4, 5, 6]);
/// // Column-major: the first dimension varies fastest.
/// let column_major = DownloadOptions::new().layout(MemoryLayout::column_major(2));
/// assert_eq!(x.to_bytes(column_major)?, [1, 4, 2, 5, 3, 6]);
/// // Raw on-device bytes 2..5; into a vector of the caller's (resized, its capacity reused).
/// let scratch = Vec::with_capacity(64);
/// let raw = x.to_bytes(DownloadOptions::new().raw(2, 3).destination(scratch))?;
/// assert_eq!((raw.as_slice(), raw.capacity()), (&[3, 4, 5][..], 64));
/// # Ok::<(), pjrt_client::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct DownloadOptions {
    layout: Option<MemoryLayout>,
    raw: Option<(usize, usize)>,
    destination: Option<Vec<u8>>,
}

impl DownloadOptions {
    /// Dense row-major bytes into a new vector.
    pub fn new() -> Self {
        Self::default()
    }

    /// Copies in this host layout (`PJRT_Buffer_ToHostBuffer`'s `host_layout`). The plugin's
    /// size is checked against the layout's ([`Buffer::host_size_in`]). XLA's plugins take
    /// tiled layouts without tiles (any dimension order); strided host layouts come back as
    /// their error.
    pub fn layout(mut self, layout: MemoryLayout) -> Self {
        self.layout = Some(layout);
        self
    }

    /// Copies `size` raw on-device bytes from byte `offset` on, as the device holds them
    /// (`PJRT_Buffer_CopyRawToHost`); the range is checked against [`Buffer::on_device_size`]
    /// first. Not with [`DownloadOptions::layout`].
    pub fn raw(mut self, offset: usize, size: usize) -> Self {
        self.raw = Some((offset, size));
        self
    }

    /// Copies into `destination`, resized to the copy's size (its allocation is reused where it
    /// is large enough); the bytes come back in it.
    pub fn destination(mut self, destination: Vec<u8>) -> Self {
        self.destination = Some(destination);
        self
    }
}

/// `destination` (or a new vector) resized to `size` zeroed bytes, or an error if that much
/// cannot be allocated.
fn sized_destination(destination: Option<Vec<u8>>, size: usize) -> Result<Vec<u8>> {
    let mut destination = destination.unwrap_or_default();
    destination.clear();
    destination
        .try_reserve_exact(size)
        .map_err(|_| Error::invalid(format!("cannot allocate {size} host bytes for the copy")))?;
    destination.resize(size, 0);
    Ok(destination)
}

impl Buffer {
    /// Copies the buffer to the host as a vector of `T`, which must match the element type,
    /// and waits for it.
    ///
    /// ```
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let x = client.upload(&[1.5f32, -2.], &[2])?;
    /// assert_eq!(x.to_vec::<f32>()?, [1.5, -2.]);
    /// assert!(x.to_vec::<f64>().is_err(), "the type must match: no silent conversion");
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn to_vec<T: NativeType>(&self) -> Result<Vec<T>> {
        refuse_in_callback("Buffer::to_vec", DOWNLOAD_INSTEAD)?;
        let element_type = self.element_type()?;
        if element_type != T::ELEMENT_TYPE {
            return Err(Error::invalid(format!("the buffer holds {element_type}, not {}", T::ELEMENT_TYPE)));
        }
        // `to_bytes` gives the dense size of the shape (checked in `host_size_in`).
        Ok(native_values(&self.to_bytes(DownloadOptions::new())?))
    }

    /// Copies the buffer to the host as a [`HostArray`]: its element type, dimensions and bytes
    /// (sub-byte types one element per byte, the value in the low bits), and waits for it.
    ///
    /// ```
    /// use pjrt_client::ElementType;
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let x = client.upload(&[1i32, 2, 3, 4, 5, 6], &[2, 3])?;
    /// let array = x.to_host_array()?;
    /// assert_eq!((array.element_type(), array.dims()), (ElementType::S32, &[2, 3][..]));
    /// assert_eq!(array.to_vec::<i32>()?, [1, 2, 3, 4, 5, 6]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn to_host_array(&self) -> Result<HostArray> {
        refuse_in_callback("Buffer::to_host_array", DOWNLOAD_INSTEAD)?;
        let element_type = self.element_type()?;
        let dims = self.dimensions()?.to_vec();
        HostArray::new(element_type, dims, self.to_bytes(DownloadOptions::new())?)
    }

    /// Copies the buffer's bytes to the host as `options` say and waits for them: dense
    /// row-major by default, in a host layout, or raw on-device bytes (see [`DownloadOptions`]).
    pub fn to_bytes(&self, options: DownloadOptions) -> Result<Vec<u8>> {
        refuse_in_callback("Buffer::to_bytes", DOWNLOAD_INSTEAD)?;
        let transfer = self.to_bytes_async(options)?;
        let _span = span!(DEBUG, "download", bytes = transfer.len());
        transfer.wait()
    }

    /// Starts copying the buffer's bytes to the host as `options` say and returns at once:
    /// await the [`HostTransfer`] or call [`HostTransfer::wait`]. The transfer owns the
    /// destination until the copy has finished (dropping it waits for that).
    ///
    /// ```
    /// use futures::executor::block_on;
    /// use pjrt_client::DownloadOptions;
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let x = client.upload(&[1u8, 2, 3], &[3])?;
    /// let y = client.upload(&[4u8, 5], &[2])?;
    /// // Both copies in flight at once.
    /// let (a, b) = (x.to_bytes_async(DownloadOptions::new())?, y.to_bytes_async(DownloadOptions::new())?);
    /// assert_eq!(block_on(a)?, [1, 2, 3]);
    /// assert_eq!(b.wait()?, [4, 5]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn to_bytes_async(&self, options: DownloadOptions) -> Result<HostTransfer> {
        let DownloadOptions { layout, raw, destination } = options;
        if let Some((offset, size)) = raw {
            if let Some(layout) = layout {
                return Err(Error::invalid(format!(
                    "a raw copy gives the on-device bytes as they are; it takes no host layout (asked: {layout})"
                )));
            }
            return self.copy_raw_to_host_async(offset, sized_destination(destination, size)?);
        }
        let layout = match layout {
            Some(layout) => layout,
            None => self.row_major()?,
        };
        let size = self.host_size_in(&layout)?;
        self.start_host_copy(sized_destination(destination, size)?, &layout)
    }
}
