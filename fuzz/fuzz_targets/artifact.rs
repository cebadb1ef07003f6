//! AOT artifact / compile-cache entry reader: any bytes either fail to parse with an error, or
//! parse to an artifact that writes back to bytes that parse to the same artifact.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pjrt_formats::artifact::{self, Artifact};

fuzz_target!(|data: &[u8]| {
    let Ok(parsed) = Artifact::from_bytes(data) else { return };
    assert!(artifact::is_artifact(data));
    assert!(!parsed.executable_bytes().is_empty(), "an accepted artifact holds an executable");
    assert!(parsed.executable_bytes().len() < data.len());
    let written = parsed.to_bytes();
    let back = Artifact::from_bytes(&written).expect("what to_bytes writes must parse");
    assert_eq!(back, parsed, "round trip changed the artifact");
    assert_eq!(back.to_bytes(), written, "to_bytes is canonical");
});
