//! Files changed by another writer after they were opened, on both CPU plugins, in both formats
//! (safetensors, `.npy`, and `.npz` stored members): buffers uploaded by the safe API keep the
//! values the file held when it was opened. A rewrite in place used to change the live buffers
//! (they read the file's mapping in place: a sum of 523776 became 0), and a truncation ended the
//! process with SIGBUS at the next read; the truncation runs in a child process so that such a
//! crash fails the test instead of the run. The `unsafe` `open_mapped` path still reads the
//! mapping in place.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use pjrt_client::{Buffer, Client, ElementType, HostSource, Placement, UploadOptions};
use pjrt_formats::npy::{MappedNpy, NpyArray};
use pjrt_formats::npz::{self, Npz, NpzArray};
use pjrt_formats::safetensors::{self, SafeTensors, TensorView};
use pjrt_formats::ClientExt as _;

use crate::support;

/// 0, 1, ..., 1023 as f32: 4 KiB (every tensor aligned), sum 523776.
fn values() -> Vec<f32> {
    (0..1024).map(|i| i as f32).collect()
}

const SUM: f64 = 523776.0;

fn sum(values: &[f32]) -> f64 {
    values.iter().map(|&v| f64::from(v)).sum()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pjrt-mapped-files-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The three files, each holding [`values`]: `w.safetensors` (tensor `w`), `w.npy`, and
/// `w.npz` with a stored (not deflated) member `w`.
fn write_files(dir: &Path) -> [PathBuf; 3] {
    let bytes: Vec<u8> = values().iter().flat_map(|v| v.to_le_bytes()).collect();
    let st = dir.join("w.safetensors");
    safetensors::write(&st, &[("w", TensorView::new(ElementType::F32, &[1024], &bytes).unwrap())], &[]).unwrap();
    let array = NpyArray::from_elements(vec![1024], &values()).unwrap();
    let npy = dir.join("w.npy");
    array.write(&npy).unwrap();
    let npz_path = dir.join("w.npz");
    npz::write(&npz_path, &[("w", &array)], false).unwrap();
    [st, npy, npz_path]
}

/// Overwrites the whole file with zeros, in place: the same file (inode), as another process
/// writing into it would; a mapping of it sees the zeros.
fn zero_in_place(path: &Path) {
    let len = std::fs::metadata(path).unwrap().len() as usize;
    let mut file = OpenOptions::new().write(true).open(path).unwrap();
    file.write_all(&vec![0u8; len]).unwrap();
    file.sync_all().unwrap();
}

/// Truncates the file to nothing, in place.
fn truncate(path: &Path) {
    OpenOptions::new().write(true).open(path).unwrap().set_len(0).unwrap();
}

/// The files opened with the safe API.
struct Opened {
    st: SafeTensors,
    npy: MappedNpy,
    npz: Npz,
}

impl Opened {
    fn open([st, npy, npz]: &[PathBuf; 3]) -> Opened {
        Opened { st: SafeTensors::open(st).unwrap(), npy: MappedNpy::open(npy).unwrap(), npz: Npz::open(npz).unwrap() }
    }

    fn npz_member(&self) -> &MappedNpy {
        match self.npz.get("w") {
            Some(NpzArray::Mapped(member)) => member,
            other => panic!("a stored member, not {other:?}"),
        }
    }

    /// Every upload of the safe API from these files, named.
    fn upload_all(&self, client: &Client) -> Vec<(&'static str, Buffer)> {
        let f32s = ElementType::F32;
        let mut all = vec![
            ("upload_tensor", client.upload_tensor(&self.st, "w", None, Placement::Default).unwrap()),
            (
                "HostSource::shared(SafeTensors::shared_bytes)",
                client
                    .upload_with(
                        HostSource::shared(self.st.shared_bytes("w").unwrap(), f32s, &[1024]),
                        &UploadOptions::new(),
                    )
                    .unwrap(),
            ),
            ("upload_mapped_npy", client.upload_mapped_npy(&self.npy, None, Placement::Default).unwrap()),
            (
                "HostSource::shared(MappedNpy::shared_bytes)",
                client
                    .upload_with(HostSource::shared(self.npy.shared_bytes(), f32s, &[1024]), &UploadOptions::new())
                    .unwrap(),
            ),
            (
                "upload_mapped_npy(npz member)",
                client.upload_mapped_npy(self.npz_member(), None, Placement::Default).unwrap(),
            ),
        ];
        let mut overlapped = client.upload_safetensors(&self.st, Placement::Default, |_| ()).unwrap();
        all.push(("upload_safetensors", overlapped.pop().unwrap().1));
        all
    }

    /// What the opened files themselves read (the views and bytes the readers give).
    fn read_back(&self) -> Vec<(&'static str, Vec<f32>)> {
        vec![
            ("SafeTensors::tensor", self.st.tensor("w").unwrap().to_vec::<f32>().unwrap()),
            ("MappedNpy::to_array", self.npy.to_array().to_vec::<f32>().unwrap()),
            ("npz member to_array", self.npz_member().to_array().to_vec::<f32>().unwrap()),
        ]
    }
}

fn check_all(plugin: &str, buffers: &[(&str, Buffer)], opened: &Opened) {
    for (how, buffer) in buffers {
        let got = buffer.to_vec::<f32>().unwrap();
        assert_eq!(sum(&got), SUM, "{plugin}: {how}: the buffer changed with the file");
        assert_eq!(got, values(), "{plugin}: {how}");
    }
    for (how, got) in opened.read_back() {
        assert_eq!(sum(&got), SUM, "{plugin}: {how}: the opened file changed with the file");
    }
}

#[test]
fn files_rewritten_after_opening_leave_uploads_unchanged() {
    for name in support::PLUGINS {
        let dir = temp_dir(&format!("rewrite-{name}"));
        let paths = write_files(&dir);
        let client = support::client(name, 1);
        let opened = Opened::open(&paths);
        let buffers = opened.upload_all(&client);
        // One more upload after the rewrite: the values read at open time, still.
        paths.iter().for_each(|p| zero_in_place(p));
        let late = client.upload_tensor(&opened.st, "w", None, Placement::Default).unwrap();
        check_all(name, &buffers, &opened);
        assert_eq!(sum(&late.to_vec::<f32>().unwrap()), SUM, "{name}: uploaded after the rewrite");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// The child of `files_truncated_after_opening_leave_uploads_readable`: opens the files, uploads
/// them, truncates them, then reads every buffer and view back (and uploads once more).
#[test]
#[ignore = "run by files_truncated_after_opening_leave_uploads_readable in a child process"]
fn child_truncates_files_after_uploading() {
    let name = std::env::var("PJRT_MAPPED_FILES_PLUGIN").expect("run by its parent test");
    let dir = temp_dir(&format!("truncate-{name}"));
    let paths = write_files(&dir);
    let client = support::client(&name, 1);
    let opened = Opened::open(&paths);
    let buffers = opened.upload_all(&client);
    paths.iter().for_each(|p| truncate(p));
    let late = client.upload_tensor(&opened.st, "w", None, Placement::Default).unwrap();
    check_all(&name, &buffers, &opened);
    assert_eq!(sum(&late.to_vec::<f32>().unwrap()), SUM, "{name}: uploaded after the truncation");
    std::fs::remove_dir_all(&dir).unwrap();
    println!("CHILD-DONE");
}

/// A truncated file used to end the process with SIGBUS at the next read of an in-place buffer
/// (or of the opened file): run in a child process, so that a crash fails this test and the
/// suite goes on.
#[test]
fn files_truncated_after_opening_leave_uploads_readable() {
    for name in support::PLUGINS {
        support::plugin(name); // installed before the child needs it
        support::run_child_test(
            "mapped_files::child_truncates_files_after_uploading",
            &[("PJRT_MAPPED_FILES_PLUGIN", name)],
            std::time::Duration::from_secs(300),
            "an upload or view reading a truncated file?",
        );
    }
}

#[test]
fn files_opened_mapped_upload_in_place_from_the_mapping() {
    for name in support::PLUGINS {
        let dir = temp_dir(&format!("open-mapped-{name}"));
        let [st_path, npy_path, npz_path] = write_files(&dir);
        let client = support::client(name, 1);
        // SAFETY: the files are this test's own; nothing modifies or truncates them until they
        // are removed, after the buffers and readers are dropped.
        let (st, npy, npz) = unsafe {
            (
                SafeTensors::open_mapped(&st_path).unwrap(),
                MappedNpy::open_mapped(&npy_path).unwrap(),
                Npz::open_mapped(&npz_path).unwrap(),
            )
        };
        let Some(NpzArray::Mapped(member)) = npz.get("w") else { panic!("a stored member") };
        assert!(st.is_mapped() && npy.is_mapped() && member.is_mapped());
        let from_st = client.upload_tensor(&st, "w", None, Placement::Default).unwrap();
        let from_npy = client.upload_mapped_npy(&npy, None, Placement::Default).unwrap();
        // In place: on CPU the buffer is the mapping itself.
        assert_eq!(from_st.unsafe_pointer().unwrap() as *const u8, st.tensor("w").unwrap().bytes().as_ptr(), "{name}");
        assert_eq!(from_npy.unsafe_pointer().unwrap() as *const u8, npy.bytes().as_ptr(), "{name}");
        assert_eq!((from_st.to_vec::<f32>().unwrap(), from_npy.to_vec::<f32>().unwrap()), (values(), values()));
        // The safe readers hold memory of their own, which uploads also use in place.
        let read = SafeTensors::open(&st_path).unwrap();
        assert!(!read.is_mapped() && !MappedNpy::open(&npy_path).unwrap().is_mapped());
        let from_read = client.upload_tensor(&read, "w", None, Placement::Default).unwrap();
        assert_eq!(from_read.unsafe_pointer().unwrap() as *const u8, read.tensor("w").unwrap().bytes().as_ptr());
        drop((from_st, from_npy, from_read, st, npy, npz, read));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
