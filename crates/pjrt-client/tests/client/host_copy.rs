//! Device-to-host copies into caller-owned memory, on both CPU plugins.

use pjrt_client::{Error, Placement};

use crate::support;

#[test]
fn copies_land_in_the_callers_slice() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let values: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
        let buffer = client.buffer_from_slice(&values, &[10, 100], Placement::Default).unwrap();
        let mut out = vec![0f32; 1000];
        buffer.copy_to_slice(&mut out).unwrap();
        assert_eq!(out, values, "{name}");
        let mut bytes = vec![0u8; 4000];
        buffer.copy_to_host_into(&mut bytes).unwrap();
        assert_eq!(&bytes[4..8], &0.5f32.to_le_bytes());
        assert!(matches!(buffer.copy_to_host_into(&mut bytes[..10]), Err(Error::InvalidArgument(_))));
        let mut wrong = vec![0i32; 1000];
        assert!(matches!(buffer.copy_to_slice(&mut wrong), Err(Error::InvalidArgument(_))));
        let empty = client.buffer_from_slice::<f32>(&[], &[0], Placement::Default).unwrap();
        empty.copy_to_slice::<f32>(&mut []).unwrap();
    }
}

#[test]
fn lazy_copies_ask_for_their_destination_only_once_the_buffer_is_ready() {
    use futures::executor::block_on;
    use pjrt_client::{CompileOptions, Program};
    use std::sync::atomic::{AtomicBool, Ordering};

    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let exe = client.compile(&Program::mlir_text(support::ADD_F32).unwrap(), &CompileOptions::new()).unwrap();
        let a = client.buffer_from_slice(&[1f32, 2., 3., 4.], &[4], Placement::Default).unwrap();
        let sum = exe.execute_async(&[&a, &a]).unwrap().wait().unwrap().remove(0);
        let asked_when_ready = AtomicBool::new(false);
        let bytes = block_on(sum.copy_to_host_lazy(|size| {
            asked_when_ready.store(sum.ready_event().unwrap().is_ready().unwrap(), Ordering::SeqCst);
            assert_eq!(size, 16, "{name}");
            vec![0; size]
        }))
        .unwrap();
        assert!(
            asked_when_ready.load(Ordering::SeqCst),
            "{name}: the destination was asked for before the buffer was ready"
        );
        let values: Vec<f32> = bytes.chunks(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect();
        assert_eq!(values, [2., 4., 6., 8.], "{name}");
        // A destination of another size is refused.
        let e = block_on(sum.copy_to_host_lazy(|size| vec![0; size - 1])).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{name}: {e}");
    }
}
