//! `dot_general` and `convolution`.
//!
//! ```
//! use pjrt_builder::{ConvDimensions, Convolution, DotDimensions, Function};
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ElementType, ExecuteOptions, Plugin};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let f = Function::new("linalg");
//! let a = f.parameter(ElementType::F32, &[2, 3])?;
//! let b = f.parameter(ElementType::F32, &[3, 2])?;
//! // a @ b: contract a's dimension 1 with b's dimension 0.
//! let ab = a.dot_general(&b, &DotDimensions::matmul(), None)?;
//! // A 1-D convolution of a (batch 2, width 3, one feature) with a width-2 kernel, padded by 1.
//! let image = a.reshape(&[2, 3, 1])?;
//! let kernel = f.constant(&[1f32, -1.], &[2, 1, 1])?;
//! let conv = Convolution::new(ConvDimensions::channels_last(1)).padding(&[(1, 1)]);
//! let edges = image.convolution(&kernel, &conv)?;
//! let program = f.finish(&[&ab, &edges])?;
//!
//! let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let x = client.upload(&[1f32, 2., 3., 4., 5., 6.], &[2, 3])?;
//! let y = client.upload(&[1f32, 0., 0., 1., 1., 1.], &[3, 2])?;
//! let out = exe.execute(&[&x, &y], &ExecuteOptions::new())?;
//! assert_eq!(out[0].to_vec::<f32>()?, [4., 5., 10., 11.]);
//! assert_eq!(out[1].dimensions()?, [2, 4, 1]);
//! assert_eq!(out[1].to_vec::<f32>()?, [-1., -1., -1., 3., -4., -1., -1., 6.]);
//! # Ok(()) }
//! ```

use super::{attribute_error, check_dimension_list, operand_error, tensor, tensor_type};
use pjrt_stablehlo::ir::Attr;

use crate::emit;
use crate::error::BuildError;
use crate::function::{Op, Value};
use crate::types::{kind, Kind};

/// The dimension numbers of `dot_general`: which dimensions are batch dimensions (paired,
/// first in the result) and which are contracted (summed over).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DotDimensions {
    /// The left operand's batch dimensions.
    pub lhs_batch: Vec<i64>,
    /// The right operand's batch dimensions (paired with `lhs_batch`).
    pub rhs_batch: Vec<i64>,
    /// The left operand's contracting dimensions.
    pub lhs_contracting: Vec<i64>,
    /// The right operand's contracting dimensions (paired with `lhs_contracting`).
    pub rhs_contracting: Vec<i64>,
}

impl DotDimensions {
    /// A matrix product of rank-2 operands: contract lhs dimension 1 with rhs dimension 0.
    pub fn matmul() -> DotDimensions {
        DotDimensions { lhs_contracting: vec![1], rhs_contracting: vec![0], ..DotDimensions::default() }
    }

    /// A batched matrix product of rank-3 operands `[b, m, k] x [b, k, n] -> [b, m, n]`.
    pub fn batched_matmul() -> DotDimensions {
        DotDimensions { lhs_batch: vec![0], rhs_batch: vec![0], lhs_contracting: vec![2], rhs_contracting: vec![1] }
    }
}

/// How precisely an operand of `dot_general`/`convolution` is used on devices that can trade
/// precision for speed (`#stablehlo<precision ...>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Precision {
    /// The device's fastest mode.
    Default,
    /// More precise.
    High,
    /// The most precise.
    Highest,
}

impl Precision {
    fn attr(self) -> Attr {
        emit::enum_attr(
            "precision",
            match self {
                Precision::Default => "DEFAULT",
                Precision::High => "HIGH",
                Precision::Highest => "HIGHEST",
            },
        )
    }
}

fn precision_config(precision: Option<(Precision, Precision)>) -> Option<Attr> {
    precision.map(|(a, b)| Attr::Array(vec![a.attr(), b.attr()]))
}

impl<'f> Value<'f> {
    /// `stablehlo.dot_general`: the result has the batch dimensions, then this operand's
    /// remaining dimensions, then `rhs`'s. Both operands have one element type (not i1).
    pub fn dot_general(
        &self,
        rhs: &Value<'f>,
        dimensions: &DotDimensions,
        precision: Option<(Precision, Precision)>,
    ) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.dot_general";
        let (l, r) = (tensor(OP, self)?, tensor(OP, rhs)?);
        super::refuse_two_bit(OP, &[self, rhs])?;
        if l.element != r.element || kind(l.element) == Kind::Bool {
            return Err(operand_error(OP, &[self, rhs], "both operands need one element type, not i1"));
        }
        let d = dimensions;
        if d.lhs_batch.len() != d.rhs_batch.len() || d.lhs_contracting.len() != d.rhs_contracting.len() {
            return Err(attribute_error(OP, format!("batch and contracting dimensions must pair up: {d:?}")));
        }
        let lhs_used: Vec<i64> = d.lhs_batch.iter().chain(&d.lhs_contracting).copied().collect();
        let rhs_used: Vec<i64> = d.rhs_batch.iter().chain(&d.rhs_contracting).copied().collect();
        check_dimension_list(OP, "lhs batch and contracting dimensions", &lhs_used, l.rank())?;
        check_dimension_list(OP, "rhs batch and contracting dimensions", &rhs_used, r.rank())?;
        for (pairs, what) in
            [((&d.lhs_batch, &d.rhs_batch), "batch"), ((&d.lhs_contracting, &d.rhs_contracting), "contracting")]
        {
            for (&a, &b) in pairs.0.iter().zip(pairs.1) {
                if l.dims[a as usize] != r.dims[b as usize] {
                    return Err(operand_error(
                        OP,
                        &[self, rhs],
                        format!(
                            "{what} dimensions lhs {a} (size {}) and rhs {b} (size {}) must have the same size",
                            l.dims[a as usize], r.dims[b as usize]
                        ),
                    ));
                }
            }
        }
        let mut dims: Vec<i64> = d.lhs_batch.iter().map(|&a| l.dims[a as usize]).collect();
        dims.extend((0..l.rank() as i64).filter(|i| !lhs_used.contains(i)).map(|i| l.dims[i as usize]));
        dims.extend((0..r.rank() as i64).filter(|i| !rhs_used.contains(i)).map(|i| r.dims[i as usize]));
        let numbers = emit::struct_attr(
            "dot",
            vec![
                ("lhs_batching_dimensions", emit::i64_array(&d.lhs_batch)),
                ("rhs_batching_dimensions", emit::i64_array(&d.rhs_batch)),
                ("lhs_contracting_dimensions", emit::i64_array(&d.lhs_contracting)),
                ("rhs_contracting_dimensions", emit::i64_array(&d.rhs_contracting)),
            ],
        );
        let mut op =
            Op::new(OP, vec![self, rhs], vec![tensor_type(l.element, dims)]).attr("dot_dimension_numbers", numbers);
        if let Some(p) = precision_config(precision) {
            op = op.attr("precision_config", p);
        }
        self.func.emit1(op)
    }

    /// `stablehlo.convolution` of this input with `kernel` (see [`Convolution`]).
    pub fn convolution(&self, kernel: &Value<'f>, conv: &Convolution) -> Result<Value<'f>, BuildError> {
        const OP: &str = "stablehlo.convolution";
        let (input, k) = (tensor(OP, self)?, tensor(OP, kernel)?);
        super::refuse_two_bit(OP, &[self, kernel])?;
        if input.element != k.element || kind(input.element) == Kind::Bool {
            return Err(operand_error(OP, &[self, kernel], "input and kernel need one element type, not i1"));
        }
        let dn = &conv.dimensions;
        let spatial = dn.input_spatial.len();
        let rank = spatial + 2;
        if input.rank() != rank
            || k.rank() != rank
            || dn.kernel_spatial.len() != spatial
            || dn.output_spatial.len() != spatial
        {
            return Err(operand_error(
                OP,
                &[self, kernel],
                format!("the dimension numbers describe rank-{rank} input, kernel and output ({spatial} spatial dimensions)"),
            ));
        }
        let list = |b: i64, f: i64, s: &[i64]| [b, f].iter().chain(s).copied().collect::<Vec<i64>>();
        check_dimension_list(OP, "input dimensions", &list(dn.input_batch, dn.input_feature, &dn.input_spatial), rank)?;
        check_dimension_list(
            OP,
            "kernel dimensions",
            &list(dn.kernel_input_feature, dn.kernel_output_feature, &dn.kernel_spatial),
            rank,
        )?;
        check_dimension_list(
            OP,
            "output dimensions",
            &list(dn.output_batch, dn.output_feature, &dn.output_spatial),
            rank,
        )?;
        let or = |v: &[i64], default: i64| if v.is_empty() { vec![default; spatial] } else { v.to_vec() };
        let strides = or(&conv.window_strides, 1);
        let lhs_dilation = or(&conv.lhs_dilation, 1);
        let rhs_dilation = or(&conv.rhs_dilation, 1);
        let padding = if conv.padding.is_empty() { vec![(0, 0); spatial] } else { conv.padding.clone() };
        let reversal =
            if conv.window_reversal.is_empty() { vec![false; spatial] } else { conv.window_reversal.clone() };
        if strides.len() != spatial
            || lhs_dilation.len() != spatial
            || rhs_dilation.len() != spatial
            || padding.len() != spatial
            || reversal.len() != spatial
            || strides.iter().chain(&lhs_dilation).chain(&rhs_dilation).any(|&s| s < 1)
        {
            return Err(attribute_error(
                OP,
                format!(
                    "window strides, dilations, padding and reversal need {spatial} entries (or none), strides and \
                     dilations >= 1: {conv:?}"
                ),
            ));
        }
        let (fgc, bgc) = (conv.feature_group_count, conv.batch_group_count);
        let in_batch = input.dims[dn.input_batch as usize];
        let in_feature = input.dims[dn.input_feature as usize];
        let k_in = k.dims[dn.kernel_input_feature as usize];
        let k_out = k.dims[dn.kernel_output_feature as usize];
        let groups_ok = fgc >= 1
            && bgc >= 1
            && (fgc == 1 || bgc == 1)
            && in_feature % fgc == 0
            && in_feature / fgc == k_in
            && k_out % fgc == 0
            && in_batch % bgc == 0
            && k_out % bgc == 0;
        if !groups_ok {
            return Err(operand_error(
                OP,
                &[self, kernel],
                format!(
                    "with feature_group_count {fgc} and batch_group_count {bgc} (one of them 1), input features \
                     ({in_feature}) / feature groups must equal the kernel's input features ({k_in}), and the groups \
                     must divide input features, input batch ({in_batch}) and kernel output features ({k_out})"
                ),
            ));
        }
        let mut out = vec![0i64; rank];
        out[dn.output_batch as usize] = in_batch / bgc;
        out[dn.output_feature as usize] = k_out;
        for i in 0..spatial {
            let n = input.dims[dn.input_spatial[i] as usize];
            let w = k.dims[dn.kernel_spatial[i] as usize];
            if w < 1 {
                return Err(operand_error(
                    OP,
                    &[self, kernel],
                    format!("the kernel's spatial dimension {i} is empty; a window has at least one element"),
                ));
            }
            // Checked: sizes, dilations and paddings are the caller's and may be huge.
            let dilate =
                |size: i64, by: i64| if size == 0 { Some(0) } else { (size - 1).checked_mul(by)?.checked_add(1) };
            let padded = dilate(n, lhs_dilation[i])
                .and_then(|x| x.checked_add(padding[i].0))
                .and_then(|x| x.checked_add(padding[i].1));
            let window = dilate(w, rhs_dilation[i]);
            match (padded, window) {
                (Some(padded), Some(window)) if padded >= 0 && padded >= window => {
                    out[dn.output_spatial[i] as usize] = (padded - window) / strides[i] + 1;
                }
                _ => {
                    let show = |v: Option<i64>| v.map_or("too large".to_string(), |v| v.to_string());
                    let (padded, window) = (show(padded), show(window));
                    return Err(operand_error(
                        OP,
                        &[self, kernel],
                        format!(
                            "spatial dimension {i}: the padded, dilated input ({padded}) is smaller than the dilated \
                             window ({window})"
                        ),
                    ));
                }
            }
        }
        let mut op =
            Op::new(OP, vec![self, kernel], vec![tensor_type(input.element, out)]).attr("dimension_numbers", dn.attr());
        if spatial > 0 {
            let rows: Vec<Vec<i64>> = padding.iter().map(|&(lo, hi)| vec![lo, hi]).collect();
            let pad = emit::i64_matrix(&rows, 2);
            op = op
                .attr("window_strides", emit::i64_array(&strides))
                .attr("padding", pad)
                .attr("lhs_dilation", emit::i64_array(&lhs_dilation))
                .attr("rhs_dilation", emit::i64_array(&rhs_dilation))
                .attr("window_reversal", emit::bool_array(&reversal));
        }
        op = op.attr("feature_group_count", emit::i64_attr(fgc)).attr("batch_group_count", emit::i64_attr(bgc));
        if let Some(p) = precision_config(conv.precision) {
            op = op.attr("precision_config", p);
        }
        self.func.emit1(op)
    }
}

/// Which dimension of the input, kernel and output is which (`#stablehlo.conv<...>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvDimensions {
    /// The input's batch dimension.
    pub input_batch: i64,
    /// The input's feature dimension.
    pub input_feature: i64,
    /// The input's spatial dimensions, in order.
    pub input_spatial: Vec<i64>,
    /// The kernel's input-feature dimension.
    pub kernel_input_feature: i64,
    /// The kernel's output-feature dimension.
    pub kernel_output_feature: i64,
    /// The kernel's spatial dimensions (paired with the input's).
    pub kernel_spatial: Vec<i64>,
    /// The output's batch dimension.
    pub output_batch: i64,
    /// The output's feature dimension.
    pub output_feature: i64,
    /// The output's spatial dimensions.
    pub output_spatial: Vec<i64>,
}

impl ConvDimensions {
    /// TensorFlow/JAX's NHWC layout with `spatial` spatial dimensions: input and output
    /// `[batch, spatial..., feature]`, kernel `[spatial..., in, out]`
    /// (`[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]` in 2-D).
    pub fn channels_last(spatial: usize) -> ConvDimensions {
        let s = spatial as i64;
        let inner: Vec<i64> = (1..=s).collect();
        ConvDimensions {
            input_batch: 0,
            input_feature: s + 1,
            input_spatial: inner.clone(),
            kernel_input_feature: s,
            kernel_output_feature: s + 1,
            kernel_spatial: (0..s).collect(),
            output_batch: 0,
            output_feature: s + 1,
            output_spatial: inner,
        }
    }

    /// PyTorch's NCHW layout: input and output `[batch, feature, spatial...]`, kernel
    /// `[out, in, spatial...]` (`[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]` in 2-D).
    pub fn channels_first(spatial: usize) -> ConvDimensions {
        let s = spatial as i64;
        let inner: Vec<i64> = (2..s + 2).collect();
        ConvDimensions {
            input_batch: 0,
            input_feature: 1,
            input_spatial: inner.clone(),
            kernel_input_feature: 1,
            kernel_output_feature: 0,
            kernel_spatial: inner.clone(),
            output_batch: 0,
            output_feature: 1,
            output_spatial: inner,
        }
    }

    /// `#stablehlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]>`.
    fn attr(&self) -> Attr {
        emit::struct_attr(
            "conv",
            vec![
                ("input_batch_dimension", emit::i64_attr(self.input_batch)),
                ("input_feature_dimension", emit::i64_attr(self.input_feature)),
                ("input_spatial_dimensions", emit::i64_array(&self.input_spatial)),
                ("kernel_input_feature_dimension", emit::i64_attr(self.kernel_input_feature)),
                ("kernel_output_feature_dimension", emit::i64_attr(self.kernel_output_feature)),
                ("kernel_spatial_dimensions", emit::i64_array(&self.kernel_spatial)),
                ("output_batch_dimension", emit::i64_attr(self.output_batch)),
                ("output_feature_dimension", emit::i64_attr(self.output_feature)),
                ("output_spatial_dimensions", emit::i64_array(&self.output_spatial)),
            ],
        )
    }
}

/// A convolution's attributes: dimension numbers, window strides, padding, dilations, window
/// reversal, feature/batch groups and precision. Empty lists mean the defaults (stride 1,
/// padding 0, dilation 1, no reversal).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Convolution {
    /// Which dimension is which.
    pub dimensions: ConvDimensions,
    /// The window's step per spatial dimension.
    pub window_strides: Vec<i64>,
    /// `(low, high)` padding per spatial dimension (negative values crop).
    pub padding: Vec<(i64, i64)>,
    /// Input (lhs) dilation per spatial dimension (transposed convolutions).
    pub lhs_dilation: Vec<i64>,
    /// Kernel (rhs) dilation per spatial dimension (atrous convolutions).
    pub rhs_dilation: Vec<i64>,
    /// Whether the window is reversed per spatial dimension.
    pub window_reversal: Vec<bool>,
    /// Feature groups (depthwise convolutions: the number of input features).
    pub feature_group_count: i64,
    /// Batch groups (weight gradients of grouped convolutions).
    pub batch_group_count: i64,
    /// Precision of input and kernel.
    pub precision: Option<(Precision, Precision)>,
}

impl Convolution {
    /// Defaults for `dimensions`: stride 1, no padding or dilation, one group.
    pub fn new(dimensions: ConvDimensions) -> Convolution {
        Convolution {
            dimensions,
            window_strides: Vec::new(),
            padding: Vec::new(),
            lhs_dilation: Vec::new(),
            rhs_dilation: Vec::new(),
            window_reversal: Vec::new(),
            feature_group_count: 1,
            batch_group_count: 1,
            precision: None,
        }
    }

    /// Sets the window strides.
    pub fn strides(mut self, strides: &[i64]) -> Convolution {
        self.window_strides = strides.to_vec();
        self
    }

    /// Sets the `(low, high)` padding.
    pub fn padding(mut self, padding: &[(i64, i64)]) -> Convolution {
        self.padding = padding.to_vec();
        self
    }

    /// Sets the input and kernel dilations (empty: 1).
    pub fn dilation(mut self, lhs: &[i64], rhs: &[i64]) -> Convolution {
        self.lhs_dilation = lhs.to_vec();
        self.rhs_dilation = rhs.to_vec();
        self
    }

    /// Sets which spatial dimensions of the window are reversed (the kernel flipped along them).
    pub fn reversal(mut self, reversed: &[bool]) -> Convolution {
        self.window_reversal = reversed.to_vec();
        self
    }

    /// Sets the precision of input and kernel.
    pub fn precision(mut self, input: Precision, kernel: Precision) -> Convolution {
        self.precision = Some((input, kernel));
        self
    }

    /// Sets the feature and batch group counts.
    pub fn groups(mut self, feature_group_count: i64, batch_group_count: i64) -> Convolution {
        self.feature_group_count = feature_group_count;
        self.batch_group_count = batch_group_count;
        self
    }
}
