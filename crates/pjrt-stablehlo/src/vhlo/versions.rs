//! The StableHLO versions this crate reads and writes, and the MLIR bytecode version an
//! artifact of each is written in (which op, attribute and type versions each has: the table,
//! `super::table`).

use pjrt_types::StableHloVersion;

/// The oldest StableHLO version a portable artifact can be written for: 0.9.0, VHLO's first.
///
/// ```
/// assert_eq!(pjrt_stablehlo::MINIMUM_VERSION.to_string(), "0.9.0");
/// ```
pub const MINIMUM_VERSION: StableHloVersion = StableHloVersion::new(0, 9, 0);

/// The StableHLO version programs are written for by default: 1.20.0, what the 0.115 CPU
/// plugin reads (`pjrt-client` writes for the plugin's own version, up to this one). The
/// writer writes newer targets too, up to [`NEWEST_READ_VERSION`].
///
/// ```
/// assert_eq!(pjrt_stablehlo::CURRENT_VERSION.to_string(), "1.20.0");
/// ```
pub const CURRENT_VERSION: StableHloVersion = StableHloVersion::new(1, 20, 0);

/// The newest StableHLO version whose portable artifacts this crate reads and writes: 1.22.0
/// (tested on StableHLO's serializer's output at every minor version from [`MINIMUM_VERSION`]
/// to this one, and on what jaxlib reads of what [`crate::write_bytecode`] writes for each). An artifact of a newer version is read where it uses nothing newer; where it does, the
/// error ([`crate::Error::Unsupported`]) says the artifact is newer than this reader.
///
/// ```
/// assert_eq!(pjrt_stablehlo::NEWEST_READ_VERSION.to_string(), "1.22.0");
/// assert!(pjrt_stablehlo::NEWEST_READ_VERSION >= pjrt_stablehlo::CURRENT_VERSION);
/// ```
pub const NEWEST_READ_VERSION: StableHloVersion = StableHloVersion::new(1, 22, 0);

/// The MLIR bytecode version a portable artifact for `target` is written in (as StableHLO's
/// serializer picks it: 0 before 0.10.0, 1 before 0.12.0, 3 before 0.14.0, 4 before 0.15.0, 6
/// since); `None` outside [`MINIMUM_VERSION`]..=[`NEWEST_READ_VERSION`].
pub(crate) fn bytecode_version(target: StableHloVersion) -> Option<u64> {
    let v = |minor| StableHloVersion::new(0, minor, 0);
    Some(match target {
        s if s < MINIMUM_VERSION || s > NEWEST_READ_VERSION => return None,
        s if s < v(10) => 0,
        s if s < v(12) => 1,
        s if s < v(14) => 3,
        s if s < v(15) => 4,
        _ => 6,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytecode_versions_follow_the_targets() {
        use super::{bytecode_version, CURRENT_VERSION, NEWEST_READ_VERSION};
        let v = pjrt_types::StableHloVersion::new;
        assert_eq!(bytecode_version(v(0, 8, 9)), None);
        assert_eq!(bytecode_version(v(0, 9, 0)), Some(0));
        assert_eq!(bytecode_version(v(0, 11, 3)), Some(1));
        assert_eq!(bytecode_version(v(0, 13, 0)), Some(3));
        assert_eq!(bytecode_version(v(0, 14, 9)), Some(4));
        assert_eq!(bytecode_version(v(1, 16, 1)), Some(6));
        assert_eq!(bytecode_version(CURRENT_VERSION), Some(6));
        assert_eq!(bytecode_version(v(1, 21, 0)), Some(6));
        assert_eq!(bytecode_version(NEWEST_READ_VERSION), Some(6));
        assert_eq!(bytecode_version(v(1, 22, 1)), None);
    }
}
