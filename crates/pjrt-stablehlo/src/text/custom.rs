//! The custom ("pretty") forms of ops: what `mlir_module()` and `as_text()` print for
//! `builtin.module`, `func`, the StableHLO ops with an assembly format, `chlo` and `sdy`.
//! Each form is read into the generic op it stands for, with the attributes StableHLO's own
//! parser would give it (`dims = [0]` of `broadcast_in_dim` is `broadcast_dimensions`).

use std::sync::Arc;

use super::attrs::i64_attr;
use super::{is_isolated, ArgDecl, Parser, Parts};
use crate::error::Result;
use crate::ir::{Attr, Block, Dim, ElementType, Location, Op, Region, TensorType, Type};

fn i32_attr(v: i64) -> Attr {
    Attr::Integer { value: v, ty: Type::Scalar(ElementType::S32) }
}

/// The rank-0 tensor of a tensor type's element type (a reduction body's argument type).
fn scalar_of(t: &Type) -> Type {
    match t {
        Type::Tensor(t) => Type::Tensor(TensorType { dims: vec![], element: t.element.clone(), encoding: None }),
        other => other.clone(),
    }
}

impl Parser<'_> {
    /// An op in its custom form, after its name.
    pub(crate) fn custom_op(&mut self, name: &str, at: usize, results: usize) -> Result<Parts> {
        let full = match name {
            "module" => "builtin.module",
            "func" => "func.func",
            "return" => "func.return",
            "call" => "func.call",
            n => n,
        };
        let base = full.strip_prefix("stablehlo.");
        match (full, base) {
            ("builtin.module", _) => self.module_form(),
            ("func.func", _) => self.func_form(),
            ("func.call", _) => {
                let mut p = Parts::new(full);
                let callee = self.expect_symbol()?;
                self.expect("(")?;
                p.operands = self.use_list(")")?;
                self.expect(")")?;
                p.attr("callee", Attr::SymbolRef(callee));
                self.attr_dict_into(&mut p)?;
                self.expect(":")?;
                self.functional_into(&mut p)?;
                Ok(p)
            }
            ("func.return" | "stablehlo.return" | "sdy.return" | "chlo.return", _) => {
                let mut p = Parts::new(full);
                p.operands = self.use_list_until_colon()?;
                self.attr_dict_into(&mut p)?;
                if self.eat(":") {
                    let ty_at = self.pos;
                    let types = self.type_list()?;
                    self.check_operand_types(ty_at, &p.operands, &types)?;
                } else if !p.operands.is_empty() {
                    return Err(self.expected("`:` and the returned values' types"));
                }
                Ok(p)
            }
            (_, Some("constant")) => {
                let mut p = Parts::new(full);
                self.attr_dict_into(&mut p)?;
                let value = self.attr()?;
                let ty = match &value {
                    Attr::Dense { ty, .. } => ty.clone(),
                    _ => return Err(self.error_at(at, "a constant whose value is not a dense<...> : tensor<...>")),
                };
                p.attributes.insert(0, ("value".into(), value));
                p.results = vec![ty];
                Ok(p)
            }
            (_, Some("compare")) => {
                let mut p = Parts::new(full);
                let dir_at = self.pos;
                let dir = self.expect_bare_id("a comparison direction")?;
                let dir = crate::names::enum_value("comparison_direction", dir)
                    .ok_or_else(|| self.error_at(dir_at, format!("`{dir}` is not a comparison direction")))?;
                self.expect(",")?;
                p.operands.push(self.use_value()?);
                self.expect(",")?;
                p.operands.push(self.use_value()?);
                let mut ty = None;
                if self.eat(",") {
                    let t_at = self.pos;
                    let t = self.expect_bare_id("a comparison type")?;
                    ty = Some(
                        crate::names::enum_value("comparison_type", t)
                            .ok_or_else(|| self.error_at(t_at, format!("`{t}` is not a comparison type")))?,
                    );
                }
                p.attr("comparison_direction", Attr::Enum(dir));
                if let Some(t) = ty {
                    p.attr("compare_type", Attr::Enum(t));
                }
                self.attr_dict_into(&mut p)?;
                self.expect(":")?;
                self.trailing_types(&mut p, results)?;
                Ok(p)
            }
            (_, Some("slice")) => {
                let mut p = Parts::new(full);
                p.operands.push(self.use_value()?);
                self.expect("[")?;
                let (mut start, mut limit, mut stride) = (vec![], vec![], vec![]);
                if !self.eat("]") {
                    loop {
                        start.push(self.expect_i64("a start index")?);
                        self.expect(":")?;
                        limit.push(self.expect_i64("a limit index")?);
                        stride.push(if self.eat(":") { self.expect_i64("a stride")? } else { 1 });
                        if !self.eat(",") {
                            break;
                        }
                    }
                    self.expect("]")?;
                }
                p.attr("start_indices", Attr::I64Array(start));
                p.attr("limit_indices", Attr::I64Array(limit));
                p.attr("strides", Attr::I64Array(stride));
                self.attr_dict_into(&mut p)?;
                self.expect(":")?;
                self.trailing_types(&mut p, results)?;
                Ok(p)
            }
            (_, Some("get_tuple_element")) => {
                let mut p = Parts::new(full);
                p.operands.push(self.use_value()?);
                self.expect("[")?;
                let i = self.expect_i64("a tuple index")?;
                self.expect("]")?;
                p.attr("index", i32_attr(i));
                self.attr_dict_into(&mut p)?;
                self.expect(":")?;
                self.trailing_types(&mut p, results)?;
                Ok(p)
            }
            (_, Some("custom_call")) => {
                let mut p = Parts::new(full);
                let target = self.expect_symbol()?;
                self.expect("(")?;
                p.operands = self.use_list(")")?;
                self.expect(")")?;
                p.attr("call_target_name", Attr::String(target.into_bytes()));
                self.attr_dict_into(&mut p)?;
                self.expect(":")?;
                self.functional_into(&mut p)?;
                Ok(p)
            }
            (_, Some("composite")) => {
                let mut p = Parts::new(full);
                let name = self.string()?;
                p.operands = self.use_list_until_colon()?;
                p.attr("name", Attr::String(name));
                self.attr_dict_into(&mut p)?;
                self.expect(":")?;
                self.functional_into(&mut p)?;
                Ok(p)
            }
            (_, Some("convolution")) => self.convolution_form(full, results),
            (_, Some("reduce")) => self.reduce_form(full),
            (_, Some("while")) => self.while_form(full),
            ("sdy.mesh", _) => {
                let mut p = Parts::new(full);
                let name = self.expect_symbol()?;
                self.expect("=")?;
                let body = self.balanced_angles()?.to_string();
                p.attr("mesh", Attr::Sdy { mnemonic: "mesh", body });
                p.attr("sym_name", Attr::String(name.into_bytes()));
                self.attr_dict_into(&mut p)?;
                Ok(p)
            }
            ("sdy.sharding_constraint" | "sdy.reshard", _) => {
                let mut p = Parts::new(full);
                p.operands.push(self.use_value()?);
                let body = self.balanced_angles()?.to_string();
                p.attr("sharding", Attr::Sdy { mnemonic: "sharding", body });
                self.attr_dict_into(&mut p)?;
                self.expect(":")?;
                self.trailing_types(&mut p, results)?;
                Ok(p)
            }
            ("sdy.manual_computation", _) => self.manual_computation_form(full),
            ("chlo.scan", _) => self.scan_form(full),
            (n, Some(_)) | (n, None) if n.starts_with("stablehlo.") || n.starts_with("chlo.") => {
                self.keyword_form(n, results)
            }
            _ => Err(self.error_at(
                at,
                format!("`{name}` is not an op this parser knows in custom form; write it in the generic form (\"{name}\"(...) : (...) -> ...)"),
            )),
        }
    }

    /// `{...}` before the types, if the form has one.
    fn attr_dict_into(&mut self, p: &mut Parts) -> Result<()> {
        if self.at("{") {
            p.attributes.extend(self.dict()?);
        }
        Ok(())
    }

    /// `attributes {...}`, if given.
    fn attributes_keyword_into(&mut self, p: &mut Parts) -> Result<()> {
        if self.eat_keyword("attributes") {
            p.attributes.extend(self.dict()?);
        }
        Ok(())
    }

    /// Values up to `:` (or an attribute dictionary, or the end of the op).
    fn use_list_until_colon(&mut self) -> Result<Vec<(u32, Type)>> {
        if self.peek() != Some(b'%') {
            return Ok(Vec::new());
        }
        self.use_list(":")
    }

    /// `T1, T2, ...`.
    fn type_list(&mut self) -> Result<Vec<Type>> {
        let mut v = Vec::new();
        loop {
            v.push(self.ty()?);
            if !self.eat(",") {
                break;
            }
        }
        Ok(v)
    }

    /// `(A, B) -> R`: checks the operands and takes the results.
    fn functional_into(&mut self, p: &mut Parts) -> Result<()> {
        let at = self.pos;
        let (inputs, outputs) = self.function_parts()?;
        self.check_operand_types(at, &p.operands, &inputs)?;
        p.results = outputs;
        Ok(())
    }

    /// The types after `:` in the forms StableHLO's ops share: `(A, B) -> R`; one type `T`
    /// for every operand and result; `T1, T2` for each operand (and as many results);
    /// `A -> R` (chlo); `P, T` for `select`'s predicate and values.
    fn trailing_types(&mut self, p: &mut Parts, results: usize) -> Result<()> {
        if self.at("(") {
            return self.functional_into(p);
        }
        let at = self.pos;
        let list = self.type_list()?;
        if self.eat("->") {
            self.check_operand_types(at, &p.operands, &list)?;
            p.results = if self.at("(") { self.paren_types()? } else { vec![self.ty()?] };
            return Ok(());
        }
        let base = p.name.rsplit('.').next().unwrap_or("");
        if base == "select" && list.len() == 2 && p.operands.len() == 3 {
            let want = [list[0].clone(), list[1].clone(), list[1].clone()];
            self.check_operand_types(at, &p.operands, &want)?;
            p.results = vec![list[1].clone()];
            return Ok(());
        }
        if base == "tuple" && list.len() == 1 {
            p.results = list;
            return Ok(());
        }
        if base == "complex" && list.len() == 1 {
            // `complex %re, %im : tensor<3xcomplex<f32>>` names the result's type only.
            p.results = list;
            return Ok(());
        }
        if list.len() == 1 {
            let want = vec![list[0].clone(); p.operands.len()];
            self.check_operand_types(at, &p.operands, &want)?;
            p.results = vec![list[0].clone(); results];
            return Ok(());
        }
        self.check_operand_types(at, &p.operands, &list)?;
        p.results = if results == 0 { vec![] } else { list };
        Ok(())
    }

    /// `module @name attributes {...} { ops }`.
    fn module_form(&mut self) -> Result<Parts> {
        let mut p = Parts::new("builtin.module");
        if let Some(name) = self.symbol()? {
            p.attr("sym_name", Attr::String(name.into_bytes()));
        }
        self.attributes_keyword_into(&mut p)?;
        p.regions.push(self.region_scoped(true, Some(vec![]))?);
        Ok(p)
    }

    /// `func.func public @f(%arg0: T {attrs} loc(..), ...) -> (R {attrs}, ...) attributes {...} { body }`.
    fn func_form(&mut self) -> Result<Parts> {
        let mut p = Parts::new("func.func");
        let visibility = ["public", "private", "nested"].into_iter().find(|v| self.eat_keyword(v));
        let name = self.expect_symbol()?;
        self.expect("(")?;
        let mut args = Vec::new();
        let mut arg_attrs = Vec::new();
        if !self.eat(")") {
            loop {
                self.ws();
                let at = self.pos;
                let n = self.value_name()?.ok_or_else(|| self.expected("an argument (`%name: type`)"))?.to_string();
                self.expect(":")?;
                let ty = self.ty()?;
                arg_attrs.push(if self.at("{") { self.dict()? } else { vec![] });
                let loc = self.opt_location()?;
                args.push(ArgDecl { name: n, at, ty, loc });
                if !self.eat(",") {
                    break;
                }
            }
            self.expect(")")?;
        }
        let mut outputs = Vec::new();
        let mut res_attrs = Vec::new();
        if self.eat("->") {
            if self.eat("(") {
                if !self.eat(")") {
                    loop {
                        outputs.push(self.ty()?);
                        res_attrs.push(if self.at("{") { self.dict()? } else { vec![] });
                        if !self.eat(",") {
                            break;
                        }
                    }
                    self.expect(")")?;
                }
            } else {
                outputs.push(self.ty()?);
                res_attrs.push(vec![]);
            }
        }
        let inputs: Vec<Type> = args.iter().map(|a| a.ty.clone()).collect();
        let dicts = |v: Vec<Vec<(String, Attr)>>| Attr::Array(v.into_iter().map(Attr::Dict).collect());
        if arg_attrs.iter().any(|d| !d.is_empty()) {
            p.attr("arg_attrs", dicts(arg_attrs));
        }
        p.attr("function_type", Attr::Type(Type::Function { inputs, outputs }));
        if res_attrs.iter().any(|d| !d.is_empty()) {
            p.attr("res_attrs", dicts(res_attrs));
        }
        p.attr("sym_name", Attr::String(name.into_bytes()));
        if let Some(v) = visibility {
            p.attr("sym_visibility", Attr::String(v.as_bytes().to_vec()));
        }
        self.attributes_keyword_into(&mut p)?;
        if self.at("{") {
            p.regions.push(self.region_scoped(true, Some(args))?);
        } else {
            // A declaration: an empty body.
            p.regions.push(Region::default());
        }
        Ok(p)
    }

    /// Operands and `keyword = value` pairs, in parentheses or not, then the attribute
    /// dictionary and the types: the form of most StableHLO and chlo ops.
    fn keyword_form(&mut self, name: &str, results: usize) -> Result<Parts> {
        let mut p = Parts::new(name);
        let base = name.split_once('.').map_or(name, |(_, b)| b);
        let parens = self.eat("(");
        let mut dot = None;
        loop {
            match self.peek() {
                Some(b'%') => p.operands.push(self.use_value()?),
                Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                    let save = self.pos;
                    let kw = self.bare_id().unwrap_or_default();
                    if !self.eat("=") {
                        self.pos = save;
                        break;
                    }
                    self.keyword_arg(&mut p, base, kw, &mut dot)?;
                }
                _ => break,
            }
            if !self.eat(",") {
                break;
            }
        }
        if parens {
            self.expect(")")?;
        }
        if let Some(fields) = dot {
            p.attributes.insert(0, ("dot_dimension_numbers".into(), Attr::Struct { mnemonic: "dot", fields }));
        }
        self.attr_dict_into(&mut p)?;
        self.expect(":")?;
        self.trailing_types(&mut p, results)?;
        Ok(p)
    }

    /// `kw = value` of op `base`, as the attribute(s) it stands for.
    fn keyword_arg(
        &mut self,
        p: &mut Parts,
        base: &str,
        kw: &str,
        dot: &mut Option<Vec<(&'static str, Attr)>>,
    ) -> Result<()> {
        let at = self.pos;
        match (base, kw) {
            ("broadcast_in_dim" | "dynamic_broadcast_in_dim", "dims") => {
                p.attr("broadcast_dimensions", Attr::I64Array(self.int_list()?))
            }
            ("transpose", "dims") => p.attr("permutation", Attr::I64Array(self.int_list()?)),
            ("reverse", "dims") => p.attr("dimensions", Attr::I64Array(self.int_list()?)),
            (_, "sizes") => p.attr("slice_sizes", Attr::I64Array(self.int_list()?)),
            ("iota" | "dynamic_iota", "dim") => p.attr("iota_dimension", i64_attr(self.expect_i64("a dimension")?)),
            (_, "dim") => p.attr("dimension", i64_attr(self.expect_i64("a dimension")?)),
            ("pad" | "dynamic_pad", "low") => p.attr("edge_padding_low", Attr::I64Array(self.int_list()?)),
            ("pad" | "dynamic_pad", "high") => p.attr("edge_padding_high", Attr::I64Array(self.int_list()?)),
            ("pad" | "dynamic_pad", "interior") => p.attr("interior_padding", Attr::I64Array(self.int_list()?)),
            ("fft", "type") => p.attr("fft_type", self.enum_word("fft_type")?),
            ("fft", "length") => p.attr("fft_length", Attr::I64Array(self.int_list()?)),
            ("rng_bit_generator", "algorithm") => p.attr("rng_algorithm", self.enum_word("rng_algorithm")?),
            ("rng", "distribution") => p.attr("rng_distribution", self.enum_word("rng_distribution")?),
            ("reduce_precision", "format") => {
                let f = self.expect_bare_id("a format (`e5m10`)")?;
                let parsed = f
                    .strip_prefix('e')
                    .and_then(|r| r.split_once('m'))
                    .and_then(|(e, m)| Some((e.parse::<i64>().ok()?, m.parse::<i64>().ok()?)));
                let (e, m) = parsed.ok_or_else(|| self.error_at(at, format!("`{f}` is not a format like `e5m10`")))?;
                p.attr("exponent_bits", i32_attr(e));
                p.attr("mantissa_bits", i32_attr(m));
            }
            ("dot_general", "batching_dims" | "contracting_dims") => {
                let lhs = self.int_list()?;
                self.expect_keyword("x")?;
                let rhs = self.int_list()?;
                let fields = dot.get_or_insert_with(|| {
                    [
                        "lhs_batching_dimensions",
                        "rhs_batching_dimensions",
                        "lhs_contracting_dimensions",
                        "rhs_contracting_dimensions",
                    ]
                    .into_iter()
                    .map(|n| (n, Attr::I64Array(vec![])))
                    .collect()
                });
                let first = if kw == "batching_dims" { 0 } else { 2 };
                fields[first].1 = Attr::I64Array(lhs);
                fields[first + 1].1 = Attr::I64Array(rhs);
            }
            (_, "precision") => {
                self.expect("[")?;
                let mut v = Vec::new();
                if !self.eat("]") {
                    loop {
                        v.push(self.enum_word("precision")?);
                        if !self.eat(",") {
                            break;
                        }
                    }
                    self.expect("]")?;
                }
                p.attr("precision_config", Attr::Array(v));
            }
            ("dot_general", "algorithm") => {
                self.ws();
                // `<lhs_precision_type = f32, ...>`: the struct's body without its name.
                let body_at = self.pos;
                let _ = body_at;
                p.attr("algorithm", self.struct_body("dot_algorithm")?);
            }
            _ => {
                // A keyword this parser has no rule for is kept under its own name.
                let v = self.attr()?;
                p.attr(kw, v);
            }
        }
        Ok(())
    }

    /// A bare enum value (`FFT`, `DEFAULT`) of enum `kind`.
    fn enum_word(&mut self, kind: &str) -> Result<Attr> {
        let at = self.pos;
        let w = self.expect_bare_id(&format!("a {kind} value"))?;
        crate::names::enum_value(kind, w)
            .map(Attr::Enum)
            .ok_or_else(|| self.error_at(at, format!("`{w}` is not a {kind} value")))
    }

    /// `(%lhs, %rhs) dim_numbers = LAYOUT, window = {...} {attrs} : (A, B) -> R`.
    fn convolution_form(&mut self, name: &str, results: usize) -> Result<Parts> {
        let mut p = Parts::new(name);
        self.expect("(")?;
        p.operands = self.use_list(")")?;
        self.expect(")")?;
        self.expect_keyword("dim_numbers")?;
        self.expect("=")?;
        let fields = self.conv_layout()?;
        p.attr("dimension_numbers", Attr::Struct { mnemonic: "conv", fields });
        if self.eat(",") {
            self.expect_keyword("window")?;
            self.expect("=")?;
            self.expect("{")?;
            if !self.eat("}") {
                loop {
                    let at = self.pos;
                    let k = self.expect_bare_id("a window field (stride, pad, lhs_dilate, rhs_dilate, reverse)")?;
                    self.expect("=")?;
                    match k {
                        "stride" => p.attr("window_strides", Attr::I64Array(self.int_list()?)),
                        "lhs_dilate" => p.attr("lhs_dilation", Attr::I64Array(self.int_list()?)),
                        "rhs_dilate" => p.attr("rhs_dilation", Attr::I64Array(self.int_list()?)),
                        "pad" => {
                            self.expect("[")?;
                            let mut data = Vec::new();
                            let mut rows = 0u64;
                            loop {
                                let pair = self.int_list()?;
                                if pair.len() != 2 {
                                    return Err(self.error_at(at, "a padding entry that is not `[low, high]`"));
                                }
                                for v in pair {
                                    data.extend_from_slice(&v.to_le_bytes());
                                }
                                rows += 1;
                                if !self.eat(",") {
                                    break;
                                }
                            }
                            self.expect("]")?;
                            let ty = Type::Tensor(TensorType {
                                dims: vec![Dim::Fixed(rows), Dim::Fixed(2)],
                                element: Box::new(Type::Scalar(ElementType::S64)),
                                encoding: None,
                            });
                            let padding =
                                Attr::dense_elements(ty, data).map_err(|e| self.error_at(at, e.to_string()))?;
                            p.attr("padding", padding);
                        }
                        "reverse" => {
                            self.expect("[")?;
                            let mut v = Vec::new();
                            loop {
                                v.push(if self.eat_keyword("true") || self.eat("1") {
                                    true
                                } else if self.eat_keyword("false") || self.eat("0") {
                                    false
                                } else {
                                    return Err(self.expected("`true` or `false`"));
                                });
                                if !self.eat(",") {
                                    break;
                                }
                            }
                            self.expect("]")?;
                            p.attr("window_reversal", Attr::BoolArray(v));
                        }
                        _ => return Err(self.error_at(at, format!("`{k}` is not a window field"))),
                    }
                    if !self.eat(",") {
                        break;
                    }
                }
                self.expect("}")?;
            }
        }
        self.attr_dict_into(&mut p)?;
        self.expect(":")?;
        self.trailing_types(&mut p, results)?;
        Ok(p)
    }

    /// `(%x init: %c), ... applies stablehlo.add across dimensions = [0] : (...) -> ...`, or
    /// the same with `reducer(%a: T, %b: T) (...) { body }` after the types.
    fn reduce_form(&mut self, name: &str) -> Result<Parts> {
        let mut p = Parts::new(name);
        let mut inputs = Vec::new();
        let mut inits = Vec::new();
        loop {
            self.expect("(")?;
            inputs.push(self.use_value()?);
            self.expect_keyword("init")?;
            self.expect(":")?;
            inits.push(self.use_value()?);
            self.expect(")")?;
            if !self.eat(",") {
                break;
            }
        }
        let n = inputs.len();
        p.operands = inputs.into_iter().chain(inits).collect();
        let applies = if self.eat_keyword("applies") {
            self.ws();
            let at = self.pos;
            Some((at, self.expect_bare_id("the op the reduction applies")?.to_string()))
        } else {
            None
        };
        self.expect_keyword("across")?;
        self.expect_keyword("dimensions")?;
        self.expect("=")?;
        p.attr("dimensions", Attr::I64Array(self.int_list()?));
        self.attr_dict_into(&mut p)?;
        self.expect(":")?;
        self.functional_into(&mut p)?;
        let init_types: Vec<Type> = p.operands[n..].iter().map(|(_, t)| scalar_of(t)).collect();
        if let Some((at, op)) = applies {
            if n != 1 {
                return Err(self.error_at(at, "`applies` with more than one input"));
            }
            p.regions.push(self.applied_body(&op, &init_types[0]));
        } else {
            self.expect_keyword("reducer")?;
            let mut groups = Vec::new();
            for _ in 0..n {
                self.expect("(")?;
                let a = self.arg_decl()?;
                self.expect(",")?;
                let b = self.arg_decl()?;
                self.expect(")")?;
                groups.push((a, b));
            }
            let (firsts, seconds): (Vec<_>, Vec<_>) = groups.into_iter().unzip();
            let args = firsts.into_iter().chain(seconds).collect();
            p.regions.push(self.region_scoped(false, Some(args))?);
        }
        Ok(p)
    }

    /// `%name: type loc(...)`.
    fn arg_decl(&mut self) -> Result<ArgDecl> {
        self.ws();
        let at = self.pos;
        let name = self.value_name()?.ok_or_else(|| self.expected("an argument (`%name: type`)"))?.to_string();
        self.expect(":")?;
        let ty = self.ty()?;
        let loc = self.opt_location()?;
        Ok(ArgDecl { name, at, ty, loc })
    }

    /// The body `applies OP` stands for: `^bb0(%a: T, %b: T): %r = OP(%a, %b); return %r`.
    fn applied_body(&mut self, op: &str, ty: &Type) -> Region {
        let a = self.new_value(ty.clone());
        let b = self.new_value(ty.clone());
        let r = self.new_value(ty.clone());
        let loc = Arc::new(Location::Unknown);
        let apply = Op {
            name: op.to_string(),
            operands: vec![a.id, b.id],
            results: vec![r.clone()],
            attributes: vec![],
            regions: vec![],
            successors: vec![],
            location: loc.clone(),
        };
        let ret = Op {
            name: "stablehlo.return".into(),
            operands: vec![r.id],
            results: vec![],
            attributes: vec![],
            regions: vec![],
            successors: vec![],
            location: loc,
        };
        Region { blocks: vec![Block { args: vec![a, b], ops: vec![apply, ret], arg_locations: Vec::new() }] }
    }

    /// `(%iterArg = %x, ...) : T, ... attributes {...} cond { ... } do { ... }`.
    fn while_form(&mut self, name: &str) -> Result<Parts> {
        let mut p = Parts::new(name);
        self.expect("(")?;
        let mut names = Vec::new();
        if !self.eat(")") {
            loop {
                self.ws();
                let at = self.pos;
                let n = self.value_name()?.ok_or_else(|| self.expected("`%name = %value`"))?.to_string();
                self.expect("=")?;
                p.operands.push(self.use_value()?);
                names.push((n, at));
                if !self.eat(",") {
                    break;
                }
            }
            self.expect(")")?;
        }
        let mut types = Vec::new();
        if self.eat(":") {
            let at = self.pos;
            types = self.type_list()?;
            self.check_operand_types(at, &p.operands, &types)?;
        }
        self.attributes_keyword_into(&mut p)?;
        let decls = |types: &[Type]| -> Vec<ArgDecl> {
            names
                .iter()
                .zip(types)
                .map(|((n, at), t)| ArgDecl { name: n.clone(), at: *at, ty: t.clone(), loc: None })
                .collect()
        };
        self.expect_keyword("cond")?;
        p.regions.push(self.region_scoped(false, Some(decls(&types)))?);
        self.expect_keyword("do")?;
        p.regions.push(self.region_scoped(false, Some(decls(&types)))?);
        p.results = types;
        Ok(p)
    }

    /// `(%a) in_shardings=[<...>] out_shardings=[<...>] manual_axes={"x"} (%arg: T) { ... } : (A) -> R`.
    fn manual_computation_form(&mut self, name: &str) -> Result<Parts> {
        let mut p = Parts::new(name);
        self.expect("(")?;
        p.operands = self.use_list(")")?;
        self.expect(")")?;
        for (kw, attr, mnemonic) in [
            ("in_shardings", "in_shardings", "sharding_per_value"),
            ("out_shardings", "out_shardings", "sharding_per_value"),
            ("manual_axes", "manual_axes", "manual_axes"),
        ] {
            self.expect_keyword(kw)?;
            self.expect("=")?;
            let open = if kw == "manual_axes" { b'{' } else { b'[' };
            let text = self.balanced(open)?;
            let body = if kw == "manual_axes" { text.to_string() } else { format!("<{text}>") };
            p.attr(attr, Attr::Sdy { mnemonic, body });
        }
        self.expect("(")?;
        let mut args = Vec::new();
        if !self.eat(")") {
            loop {
                args.push(self.arg_decl()?);
                if !self.eat(",") {
                    break;
                }
            }
            self.expect(")")?;
        }
        p.regions.push(self.region_scoped(is_isolated(name), Some(args))?);
        self.attr_dict_into(&mut p)?;
        self.expect(":")?;
        self.functional_into(&mut p)?;
        Ok(p)
    }

    /// `(%inputs) inits(%inits) dimension=0 attributes {...} { ^bb0(...): ... } : (I..., C...) -> (O..., C...)`:
    /// chlo.scan as ChloOps.cpp prints it, with the segment sizes its parser adds (inputs and
    /// inits; outputs and carries, as many carries as inits).
    fn scan_form(&mut self, name: &str) -> Result<Parts> {
        let mut p = Parts::new(name);
        self.expect("(")?;
        let inputs = self.use_list(")")?;
        self.expect(")")?;
        self.expect_keyword("inits")?;
        self.expect("(")?;
        let inits = self.use_list(")")?;
        self.expect(")")?;
        self.expect_keyword("dimension")?;
        self.expect("=")?;
        let dimension = self.expect_i64("the scanned dimension")?;
        let (n_inputs, n_inits) = (inputs.len(), inits.len());
        p.operands = inputs;
        p.operands.extend(inits);
        p.attr("dimension", i64_attr(dimension));
        self.attributes_keyword_into(&mut p)?;
        p.regions.push(self.region_scoped(false, None)?);
        self.expect(":")?;
        let at = self.pos;
        self.functional_into(&mut p)?;
        let Some(n_outputs) = p.results.len().checked_sub(n_inits) else {
            return Err(self.error_at(at, "chlo.scan has fewer results than carries (one per init)"));
        };
        p.attr("operandSegmentSizes", Attr::Opaque(format!("array<i32: {n_inputs}, {n_inits}>")));
        p.attr("resultSegmentSizes", Attr::Opaque(format!("array<i32: {n_outputs}, {n_inits}>")));
        Ok(p)
    }
}
