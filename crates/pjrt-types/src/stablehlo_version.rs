//! StableHLO versions: what a portable artifact was written for (its producer,
//! `StableHLO_v1.15.0`), what a plugin reads (`stablehlo_current_version`) and what a program
//! needs.

use std::fmt;
use std::str::FromStr;

/// A StableHLO version (`1.15.0`), as portable artifacts name their producer
/// (`StableHLO_v1.15.0`) and plugins their `stablehlo_current_version`. Ordered as versions
/// are.
///
/// ```
/// use pjrt_types::StableHloVersion;
/// let v: StableHloVersion = "1.16.1".parse().unwrap();
/// assert_eq!(v, StableHloVersion::new(1, 16, 1));
/// assert!(v < StableHloVersion::new(1, 20, 0) && v.to_string() == "1.16.1");
/// assert_eq!(v, (1, 16, 1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StableHloVersion {
    /// The major version.
    pub major: u32,
    /// The minor version.
    pub minor: u32,
    /// The patch version.
    pub patch: u32,
}

impl StableHloVersion {
    /// `major.minor.patch`.
    ///
    /// ```
    /// assert_eq!(pjrt_types::StableHloVersion::new(1, 15, 0).to_string(), "1.15.0");
    /// ```
    pub const fn new(major: u32, minor: u32, patch: u32) -> StableHloVersion {
        StableHloVersion { major, minor, patch }
    }

    /// `1.15.0`: exactly three decimal numbers separated by dots; `None` otherwise.
    ///
    /// ```
    /// use pjrt_types::StableHloVersion;
    /// assert_eq!(StableHloVersion::parse("1.15.0"), Some(StableHloVersion::new(1, 15, 0)));
    /// assert_eq!(StableHloVersion::parse("1.15"), None);
    /// assert_eq!(StableHloVersion::parse("+1.15.0"), None);
    /// ```
    pub fn parse(text: &str) -> Option<StableHloVersion> {
        let mut parts = text.split('.').map(|p| {
            if p.is_empty() || p.len() > 9 || !p.bytes().all(|b| b.is_ascii_digit()) {
                None
            } else {
                p.parse::<u32>().ok()
            }
        });
        let version = StableHloVersion::new(parts.next()??, parts.next()??, parts.next()??);
        parts.next().is_none().then_some(version)
    }

    /// The version a portable artifact's producer names (`StableHLO_v1.15.0`); `None` for any
    /// other producer (`MLIR23.0.0git`: plain bytecode).
    ///
    /// ```
    /// use pjrt_types::StableHloVersion;
    /// assert_eq!(StableHloVersion::of_producer("StableHLO_v1.15.0"), Some(StableHloVersion::new(1, 15, 0)));
    /// assert_eq!(StableHloVersion::of_producer("MLIR23.0.0git"), None);
    /// ```
    pub fn of_producer(producer: &str) -> Option<StableHloVersion> {
        StableHloVersion::parse(producer.strip_prefix("StableHLO_v")?)
    }

    /// The producer a portable artifact for this version names: `StableHLO_v1.15.0`.
    ///
    /// ```
    /// assert_eq!(pjrt_types::StableHloVersion::new(1, 15, 0).producer(), "StableHLO_v1.15.0");
    /// ```
    pub fn producer(self) -> String {
        format!("StableHLO_v{self}")
    }

    /// The version of a plugin attribute's three integers (`stablehlo_current_version` is an
    /// `int64` list); `None` for another count or a part outside `u32`.
    ///
    /// ```
    /// use pjrt_types::StableHloVersion;
    /// assert_eq!(StableHloVersion::from_parts(&[1, 20, 0]), Some(StableHloVersion::new(1, 20, 0)));
    /// assert_eq!(StableHloVersion::from_parts(&[1, -1, 0]), None);
    /// assert_eq!(StableHloVersion::from_parts(&[1, 20]), None);
    /// ```
    pub fn from_parts(parts: &[i64]) -> Option<StableHloVersion> {
        let part = |x: i64| u32::try_from(x).ok();
        match parts {
            [major, minor, patch] => Some(StableHloVersion::new(part(*major)?, part(*minor)?, part(*patch)?)),
            _ => None,
        }
    }
}

impl fmt::Display for StableHloVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl From<(u32, u32, u32)> for StableHloVersion {
    fn from((major, minor, patch): (u32, u32, u32)) -> StableHloVersion {
        StableHloVersion::new(major, minor, patch)
    }
}

impl PartialEq<(u32, u32, u32)> for StableHloVersion {
    fn eq(&self, other: &(u32, u32, u32)) -> bool {
        (self.major, self.minor, self.patch) == *other
    }
}

/// Text that is not a StableHLO version `MAJOR.MINOR.PATCH` ([`StableHloVersion`]'s `FromStr`).
///
/// ```
/// let err = "1.x".parse::<pjrt_types::StableHloVersion>().unwrap_err();
/// assert!(err.to_string().contains("MAJOR.MINOR.PATCH"), "{err}");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseVersionError {
    text: String,
}

impl fmt::Display for ParseVersionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StableHLO version `{}` is not MAJOR.MINOR.PATCH (e.g. 1.16.1)", self.text)
    }
}

impl std::error::Error for ParseVersionError {}

impl FromStr for StableHloVersion {
    type Err = ParseVersionError;

    /// [`StableHloVersion::parse`], with an error that says what is wrong.
    fn from_str(text: &str) -> Result<StableHloVersion, ParseVersionError> {
        StableHloVersion::parse(text).ok_or_else(|| ParseVersionError { text: text.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::StableHloVersion;

    #[test]
    fn parsing_is_strict() {
        for bad in ["", "1", "1.2", "1.2.3.4", "1..3", "a.b.c", " 1.2.3", "1.2.-3", "99999999999.0.0"] {
            assert_eq!(StableHloVersion::parse(bad), None, "{bad}");
        }
        assert_eq!(StableHloVersion::parse("0.9.0"), Some(StableHloVersion::new(0, 9, 0)));
    }

    #[test]
    fn versions_order_part_by_part() {
        let v = StableHloVersion::new;
        assert!(v(1, 9, 9) < v(1, 10, 0) && v(0, 99, 99) < v(1, 0, 0) && v(1, 16, 1) > v(1, 16, 0));
    }
}
