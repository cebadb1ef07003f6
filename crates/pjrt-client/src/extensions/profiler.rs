//! The Profiler extension (`PJRT_Profiler_Extension`): the plugin's own profiler (the CUDA plugin
//! has one; the CPU plugins do not), as a [`ProfilerSession`] that starts it, stops it and
//! collects what it recorded as an [`XSpace`] (`tsl/profiler/protobuf/xplane.proto`, decoded by
//! structs of our own), whose timed events [`XSpace::events`] lists on the Unix-epoch clock.
//!
//! ```
//! use pjrt_client::extensions::profiler::{ProfilerSession, XSpace};
//! # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! match plugin.profiler_extension() {
//!     Some(_) => {
//!         let session = ProfilerSession::start(&plugin)?;
//!         // ... run something on the plugin ...
//!         let space: XSpace = session.collect()?;
//!         for event in space.events() {
//!             println!("{} on {}: {} ns", event.name, event.plane, event.duration_ns);
//!         }
//!     }
//!     // The CPU plugins have no profiler: an error says so.
//!     None => assert!(ProfilerSession::start(&plugin).is_err()),
//! }
//! # Ok::<(), pjrt_client::Error>(())
//! ```

use std::collections::HashMap;
use std::ffi::c_char;
use std::marker::PhantomData;
use std::ptr::NonNull;

use prost::Message;

use crate::error::{Error, ErrorCode, Result};
use crate::extensions::{field_type, read_at, ProfilerExtension};
use crate::plugin::Plugin;
use crate::sys::{self, Args as _};

/// The most profiler data this crate accepts from a plugin (a size above it is refused, not
/// allocated).
pub const MAX_PROFILE_BYTES: usize = 1 << 31;

impl<'p> ProfilerExtension<'p> {
    /// The plugin's profiler table (`PLUGIN_Profiler_Api`), if the plugin's struct contains it
    /// and it is not NULL.
    pub fn profiler_api(&self) -> Option<*mut sys::PLUGIN_Profiler_Api> {
        type P = sys::PJRT_Profiler_Extension;
        const OFFSET: usize = std::mem::offset_of!(P, profiler_api);
        let api = self.read_member(OFFSET, field_type::<P, _>(|e| &e.profiler_api)).ok()?;
        (!api.is_null()).then_some(api)
    }
}

/// The functions of a plugin's profiler table, each read after checking that the table's own
/// `struct_size` contains it.
#[derive(Clone, Copy)]
struct Table {
    error_destroy: Option<unsafe extern "C" fn(*mut sys::PLUGIN_Profiler_Error_Destroy_Args)>,
    error_message: Option<unsafe extern "C" fn(*mut sys::PLUGIN_Profiler_Error_Message_Args)>,
    error_get_code: sys::ProfilerFn<sys::PLUGIN_Profiler_Error_GetCode_Args>,
    create: sys::ProfilerFn<sys::PLUGIN_Profiler_Create_Args>,
    destroy: sys::ProfilerFn<sys::PLUGIN_Profiler_Destroy_Args>,
    start: sys::ProfilerFn<sys::PLUGIN_Profiler_Start_Args>,
    stop: sys::ProfilerFn<sys::PLUGIN_Profiler_Stop_Args>,
    collect_data: sys::ProfilerFn<sys::PLUGIN_Profiler_CollectData_Args>,
}

/// The size of a member whose type [`field_type`] named.
fn size_of_field<F>(_: PhantomData<F>) -> usize {
    std::mem::size_of::<F>()
}

/// [`read_at`] of a member whose type [`field_type`] named.
///
/// # Safety
/// As [`read_at`]'s.
unsafe fn read_field<F: Copy>(base: *const u8, offset: usize, _: PhantomData<F>) -> F {
    // SAFETY: the caller's guarantee.
    unsafe { read_at(base, offset) }
}

impl Table {
    /// Reads the table member by member, each by its byte offset and only when the table's own
    /// `struct_size` covers it (an older, shorter table leaves the newer members `None`), without
    /// forming a place of the table: a member past a short table is never even addressed.
    ///
    /// # Safety
    /// `api` must point at the plugin's profiler table, readable for its first 8 bytes (its
    /// `struct_size`) and for the `struct_size` it states (the plugin's static data).
    unsafe fn read(api: *const sys::PLUGIN_Profiler_Api) -> Table {
        type T = sys::PLUGIN_Profiler_Api;
        let base = api.cast::<u8>();
        // SAFETY: every table starts with its `struct_size`, readable (the caller's guarantee).
        let size: usize = unsafe { read_at(base, std::mem::offset_of!(T, struct_size)) };
        macro_rules! member {
            ($field:ident) => {{
                let offset = std::mem::offset_of!(T, $field);
                let ty = field_type::<T, _>(|t| &t.$field);
                if offset + size_of_field(ty) <= size {
                    // SAFETY: the member lies inside the table's stated size (checked), which is
                    // readable (the caller's guarantee); every bit pattern is a valid `Option` of
                    // a function pointer.
                    unsafe { read_field(base, offset, ty) }
                } else {
                    None
                }
            }};
        }
        Table {
            error_destroy: member!(error_destroy),
            error_message: member!(error_message),
            error_get_code: member!(error_get_code),
            create: member!(create),
            destroy: member!(destroy),
            start: member!(start),
            stop: member!(stop),
            collect_data: member!(collect_data),
        }
    }

    /// Turns a returned `PLUGIN_Profiler_Error*` into a `Result`, destroying the error.
    fn check(&self, error: *mut sys::PLUGIN_Profiler_Error, function: &'static str) -> Result<()> {
        if error.is_null() {
            return Ok(());
        }
        let mut message = String::from("(the plugin gave no message)");
        if let Some(error_message) = self.error_message {
            let mut args = sys::PLUGIN_Profiler_Error_Message_Args::new();
            args.error = error;
            // SAFETY: `error` is the plugin's live error; the args were built by `new`.
            unsafe { error_message(&mut args) };
            if !args.message.is_null() {
                // A message is text for people: the first 64 KiB say enough, however long the
                // plugin claims it is.
                let size = args.message_size.min(1 << 16);
                // SAFETY: the plugin's message, `message_size` bytes (we read at most that many),
                // lives as long as `error` (destroyed below, after the copy).
                let bytes = unsafe { std::slice::from_raw_parts(args.message as *const u8, size) };
                message = String::from_utf8_lossy(bytes).into_owned();
            }
        }
        let mut code = ErrorCode::Internal;
        if let Some(get_code) = self.error_get_code {
            let mut args = sys::PLUGIN_Profiler_Error_GetCode_Args::new();
            args.error = error;
            // SAFETY: as above; a second error returned by GetCode itself is destroyed too.
            let failed = unsafe { get_code(&mut args) };
            if failed.is_null() {
                code = ErrorCode::from_raw(sys::PJRT_Error_Code(args.code));
            } else {
                self.destroy_error(failed);
            }
        }
        self.destroy_error(error);
        Err(Error::Pjrt { function, code, message, payloads: Vec::new() })
    }

    fn destroy_error(&self, error: *mut sys::PLUGIN_Profiler_Error) {
        if let Some(error_destroy) = self.error_destroy {
            let mut args = sys::PLUGIN_Profiler_Error_Destroy_Args::new();
            args.error = error;
            // SAFETY: `error` is the plugin's live error, destroyed once.
            unsafe { error_destroy(&mut args) };
        }
    }
}

/// The `tensorflow.ProfileOptions` a session is created with (field numbers from
/// `profiler_options.proto`): host tracing at level 2 and device tracing on, as JAX's defaults.
#[derive(Clone, PartialEq, Message)]
struct ProfileOptions {
    #[prost(uint32, tag = "5")]
    version: u32,
    #[prost(uint32, tag = "2")]
    host_tracer_level: u32,
    #[prost(uint32, tag = "3")]
    device_tracer_level: u32,
}

/// A running profiler of one plugin (`PLUGIN_Profiler_Create` + `Start`): [`Self::collect`]
/// stops it and returns what it recorded; dropping it stops and destroys it.
pub struct ProfilerSession {
    plugin: Plugin,
    table: Table,
    profiler: NonNull<sys::PLUGIN_Profiler>,
    running: bool,
}

// SAFETY: the session owns its profiler handle; every call on it goes through `&mut self` or
// `self`, so at most one thread uses it at a time, and the profiler API ties no handle to a thread.
unsafe impl Send for ProfilerSession {}

impl ProfilerSession {
    /// Creates the plugin's profiler (host tracing level 2, device tracing on) and starts it.
    /// `Error::Unsupported` when the plugin has no Profiler extension or its table lacks a
    /// function this needs.
    pub fn start(plugin: &Plugin) -> Result<ProfilerSession> {
        let api = plugin.api();
        let missing = |what: &'static str| api.unsupported_feature(what, 34);
        let extension = plugin.profiler_extension().ok_or_else(|| missing("the Profiler extension"))?;
        let raw = extension.profiler_api().ok_or_else(|| missing("PJRT_Profiler_Extension.profiler_api"))?;
        // SAFETY: a non-NULL table pointer from the plugin's extension, static data of the plugin.
        let table = unsafe { Table::read(raw) };
        let (Some(create), Some(_), Some(start), Some(_), Some(_)) =
            (table.create, table.destroy, table.start, table.stop, table.collect_data)
        else {
            return Err(missing("PLUGIN_Profiler_Api create/destroy/start/stop/collect_data"));
        };
        let options = ProfileOptions { version: 1, host_tracer_level: 2, device_tracer_level: 1 }.encode_to_vec();
        let mut args = sys::PLUGIN_Profiler_Create_Args::new();
        args.options = options.as_ptr() as *const c_char;
        args.options_size = options.len();
        // SAFETY: the args were built by `new`; `options` outlives the call.
        table.check(unsafe { create(&mut args) }, "PLUGIN_Profiler_Create")?;
        let profiler =
            NonNull::new(args.profiler).ok_or_else(|| Error::invalid("PLUGIN_Profiler_Create returned no profiler"))?;
        let mut session = ProfilerSession { plugin: plugin.clone(), table, profiler, running: false };
        let mut args = sys::PLUGIN_Profiler_Start_Args::new();
        args.profiler = session.profiler.as_ptr();
        // SAFETY: the plugin's live profiler; on failure the session's drop destroys it.
        table.check(unsafe { start(&mut args) }, "PLUGIN_Profiler_Start")?;
        session.running = true;
        Ok(session)
    }

    /// The plugin this session profiles.
    pub fn plugin(&self) -> &Plugin {
        &self.plugin
    }

    /// Stops the profiler (once).
    fn stop(&mut self) -> Result<()> {
        if !self.running {
            return Ok(());
        }
        self.running = false;
        let Some(stop) = self.table.stop else { return Ok(()) };
        let mut args = sys::PLUGIN_Profiler_Stop_Args::new();
        args.profiler = self.profiler.as_ptr();
        // SAFETY: the plugin's live profiler.
        self.table.check(unsafe { stop(&mut args) }, "PLUGIN_Profiler_Stop")
    }

    /// Stops the profiler and returns what it recorded, decoded.
    ///
    /// The plugin's data is copied at once. Plugins answer `CollectData` in two ways, both
    /// handled: XLA's own implementation hands out a pointer to its buffer on the first call
    /// (borrowed until the next call), the header describes a second call into a buffer of ours;
    /// a size over [`MAX_PROFILE_BYTES`] is refused. XLA also reports one trailing zero byte
    /// past the message, which is dropped when the data does not decode with it.
    pub fn collect(mut self) -> Result<XSpace> {
        self.stop()?;
        let collect_data = self.table.collect_data.ok_or_else(|| Error::invalid("no collect_data"))?;
        let mut args = sys::PLUGIN_Profiler_CollectData_Args::new();
        args.profiler = self.profiler.as_ptr();
        // SAFETY: the plugin's live profiler; `buffer` NULL asks for the size.
        self.table.check(unsafe { collect_data(&mut args) }, "PLUGIN_Profiler_CollectData")?;
        let size = args.buffer_size_in_bytes;
        if size > MAX_PROFILE_BYTES {
            return Err(Error::invalid(format!(
                "the plugin's profiler reports {size} bytes of data, more than the {MAX_PROFILE_BYTES} accepted"
            )));
        }
        let bytes = if !args.buffer.is_null() {
            // SAFETY: the plugin handed out its own buffer of `size` bytes (XLA's form), valid
            // until the next call on this profiler; copied at once.
            unsafe { std::slice::from_raw_parts(args.buffer, size) }.to_vec()
        } else {
            let mut buffer = vec![0u8; size];
            args.buffer = buffer.as_mut_ptr();
            // SAFETY: `buffer` has the `size` bytes the plugin asked for and outlives the call.
            self.table.check(unsafe { collect_data(&mut args) }, "PLUGIN_Profiler_CollectData")?;
            buffer.truncate(args.buffer_size_in_bytes.min(size));
            buffer
        };
        XSpace::decode_plugin_data(&bytes)
    }
}

impl Drop for ProfilerSession {
    fn drop(&mut self) {
        // Errors here cannot be returned; the profiler is destroyed either way.
        let _ = self.stop();
        if let Some(destroy) = self.table.destroy {
            let mut args = sys::PLUGIN_Profiler_Destroy_Args::new();
            args.profiler = self.profiler.as_ptr();
            // SAFETY: the plugin's live profiler, destroyed once, never used after.
            let error = unsafe { destroy(&mut args) };
            let _ = self.table.check(error, "PLUGIN_Profiler_Destroy");
        }
    }
}

/// One timed event of a plugin's profile, on the Unix-epoch clock.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfiledEvent {
    /// The XPlane's name (e.g. `/device:GPU:0`, `/host:CPU`).
    pub plane: String,
    /// The XLine's display name (else its name; else `line N`).
    pub line: String,
    /// The XLine's id (lines with one id are one timeline).
    pub line_id: i64,
    /// The event's display name (else its name; else `event N`).
    pub name: String,
    /// Start, in nanoseconds since the Unix epoch (the line's timestamp plus the event's offset).
    pub start_unix_ns: i128,
    /// Duration in nanoseconds (0 for an instant).
    pub duration_ns: u64,
    /// The event's stats, by their metadata names, as text.
    pub stats: Vec<(String, String)>,
}

/// `tensorflow.profiler.XSpace`: what a profiler recorded, as planes of lines of events.
#[derive(Clone, PartialEq, Message)]
pub struct XSpace {
    /// The planes (one per device or host source).
    #[prost(message, repeated, tag = "1")]
    pub planes: Vec<XPlane>,
    /// Errors the profiler reported.
    #[prost(string, repeated, tag = "2")]
    pub errors: Vec<String>,
    /// Warnings the profiler reported.
    #[prost(string, repeated, tag = "3")]
    pub warnings: Vec<String>,
    /// The hosts the planes come from.
    #[prost(string, repeated, tag = "4")]
    pub hostnames: Vec<String>,
}

/// `XPlane`: parallel timelines of one source.
#[derive(Clone, PartialEq, Message)]
pub struct XPlane {
    /// Id.
    #[prost(int64, tag = "1")]
    pub id: i64,
    /// Name, e.g. `/device:GPU:0`.
    #[prost(string, tag = "2")]
    pub name: String,
    /// The timelines.
    #[prost(message, repeated, tag = "3")]
    pub lines: Vec<XLine>,
    /// Event metadata by id.
    #[prost(map = "int64, message", tag = "4")]
    pub event_metadata: HashMap<i64, XEventMetadata>,
    /// Stat metadata by id.
    #[prost(map = "int64, message", tag = "5")]
    pub stat_metadata: HashMap<i64, XStatMetadata>,
    /// Stats of the plane itself.
    #[prost(message, repeated, tag = "6")]
    pub stats: Vec<XStat>,
}

/// `XLine`: one timeline of events.
#[derive(Clone, PartialEq, Message)]
pub struct XLine {
    /// Id (lines with one id are one timeline).
    #[prost(int64, tag = "1")]
    pub id: i64,
    /// Display id.
    #[prost(int64, tag = "10")]
    pub display_id: i64,
    /// Name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Name shown in trace viewers.
    #[prost(string, tag = "11")]
    pub display_name: String,
    /// Start of the line, ns since the Unix epoch; event offsets are relative to it.
    #[prost(int64, tag = "3")]
    pub timestamp_ns: i64,
    /// Duration of the line in picoseconds.
    #[prost(int64, tag = "9")]
    pub duration_ps: i64,
    /// The events.
    #[prost(message, repeated, tag = "4")]
    pub events: Vec<XEvent>,
}

/// `XEvent`: one event on a line.
#[derive(Clone, PartialEq, Message)]
pub struct XEvent {
    /// Its [`XEventMetadata`] id.
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    /// Start offset (ps from the line's timestamp), or an occurrence count.
    #[prost(oneof = "XEventData", tags = "2, 5")]
    pub data: Option<XEventData>,
    /// Duration in picoseconds.
    #[prost(int64, tag = "3")]
    pub duration_ps: i64,
    /// Stats.
    #[prost(message, repeated, tag = "4")]
    pub stats: Vec<XStat>,
}

/// `XEvent.data`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum XEventData {
    /// Start, in picoseconds after the line's `timestamp_ns`.
    #[prost(int64, tag = "2")]
    OffsetPs(i64),
    /// An aggregated event: how many times it occurred (no time of its own).
    #[prost(int64, tag = "5")]
    NumOccurrences(i64),
}

/// `XStat`: a named value on an event or plane.
#[derive(Clone, PartialEq, Message)]
pub struct XStat {
    /// Its [`XStatMetadata`] id.
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    /// The value.
    #[prost(oneof = "XStatValue", tags = "2, 3, 4, 5, 6, 7")]
    pub value: Option<XStatValue>,
}

/// `XStat.value`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum XStatValue {
    /// A double.
    #[prost(double, tag = "2")]
    Double(f64),
    /// An unsigned integer.
    #[prost(uint64, tag = "3")]
    Uint64(u64),
    /// A signed integer.
    #[prost(int64, tag = "4")]
    Int64(i64),
    /// A string.
    #[prost(string, tag = "5")]
    Str(String),
    /// Bytes.
    #[prost(bytes = "vec", tag = "6")]
    Bytes(Vec<u8>),
    /// A string stored as the name of the stat metadata with this id.
    #[prost(uint64, tag = "7")]
    Ref(u64),
}

/// `XEventMetadata`: what events with one metadata id share.
#[derive(Clone, PartialEq, Message)]
pub struct XEventMetadata {
    /// Id.
    #[prost(int64, tag = "1")]
    pub id: i64,
    /// Name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Name shown in trace viewers.
    #[prost(string, tag = "4")]
    pub display_name: String,
    /// Serialized extra metadata.
    #[prost(bytes = "vec", tag = "3")]
    pub metadata: Vec<u8>,
    /// Stats shared by the events.
    #[prost(message, repeated, tag = "5")]
    pub stats: Vec<XStat>,
    /// Ids of child events' metadata.
    #[prost(int64, repeated, tag = "6")]
    pub child_id: Vec<i64>,
}

/// `XStatMetadata`: a stat's name.
#[derive(Clone, PartialEq, Message)]
pub struct XStatMetadata {
    /// Id.
    #[prost(int64, tag = "1")]
    pub id: i64,
    /// Name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Description.
    #[prost(string, tag = "3")]
    pub description: String,
}

impl XSpace {
    /// Decodes profiler data as a plugin hands it out: the XSpace message, possibly followed by
    /// one zero byte (XLA's `CollectData` reports its size plus one).
    pub fn decode_plugin_data(bytes: &[u8]) -> Result<XSpace> {
        match XSpace::decode(bytes) {
            Ok(space) => Ok(space),
            Err(first) => match bytes.split_last() {
                Some((&0, rest)) => XSpace::decode(rest),
                _ => Err(first),
            }
            .map_err(|source| Error::Decode { what: "the plugin's profiler data (XSpace)", source }),
        }
    }

    /// Every timed event of every plane, on the Unix-epoch clock (aggregated events, which have
    /// no time, are left out). Times are computed without overflow whatever the plugin wrote.
    pub fn events(&self) -> Vec<ProfiledEvent> {
        let mut out = Vec::new();
        for plane in &self.planes {
            let stat_name = |id: i64| plane.stat_metadata.get(&id).map(|m| m.name.clone());
            for line in &plane.lines {
                let line_name = [&line.display_name, &line.name]
                    .into_iter()
                    .find(|n| !n.is_empty())
                    .cloned()
                    .unwrap_or_else(|| format!("line {}", line.id));
                for event in &line.events {
                    let Some(XEventData::OffsetPs(offset_ps)) = event.data else { continue };
                    let metadata = plane.event_metadata.get(&event.metadata_id);
                    let name = metadata
                        .and_then(|m| [&m.display_name, &m.name].into_iter().find(|n| !n.is_empty()).cloned())
                        .unwrap_or_else(|| format!("event {}", event.metadata_id));
                    let stats = event
                        .stats
                        .iter()
                        .map(|s| {
                            let key = stat_name(s.metadata_id).unwrap_or_else(|| format!("stat {}", s.metadata_id));
                            let value = match &s.value {
                                Some(XStatValue::Double(v)) => v.to_string(),
                                Some(XStatValue::Uint64(v)) => v.to_string(),
                                Some(XStatValue::Int64(v)) => v.to_string(),
                                Some(XStatValue::Str(v)) => v.clone(),
                                Some(XStatValue::Bytes(v)) => format!("<{} bytes>", v.len()),
                                Some(XStatValue::Ref(id)) => {
                                    i64::try_from(*id).ok().and_then(stat_name).unwrap_or_else(|| format!("ref {id}"))
                                }
                                None => String::new(),
                            };
                            (key, value)
                        })
                        .collect();
                    out.push(ProfiledEvent {
                        plane: plane.name.clone(),
                        line: line_name.clone(),
                        line_id: line.id,
                        name,
                        start_unix_ns: i128::from(line.timestamp_ns) + i128::from(offset_ps) / 1000,
                        duration_ns: (event.duration_ps.max(0) / 1000) as u64,
                        stats,
                    });
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> XSpace {
        let mut plane = XPlane { name: "/device:X:0".into(), ..Default::default() };
        plane.event_metadata.insert(3, XEventMetadata { id: 3, name: "kernel".into(), ..Default::default() });
        plane.stat_metadata.insert(9, XStatMetadata { id: 9, name: "bytes".into(), ..Default::default() });
        plane.lines.push(XLine {
            id: 4,
            name: "stream".into(),
            timestamp_ns: 1_000,
            events: vec![
                XEvent {
                    metadata_id: 3,
                    data: Some(XEventData::OffsetPs(2_000_000)),
                    duration_ps: 5_000_000,
                    stats: vec![XStat { metadata_id: 9, value: Some(XStatValue::Uint64(64)) }],
                },
                XEvent { metadata_id: 3, data: Some(XEventData::NumOccurrences(2)), ..Default::default() },
            ],
            ..Default::default()
        });
        XSpace { planes: vec![plane], ..Default::default() }
    }

    #[test]
    fn events_are_placed_on_the_epoch_clock() {
        let events = space().events();
        assert_eq!(events.len(), 1, "aggregated events have no time and are left out");
        let e = &events[0];
        assert_eq!((e.name.as_str(), e.line.as_str(), e.plane.as_str()), ("kernel", "stream", "/device:X:0"));
        assert_eq!((e.start_unix_ns, e.duration_ns), (3_000, 5_000));
        assert_eq!(e.stats, [("bytes".to_string(), "64".to_string())]);
    }

    #[test]
    fn xla_s_trailing_zero_byte_is_dropped_and_garbage_refused() {
        let mut bytes = space().encode_to_vec();
        bytes.push(0);
        assert_eq!(XSpace::decode_plugin_data(&bytes).unwrap(), space());
        assert!(matches!(XSpace::decode_plugin_data(&[0xff, 0xff, 0xff]), Err(Error::Decode { .. })));
    }

    unsafe extern "C" fn never_called(_: *mut sys::PLUGIN_Profiler_Create_Args) -> *mut sys::PLUGIN_Profiler_Error {
        std::ptr::null_mut()
    }

    #[test]
    fn a_short_table_is_read_only_as_far_as_its_size() {
        // A table that ends after `create` (an older plugin's, say), in a buffer of exactly that
        // many bytes: the members after it are not read (under valgrind or Miri a read would be
        // out of bounds), they come back `None`; `create` comes back as written.
        let end = std::mem::offset_of!(sys::PLUGIN_Profiler_Api, create) + std::mem::size_of::<usize>();
        let mut words = vec![0usize; end / std::mem::size_of::<usize>()];
        words[0] = end;
        words[std::mem::offset_of!(sys::PLUGIN_Profiler_Api, create) / std::mem::size_of::<usize>()] =
            never_called as *const () as usize;
        // SAFETY: `words` holds `end` readable bytes, the size the table states.
        let table = unsafe { Table::read(words.as_ptr().cast()) };
        assert_eq!(table.create.map(|f| f as usize), Some(never_called as *const () as usize));
        assert!(table.error_destroy.is_none() && table.error_message.is_none() && table.error_get_code.is_none());
        assert!(table.destroy.is_none() && table.start.is_none() && table.stop.is_none());
        assert!(table.collect_data.is_none());
    }
}
