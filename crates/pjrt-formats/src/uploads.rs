//! The extension traits: uploads and downloads in this crate's formats, as methods of the
//! client's [`Client`] and [`Buffer`] (the way `wgpu::util::DeviceExt` adds to `Device`).

use pjrt_client::{Buffer, Client, ElementType, Placement};

use crate::error::Result;
use crate::npy::{MappedNpy, NpyArray};
use crate::safetensors::{Progress, SafeTensors, TensorView};

/// Uploads from `.npy` arrays and safetensors files, added to [`Client`].
///
/// ```
/// use pjrt_formats::npy::NpyArray;
/// use pjrt_formats::ClientExt;
/// use pjrt_client::{ElementType, Placement};
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
/// // `<u2` bits upload as bf16 when the parameter is bf16.
/// let bits = NpyArray::from_elements(vec![2], &[0x3f80u16, 0x4000])?;
/// let x = client.upload_npy(&bits, Some(ElementType::BF16), Placement::Default)?;
/// assert_eq!(x.to_vec::<pjrt_client::half::bf16>()?, [1.0, 2.0].map(pjrt_client::half::bf16::from_f32));
/// # Ok::<(), pjrt_formats::Error>(())
/// ```
pub trait ClientExt: sealed::Sealed {
    /// Uploads a `.npy` array. `wanted` is the parameter's element type when known; an array of
    /// another dtype is an error, except bf16 from `<u2`/`<V2` bits and sub-byte types from
    /// `int8`/`uint8` values or ml_dtypes' `|V1` (see [`NpyArray::to_host_array`]).
    fn upload_npy(&self, array: &NpyArray, wanted: Option<ElementType>, placement: Placement<'_>) -> Result<Buffer>;

    /// Uploads a `.npy` file held as stored (see [`ClientExt::upload_npy`] for `wanted`). The
    /// plugin reads its bytes directly (the memory [`MappedNpy::open`] read them into, or the
    /// mapping of [`MappedNpy::open_mapped`]): C-order files without waiting for a copy (in
    /// place where the data is 64-byte aligned, as in a `.npy` file of its own; the buffer then
    /// keeps those bytes), Fortran-order files through byte strides. Only big-endian files, and
    /// Fortran-order files for a sub-byte parameter, are converted into a copy first.
    fn upload_mapped_npy(
        &self,
        file: &MappedNpy,
        wanted: Option<ElementType>,
        placement: Placement<'_>,
    ) -> Result<Buffer>;

    /// Uploads one safetensors tensor (the plugin copies its bytes during the call). `F4`
    /// tensors are unpacked first ([`TensorView::host_bytes`]): PJRT takes one element per byte.
    fn upload_tensor_view(&self, tensor: &TensorView<'_>, placement: Placement<'_>) -> Result<Buffer>;

    /// Uploads tensor `name` of a safetensors file without waiting for a copy
    /// ([`pjrt_client::HostSource::shared`]): the plugin reads it in place from the file's bytes (the
    /// memory [`SafeTensors::open`] read them into, or the mapping of
    /// [`SafeTensors::open_mapped`]) where it starts 64-byte aligned (our writer's files, for
    /// tensors whose sizes are multiples of 64 bytes), else copies it on its own threads; the
    /// buffer keeps those bytes as long as it needs them. `element_type` may name another type of the same width (bf16 for `U16`
    /// bits); `None` is the tensor's own. `F4` tensors are unpacked to one element per byte first.
    ///
    /// ```
    /// use pjrt_client::{ElementType, Placement};
    /// use pjrt_formats::safetensors::{to_bytes, SafeTensors, TensorView};
    /// use pjrt_formats::ClientExt;
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let bits = [0x80u8, 0x3f]; // 1.0 as bf16
    /// let file = SafeTensors::from_bytes(to_bytes(&[("b", TensorView::new(ElementType::U16, &[1], &bits)?)], &[])?)?;
    /// let x = client.upload_tensor(&file, "b", Some(ElementType::BF16), Placement::Default)?;
    /// drop(file);
    /// assert_eq!(x.to_vec::<pjrt_client::half::bf16>()?, [pjrt_client::half::bf16::ONE]);
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    fn upload_tensor(
        &self,
        file: &SafeTensors,
        name: &str,
        element_type: Option<ElementType>,
        placement: Placement<'_>,
    ) -> Result<Buffer>;

    /// Uploads every tensor of a safetensors file, in file order, and returns the buffers by
    /// name, ready. Every upload is started before any is awaited, each as
    /// [`ClientExt::upload_tensor`] does it: in place from the file's bytes where aligned,
    /// else copied by the plugin's threads, overlapped. `progress` is called after each tensor
    /// is started. Nothing is copied on the host first, except `F4` tensors, which are unpacked
    /// to one element per byte. The buffers may outlive `file`.
    fn upload_safetensors(
        &self,
        file: &SafeTensors,
        placement: Placement<'_>,
        progress: impl FnMut(Progress<'_>),
    ) -> Result<Vec<(String, Buffer)>>;
}

impl ClientExt for Client {
    fn upload_npy(&self, array: &NpyArray, wanted: Option<ElementType>, placement: Placement<'_>) -> Result<Buffer> {
        crate::npy_arrays::upload_npy(self, array, wanted, placement)
    }

    fn upload_mapped_npy(
        &self,
        file: &MappedNpy,
        wanted: Option<ElementType>,
        placement: Placement<'_>,
    ) -> Result<Buffer> {
        crate::npy_arrays::upload_mapped_npy(self, file, wanted, placement)
    }

    fn upload_tensor_view(&self, tensor: &TensorView<'_>, placement: Placement<'_>) -> Result<Buffer> {
        crate::safetensors_uploads::upload_tensor_view(self, tensor, placement)
    }

    fn upload_tensor(
        &self,
        file: &SafeTensors,
        name: &str,
        element_type: Option<ElementType>,
        placement: Placement<'_>,
    ) -> Result<Buffer> {
        crate::safetensors_uploads::upload_tensor(self, file, name, element_type, placement)
    }

    fn upload_safetensors(
        &self,
        file: &SafeTensors,
        placement: Placement<'_>,
        progress: impl FnMut(Progress<'_>),
    ) -> Result<Vec<(String, Buffer)>> {
        crate::safetensors_uploads::upload_safetensors(self, file, placement, progress)
    }
}

/// Downloads into `.npy` arrays, added to [`Buffer`].
///
/// ```
/// use pjrt_formats::BufferExt;
/// use pjrt_formats::npy::Dtype;
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
/// let x = client.upload(&[1i16, 2, 3], &[3])?;
/// let array = x.to_npy()?;
/// assert_eq!((array.dtype, array.to_vec::<i16>()?), (Dtype::I16, vec![1, 2, 3]));
/// # Ok::<(), pjrt_formats::Error>(())
/// ```
pub trait BufferExt: sealed::Sealed {
    /// Downloads the buffer as a `.npy` array: bf16 as `<u2` bits, sub-byte types widened to
    /// `int8` or `uint8` (see [`NpyArray::from_host_array`]). Types with no `.npy` dtype here
    /// (the 8-bit floats) are an error.
    fn to_npy(&self) -> Result<NpyArray>;
}

impl BufferExt for Buffer {
    fn to_npy(&self) -> Result<NpyArray> {
        crate::npy_arrays::download_npy(self)
    }
}

mod sealed {
    /// The traits are implemented for the client's types only, so methods can be added later.
    pub trait Sealed {}
    impl Sealed for pjrt_client::Client {}
    impl Sealed for pjrt_client::Buffer {}
}
