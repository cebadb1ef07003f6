//! The asynchronous host-to-device transfer manager: buffers created empty and filled later, in
//! pieces (`PJRT_Client_CreateBuffersForAsyncHostToDevice` and the
//! `PJRT_AsyncHostToDeviceTransferManager_*` functions, 0.60/0.62/0.83).

use std::ffi::{c_char, c_int, c_void};
use std::fmt;
use std::ptr::NonNull;
use std::sync::Mutex;

use crate::buffer::checks::{check_array, resolve_memory};
use crate::buffer::host_data::HostData;
use crate::buffer::layout::MemoryLayout;
use crate::buffer::raw_layout::RawLayout;
use crate::buffer::{Buffer, Placement};
use crate::call::named_value::{RawNamedValues, Value};
use crate::call::pjrt_call;
use crate::call::release::{refuse_in_callback, release_if_in_callback};
use crate::client::device::Device;
use crate::client::Client;
use crate::error::{Error, ErrorCode, Result};
use crate::event::Event;
use crate::sys::{self, Args};
use pjrt_types::ElementType;

/// The shape of one buffer of a [`TransferManager`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeSpec {
    /// The element type.
    pub element_type: ElementType,
    /// The dimensions.
    pub dims: Vec<i64>,
    /// The buffer's layout on the device (`device_layouts[i]`); `None`: the plugin's default.
    /// [`TransferManager::transfer_data`] writes device bytes, so in this layout;
    /// [`TransferManager::transfer_literal`] takes row-major data whatever it is.
    pub device_layout: Option<MemoryLayout>,
}

impl ShapeSpec {
    /// A shape of `element_type` with `dims`.
    pub fn new(element_type: ElementType, dims: &[i64]) -> Self {
        ShapeSpec { element_type, dims: dims.to_vec(), device_layout: None }
    }

    /// Gives the buffer this layout on the device (checked against the shape on creation).
    ///
    /// ```
    /// use pjrt_client::{ElementType, MemoryLayout, Placement, ShapeSpec};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let spec = ShapeSpec::new(ElementType::U8, &[2, 3]).with_device_layout(MemoryLayout::column_major(2));
    /// let manager = client.create_buffers_for_async_host_to_device(&[spec], Placement::Default)?;
    /// // A literal is row-major on the host; the plugin lays it out column-major.
    /// manager.transfer_literal(0, &[1, 2, 3, 4, 5, 6])?;
    /// let x = manager.retrieve_buffer(0)?;
    /// assert_eq!(x.memory_layout()?, MemoryLayout::column_major(2));
    /// assert_eq!(x.to_vec::<u8>()?, [1, 2, 3, 4, 5, 6]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn with_device_layout(mut self, device_layout: MemoryLayout) -> Self {
        self.device_layout = Some(device_layout);
        self
    }
}

/// What this side knows of each buffer's state, to refuse calls the plugin may abort on.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// The last transfer was started (data with `is_last`, or a literal) or an error was set.
    finished: bool,
    /// The buffer was handed out.
    retrieved: bool,
}

/// Buffers on one memory whose contents are sent from the host later, in any number of pieces
/// (see [`Client::create_buffers_for_async_host_to_device`]). Dropping it destroys the manager;
/// retrieved buffers live on.
///
/// `Send + Sync`: the plugin's transfer manager is thread-safe; the bookkeeping here is behind a
/// mutex.
pub struct TransferManager {
    client: Client,
    raw: NonNull<sys::PJRT_AsyncHostToDeviceTransferManager>,
    shapes: Vec<ShapeSpec>,
    sizes: Vec<usize>,
    slots: Mutex<Vec<Slot>>,
}

// SAFETY: PJRT's async host-to-device transfer manager may be used from any thread (its state is
// guarded by a mutex in XLA); this handle owns it exclusively.
unsafe impl Send for TransferManager {}
// SAFETY: as above; shared methods take the bookkeeping lock.
unsafe impl Sync for TransferManager {}

impl Client {
    /// Creates empty buffers of the given shapes in the memory `placement` means (a device's
    /// default memory for a device), to be filled with [`TransferManager::transfer_data`] or
    /// [`TransferManager::transfer_literal`] and taken with [`TransferManager::retrieve_buffer`].
    pub fn create_buffers_for_async_host_to_device(
        &self,
        shapes: &[ShapeSpec],
        placement: Placement<'_>,
    ) -> Result<TransferManager> {
        if shapes.is_empty() {
            return Err(Error::invalid("a transfer manager needs at least one shape"));
        }
        if shapes.len() > c_int::MAX as usize {
            return Err(Error::invalid(format!("{} shapes are more than a transfer manager can index", shapes.len())));
        }
        let mut sizes = Vec::with_capacity(shapes.len());
        for (i, shape) in shapes.iter().enumerate() {
            let size = check_array(self.api(), shape.element_type, &shape.dims).map_err(|e| match e {
                Error::InvalidArgument(message) => Error::invalid(format!("shape {i}: {message}")),
                other => other,
            })?;
            sizes.push(size);
        }
        // One entry per shape (NULL: the default) when any shape has a layout: the plugin reads
        // `num_device_layouts` entries and matches them to the shapes by index.
        let mut layouts: Vec<Option<RawLayout>> = Vec::new();
        if shapes.iter().any(|shape| shape.device_layout.is_some()) {
            for (i, shape) in shapes.iter().enumerate() {
                let layout = shape
                    .device_layout
                    .as_ref()
                    // Unlike its uploads, the 0.106 CPU plugin's transfer manager stores data
                    // in the layout it reports (measured), so no plugin is refused here.
                    .map(|layout| RawLayout::new(layout, shape.element_type, &shape.dims))
                    .transpose()
                    .map_err(|e| match e {
                        Error::InvalidArgument(message) => Error::invalid(format!("shape {i}: {message}")),
                        other => other,
                    })?;
                layouts.push(layout);
            }
        }
        let mut layout_ptrs: Vec<*mut sys::PJRT_Buffer_MemoryLayout> = layouts
            .iter_mut()
            .map(|layout| layout.as_mut().map_or(std::ptr::null_mut(), RawLayout::as_mut_ptr))
            .collect();
        let memory = resolve_memory(self, placement)?;
        let mut specs: Vec<sys::PJRT_ShapeSpec> = shapes
            .iter()
            .map(|shape| {
                let mut spec = sys::PJRT_ShapeSpec::new();
                spec.dims = if shape.dims.is_empty() { NonNull::dangling().as_ptr() } else { shape.dims.as_ptr() };
                spec.num_dims = shape.dims.len();
                spec.element_type = sys::PJRT_Buffer_Type(shape.element_type.to_i32());
                spec
            })
            .collect();
        let mut args = sys::PJRT_Client_CreateBuffersForAsyncHostToDevice_Args::new();
        args.client = self.raw();
        args.shape_specs = specs.as_mut_ptr();
        args.num_shape_specs = specs.len();
        if !layout_ptrs.is_empty() {
            args.device_layouts = layout_ptrs.as_mut_ptr();
            args.num_device_layouts = layout_ptrs.len();
        }
        args.memory = memory;
        pjrt_call!(self.api(), PJRT_Client_CreateBuffersForAsyncHostToDevice, &mut args)?;
        let raw = NonNull::new(args.transfer_manager)
            .ok_or_else(|| Error::invalid("PJRT_Client_CreateBuffersForAsyncHostToDevice returned no manager"))?;
        let manager = TransferManager {
            client: self.clone(),
            raw,
            shapes: shapes.to_vec(),
            slots: Mutex::new(vec![Slot::default(); shapes.len()]),
            sizes,
        };
        // Cross-check what the plugin made with what was asked for.
        let count = manager.plugin_buffer_count()?;
        if count != shapes.len() {
            return Err(Error::invalid(format!(
                "PJRT_AsyncHostToDeviceTransferManager_BufferCount reports {count} buffers for {} shapes",
                shapes.len()
            )));
        }
        Ok(manager)
    }
}

impl TransferManager {
    fn plugin_buffer_count(&self) -> Result<usize> {
        let mut args = sys::PJRT_AsyncHostToDeviceTransferManager_BufferCount_Args::new();
        args.transfer_manager = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_AsyncHostToDeviceTransferManager_BufferCount, &mut args)?;
        Ok(args.buffer_count)
    }

    fn check_index(&self, index: usize) -> Result<c_int> {
        if index >= self.shapes.len() {
            return Err(Error::invalid(format!(
                "buffer index {index} is out of range: the manager has {} buffers",
                self.shapes.len()
            )));
        }
        Ok(index as c_int)
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, Vec<Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The client the buffers belong to.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The shapes the manager was created with.
    pub fn shapes(&self) -> &[ShapeSpec] {
        &self.shapes
    }

    /// How many buffers the manager holds (asks the plugin).
    pub fn buffer_count(&self) -> Result<usize> {
        self.plugin_buffer_count()
    }

    /// The on-device size of buffer `index` in bytes (asks the plugin).
    pub fn buffer_size(&self, index: usize) -> Result<usize> {
        let raw_index = self.check_index(index)?;
        let mut args = sys::PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args::new();
        args.transfer_manager = self.raw.as_ptr();
        args.buffer_index = raw_index;
        pjrt_call!(self.client.api(), PJRT_AsyncHostToDeviceTransferManager_BufferSize, &mut args)?;
        Ok(args.buffer_size)
    }

    /// The device the buffers live on.
    pub fn device(&self) -> Result<Device<'_>> {
        let mut args = sys::PJRT_AsyncHostToDeviceTransferManager_Device_Args::new();
        args.transfer_manager = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_AsyncHostToDeviceTransferManager_Device, &mut args)?;
        NonNull::new(args.device_out)
            .map(|d| Device::new(&self.client, d))
            .ok_or_else(|| Error::invalid("PJRT_AsyncHostToDeviceTransferManager_Device returned no device"))
    }

    /// Checks a raw transfer into buffer `index` and marks the buffer finished if `is_last`.
    fn begin_data(&self, index: usize, offset: usize, len: usize, is_last: bool) -> Result<c_int> {
        let raw_index = self.check_index(index)?;
        let size = self.buffer_size(index)?;
        let end = offset.checked_add(len).filter(|end| *end <= size && *end <= i64::MAX as usize);
        if end.is_none() {
            return Err(Error::invalid(format!(
                "bytes {offset}..{offset}+{len} are outside buffer {index}'s {size} bytes"
            )));
        }
        let mut slots = self.slots();
        if slots[index].finished {
            return Err(Error::invalid(format!("buffer {index} has already been fully transferred (or failed)")));
        }
        if is_last {
            slots[index].finished = true;
        }
        Ok(raw_index)
    }

    /// Sends `data` into buffer `index` at byte `offset` of its on-device representation and
    /// waits until the plugin no longer reads `data`. `is_last` marks the buffer's final piece:
    /// after it the buffer becomes ready.
    ///
    /// A plugin that returns no done event gives no sign that it stopped reading: the call then
    /// returns [`Error::InvalidArgument`] (the piece may or may not have arrived).
    pub fn transfer_data(&self, index: usize, data: &[u8], offset: usize, is_last: bool) -> Result<()> {
        refuse_in_callback("TransferManager::transfer_data", "use TransferManager::transfer_data_async")?;
        let raw_index = self.begin_data(index, offset, data.len(), is_last)?;
        // SAFETY: `data` is borrowed until we return, and we wait for the done event below.
        let done = unsafe { self.transfer_raw(raw_index, data.as_ptr(), data.len(), offset, is_last) }?;
        match done {
            Some(done) => done.wait_until_complete(),
            // The C API lends the data until the done event completes; without one the plugin
            // cannot claim it past the call, but nothing says the piece was read either.
            None => Err(Error::invalid("PJRT_AsyncHostToDeviceTransferManager_TransferData returned no done event")),
        }
    }

    /// Like [`TransferManager::transfer_data`], but returns at once: the returned transfer owns
    /// `data` until the plugin is done with it (dropping it waits).
    pub fn transfer_data_async(
        &self,
        index: usize,
        data: impl Into<HostData>,
        offset: usize,
        is_last: bool,
    ) -> Result<PendingTransfer> {
        let data = data.into();
        let bytes = data.as_bytes();
        let raw_index = self.begin_data(index, offset, bytes.len(), is_last)?;
        // SAFETY: the returned `PendingTransfer` owns `data` until the done event completes.
        let event = unsafe { self.transfer_raw(raw_index, bytes.as_ptr(), bytes.len(), offset, is_last) }?;
        if event.is_none() {
            // Nothing says when the plugin stops reading: the data can never be freed.
            std::mem::forget(data);
            return Err(Error::invalid("PJRT_AsyncHostToDeviceTransferManager_TransferData returned no event"));
        }
        Ok(PendingTransfer { event, data: Some(data) })
    }

    /// # Safety
    /// `ptr` must stay readable for `len` bytes until the returned event completes.
    unsafe fn transfer_raw(
        &self,
        index: c_int,
        ptr: *const u8,
        len: usize,
        offset: usize,
        is_last: bool,
    ) -> Result<Option<Event>> {
        let mut args = sys::PJRT_AsyncHostToDeviceTransferManager_TransferData_Args::new();
        args.transfer_manager = self.raw.as_ptr();
        args.buffer_index = index;
        args.data = if len == 0 { NonNull::<u64>::dangling().as_ptr() as *const c_void } else { ptr as *const c_void };
        args.offset = offset as i64;
        args.transfer_size = len as i64;
        args.is_last_transfer = is_last;
        pjrt_call!(self.client.api(), PJRT_AsyncHostToDeviceTransferManager_TransferData, &mut args)?;
        Ok(Event::from_raw(self.client.plugin(), Some(&self.client), args.done_with_h2d_transfer))
    }

    /// Sends the whole of buffer `index` as a dense row-major host array of its shape
    /// (`TransferLiteral`, 0.83) and waits until the plugin no longer reads `data`. The layout is
    /// always given explicitly (a missing one aborts the plugin). Without a done event from the
    /// plugin, [`Error::InvalidArgument`] (as for [`TransferManager::transfer_data`]).
    pub fn transfer_literal(&self, index: usize, data: &[u8]) -> Result<()> {
        refuse_in_callback("TransferManager::transfer_literal", "use TransferManager::transfer_data_async")?;
        let raw_index = self.check_index(index)?;
        let shape = &self.shapes[index];
        if data.len() != self.sizes[index] {
            return Err(Error::invalid(format!(
                "buffer {index} is {}{:?}, {} bytes, but the host data has {}",
                shape.element_type,
                shape.dims,
                self.sizes[index],
                data.len()
            )));
        }
        shape.element_type.check_host_values(data)?;
        {
            let mut slots = self.slots();
            if slots[index].finished {
                return Err(Error::invalid(format!("buffer {index} has already been fully transferred (or failed)")));
            }
            slots[index].finished = true;
        }
        let mut layout = RawLayout::dense(shape.dims.len());
        let mut args = sys::PJRT_AsyncHostToDeviceTransferManager_TransferLiteral_Args::new();
        args.transfer_manager = self.raw.as_ptr();
        args.buffer_index = raw_index;
        args.data =
            if data.is_empty() { NonNull::<u64>::dangling().as_ptr() as *const c_void } else { data.as_ptr().cast() };
        args.shape_dims = if shape.dims.is_empty() { NonNull::dangling().as_ptr() } else { shape.dims.as_ptr() };
        args.shape_num_dims = shape.dims.len();
        args.shape_element_type = sys::PJRT_Buffer_Type(shape.element_type.to_i32());
        args.shape_layout = layout.as_mut_ptr();
        pjrt_call!(self.client.api(), PJRT_AsyncHostToDeviceTransferManager_TransferLiteral, &mut args)?;
        match Event::from_raw(self.client.plugin(), Some(&self.client), args.done_with_h2d_transfer) {
            Some(done) => done.wait_until_complete(),
            None => Err(Error::invalid("PJRT_AsyncHostToDeviceTransferManager_TransferLiteral returned no done event")),
        }
    }

    /// Takes buffer `index` (once per index). It becomes ready when its last piece arrived.
    pub fn retrieve_buffer(&self, index: usize) -> Result<Buffer> {
        let raw_index = self.check_index(index)?;
        let mut slots = self.slots();
        if slots[index].retrieved {
            return Err(Error::invalid(format!("buffer {index} has already been retrieved")));
        }
        let mut args = sys::PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args::new();
        args.transfer_manager = self.raw.as_ptr();
        args.buffer_index = raw_index;
        pjrt_call!(self.client.api(), PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer, &mut args)?;
        slots[index].retrieved = true;
        let mut buffer = NonNull::new(args.buffer_out)
            .map(|raw| Buffer::from_raw(&self.client, raw))
            .ok_or_else(|| Error::invalid("PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer returned no buffer"))?;
        let shape = &self.shapes[index];
        buffer.set_known_shape(shape.element_type, &shape.dims);
        Ok(buffer)
    }

    /// Fails buffer `index` with `code` and `message` instead of sending its data: its ready
    /// event then reports the error.
    pub fn set_buffer_error(&self, index: usize, code: ErrorCode, message: &str) -> Result<()> {
        let raw_index = self.check_index(index)?;
        let raw_code = code.to_raw();
        if raw_code.0 <= 0 || raw_code.0 > 16 {
            return Err(Error::invalid(format!("{code} is not an error code a plugin accepts (1..=16)")));
        }
        let mut slots = self.slots();
        if slots[index].finished {
            return Err(Error::invalid(format!("buffer {index} has already been fully transferred (or failed)")));
        }
        let mut args = sys::PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args::new();
        args.transfer_manager = self.raw.as_ptr();
        args.buffer_index = raw_index;
        args.error_code = raw_code;
        args.error_message = message.as_ptr() as *const c_char;
        args.error_message_size = message.len();
        pjrt_call!(self.client.api(), PJRT_AsyncHostToDeviceTransferManager_SetBufferError, &mut args)?;
        slots[index].finished = true;
        Ok(())
    }

    /// Attaches metadata (name/value pairs) to the transfers.
    pub fn add_metadata(&self, metadata: &[(String, Value)]) -> Result<()> {
        if let Some((name, _)) = metadata.iter().find(|(_, v)| matches!(v, Value::Unknown(_))) {
            return Err(Error::invalid(format!("metadata {name:?} has a value of unknown type")));
        }
        let raw = RawNamedValues::new(metadata);
        let mut args = sys::PJRT_AsyncHostToDeviceTransferManager_AddMetadata_Args::new();
        args.transfer_manager = self.raw.as_ptr();
        args.transfer_metadata = raw.as_ptr();
        args.num_metadata = raw.len();
        pjrt_call!(self.client.api(), PJRT_AsyncHostToDeviceTransferManager_AddMetadata, &mut args)
    }

    /// The raw handle, for use with [`crate::sys`]. Do not destroy it.
    pub fn as_raw(&self) -> *mut sys::PJRT_AsyncHostToDeviceTransferManager {
        self.raw.as_ptr()
    }
}

impl Drop for TransferManager {
    fn drop(&mut self) {
        release_if_in_callback!(TransferManager {
            client: self.client.clone(),
            raw: self.raw,
            shapes: Vec::new(),
            sizes: Vec::new(),
            slots: Mutex::new(Vec::new()),
        });
        let mut args = sys::PJRT_AsyncHostToDeviceTransferManager_Destroy_Args::new();
        args.transfer_manager = self.raw.as_ptr();
        // A failure cannot be reported from Drop; the plugin would only leak the manager.
        let _ = pjrt_call!(self.client.api(), PJRT_AsyncHostToDeviceTransferManager_Destroy, &mut args);
    }
}

impl fmt::Debug for TransferManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransferManager").field("shapes", &self.shapes).finish()
    }
}

/// A host-to-device piece in flight (see [`TransferManager::transfer_data_async`]): owns the
/// host data until the plugin is done with it; dropping it waits.
pub struct PendingTransfer {
    event: Option<Event>,
    data: Option<HostData>,
}

impl PendingTransfer {
    /// Waits until the plugin no longer reads the data, and gives the data back.
    ///
    /// Refused inside a plugin callback unless the plugin is done ([`Error::BlockingInCallback`];
    /// the transfer is dropped, which waits elsewhere): take the data back in an
    /// [`Event::on_ready`] callback of [`PendingTransfer::event`].
    pub fn wait(mut self) -> Result<HostData> {
        if let Some(event) = &self.event {
            event.refuse_wait_in_callback(
                "PendingTransfer::wait",
                "take the data back in an on_ready callback of the transfer's event",
            )?;
        }
        if let Some(event) = self.event.take() {
            event.leak_if_in_use(event.wait_until_complete(), &mut self.data)?;
        }
        self.data.take().ok_or_else(|| Error::invalid("the transfer's data was already taken"))
    }

    /// The plugin's done event, if it returned one.
    pub fn event(&self) -> Option<&Event> {
        self.event.as_ref()
    }
}

impl Drop for PendingTransfer {
    fn drop(&mut self) {
        // Waiting inside a plugin callback could wait for this very thread.
        release_if_in_callback!(PendingTransfer { event: self.event.take(), data: self.data.take() });
        if let Some(event) = self.event.take() {
            let _ = event.leak_if_in_use(event.wait_until_complete(), &mut self.data);
        }
    }
}

impl fmt::Debug for PendingTransfer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingTransfer").field("bytes", &self.data.as_ref().map(|d| d.as_bytes().len())).finish()
    }
}
