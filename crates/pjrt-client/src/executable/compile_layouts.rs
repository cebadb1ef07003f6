//! Argument and result layouts in compile options: [`ShapeWithLayout`] to and from XLA's
//! `ShapeProto` (here, above both the compile options and the buffers whose [`MemoryLayout`] it
//! reuses).

use prost::Message;

use crate::buffer::layout::MemoryLayout;
use crate::compile_options::proto::{LayoutProto, ShapeProto, TileProto};
use crate::compile_options::CompileOptions;
use crate::error::{Error, Result};
use crate::executable::hlo;
use pjrt_types::ElementType;

/// An array's element type, dimensions and memory layout, as compile options carry them for
/// the arguments and results (XLA's `ShapeProto` with a `LayoutProto`).
///
/// ```
/// use pjrt_client::{ElementType, MemoryLayout, ShapeWithLayout};
///
/// let column_major = ShapeWithLayout::new(ElementType::F32, &[2, 3], Some(MemoryLayout::Tiled {
///     minor_to_major: vec![0, 1],
///     tiles: vec![],
/// }));
/// assert_eq!(column_major.to_string(), "f32[2, 3]{0,1}");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeWithLayout {
    /// The element type.
    pub element_type: ElementType,
    /// The dimensions.
    pub dims: Vec<i64>,
    /// The layout; `None` leaves it to the compiler.
    pub layout: Option<MemoryLayout>,
}

impl std::fmt::Display for ShapeWithLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{:?}", self.element_type, self.dims)?;
        match &self.layout {
            Some(layout) => write!(f, "{layout}"),
            None => Ok(()),
        }
    }
}

impl ShapeWithLayout {
    /// A shape with an optional layout.
    pub fn new(element_type: ElementType, dims: &[i64], layout: Option<MemoryLayout>) -> Self {
        Self { element_type, dims: dims.to_vec(), layout }
    }

    /// The `ShapeProto`, checked: a layout must order every dimension once (XLA would refuse or
    /// misread anything else), tiles need positive sizes, byte strides have no `ShapeProto` form.
    fn to_proto(&self) -> Result<ShapeProto> {
        let bad = |why: String| Error::invalid(format!("the layout of {self}: {why}"));
        let element_type = primitive_type(self.element_type)
            .ok_or_else(|| bad(format!("{} has no XLA primitive type this crate knows", self.element_type)))?;
        if let Some(d) = self.dims.iter().find(|&&d| d < 0) {
            return Err(bad(format!("dimension {d} is negative")));
        }
        let layout = match &self.layout {
            None => None,
            Some(MemoryLayout::Tiled { minor_to_major, tiles }) => {
                let mut sorted = minor_to_major.clone();
                sorted.sort_unstable();
                if sorted != (0..self.dims.len() as i64).collect::<Vec<_>>() {
                    return Err(bad(format!(
                        "minor_to_major {minor_to_major:?} must name each of the {} dimensions once",
                        self.dims.len()
                    )));
                }
                if tiles.iter().flatten().any(|&t| t < 1 && t != -1) {
                    return Err(bad("tile sizes must be positive (or -1, XLA's combined dimension)".into()));
                }
                let tiles = tiles.iter().map(|t| TileProto { dimensions: t.clone() }).collect();
                Some(LayoutProto { minor_to_major: minor_to_major.clone(), tiles })
            }
            Some(other) => return Err(bad(format!("{other} cannot be a compile-time layout; give minor_to_major"))),
        };
        Ok(ShapeProto { element_type, dimensions: self.dims.clone(), tuple_shapes: Vec::new(), layout })
    }

    /// Reads an array `ShapeProto` (a tuple, or a type this crate does not map, is an error).
    fn from_proto(shape: &ShapeProto) -> Result<Self> {
        let element_type = hlo::element_type(shape.element_type).ok_or_else(|| {
            Error::invalid(format!(
                "a layout in the compile options has XLA type {}, not an array type",
                shape.element_type
            ))
        })?;
        let layout = shape.layout.as_ref().map(|l| MemoryLayout::Tiled {
            minor_to_major: l.minor_to_major.clone(),
            tiles: l.tiles.iter().map(|t| t.dimensions.clone()).collect(),
        });
        Ok(Self { element_type, dims: shape.dimensions.clone(), layout })
    }
}

/// The XLA `PrimitiveType` of an element type: the inverse of [`hlo::element_type`].
fn primitive_type(element_type: ElementType) -> Option<i32> {
    (0..64).find(|&p| hlo::element_type(p) == Some(element_type))
}

impl CompileOptions {
    /// Fixes the layout of each argument (`argument_layouts`, one per entry parameter, in
    /// order). A shape that cannot be a layout (see [`ShapeWithLayout`]) is refused by
    /// [`CompileOptions::validate`]; one that does not match the program is the plugin's to
    /// refuse at compile time.
    ///
    /// The CPU plugins compile for these layouts but read each argument's bytes as they are, so
    /// an executable compiled with them checks every argument's layout before it runs
    /// (a mismatch is [`crate::Error::InvalidArgument`], not wrong numbers).
    ///
    /// ```
    /// use pjrt_client::{CompileOptions, ElementType, ExecuteOptions, MemoryLayout, Program, ShapeWithLayout};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let program = Program::mlir_text(r#"
    ///   func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
    ///     %0 = stablehlo.negate %a : tensor<2x3xf32>
    ///     return %0 : tensor<2x3xf32>
    ///   }"#)?;
    /// let column_major = Some(MemoryLayout::Tiled { minor_to_major: vec![0, 1], tiles: vec![] });
    /// let shape = ShapeWithLayout::new(ElementType::F32, &[2, 3], column_major);
    /// let options = CompileOptions::new().argument_layouts(std::slice::from_ref(&shape));
    /// assert_eq!(options.argument_layout_shapes()?, [shape.clone()]);
    /// let exe = client.compile(&program, &options)?;
    /// // The plugin reports the layouts it compiled for.
    /// assert_eq!(exe.compile_options()?.argument_layout_shapes()?, [shape]);
    /// // A row-major buffer is refused rather than read as column-major.
    /// let a = client.upload(&[1f32, 2., 3., 4., 5., 6.], &[2, 3])?;
    /// assert!(exe.execute(&[&a], &ExecuteOptions::new()).unwrap_err().to_string().contains("compiled for {0,1}"));
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn argument_layouts(mut self, shapes: &[ShapeWithLayout]) -> Self {
        match shapes.iter().map(|s| s.to_proto().map(|p| p.encode_to_vec())).collect::<Result<Vec<_>>>() {
            Ok(encoded) => self.set_argument_layouts(&encoded),
            Err(e) => self.refuse(e.to_string()),
        }
        self
    }

    /// Fixes the layout of the result (`executable_build_options.result_layout`): one shape
    /// for a program with one result, one per result (sent as a tuple) for several.
    ///
    /// The CPU plugins take it but, for MLIR programs, lay results out as the module says
    /// (its default layouts) and report that choice back in
    /// [`crate::LoadedExecutable::compile_options`]: read the layout from there, or from
    /// the output buffers ([`crate::Buffer::memory_layout`]), rather than assume this one.
    ///
    /// ```
    /// use pjrt_client::{CompileOptions, ElementType, MemoryLayout, ShapeWithLayout};
    ///
    /// let row_major = ShapeWithLayout::new(ElementType::F32, &[4], Some(MemoryLayout::dense(1)));
    /// let options = CompileOptions::new().result_layout(&[row_major.clone(), row_major.clone()]);
    /// assert_eq!(options.result_layout_shapes()?, Some(vec![row_major.clone(), row_major]));
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn result_layout(mut self, results: &[ShapeWithLayout]) -> Self {
        let shape = match results {
            [one] => one.to_proto(),
            several => several.iter().map(ShapeWithLayout::to_proto).collect::<Result<Vec<_>>>().map(|tuple_shapes| {
                ShapeProto { element_type: hlo::TUPLE, dimensions: Vec::new(), tuple_shapes, layout: None }
            }),
        };
        match shape {
            Ok(shape) => self.set_result_layout(&shape.encode_to_vec()),
            Err(e) => self.refuse(e.to_string()),
        }
        self
    }

    /// The argument layouts the options carry (empty: none fixed).
    pub fn argument_layout_shapes(&self) -> Result<Vec<ShapeWithLayout>> {
        self.proto().argument_layouts.iter().map(ShapeWithLayout::from_proto).collect()
    }

    /// The result layout the options carry, one shape per result (a tuple is read as its
    /// elements); `None` when there is none.
    pub fn result_layout_shapes(&self) -> Result<Option<Vec<ShapeWithLayout>>> {
        let Some(shape) = self.build_options().and_then(|b| b.result_layout.as_ref()) else { return Ok(None) };
        if shape.element_type == hlo::TUPLE {
            return shape.tuple_shapes.iter().map(ShapeWithLayout::from_proto).collect::<Result<_>>().map(Some);
        }
        ShapeWithLayout::from_proto(shape).map(|s| Some(vec![s]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiled(minor_to_major: &[i64], tiles: &[&[i64]]) -> Option<MemoryLayout> {
        Some(MemoryLayout::Tiled {
            minor_to_major: minor_to_major.to_vec(),
            tiles: tiles.iter().map(|t| t.to_vec()).collect(),
        })
    }

    #[test]
    fn layouts_round_trip_through_the_bytes() {
        let a = ShapeWithLayout::new(ElementType::F32, &[2, 3], tiled(&[0, 1], &[]));
        let b = ShapeWithLayout::new(ElementType::S8, &[128, 8], tiled(&[1, 0], &[&[8, 128], &[4, 1]]));
        let c = ShapeWithLayout::new(ElementType::BF16, &[], None);
        let options = CompileOptions::new()
            .argument_layouts(&[a.clone(), b.clone(), c.clone()])
            .result_layout(std::slice::from_ref(&b));
        let read = CompileOptions::from_proto_bytes(&options.to_bytes().unwrap()).unwrap();
        assert_eq!(read.argument_layout_shapes().unwrap(), [a.clone(), b.clone(), c.clone()]);
        assert_eq!(read.result_layout_shapes().unwrap(), Some(vec![b.clone()]));
        // Several results: a tuple.
        let tuple = read.clone().result_layout(&[a.clone(), c.clone()]);
        assert_eq!(tuple.build_options().unwrap().result_layout.as_ref().unwrap().element_type, hlo::TUPLE);
        assert_eq!(tuple.result_layout_shapes().unwrap(), Some(vec![a.clone(), c]));
        // Setting again replaces, where the first entry was.
        let again = read.argument_layouts(std::slice::from_ref(&a));
        assert_eq!(again.argument_layout_shapes().unwrap(), [a]);
        assert_eq!(CompileOptions::new().result_layout_shapes().unwrap(), None);
    }

    #[test]
    fn impossible_layouts_are_refused_before_any_plugin() {
        let cases = [
            ShapeWithLayout::new(ElementType::F32, &[2, 3], tiled(&[0], &[])),
            ShapeWithLayout::new(ElementType::F32, &[2, 3], tiled(&[0, 0], &[])),
            ShapeWithLayout::new(ElementType::F32, &[2, 3], tiled(&[1, 2], &[])),
            ShapeWithLayout::new(ElementType::F32, &[-2, 3], tiled(&[1, 0], &[])),
            ShapeWithLayout::new(ElementType::F32, &[2, 3], tiled(&[1, 0], &[&[0, 8]])),
            ShapeWithLayout::new(ElementType::F32, &[2], Some(MemoryLayout::Strides { byte_strides: vec![4] })),
        ];
        for shape in cases {
            let o = CompileOptions::new().argument_layouts(std::slice::from_ref(&shape));
            assert!(matches!(o.to_bytes(), Err(Error::InvalidArgument(_))), "{shape:?}");
            let o = CompileOptions::new().result_layout(std::slice::from_ref(&shape));
            assert!(matches!(o.validate(), Err(Error::InvalidArgument(_))), "{shape:?}");
        }
    }

    #[test]
    fn every_mapped_element_type_has_a_primitive_type() {
        for p in 0..64 {
            if let Some(t) = hlo::element_type(p) {
                assert_eq!(primitive_type(t), Some(p));
            }
        }
    }
}
