//! Zero-copy uploads from aligned host memory, on both CPU plugins.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pjrt_client::{AlignedHostBuffer, CompileOptions, ElementType, Placement, Program};

use crate::support;

#[test]
fn aligned_memory_is_held_until_the_plugin_lets_go() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let host = Arc::new(AlignedHostBuffer::from_slice(&[1f32, 2., 3., 4.]).unwrap());
        let buffer = client.buffer_from_aligned(&host, ElementType::F32, &[4], Placement::Default).unwrap();
        assert_eq!(buffer.to_vec::<f32>().unwrap(), [1., 2., 3., 4.]);
        let exe = client.compile(&Program::mlir_text(support::ADD_F32).unwrap(), &CompileOptions::new()).unwrap();
        assert_eq!(exe.execute(&[&buffer, &buffer]).unwrap()[0].to_vec::<f32>().unwrap(), [2., 4., 6., 8.]);
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
    assert!(client.buffer_from_aligned(&host, ElementType::F32, &[4], Placement::Default).is_err());
    assert!(client.buffer_from_aligned(&host, ElementType::INVALID, &[3], Placement::Default).is_err());
    assert!(client.buffer_from_aligned(&host, ElementType::F32, &[-3], Placement::Default).is_err());
    assert_eq!(Arc::strong_count(&host), 1, "nothing kept on failure");
}
