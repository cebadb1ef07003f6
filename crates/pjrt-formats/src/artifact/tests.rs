//! Round trips, truncations, corruptions and hostile lengths of the artifact format.

use super::*;

fn sample() -> Artifact {
    let header = ArtifactHeader {
        plugin: PluginIdentity {
            platform_name: "cpu".into(),
            platform_version: "cpu".into(),
            xla_version: Some(2),
            api_version: ApiVersion { major: 0, minor: 115 },
            stablehlo_version: Some(StableHloVersion::new(1, 20, 0)),
        },
        num_replicas: 2,
        num_partitions: 1,
        device_count: 4,
        program_fingerprint: [7; 32],
        build_key: [9; 32],
        target: Target::Devices,
        gpu_target: None,
    };
    Artifact::new(header, b"serialized executable".to_vec()).unwrap()
}

#[test]
fn round_trips() {
    let a = sample();
    let bytes = a.to_bytes();
    assert!(is_artifact(&bytes));
    assert_eq!(Artifact::from_bytes(&bytes).unwrap(), a);
    let mut b = a.clone();
    b.header.plugin.xla_version = None;
    b.header.plugin.stablehlo_version = None;
    b.header.target = Target::Topology;
    assert_eq!(Artifact::from_bytes(&b.to_bytes()).unwrap(), b);
    b.header.plugin.platform_name = "cuda".into();
    b.header.gpu_target = Some(GpuTargetRecord { name: "h100".into(), topology: "1x1x8".into(), fingerprint: [3; 32] });
    assert_eq!(Artifact::from_bytes(&b.to_bytes()).unwrap(), b);
}

#[test]
fn an_artifact_written_before_gpu_targets_reads_as_having_none() {
    // The header as it was written before: everything up to the target byte.
    let bytes = sample().to_bytes();
    let header_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let mut old = bytes[..16].to_vec();
    old[12..16].copy_from_slice(&((header_len - 1) as u32).to_le_bytes());
    old.extend_from_slice(&bytes[16..16 + header_len - 1]);
    old.extend_from_slice(&bytes[16 + header_len..]);
    assert_eq!(Artifact::from_bytes(&old).unwrap(), sample());
}

#[test]
fn every_truncation_and_bit_flip_is_a_clean_error() {
    let bytes = sample().to_bytes();
    for n in 0..bytes.len() {
        assert!(Artifact::from_bytes(&bytes[..n]).is_err(), "truncated to {n}");
    }
    for i in 0..bytes.len() {
        let mut flipped = bytes.clone();
        flipped[i] ^= 0x40;
        // A flip in a header value (a version, a count) parses; anything else must fail.
        if let Ok(a) = Artifact::from_bytes(&flipped) {
            assert_eq!(a.executable_bytes(), sample().executable_bytes());
        }
    }
}

#[test]
fn hostile_lengths_are_refused_without_allocating() {
    let mut bytes = sample().to_bytes();
    bytes[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(Artifact::from_bytes(&bytes).unwrap_err().to_string().contains("header"));
    let mut bytes = sample().to_bytes();
    bytes[8..12].copy_from_slice(&2u32.to_le_bytes());
    assert!(Artifact::from_bytes(&bytes).unwrap_err().to_string().contains("format version 2"));
    let mut bytes = sample().to_bytes();
    bytes[16..18].copy_from_slice(&u16::MAX.to_le_bytes());
    assert!(Artifact::from_bytes(&bytes).is_err());
}

#[test]
fn identity_mismatch_reads_well() {
    let a = sample().header.plugin;
    assert_eq!(a.to_string(), "cpu plugin (version cpu, xla_version 2, API 0.115, StableHLO 1.20.0)");
}
