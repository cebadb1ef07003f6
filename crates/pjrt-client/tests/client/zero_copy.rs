//! Zero-copy uploads from aligned host memory, on both CPU plugins.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pjrt_client::{
    AlignedHostBuffer, CompileOptions, DownloadOptions, ElementType, ExecuteOptions, HostData, HostSource, Program,
    SharedBytes, SharedHostBytes, UploadOptions,
};

use crate::support;

#[test]
fn aligned_memory_is_held_until_the_plugin_lets_go() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let host = Arc::new(AlignedHostBuffer::from_slice(&[1f32, 2., 3., 4.]).unwrap());
        let buffer =
            client.upload_with(HostSource::aligned(&host, ElementType::F32, &[4]), &UploadOptions::new()).unwrap();
        assert_eq!(buffer.to_vec::<f32>().unwrap(), [1., 2., 3., 4.]);
        let exe = client.compile(&Program::mlir_text(support::ADD_F32).unwrap(), &CompileOptions::new()).unwrap();
        assert_eq!(
            exe.execute(&[&buffer, &buffer], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap(),
            [2., 4., 6., 8.]
        );
        // While the buffer lives, the plugin's reference keeps the memory shared: no `&mut`.
        assert!(Arc::strong_count(&host) >= 2, "{name}");
        drop(buffer);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Arc::strong_count(&host) > 1 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(Arc::strong_count(&host), 1, "{name}: released once the buffer is gone");
        let mut host = Arc::try_unwrap(host).unwrap();
        host.as_mut_bytes()[0] = 0;
    }
}

#[test]
fn size_and_type_are_checked() {
    let client = support::client("cpu", 1);
    let host = Arc::new(AlignedHostBuffer::zeroed(12).unwrap());
    assert!(client.upload_with(HostSource::aligned(&host, ElementType::F32, &[4]), &UploadOptions::new()).is_err());
    assert!(client.upload_with(HostSource::aligned(&host, ElementType::INVALID, &[3]), &UploadOptions::new()).is_err());
    assert!(client.upload_with(HostSource::aligned(&host, ElementType::F32, &[-3]), &UploadOptions::new()).is_err());
    assert_eq!(Arc::strong_count(&host), 1, "nothing kept on failure");
}

/// Shared memory that says when it is dropped.
struct Owner {
    bytes: AlignedHostBuffer,
    dropped: Arc<AtomicBool>,
}

// SAFETY: the bytes are an `AlignedHostBuffer`, which never moves or changes while shared.
unsafe impl SharedHostBytes for Owner {
    fn host_bytes(&self) -> &[u8] {
        self.bytes.as_bytes()
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
}

#[test]
fn shared_bytes_upload_in_place_or_copied_and_keep_their_owner() {
    let values: Vec<f32> = (0..32).map(|i| i as f32 - 7.5).collect();
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let dropped = Arc::new(AtomicBool::new(false));
        let owner = Arc::new(Owner { bytes: AlignedHostBuffer::from_bytes(&bytes).unwrap(), dropped: dropped.clone() });
        let aligned = SharedBytes::slice(owner.clone(), 64..128).unwrap();
        let unaligned = SharedBytes::slice(owner.clone(), 4..36).unwrap();
        assert!(aligned.is_aligned() && !unaligned.is_aligned());
        let in_place = client
            .upload_with(HostSource::shared(aligned.clone(), ElementType::F32, &[16]), &UploadOptions::new())
            .unwrap();
        let copied = client
            .upload_with(HostSource::shared(unaligned.clone(), ElementType::F32, &[8]), &UploadOptions::new())
            .unwrap();
        let (released, on_released) = std::sync::mpsc::channel();
        let source = HostSource::owned(HostData::Shared(aligned.clone()), ElementType::F32, &[4, 4])
            .on_done(move |s, _| released.send(s).unwrap());
        let async_copy = client.upload_with(source, &UploadOptions::new()).unwrap();
        on_released.recv_timeout(Duration::from_secs(60)).unwrap().unwrap();
        let plain = client
            .upload_with(HostSource::bytes(&bytes[64..128], ElementType::F32, &[16]), &UploadOptions::new())
            .unwrap();
        assert_eq!(in_place.unsafe_pointer().unwrap() as *const u8, aligned.as_bytes().as_ptr(), "{name}: in place");
        drop((aligned, unaligned, owner));
        assert_eq!(in_place.to_vec::<f32>().unwrap(), &values[16..32], "{name}");
        assert_eq!(
            in_place.to_bytes(DownloadOptions::new()).unwrap(),
            plain.to_bytes(DownloadOptions::new()).unwrap(),
            "{name}"
        );
        assert_eq!(copied.to_vec::<f32>().unwrap(), &values[1..9], "{name}");
        assert_eq!(async_copy.to_vec::<f32>().unwrap(), &values[16..32], "{name}");
        // The in-place buffer still reads the owner's memory.
        assert!(!dropped.load(Ordering::SeqCst), "{name}: kept while a buffer reads it");
        drop((in_place, copied, async_copy));
        support::wait_for("the plugin to release the shared memory", || dropped.load(Ordering::SeqCst));
    }
}

#[test]
fn shared_byte_ranges_are_checked() {
    let owner = Arc::new(vec![0u8; 16]);
    assert!(SharedBytes::slice(owner.clone(), 8..17).is_err());
    #[allow(clippy::reversed_empty_ranges)]
    let backwards = 9..8;
    assert!(SharedBytes::slice(owner.clone(), backwards).is_err());
    let all = SharedBytes::new(owner.clone());
    assert_eq!((all.len(), all.as_bytes().as_ptr()), (16, owner.as_ptr()));
    let client = support::client("cpu", 1);
    let err =
        client.upload_with(HostSource::shared(all.clone(), ElementType::F32, &[5]), &UploadOptions::new()).unwrap_err();
    assert!(matches!(err, pjrt_client::Error::InvalidArgument(_)), "{err}");
    drop(all);
    assert_eq!(Arc::strong_count(&owner), 1, "nothing kept on failure");
}
