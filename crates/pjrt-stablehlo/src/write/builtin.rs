//! The builtin-dialect encoding of a module's attributes: StableHLO's serializer leaves the
//! module op as it is (only the ops inside become VHLO), so its attributes
//! (`mhlo.num_partitions`, `jax.uses_shape_polymorphism`, and before bytecode version 5 its
//! `sym_name`) stay builtin attributes; written in VHLO's encoding, StableHLO's reader keeps
//! them as VHLO attributes (`#vhlo.integer_v1<1 : i32>`), which XLA does not read.

use super::container::{svarint, varint, Buf, Entry, BUILTIN};
use super::encode::Encoder;
use super::WriteError;
use crate::ir::{Attr, ElementType, Type};

type R<T> = Result<T, WriteError>;

impl Encoder {
    /// `a` in the builtin dialect's encoding (strings, booleans, integers, arrays, dictionaries,
    /// unit, symbol references); what has no such form here is written in VHLO's.
    pub(crate) fn module_attr(&mut self, a: &Attr) -> R<u64> {
        let mut b = Buf::default();
        match a {
            Attr::String(s) => return Ok(self.builtin_string(s)),
            Attr::Array(items) => {
                let mut refs = Vec::with_capacity(items.len());
                for x in items {
                    refs.push(self.module_attr(x)?);
                }
                varint(&mut b, 0);
                varint(&mut b, refs.len() as u64);
                for r in refs {
                    b.attr(r);
                }
            }
            Attr::Dict(entries) => {
                let mut refs = Vec::with_capacity(entries.len());
                for (k, v) in entries {
                    refs.push((self.builtin_string(k.as_bytes()), self.module_attr(v)?));
                }
                varint(&mut b, 1);
                varint(&mut b, refs.len() as u64);
                for (k, v) in refs {
                    b.attr(k);
                    b.attr(v);
                }
            }
            Attr::SymbolRef(s) => {
                let name = self.builtin_string(s.as_bytes());
                varint(&mut b, 4);
                b.attr(name);
            }
            Attr::Unit => varint(&mut b, 7),
            Attr::Bool(v) => {
                let ty = self.builtin_type(&Type::Scalar(ElementType::PRED))?;
                varint(&mut b, 8);
                b.ty(ty);
                b.push(u8::from(*v));
            }
            Attr::Integer { value, ty } if crate::ir::int_width(ty).is_some_and(|(w, _)| w > 1) => {
                let (width, _) = crate::ir::int_width(ty).unwrap_or((64, true));
                let t = self.builtin_type(ty)?;
                varint(&mut b, 8);
                b.ty(t);
                let raw = *value as u64;
                let masked = if width >= 64 { raw } else { raw & ((1u64 << width) - 1) };
                if width <= 8 {
                    b.push(masked as u8);
                } else {
                    svarint(&mut b, masked as i64);
                }
            }
            other => return self.vhlo_attr(other),
        }
        Ok(self.tables.attrs.add(Entry { dialect: BUILTIN, custom: true, bytes: b }))
    }
}
