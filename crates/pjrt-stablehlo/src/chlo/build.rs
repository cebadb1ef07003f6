//! Building StableHLO ops in place of a chlo op: values of one static shape, constants of
//! that shape, the element-wise ops the decompositions use.

use std::sync::Arc;

use crate::ir::{Attr, Dim, ElementType, EnumAttr, Location, Op, Region, TensorType, Type, Value};

/// A value the builder made (or the chlo op's operand): its id and type.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct V {
    pub id: u32,
    pub ty: Type,
}

impl V {
    /// The element type, when the value is a tensor of a scalar type.
    pub fn element(&self) -> Option<ElementType> {
        match &self.ty {
            Type::Tensor(t) => t.element_type(),
            _ => None,
        }
    }

    /// The static dimensions, when the value is a tensor of static shape.
    pub fn dims(&self) -> Option<Vec<u64>> {
        match &self.ty {
            Type::Tensor(t) => t
                .dims
                .iter()
                .map(|d| match d {
                    Dim::Fixed(n) => Some(*n),
                    Dim::Dynamic => None,
                })
                .collect(),
            _ => None,
        }
    }
}

/// `ty` (a tensor) with element type `e`.
pub(super) fn with_element(ty: &Type, e: ElementType) -> Type {
    match ty {
        Type::Tensor(t) => {
            Type::Tensor(TensorType { dims: t.dims.clone(), element: Box::new(Type::Scalar(e)), encoding: None })
        }
        other => other.clone(),
    }
}

/// `ty` (a tensor) with dimensions `dims`.
pub(super) fn with_dims(ty: &Type, dims: &[u64]) -> Type {
    match ty {
        Type::Tensor(t) => Type::Tensor(TensorType {
            dims: dims.iter().map(|&d| Dim::Fixed(d)).collect(),
            element: t.element.clone(),
            encoding: None,
        }),
        other => other.clone(),
    }
}

/// The largest finite value of a float type.
pub(super) fn max_finite(e: ElementType) -> f64 {
    match e {
        ElementType::F16 => 65504.0,
        ElementType::BF16 => f64::from(half::bf16::MAX),
        ElementType::F32 => f64::from(f32::MAX),
        _ => f64::MAX,
    }
}

/// A float type the decompositions compute in (`f16`, `bf16`, `f32`, `f64`).
pub(super) fn is_float(e: ElementType) -> bool {
    matches!(e, ElementType::F16 | ElementType::BF16 | ElementType::F32 | ElementType::F64)
}

pub(super) fn is_complex(e: ElementType) -> bool {
    matches!(e, ElementType::C64 | ElementType::C128)
}

/// The real type of a complex one (`f32` of `complex<f32>`), the type itself otherwise.
pub(super) fn real_of(e: ElementType) -> ElementType {
    match e {
        ElementType::C64 => ElementType::F32,
        ElementType::C128 => ElementType::F64,
        e => e,
    }
}

/// The ops made so far, with fresh value ids from `next`.
pub(super) struct Builder {
    pub ops: Vec<Op>,
    next: u32,
    loc: Arc<Location>,
    /// The first reason a value could not be made (a constant of a dynamic shape, ...).
    pub error: Option<String>,
}

impl Builder {
    pub fn new(next: u32, loc: Arc<Location>) -> Builder {
        Builder { ops: Vec::new(), next, loc, error: None }
    }

    /// Continues numbering from `next` (after values another builder made).
    pub fn skip_to(&mut self, next: u32) {
        self.next = self.next.max(next);
    }

    /// The next fresh id (the caller continues from it).
    pub fn next_id(&self) -> u32 {
        self.next
    }

    fn fresh(&mut self, ty: Type) -> V {
        let id = self.next;
        self.next += 1;
        V { id, ty }
    }

    /// An op of `results` fresh values.
    pub fn op(&mut self, name: &str, operands: &[&V], results: Vec<Type>, attributes: Vec<(&str, Attr)>) -> Vec<V> {
        self.op_with_regions(name, operands, results, attributes, Vec::new())
    }

    pub fn op_with_regions(
        &mut self,
        name: &str,
        operands: &[&V],
        results: Vec<Type>,
        attributes: Vec<(&str, Attr)>,
        regions: Vec<Region>,
    ) -> Vec<V> {
        let results: Vec<V> = results.into_iter().map(|t| self.fresh(t)).collect();
        self.ops.push(Op {
            name: name.to_string(),
            operands: operands.iter().map(|v| v.id).collect(),
            results: results.iter().map(|v| Value { id: v.id, ty: v.ty.clone() }).collect(),
            attributes: attributes.into_iter().map(|(n, a)| (n.to_string(), a)).collect(),
            regions,
            successors: Vec::new(),
            location: self.loc.clone(),
        });
        results
    }

    fn one(&mut self, name: &str, operands: &[&V], ty: Type, attributes: Vec<(&str, Attr)>) -> V {
        self.op(name, operands, vec![ty], attributes).remove(0)
    }

    /// `stablehlo.<name>` of one operand, of its type.
    pub fn un(&mut self, name: &str, x: &V) -> V {
        self.one(&format!("stablehlo.{name}"), &[x], x.ty.clone(), Vec::new())
    }

    /// `stablehlo.<name>` of two operands, of the first's type.
    pub fn bin(&mut self, name: &str, a: &V, b: &V) -> V {
        self.one(&format!("stablehlo.{name}"), &[a, b], a.ty.clone(), Vec::new())
    }

    /// `stablehlo.is_finite`: an `i1` tensor.
    pub fn is_finite(&mut self, x: &V) -> V {
        let ty = with_element(&x.ty, ElementType::PRED);
        self.one("stablehlo.is_finite", &[x], ty, Vec::new())
    }

    pub fn add(&mut self, a: &V, b: &V) -> V {
        self.bin("add", a, b)
    }
    pub fn sub(&mut self, a: &V, b: &V) -> V {
        self.bin("subtract", a, b)
    }
    pub fn mul(&mut self, a: &V, b: &V) -> V {
        self.bin("multiply", a, b)
    }
    pub fn div(&mut self, a: &V, b: &V) -> V {
        self.bin("divide", a, b)
    }

    /// `stablehlo.compare` (`EQ`, `LT`, ...) with the comparison type of the operands' element
    /// type (what StableHLO's default means for it): an `i1` tensor.
    pub fn cmp(&mut self, direction: &'static str, a: &V, b: &V) -> V {
        let kind = match a.element() {
            Some(e) if is_float(e) || is_complex(e) => "FLOAT",
            Some(e) if crate::ir::int_width(&Type::Scalar(e)).is_some_and(|(w, s)| s && w > 1) => "SIGNED",
            _ => "UNSIGNED",
        };
        self.compare(direction, kind, a, b)
    }

    pub fn compare(&mut self, direction: &'static str, kind: &'static str, a: &V, b: &V) -> V {
        let ty = with_element(&a.ty, ElementType::PRED);
        self.one(
            "stablehlo.compare",
            &[a, b],
            ty,
            vec![
                ("comparison_direction", Attr::Enum(EnumAttr { kind: "comparison_direction", value: direction })),
                ("compare_type", Attr::Enum(EnumAttr { kind: "comparison_type", value: kind })),
            ],
        )
    }

    pub fn select(&mut self, p: &V, a: &V, b: &V) -> V {
        self.one("stablehlo.select", &[p, a, b], a.ty.clone(), Vec::new())
    }

    pub fn convert(&mut self, x: &V, e: ElementType) -> V {
        let ty = with_element(&x.ty, e);
        self.one("stablehlo.convert", &[x], ty, Vec::new())
    }

    pub fn bitcast(&mut self, x: &V, e: ElementType) -> V {
        let ty = with_element(&x.ty, e);
        self.one("stablehlo.bitcast_convert", &[x], ty, Vec::new())
    }

    /// `stablehlo.real` / `stablehlo.imag` of a complex value.
    pub fn part(&mut self, name: &str, z: &V) -> V {
        let e = real_of(z.element().unwrap_or(ElementType::F32));
        let ty = with_element(&z.ty, e);
        self.one(&format!("stablehlo.{name}"), &[z], ty, Vec::new())
    }

    pub fn complex(&mut self, re: &V, im: &V) -> V {
        let e = if re.element() == Some(ElementType::F64) { ElementType::C128 } else { ElementType::C64 };
        let ty = with_element(&re.ty, e);
        self.one("stablehlo.complex", &[re, im], ty, Vec::new())
    }

    /// A constant of `like`'s type, every element `value` (a complex one's real part; an
    /// integer's value truncated).
    pub fn konst(&mut self, like: &V, value: f64) -> V {
        let e = like.element().unwrap_or(ElementType::F32);
        let bytes = match e {
            ElementType::F16 => half::f16::from_f64(value).to_le_bytes().to_vec(),
            ElementType::BF16 => half::bf16::from_f64(value).to_le_bytes().to_vec(),
            ElementType::F32 => (value as f32).to_le_bytes().to_vec(),
            ElementType::F64 => value.to_le_bytes().to_vec(),
            ElementType::C64 => [(value as f32).to_le_bytes(), 0f32.to_le_bytes()].concat(),
            ElementType::C128 => [value.to_le_bytes(), 0f64.to_le_bytes()].concat(),
            _ => return self.konst_int(like, value as i64 as u64),
        };
        self.splat(like, &bytes)
    }

    /// A constant of `like`'s (integer or float) type whose every element has the bits `bits`
    /// (the low bits of the element's width).
    pub fn konst_int(&mut self, like: &V, bits: u64) -> V {
        let per = like.element().and_then(|e| crate::ir::dense_element_bytes(&Type::Scalar(e))).unwrap_or(8);
        let bytes = bits.to_le_bytes()[..per.min(8)].to_vec();
        let bytes = if like.element() == Some(ElementType::PRED) { vec![u8::from(bits != 0)] } else { bytes };
        self.splat(like, &bytes)
    }

    fn splat(&mut self, like: &V, element: &[u8]) -> V {
        let ty = like.ty.clone();
        match Attr::dense_splat(ty.clone(), element) {
            Ok(value) => self.one("stablehlo.constant", &[], ty, vec![("value", value)]),
            Err(e) => {
                self.error.get_or_insert_with(|| format!("a constant of {}: {e}", crate::type_text(&ty)));
                self.fresh(ty)
            }
        }
    }

    /// A rank-0 tensor type of element `e`.
    pub fn scalar_type(e: ElementType) -> Type {
        Type::Tensor(TensorType { dims: Vec::new(), element: Box::new(Type::Scalar(e)), encoding: None })
    }

    /// A fresh block argument (for a region the caller builds).
    pub fn argument(&mut self, ty: Type) -> V {
        self.fresh(ty)
    }
}
