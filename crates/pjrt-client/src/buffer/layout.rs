//! Memory layouts of buffers ([`MemoryLayout`]): XLA's notation, and the checks of a layout
//! against a shape.

use std::fmt;

use crate::error::{Error, Result};
use pjrt_types::ElementType;

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

    /// The dense column-major layout of a rank-`rank` array: minor_to_major = [0, ..., rank-1]
    /// (the first dimension varies fastest, as in Fortran).
    ///
    /// ```
    /// use pjrt_client::{HostSource, MemoryLayout, UploadOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// assert_eq!(MemoryLayout::column_major(2).to_string(), "{0,1}");
    /// // XLA's CPU client keeps a [2,3] array column-major on the device; reads stay row-major.
    /// let layout = UploadOptions::new().device_layout(MemoryLayout::column_major(2));
    /// let x = client.upload_with(HostSource::bytes(&[1, 2, 3, 4, 5, 6], pjrt_client::ElementType::U8, &[2, 3]), &layout)?;
    /// assert_eq!(x.memory_layout()?, MemoryLayout::column_major(2));
    /// assert_eq!(x.to_vec::<u8>()?, [1, 2, 3, 4, 5, 6]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn column_major(rank: usize) -> MemoryLayout {
        MemoryLayout::Tiled { minor_to_major: (0..rank as i64).collect(), tiles: Vec::new() }
    }

    /// Checks the layout against an array of `element_type` and `dims` before any plugin sees
    /// it: a tiled layout's minor_to_major must be a permutation of `0..rank` and its tiles have
    /// at most `rank` dimensions, each at least 1; strided layouts need one non-negative stride
    /// per dimension, a multiple of the element size (whole-byte types only).
    ///
    /// ```
    /// use pjrt_client::{ElementType, MemoryLayout};
    /// assert!(MemoryLayout::column_major(2).check(ElementType::F32, &[2, 3]).is_ok());
    /// let repeated = MemoryLayout::Tiled { minor_to_major: vec![0, 0], tiles: vec![] };
    /// assert!(repeated.check(ElementType::F32, &[2, 3]).is_err(), "not a permutation");
    /// let strides = MemoryLayout::Strides { byte_strides: vec![4, 8] };
    /// assert!(strides.check(ElementType::F32, &[2, 3]).is_ok());
    /// assert!(strides.check(ElementType::F32, &[2, 3, 1]).is_err(), "one stride per dimension");
    /// ```
    pub fn check(&self, element_type: ElementType, dims: &[i64]) -> Result<()> {
        let rank = dims.len();
        match self {
            MemoryLayout::Tiled { minor_to_major, tiles } => {
                let mut seen = vec![false; rank];
                let is_permutation = minor_to_major.len() == rank
                    && minor_to_major.iter().all(|&d| {
                        usize::try_from(d)
                            .ok()
                            .filter(|&d| d < rank)
                            .is_some_and(|d| !std::mem::replace(&mut seen[d], true))
                    });
                if !is_permutation {
                    return Err(Error::invalid(format!(
                        "the layout {self} does not order the {rank} dimensions of {dims:?}: minor_to_major must \
                         be a permutation of 0..{rank}"
                    )));
                }
                for tile in tiles {
                    if tile.is_empty() || tile.len() > rank || tile.iter().any(|&t| t < 1) {
                        return Err(Error::invalid(format!(
                            "the tile ({}) of layout {self} does not fit a rank-{rank} array: a tile has 1..={rank} \
                             dimensions, each at least 1",
                            tile.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(",")
                        )));
                    }
                }
                Ok(())
            }
            MemoryLayout::Strides { byte_strides } => {
                if byte_strides.len() != rank {
                    return Err(Error::invalid(format!(
                        "{} byte strides given for {rank} dimensions; give one stride per dimension",
                        byte_strides.len()
                    )));
                }
                let elem = whole_byte_size(element_type)?;
                for (&d, &s) in dims.iter().zip(byte_strides) {
                    if s < 0 {
                        return Err(Error::invalid("negative byte strides are not supported"));
                    }
                    if s % elem as i64 != 0 && d > 1 {
                        return Err(Error::invalid(format!(
                            "byte stride {s} is not a multiple of the element size {elem}"
                        )));
                    }
                }
                Ok(())
            }
        }
    }

    /// The bytes of host memory an array of `element_type` and `dims` in this layout spans (the
    /// last byte addressed plus one), after [`MemoryLayout::check`]. Tiled layouts with tiles are
    /// refused: their padding is the plugin's choice, so no size computed here could bound it.
    pub(crate) fn host_span(&self, element_type: ElementType, dims: &[i64]) -> Result<usize> {
        self.check(element_type, dims)?;
        match self {
            MemoryLayout::Tiled { tiles, .. } if !tiles.is_empty() => Err(Error::invalid(format!(
                "the tiled layout {self} cannot describe host memory here: tiles pad the array as the plugin \
                 decides, so its size cannot be checked; use a layout without tiles"
            ))),
            // A permutation of a dense array covers exactly its dense bytes.
            MemoryLayout::Tiled { .. } => dense_byte_size(element_type, dims),
            MemoryLayout::Strides { byte_strides } => {
                dense_byte_size(element_type, dims)?;
                if dims.contains(&0) {
                    return Ok(0);
                }
                let elem = whole_byte_size(element_type)?;
                let last = dims.iter().zip(byte_strides).map(|(&d, &s)| (d as i128 - 1) * s as i128).sum::<i128>();
                usize::try_from(last + elem as i128).ok().filter(|n| *n <= isize::MAX as usize).ok_or_else(|| {
                    Error::invalid(format!("the strides {byte_strides:?} span more bytes than fit in memory"))
                })
            }
        }
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

/// Checks dims and computes the dense byte size of an array.
pub(crate) fn dense_byte_size(element_type: ElementType, dims: &[i64]) -> Result<usize> {
    if !element_type.is_array_type() {
        return Err(Error::invalid(format!("element type {element_type} cannot hold array data")));
    }
    let mut count: usize = 1;
    for (i, &d) in dims.iter().enumerate() {
        if d < 0 {
            return Err(Error::invalid(format!("dimension {i} is negative ({d}); dimensions must be >= 0")));
        }
        count = count
            .checked_mul(d as usize)
            .ok_or_else(|| Error::invalid(format!("the shape {dims:?} has more elements than fit in memory")))?;
    }
    element_type
        .host_bytes(count)
        .filter(|b| *b <= isize::MAX as usize)
        .ok_or_else(|| Error::invalid(format!("the shape {dims:?} of {element_type} is too large")))
}

/// The size of one element, for strided layouts (which address whole bytes).
fn whole_byte_size(element_type: ElementType) -> Result<usize> {
    match element_type.bits() {
        Some(bits) if bits >= 8 => Ok(bits / 8),
        _ => Err(Error::invalid(format!("byte strides are not supported for sub-byte type {element_type}"))),
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

    #[test]
    fn layouts_are_checked_against_the_shape() {
        let f32 = ElementType::F32;
        assert!(MemoryLayout::dense(0).check(f32, &[]).is_ok());
        assert!(MemoryLayout::column_major(3).check(f32, &[2, 3, 4]).is_ok());
        for bad in [vec![0, 0], vec![0], vec![0, 2], vec![-1, 0], vec![1, 0, 2]] {
            let layout = MemoryLayout::Tiled { minor_to_major: bad.clone(), tiles: vec![] };
            assert!(layout.check(f32, &[2, 3]).is_err(), "{bad:?}");
        }
        for bad_tile in [vec![], vec![0], vec![8, 128, 2], vec![-8]] {
            let layout = MemoryLayout::Tiled { minor_to_major: vec![1, 0], tiles: vec![bad_tile.clone()] };
            assert!(layout.check(f32, &[2, 3]).is_err(), "{bad_tile:?}");
        }
        let tiled = MemoryLayout::Tiled { minor_to_major: vec![1, 0], tiles: vec![vec![8, 128]] };
        assert!(tiled.check(f32, &[2, 3]).is_ok());
        assert!(tiled.host_span(f32, &[2, 3]).is_err(), "tiles pad as the plugin decides");
        assert!(MemoryLayout::Strides { byte_strides: vec![4, -8] }.check(f32, &[2, 3]).is_err());
        assert!(MemoryLayout::Strides { byte_strides: vec![4, 6] }.check(f32, &[2, 3]).is_err());
        assert!(MemoryLayout::Strides { byte_strides: vec![1, 2] }.check(ElementType::S4, &[2, 3]).is_err());
    }

    #[test]
    fn host_spans() {
        let f32 = ElementType::F32;
        assert_eq!(MemoryLayout::column_major(2).host_span(f32, &[2, 3]).unwrap(), 24);
        // Column-major strides of a [2,3] f32 array: 4 and 8 bytes.
        assert_eq!(MemoryLayout::Strides { byte_strides: vec![4, 8] }.host_span(f32, &[2, 3]).unwrap(), 24);
        // Every other row of a [2,3] array: 1*24 + 2*4 + 4 bytes.
        assert_eq!(MemoryLayout::Strides { byte_strides: vec![24, 4] }.host_span(f32, &[2, 3]).unwrap(), 36);
        assert_eq!(MemoryLayout::Strides { byte_strides: vec![24, 4] }.host_span(f32, &[0, 3]).unwrap(), 0);
    }
}
