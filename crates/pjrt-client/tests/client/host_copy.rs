//! Device-to-host copies into caller-owned memory, on both CPU plugins.

use pjrt_client::{DownloadOptions, Error, ExecuteOptions};

use crate::support;

#[test]
fn copies_land_in_the_callers_slice() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let values: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
        let buffer = client.upload(&values, &[10, 100]).unwrap();
        let mut out = vec![0f32; 1000];
        buffer.copy_to_slice(&mut out).unwrap();
        assert_eq!(out, values, "{name}");
        let bytes = buffer.to_bytes(DownloadOptions::new()).unwrap();
        assert_eq!(bytes.len(), 4000);
        assert_eq!(&bytes[4..8], &0.5f32.to_le_bytes());
        assert!(matches!(buffer.copy_to_slice(&mut out[..10]), Err(Error::InvalidArgument(_))));
        let mut wrong = vec![0i32; 1000];
        assert!(matches!(buffer.copy_to_slice(&mut wrong), Err(Error::InvalidArgument(_))));
        let empty = client.upload::<f32>(&[], &[0]).unwrap();
        empty.copy_to_slice::<f32>(&mut []).unwrap();
    }
}

#[test]
fn lazy_copies_ask_for_their_destination_only_once_the_buffer_is_ready() {
    use futures::executor::block_on;
    use pjrt_client::{CompileOptions, Program};

    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let exe = client.compile(&Program::mlir_text(support::ADD_F32).unwrap(), &CompileOptions::new()).unwrap();
        let a = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
        let sum = exe.execute_async(&[&a, &a], &ExecuteOptions::new()).unwrap().wait().unwrap().remove(0);
        // Await the buffer, then size the destination (what the removed copy_to_host_lazy did).
        block_on(sum.ready_event().unwrap()).unwrap();
        assert!(sum.ready_event().unwrap().is_ready().unwrap(), "{name}: ready once awaited");
        let size = sum.host_size().unwrap();
        assert_eq!(size, 16, "{name}");
        let bytes = block_on(sum.to_bytes_async(DownloadOptions::new().destination(vec![0; size])).unwrap()).unwrap();
        let values: Vec<f32> = bytes.chunks(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect();
        assert_eq!(values, [2., 4., 6., 8.], "{name}");
        // A destination of another size is resized to the copy's (no longer refused); a large
        // enough allocation is reused.
        let short = sum.to_bytes_async(DownloadOptions::new().destination(vec![0; size - 1])).unwrap().wait().unwrap();
        assert_eq!(short, bytes, "{name}: a short destination grows");
        let roomy = Vec::with_capacity(64);
        let reused = sum.to_bytes_async(DownloadOptions::new().destination(roomy)).unwrap().wait().unwrap();
        assert_eq!((reused.len(), reused.capacity()), (16, 64), "{name}: the allocation is reused");
        assert_eq!(reused, bytes, "{name}");
    }
}
