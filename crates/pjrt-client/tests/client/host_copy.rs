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
