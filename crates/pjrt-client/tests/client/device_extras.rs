//! Memory statistics, runtime attributes, poisoning and tracking events on both CPU plugins.

use pjrt_client::ErrorCode;

use crate::support;

#[test]
fn device_extras_answer_or_say_unimplemented() {
    for name in support::PLUGINS {
        let client = support::client(name, 2);
        let device = client.devices()[0];
        // The CPU plugins have no allocator statistics: an error, not a crash or zeros.
        let e = device.memory_stats().unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::Unimplemented), "{name}: {e}");
        let e = device.clear_memory_stats().unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::Unimplemented), "{name}: {e}");
        assert!(device.runtime_attributes().unwrap().is_empty());
        // Nothing runs with launch id 7: nothing to poison.
        assert!(!device.poison_execution(7, ErrorCode::Cancelled, "stop").unwrap());
        assert!(device.async_tracking_event("step 1").unwrap().is_none());
    }
}
