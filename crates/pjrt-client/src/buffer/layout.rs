//! Memory layouts of buffers ([`MemoryLayout`]).

use std::fmt;

/// How a buffer's elements are laid out in device memory.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryLayout {
    /// A minor-to-major dimension order, optionally with tiles.
    Tiled {
        /// Logical dimension numbers, most minor (fastest varying) first.
        minor_to_major: Vec<i64>,
        /// Tile shapes, outermost tiling first (empty: no tiling).
        tiles: Vec<Vec<i64>>,
    },
    /// Byte strides per dimension.
    Strides {
        /// Bytes to step per dimension.
        byte_strides: Vec<i64>,
    },
}

impl MemoryLayout {
    /// The dense row-major layout of a rank-`rank` array: minor_to_major = [rank-1, ..., 0].
    pub fn dense(rank: usize) -> MemoryLayout {
        MemoryLayout::Tiled { minor_to_major: (0..rank as i64).rev().collect(), tiles: Vec::new() }
    }

    /// Reads the text the Layouts extension serializes a layout to (XLA's layout notation):
    /// `{1,0}`, or with tiles `{1,0:T(8,128)(2,1)}`. Anything else (element sizes, memory spaces,
    /// ...) gives `None`.
    pub fn parse(text: &str) -> Option<MemoryLayout> {
        let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
        let (order, rest) = match inner.split_once(':') {
            Some((order, rest)) => (order, Some(rest)),
            None => (inner, None),
        };
        let ints = |s: &str| -> Option<Vec<i64>> {
            let s = s.trim();
            if s.is_empty() {
                return Some(Vec::new());
            }
            s.split(',').map(|d| d.trim().parse::<i64>().ok()).collect()
        };
        let minor_to_major = ints(order)?;
        let mut tiles = Vec::new();
        if let Some(rest) = rest {
            let mut rest = rest.trim().strip_prefix('T')?;
            while !rest.is_empty() {
                let body = rest.strip_prefix('(')?;
                let end = body.find(')')?;
                tiles.push(ints(&body[..end])?);
                rest = &body[end + 1..];
            }
            if tiles.is_empty() {
                return None;
            }
        }
        Some(MemoryLayout::Tiled { minor_to_major, tiles })
    }
}

impl fmt::Display for MemoryLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |v: &[i64]| v.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",");
        match self {
            MemoryLayout::Tiled { minor_to_major, tiles } => {
                write!(f, "{{{}", join(minor_to_major))?;
                if !tiles.is_empty() {
                    f.write_str(":T")?;
                    for tile in tiles {
                        write!(f, "({})", join(tile))?;
                    }
                }
                f.write_str("}")
            }
            MemoryLayout::Strides { byte_strides } => write!(f, "strides({})", join(byte_strides)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_parse_and_print() {
        assert_eq!(MemoryLayout::parse("{0}"), Some(MemoryLayout::dense(1)));
        assert_eq!(MemoryLayout::parse("{1,0}"), Some(MemoryLayout::dense(2)));
        assert_eq!(MemoryLayout::parse("{}"), Some(MemoryLayout::dense(0)));
        assert_eq!(
            MemoryLayout::parse("{1,0:T(8,128)(2,1)}"),
            Some(MemoryLayout::Tiled { minor_to_major: vec![1, 0], tiles: vec![vec![8, 128], vec![2, 1]] })
        );
        assert_eq!(MemoryLayout::parse("{1,0:T(8,128)(2,1)}").unwrap().to_string(), "{1,0:T(8,128)(2,1)}");
        assert_eq!(MemoryLayout::dense(3).to_string(), "{2,1,0}");
        for bad in ["", "1,0", "{1,x}", "{1,0:E(4)}", "{1,0:T(8,128}", "{1,0:T}"] {
            assert_eq!(MemoryLayout::parse(bad), None, "{bad}");
        }
    }
}
