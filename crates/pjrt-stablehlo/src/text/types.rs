//! Types: builtin (`tensor<2x?xf32>`, `complex<f32>`, `tuple<...>`, function types),
//! `!stablehlo.token`, `!quant.uniform<...>`, other dialects' types as text, `!alias`.

use super::Parser;
use crate::error::Result;
use crate::ir::{Dim, ElementType, QuantizedType, TensorType, Type};

/// A scalar type by its MLIR name (`f32`, `i1`, `ui8`, `si32`, `bf16`, `f8E4M3FN`).
pub(crate) fn scalar_type(name: &str) -> Option<Type> {
    match name {
        "index" => return Some(Type::Index),
        "tf32" => return Some(Type::Tf32),
        "none" => return Some(Type::None),
        _ => {}
    }
    // `si32` is signed 32-bit: the same element type as signless `i32` to PJRT.
    ElementType::from_mlir_name(name).map(Type::Scalar)
}

impl Parser<'_> {
    /// A type.
    pub(crate) fn ty(&mut self) -> Result<Type> {
        self.enter()?;
        let t = self.ty_inner();
        self.leave();
        t
    }

    fn ty_inner(&mut self) -> Result<Type> {
        self.ws();
        let start = self.pos;
        match self.peek() {
            Some(b'(') => return self.function_type(),
            Some(b'!') => return self.dialect_type(),
            _ => {}
        }
        let Some(name) = self.bare_id() else {
            return Err(self.expected("a type"));
        };
        match name {
            "tensor" => self.tensor_type(),
            "memref" => {
                self.expect("<")?;
                if self.eat("*") {
                    if self.src.as_bytes().get(self.pos) != Some(&b'x') {
                        return Err(self.expected("`x` after `*`"));
                    }
                    self.pos += 1;
                    let element = Box::new(self.ty()?);
                    if self.eat(",") {
                        // A memory space: kept out of the IR's buffer type, so refuse rather than drop it.
                        return Err(self.error_at(start, "an unranked memref with a memory space is not supported"));
                    }
                    self.expect(">")?;
                    return Ok(Type::UnrankedBuffer(element));
                }
                let dims = self.dims()?;
                let element = Box::new(self.ty()?);
                if self.eat(",") {
                    // A layout: kept out of the IR's buffer type, so refuse rather than drop it.
                    return Err(self.error_at(start, "a memref with a layout is not supported"));
                }
                self.expect(">")?;
                Ok(Type::Buffer { dims, element })
            }
            "tuple" => {
                self.expect("<")?;
                let mut ts = Vec::new();
                if !self.eat(">") {
                    loop {
                        ts.push(self.ty()?);
                        if !self.eat(",") {
                            break;
                        }
                    }
                    self.expect(">")?;
                }
                Ok(Type::Tuple(ts))
            }
            "complex" => {
                self.expect("<")?;
                let at = self.pos;
                let e = self.ty()?;
                self.expect(">")?;
                match e {
                    Type::Scalar(ElementType::F32) => Ok(Type::Scalar(ElementType::C64)),
                    Type::Scalar(ElementType::F64) => Ok(Type::Scalar(ElementType::C128)),
                    _ => Err(self.error_at(at, "a complex type that is not of f32 or f64")),
                }
            }
            _ => scalar_type(name).ok_or_else(|| self.error_at(start, format!("expected a type, found `{name}`"))),
        }
    }

    /// `2x?x` (each dimension followed by `x`), read character by character: `2x3xf32`
    /// is not three tokens to MLIR's lexer either.
    fn dims(&mut self) -> Result<Vec<Dim>> {
        self.ws();
        let mut dims = Vec::new();
        loop {
            let b = self.src.as_bytes();
            let start = self.pos;
            if b.get(self.pos) == Some(&b'?') {
                self.pos += 1;
                dims.push(Dim::Dynamic);
            } else if b.get(self.pos).is_some_and(|c| c.is_ascii_digit()) {
                let mut end = self.pos;
                while b.get(end).is_some_and(|c| c.is_ascii_digit()) {
                    end += 1;
                }
                let n: u64 = self.src[self.pos..end]
                    .parse()
                    .ok()
                    .filter(|n| *n <= i64::MAX as u64)
                    .ok_or_else(|| self.error_at(start, "a dimension too large"))?;
                self.pos = end;
                dims.push(Dim::Fixed(n));
            } else {
                return Ok(dims);
            }
            if b.get(self.pos) != Some(&b'x') {
                return Err(self.expected("`x` after a dimension"));
            }
            self.pos += 1;
            if dims.len() > 1 << 16 {
                return Err(self.error_at(start, "more than 65536 dimensions"));
            }
        }
    }

    /// After `tensor`: `<2x?xf32>`, `<*xf32>`, `<?xf32, #stablehlo.bounds<8>>`.
    fn tensor_type(&mut self) -> Result<Type> {
        self.expect("<")?;
        if self.eat("*") {
            if self.src.as_bytes().get(self.pos) != Some(&b'x') {
                return Err(self.expected("`x` after `*`"));
            }
            self.pos += 1;
            let e = self.ty()?;
            self.expect(">")?;
            return Ok(Type::UnrankedTensor(Box::new(e)));
        }
        let dims = self.dims()?;
        let element = Box::new(self.ty()?);
        let encoding = if self.eat(",") { Some(Box::new(self.attr()?)) } else { None };
        self.expect(">")?;
        Ok(Type::Tensor(TensorType { dims, element, encoding }))
    }

    /// `(A, B) -> R` or `(A) -> (R, S)`.
    pub(crate) fn function_type(&mut self) -> Result<Type> {
        let (inputs, outputs) = self.function_parts()?;
        Ok(Type::Function { inputs, outputs })
    }

    /// A function type's inputs and outputs.
    pub(crate) fn function_parts(&mut self) -> Result<(Vec<Type>, Vec<Type>)> {
        let inputs = self.paren_types()?;
        self.expect("->")?;
        let outputs = if self.at("(") {
            // `() -> (tensor<f32>)`, but also `() -> (A) -> B` (a function result).
            let save = self.pos;
            let list = self.paren_types()?;
            if self.at("->") {
                self.pos = save;
                vec![self.ty()?]
            } else {
                list
            }
        } else {
            vec![self.ty()?]
        };
        Ok((inputs, outputs))
    }

    /// `(A, B)`, `()`.
    pub(crate) fn paren_types(&mut self) -> Result<Vec<Type>> {
        self.expect("(")?;
        let mut ts = Vec::new();
        if self.eat(")") {
            return Ok(ts);
        }
        loop {
            ts.push(self.ty()?);
            if !self.eat(",") {
                break;
            }
        }
        self.expect(")")?;
        Ok(ts)
    }

    /// `!stablehlo.token`, `!quant.uniform<...>`, `!alias`, or another dialect's type (text).
    fn dialect_type(&mut self) -> Result<Type> {
        let start = self.pos;
        let name = self.sigil_name();
        if name.is_empty() {
            return Err(self.error_at(start, "expected a type name after `!`"));
        }
        let b = self.src.as_bytes();
        match name {
            "stablehlo.token" => return Ok(Type::Token),
            "stablehlo.future" => {
                self.expect("<")?;
                let mut ts = Vec::new();
                loop {
                    ts.push(self.ty()?);
                    if !self.eat(",") {
                        break;
                    }
                }
                self.expect(">")?;
                return Ok(Type::Future(ts));
            }
            "quant.uniform" => return self.quantized(start),
            _ => {}
        }
        if !name.contains('.') && b.get(self.pos) != Some(&b'<') {
            return self
                .type_aliases
                .get(name)
                .cloned()
                .ok_or_else(|| self.error_at(start, format!("type alias !{name} is not defined")));
        }
        if b.get(self.pos) == Some(&b'<') {
            self.balanced_angles()?;
        }
        Ok(Type::Opaque(self.src[start..self.pos].to_string()))
    }

    /// After `!quant.uniform`: `<i8:f32, 0.5:-3>`, `<i8<-127:127>:f32:1, {0.5:0, 2.0:1}>`.
    fn quantized(&mut self, start: usize) -> Result<Type> {
        self.expect("<")?;
        // `u8`: unsigned storage, held (as MLIR holds it) in the signless `i8` with the signed
        // flag clear; `i8` is signed storage.
        let save = self.pos;
        let unsigned = match self.bare_id().and_then(|id| id.strip_prefix('u')).map(str::parse::<u32>) {
            Some(Ok(w)) => Some(w),
            _ => {
                self.pos = save;
                None
            }
        };
        let storage = match unsigned {
            Some(w) => signless_int(w).ok_or_else(|| self.error_at(save, format!("u{w} is not a storage type")))?,
            None => self.ty()?,
        };
        let Some((w, signed_storage)) = crate::ir::int_width(&storage) else {
            return Err(self.error_at(start, "a quantized type whose storage is not an integer"));
        };
        let signed_storage = signed_storage && unsigned.is_none();
        let (mut lo, mut hi) =
            if signed_storage { (-(1i64 << (w - 1)), (1i64 << (w - 1)) - 1) } else { (0, (1i64 << w) - 1) };
        if w == 64 && !signed_storage {
            hi = i64::MAX;
        }
        if self.eat("<") {
            lo = self.expect_i64("the storage minimum")?;
            self.expect(":")?;
            hi = self.expect_i64("the storage maximum")?;
            self.expect(">")?;
        }
        self.expect(":")?;
        let expressed = self.ty()?;
        let mut axis = None;
        let mut scales = Vec::new();
        let mut zero_points = Vec::new();
        if self.eat(":") {
            axis = Some(self.expect_u64("the quantized dimension")?);
            self.expect(",")?;
            self.expect("{")?;
            loop {
                let (s, z) = self.scale_zero()?;
                scales.push(s);
                zero_points.push(z);
                if !self.eat(",") {
                    break;
                }
            }
            self.expect("}")?;
        } else {
            self.expect(",")?;
            let (s, z) = self.scale_zero()?;
            scales.push(s);
            zero_points.push(z);
        }
        self.expect(">")?;
        Ok(Type::Quantized(Box::new(QuantizedType {
            flags: u64::from(signed_storage),
            storage: Box::new(storage),
            expressed: Box::new(expressed),
            axis,
            scales,
            zero_points,
            storage_min: lo,
            storage_max: hi,
        })))
    }

    /// `0.5:-3` or `0.5` (zero point 0): the scale's f64 bits and the zero point.
    fn scale_zero(&mut self) -> Result<(u64, i64)> {
        let at = self.pos;
        let s = self.float_text().ok_or_else(|| self.expected("a scale"))?;
        let v: f64 = s.parse().map_err(|_| self.error_at(at, format!("a scale `{s}` that is not a number")))?;
        let z = if self.eat(":") { self.expect_i64("a zero point")? } else { 0 };
        Ok((v.to_bits(), z))
    }
}

/// The signless integer type of `width` bits (`i8`), as a quantized type's storage.
fn signless_int(width: u32) -> Option<Type> {
    Some(Type::Scalar(match width {
        2 => ElementType::S2,
        4 => ElementType::S4,
        8 => ElementType::S8,
        16 => ElementType::S16,
        32 => ElementType::S32,
        64 => ElementType::S64,
        _ => return None,
    }))
}
