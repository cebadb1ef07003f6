//! Uploads: host data to a new [`Buffer`], as [`Client::upload`] (a typed slice to the default
//! device) or [`Client::upload_with`] (any [`HostSource`], with [`UploadOptions`]).
//!
//! | host data | made with | how the plugin reads it |
//! |---|---|---|
//! | a borrowed slice or byte slice | [`HostSource::slice`], [`HostSource::bytes`] | copied before the upload returns ([`HostBufferSemantics`] says when) |
//! | a [`HostArray`] | `&array` (`From`) | as a borrowed byte slice |
//! | an `ndarray` array or view (feature `ndarray`) | `&array` (`From`) | in place when contiguous, through byte strides when strided, else copied to standard layout first |
//! | shared bytes: [`SharedBytes`], an [`AlignedHostBuffer`] | [`HostSource::shared`], [`HostSource::aligned`] | in place for the buffer's whole life where aligned to [`crate::HOST_ALIGNMENT`] (zero-copy), else copied asynchronously; kept alive until the plugin lets go |
//! | owned bytes moved to the plugin: [`HostData`] | [`HostSource::owned`] (+ [`HostSource::on_done`]) | copied asynchronously; released (or handed to `on_done`) once the plugin is done |
//!
//! A file mapped in place (`pjrt-formats`'s `unsafe` `open_mapped`) is shared bytes: its
//! `unsafe` constructor is where the promise is made, not the upload.
//!
//! [`LoadedExecutable::upload_sharded`](crate::LoadedExecutable::upload_sharded) uploads one
//! argument list per device for a multi-device program.

use std::borrow::Cow;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::buffer::aligned::{AlignedHostBuffer, SharedBytes};
use crate::buffer::host_data::HostData;
use crate::buffer::host_layout::{HostBufferSemantics, HostLayout};
use crate::buffer::layout::MemoryLayout;
use crate::buffer::{Buffer, Placement};
use crate::client::device::{Device, Memory};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::host_array::HostArray;
use pjrt_types::{native_bytes, ElementType, NativeType};

/// Where an upload goes and how the plugin reads the host data: the options of
/// [`Client::upload_with`]. `UploadOptions::new()` is the client's first device, dense row-major
/// host data copied during the call, the plugin's default device layout.
///
/// ```
/// use pjrt_client::{HostSource, MemoryLayout, UploadOptions};
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
/// // A column-major [2,3] f32 array on the host: dimension 0 steps 4 bytes, dimension 1 steps 8.
/// let host = [1f32, 4., 2., 5., 3., 6.];
/// let options = UploadOptions::new().byte_strides(vec![4, 8]);
/// let x = client.upload_with(HostSource::slice(&host, &[2, 3]), &options)?;
/// assert_eq!(x.to_vec::<f32>()?, [1., 2., 3., 4., 5., 6.]);
///
/// // On a chosen device, stored column-major there.
/// let device = client.addressable_devices()[0];
/// let options = UploadOptions::new().device(&device).device_layout(MemoryLayout::column_major(2));
/// let y = client.upload_with(HostSource::slice(&[1u8, 2, 3, 4, 5, 6], &[2, 3]), &options)?;
/// assert_eq!(y.memory_layout()?.to_string(), "{0,1}");
/// // Host copies are row-major unless asked otherwise.
/// assert_eq!(y.to_vec::<u8>()?, [1, 2, 3, 4, 5, 6]);
/// # Ok::<(), pjrt_client::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct UploadOptions<'a> {
    placement: Placement<'a>,
    layout: HostLayout,
}

impl<'a> UploadOptions<'a> {
    /// The defaults: the client's first addressable device, dense row-major host data, copied
    /// during the call, the plugin's default device layout.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uploads to `placement` ([`Placement::Default`], a device, a memory).
    pub fn placement(mut self, placement: Placement<'a>) -> Self {
        self.placement = placement;
        self
    }

    /// Uploads to `device` (its default memory).
    pub fn device(self, device: &'a Device<'a>) -> Self {
        self.placement(Placement::Device(device))
    }

    /// Uploads to `memory` (e.g. a device's `pinned_host` memory).
    pub fn memory(self, memory: &'a Memory<'a>) -> Self {
        self.placement(Placement::Memory(memory))
    }

    /// Reads the host data with these byte strides, one per dimension (non-negative multiples
    /// of the element size; the data must hold every element they reach). Not for sub-byte types.
    pub fn byte_strides(mut self, byte_strides: Vec<i64>) -> Self {
        self.layout.byte_strides = Some(byte_strides);
        self
    }

    /// How long the plugin may read borrowed host data ([`HostSource::slice`],
    /// [`HostSource::bytes`], a `HostArray`); shared and owned sources fix their own and refuse
    /// any other value than the default.
    pub fn semantics(mut self, semantics: HostBufferSemantics) -> Self {
        self.layout.semantics = semantics;
        self
    }

    /// Gives the buffer this layout on the device (`None`: the plugin's default, see
    /// [`Client::default_memory_layout`]). Checked against the shape first
    /// ([`MemoryLayout::check`]); a layout the plugin does not take comes back as its error.
    pub fn device_layout(mut self, device_layout: MemoryLayout) -> Self {
        self.layout.device_layout = Some(device_layout);
        self
    }
}

/// What the plugin is done with an owned upload's data: called once, with the transfer's status
/// and the data, on a plugin thread (see [`HostSource::on_done`]).
type DoneCallback = Box<dyn FnOnce(Result<()>, HostData) + Send + 'static>;

/// Host data to upload, with its element type and dimensions: what [`Client::upload_with`]
/// reads. See the [module docs](crate::upload) for every kind and how the plugin reads it.
///
/// ```
/// use std::sync::Arc;
/// use pjrt_client::{AlignedHostBuffer, ElementType, HostArray, HostSource, UploadOptions};
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
/// let options = UploadOptions::new();
/// // Typed values, or raw bytes of an element type.
/// let a = client.upload_with(HostSource::slice(&[1i32, 2, 3, 4, 5, 6], &[2, 3]), &options)?;
/// let b = client.upload_with(HostSource::bytes(&[1, 0], ElementType::PRED, &[2]), &options)?;
/// assert_eq!(b.to_vec::<bool>()?, [true, false]);
/// // A HostArray.
/// let array = HostArray::from_elements(vec![2, 3], &[1i32, 2, 3, 4, 5, 6])?;
/// assert_eq!(client.upload_with(&array, &options)?.to_host_array()?, a.to_host_array()?);
/// // Aligned memory, read in place where the plugin can (zero-copy).
/// let host = Arc::new(AlignedHostBuffer::from_slice(&[0.5f32; 4])?);
/// let c = client.upload_with(HostSource::aligned(&host, ElementType::F32, &[4]), &options)?;
/// assert_eq!(c.to_vec::<f32>()?, [0.5; 4]);
/// // Owned bytes moved to the plugin, handed back once it is done with them.
/// let (tx, rx) = std::sync::mpsc::channel();
/// let bytes = vec![7u8; 3];
/// let source = HostSource::owned(bytes, ElementType::U8, &[3]).on_done(move |status, data| {
///     let _ = tx.send((status.is_ok(), data.as_bytes().len()));
/// });
/// let d = client.upload_with(source, &options)?;
/// assert_eq!(d.to_vec::<u8>()?, [7, 7, 7]);
/// assert_eq!(rx.recv().unwrap(), (true, 3));
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub struct HostSource<'h> {
    pub(crate) data: SourceData<'h>,
    pub(crate) element_type: ElementType,
    pub(crate) dims: Cow<'h, [i64]>,
    /// [`HostSource::on_done`] was given for data that is not owned.
    pub(crate) misplaced_on_done: bool,
}

/// The kinds of [`HostSource`].
pub(crate) enum SourceData<'h> {
    /// Borrowed bytes (`len` bytes from `ptr`, borrowed for `'h`), read during the upload. Given
    /// by pointer: a strided view's gaps may belong to someone else, and no slice is formed over
    /// memory this crate does not own.
    Borrowed { ptr: *const u8, len: usize, byte_strides: Option<Vec<i64>>, _borrow: PhantomData<&'h [u8]> },
    /// Shared bytes, read in place where aligned.
    Shared(SharedBytes),
    /// Owned bytes moved to the plugin.
    Owned(HostData, Option<DoneCallback>),
}

impl<'h> HostSource<'h> {
    /// Typed values of dimensions `dims` (row-major unless [`UploadOptions::byte_strides`] says
    /// otherwise); PRED from `bool`s.
    pub fn slice<T: NativeType>(data: &'h [T], dims: &'h [i64]) -> Self {
        Self::bytes(native_bytes(data), T::ELEMENT_TYPE, dims)
    }

    /// Raw host bytes holding elements of `element_type`. Sub-byte types (S4, U4, S2, ...,
    /// F4E2M1FN) take one element per byte, the value in the low bits, as XLA and `ml_dtypes`
    /// hold them on the host (see [`ElementType::host_bytes`]); a byte with other bits set is
    /// refused ([`ElementType::check_host_values`]). PRED bytes are kept as they are (a plugin
    /// stores them as given; downloads read nonzero as `true`).
    ///
    /// ```
    /// use pjrt_client::{ElementType, HostSource, UploadOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// // int4 values -8, -1, 0, 5, 7: five bytes, one per element (i8 values are accepted).
    /// let values = [-8i8, -1, 0, 5, 7].map(|v| v as u8);
    /// let x = client.upload_with(HostSource::bytes(&values, ElementType::S4, &[5]), &UploadOptions::new())?;
    /// // They come back as their low 4 bits; widen them to i8 to compare.
    /// let mut bytes = x.to_bytes(pjrt_client::DownloadOptions::new())?;
    /// assert_eq!(bytes, [0x8, 0xf, 0, 5, 7]);
    /// ElementType::S4.sign_extend_host_values(&mut bytes);
    /// assert_eq!(bytes.iter().map(|b| *b as i8).collect::<Vec<_>>(), [-8, -1, 0, 5, 7]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn bytes(data: &'h [u8], element_type: ElementType, dims: &'h [i64]) -> Self {
        HostSource {
            data: SourceData::Borrowed {
                ptr: data.as_ptr(),
                len: data.len(),
                byte_strides: None,
                _borrow: PhantomData,
            },
            element_type,
            dims: Cow::Borrowed(dims),
            misplaced_on_done: false,
        }
    }

    /// Shared host memory, which the buffer reads in place for its whole life where it starts
    /// at a multiple of [`crate::HOST_ALIGNMENT`] and the plugin can (`kImmutableZeroCopy`), and
    /// which the plugin copies asynchronously otherwise. Either way a clone of `data` is kept
    /// until the plugin lets go of it (on CPU, for a zero-copy upload: when the buffer is
    /// destroyed), so the memory cannot be freed or changed early.
    ///
    /// A zero-copy buffer holds an external reference
    /// (`PJRT_Buffer_IncreaseExternalReferenceCount`) for its whole life, so the plugin never
    /// donates it to an execution: a donated buffer's memory is overwritten by the result, and
    /// here that memory is `data`, which others may still be reading. An execution that would
    /// donate it copies instead. With byte strides or a device layout other than the device's,
    /// the plugin copies instead of reading in place (XLA's CPU client does), and the memory is
    /// still kept until its done event.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pjrt_client::{AlignedHostBuffer, ElementType, HostSource, SharedBytes, UploadOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let owner = Arc::new(AlignedHostBuffer::from_slice(&[0f32; 20])?);
    /// let aligned = SharedBytes::slice(owner.clone(), 0..64)?; // read in place
    /// let unaligned = SharedBytes::slice(owner.clone(), 4..20)?; // copied
    /// assert!(aligned.is_aligned() && !unaligned.is_aligned());
    /// let options = UploadOptions::new();
    /// let a = client.upload_with(HostSource::shared(aligned, ElementType::F32, &[16]), &options)?;
    /// let b = client.upload_with(HostSource::shared(unaligned, ElementType::F32, &[4]), &options)?;
    /// drop(owner); // the buffers keep what they need
    /// assert_eq!((a.to_vec::<f32>()?.len(), b.to_vec::<f32>()?), (16, vec![0.; 4]));
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn shared(data: SharedBytes, element_type: ElementType, dims: &'h [i64]) -> Self {
        HostSource { data: SourceData::Shared(data), element_type, dims: Cow::Borrowed(dims), misplaced_on_done: false }
    }

    /// [`HostSource::shared`] for all of an aligned host buffer: zero-copy where the plugin can.
    pub fn aligned(data: &Arc<AlignedHostBuffer>, element_type: ElementType, dims: &'h [i64]) -> Self {
        Self::shared(SharedBytes::new(data.clone()), element_type, dims)
    }

    /// Owned host bytes, moved to the plugin, which copies them asynchronously
    /// (`kImmutableUntilTransferCompletes`): the upload returns at once, and the data is dropped
    /// (or handed to [`HostSource::on_done`]) once the plugin is done with it.
    pub fn owned(data: impl Into<HostData>, element_type: ElementType, dims: &'h [i64]) -> Self {
        HostSource {
            data: SourceData::Owned(data.into(), None),
            element_type,
            dims: Cow::Borrowed(dims),
            misplaced_on_done: false,
        }
    }

    /// For [`HostSource::owned`] data: calls `on_done` once the plugin is done with the data,
    /// with the transfer's status, giving the data back (to reuse a staging buffer, say). It
    /// runs on a plugin thread, or on this one if the transfer is already complete. A panic in
    /// it is caught at the C boundary, never unwinds into the plugin, and is printed by the
    /// panic hook as any thread's panic is; nothing else observes it, so send what matters
    /// (the status, the data) out of the callback. The upload is refused if the source is not
    /// owned data.
    pub fn on_done<F>(mut self, on_done: F) -> Self
    where
        F: FnOnce(Result<()>, HostData) + Send + 'static,
    {
        match &mut self.data {
            SourceData::Owned(_, slot) => *slot = Some(Box::new(on_done)),
            // Refused by the upload, which says so: the callback would never run.
            _ => self.misplaced_on_done = true,
        }
        self
    }

    /// The element type.
    pub fn element_type(&self) -> ElementType {
        self.element_type
    }

    /// The dimensions.
    pub fn dims(&self) -> &[i64] {
        &self.dims
    }
}

impl<'h> From<&'h HostArray> for HostSource<'h> {
    fn from(array: &'h HostArray) -> Self {
        HostSource::bytes(array.data(), array.element_type(), array.dims())
    }
}

impl std::fmt::Debug for HostSource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.data {
            SourceData::Borrowed { len, .. } => format!("borrowed {len} bytes"),
            SourceData::Shared(shared) => format!("{shared:?}"),
            SourceData::Owned(data, _) => format!("owned {} bytes", data.as_bytes().len()),
        };
        write!(f, "HostSource({kind}, {}{:?})", self.element_type, self.dims)
    }
}

// SAFETY: the borrowed pointer is a shared borrow of `'h` bytes (`&[u8]` is Send and Sync); the
// other kinds are Send (the done callback is `Send`).
unsafe impl Send for SourceData<'_> {}

impl Client {
    /// Uploads typed host values of dimensions `dims` to the client's first device: the data
    /// is copied before this returns, so it may be reused at once. Everything else (another
    /// device or memory, strides, raw bytes, zero-copy) is [`Client::upload_with`].
    ///
    /// ```
    /// use pjrt_client::ElementType;
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let x = client.upload(&[1i32, 2, 3, 4, 5, 6], &[2, 3])?;
    /// assert_eq!(x.element_type()?, ElementType::S32);
    /// assert_eq!(x.dimensions()?, [2, 3]);
    /// assert_eq!(x.to_vec::<i32>()?, [1, 2, 3, 4, 5, 6]);
    /// let scalar = client.upload(&[0.5f64], &[])?;
    /// assert_eq!(scalar.to_vec::<f64>()?, [0.5]);
    /// // The element count must match the dimensions.
    /// assert!(client.upload(&[1f32, 2.], &[3]).is_err());
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn upload<T: NativeType>(&self, data: &[T], dims: &[i64]) -> Result<Buffer> {
        self.upload_bytes(native_bytes(data), T::ELEMENT_TYPE, dims, &HostLayout::default(), Placement::Default)
    }

    /// Uploads any [`HostSource`] (a slice, raw bytes, a [`HostArray`], an `ndarray` array,
    /// shared, aligned or owned bytes: see the [module docs](crate::upload)) where and as
    /// [`UploadOptions`] say.
    ///
    /// ```
    /// use pjrt_client::{HostSource, UploadOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new().cpu_device_count(2))?;
    /// let device = client.addressable_devices()[1];
    /// let x = client.upload_with(HostSource::slice(&[1f32, 2.], &[2]), &UploadOptions::new().device(&device))?;
    /// assert_eq!(x.device()?, device);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn upload_with<'h>(&self, source: impl Into<HostSource<'h>>, options: &UploadOptions<'_>) -> Result<Buffer> {
        let source = source.into();
        if source.misplaced_on_done {
            return Err(Error::invalid(
                "HostSource::on_done applies to owned data (HostSource::owned), which the plugin hands back; \
                 this source is borrowed or shared",
            ));
        }
        let HostSource { data, element_type, dims, .. } = source;
        let placement = options.placement;
        match data {
            SourceData::Borrowed { ptr, len, byte_strides, _borrow } => {
                let layout = match byte_strides {
                    None => Cow::Borrowed(&options.layout),
                    Some(_) if options.layout.byte_strides.is_some() => {
                        return Err(Error::invalid(
                            "the host source brings its own byte strides (a strided ndarray view); leave \
                             UploadOptions::byte_strides unset",
                        ))
                    }
                    Some(strides) => Cow::Owned(HostLayout { byte_strides: Some(strides), ..options.layout.clone() }),
                };
                if layout.byte_strides.is_none() {
                    // SAFETY: without strides the source is a whole slice (`slice`, `bytes`, a
                    // HostArray or a contiguous ndarray array), borrowed for `'h`.
                    element_type.check_host_values(unsafe { std::slice::from_raw_parts(ptr, len) })?;
                }
                // SAFETY: `len` bytes from `ptr` are borrowed for `'h`, which outlives this call;
                // the call returns only once the plugin no longer reads them; the strides are
                // checked against `len` inside.
                unsafe { self.upload_borrowed(ptr, len, element_type, &dims, &layout, placement) }
            }
            SourceData::Shared(shared) => self.upload_shared(&shared, element_type, &dims, &options.layout, placement),
            SourceData::Owned(data, on_done) => {
                let on_done = on_done.unwrap_or_else(|| Box::new(|_, _| ()));
                let (buffer, _done) =
                    self.upload_owned(data, element_type, &dims, &options.layout, placement, on_done)?;
                Ok(buffer)
            }
        }
    }
}
