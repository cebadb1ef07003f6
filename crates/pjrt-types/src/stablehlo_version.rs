//! StableHLO versions: what a portable artifact was written for (its producer,
//! `StableHLO_v1.15.0`) and what a plugin reads (`stablehlo_current_version`).

use std::fmt;
use std::str::FromStr;

/// A StableHLO version (`1.15.0`), as portable artifacts name their producer
/// (`StableHLO_v1.15.0`) and plugins their `stablehlo_current_version`.
///
/// ```
/// use pjrt_types::Version;
/// let v: Version = "1.16.1".parse().unwrap();
/// assert_eq!(v, Version::new(1, 16, 1));
/// assert!(v < Version::CURRENT && v.to_string() == "1.16.1");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// The major version.
    pub major: u32,
    /// The minor version.
    pub minor: u32,
    /// The patch version.
    pub patch: u32,
}

impl Version {
    /// The oldest version a portable artifact can be written for: 0.9.0, VHLO's first.
    ///
    /// ```
    /// assert_eq!(pjrt_types::Version::MINIMUM.to_string(), "0.9.0");
    /// ```
    pub const MINIMUM: Version = Version::new(0, 9, 0);

    /// The newest version this crate reads and writes: 1.20.0 (what the 0.115 CPU plugin reads).
    ///
    /// ```
    /// assert_eq!(pjrt_types::Version::CURRENT.to_string(), "1.20.0");
    /// ```
    pub const CURRENT: Version = Version::new(1, 20, 0);

    /// `major.minor.patch`.
    ///
    /// ```
    /// assert_eq!(pjrt_types::Version::new(1, 15, 0).to_string(), "1.15.0");
    /// ```
    pub const fn new(major: u32, minor: u32, patch: u32) -> Version {
        Version { major, minor, patch }
    }

    /// `1.15.0`: exactly three decimal numbers separated by dots; `None` otherwise.
    ///
    /// ```
    /// use pjrt_types::Version;
    /// assert_eq!(Version::parse("1.15.0"), Some(Version::new(1, 15, 0)));
    /// assert_eq!(Version::parse("1.15"), None);
    /// assert_eq!(Version::parse("+1.15.0"), None);
    /// ```
    pub fn parse(text: &str) -> Option<Version> {
        let mut parts = text.split('.').map(|p| {
            if p.is_empty() || p.len() > 9 || !p.bytes().all(|b| b.is_ascii_digit()) {
                None
            } else {
                p.parse::<u32>().ok()
            }
        });
        let version = Version::new(parts.next()??, parts.next()??, parts.next()??);
        parts.next().is_none().then_some(version)
    }

    /// The version a portable artifact's producer names (`StableHLO_v1.15.0`); `None` for any
    /// other producer (`MLIR23.0.0git`: plain bytecode).
    ///
    /// ```
    /// use pjrt_types::Version;
    /// assert_eq!(Version::of_producer("StableHLO_v1.15.0"), Some(Version::new(1, 15, 0)));
    /// assert_eq!(Version::of_producer("MLIR23.0.0git"), None);
    /// ```
    pub fn of_producer(producer: &str) -> Option<Version> {
        Version::parse(producer.strip_prefix("StableHLO_v")?)
    }

    /// The producer a portable artifact for this version names: `StableHLO_v1.15.0`.
    ///
    /// ```
    /// assert_eq!(pjrt_types::Version::new(1, 15, 0).producer(), "StableHLO_v1.15.0");
    /// ```
    pub fn producer(self) -> String {
        format!("StableHLO_v{self}")
    }

    /// The MLIR bytecode version a portable artifact for this version is written in (as
    /// StableHLO's serializer picks it: 0 before 0.10.0, 1 before 0.12.0, 3 before 0.14.0, 4
    /// before 0.15.0, 6 since); `None` outside [`Version::MINIMUM`]..=[`Version::CURRENT`].
    #[doc(hidden)]
    pub fn bytecode_version(self) -> Option<u64> {
        let v = |minor| Version::new(0, minor, 0);
        Some(match self {
            s if s < Version::MINIMUM || s > Version::CURRENT => return None,
            s if s < v(10) => 0,
            s if s < v(12) => 1,
            s if s < v(14) => 3,
            s if s < v(15) => 4,
            _ => 6,
        })
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl FromStr for Version {
    type Err = String;

    /// [`Version::parse`], with an error that says what is wrong.
    ///
    /// ```
    /// let err = "1.x".parse::<pjrt_types::Version>().unwrap_err();
    /// assert!(err.contains("MAJOR.MINOR.PATCH"), "{err}");
    /// ```
    fn from_str(text: &str) -> Result<Version, String> {
        Version::parse(text).ok_or_else(|| format!("StableHLO version `{text}` is not MAJOR.MINOR.PATCH (e.g. 1.16.1)"))
    }
}

#[cfg(test)]
mod tests {
    use super::Version;

    #[test]
    fn bytecode_versions_follow_the_targets() {
        let v = Version::new;
        assert_eq!(v(0, 8, 9).bytecode_version(), None);
        assert_eq!(v(0, 9, 0).bytecode_version(), Some(0));
        assert_eq!(v(0, 11, 3).bytecode_version(), Some(1));
        assert_eq!(v(0, 13, 0).bytecode_version(), Some(3));
        assert_eq!(v(0, 14, 9).bytecode_version(), Some(4));
        assert_eq!(v(1, 16, 1).bytecode_version(), Some(6));
        assert_eq!(Version::CURRENT.bytecode_version(), Some(6));
        assert_eq!(v(1, 20, 1).bytecode_version(), None);
    }

    #[test]
    fn parsing_is_strict() {
        for bad in ["", "1", "1.2", "1.2.3.4", "1..3", "a.b.c", " 1.2.3", "1.2.-3", "99999999999.0.0"] {
            assert_eq!(Version::parse(bad), None, "{bad}");
        }
        assert_eq!(Version::parse("0.9.0"), Some(Version::MINIMUM));
    }
}
