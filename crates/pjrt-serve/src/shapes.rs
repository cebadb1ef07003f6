//! Which input signatures a model has compiled, and which requests may make it compile more:
//! those compiled at load (the operator's: a static model's, a batched model's buckets) are
//! pinned, kept by a runner of their own and the compile cache on disk; those requests chose are
//! compiled outside the device's execution slots, one at a time, kept in memory only (never
//! written to the shared compile cache), at most `max_request_shapes` of them for the model's
//! life, and a symbolic dimension outside its `symbolic_dims` bound is refused before its
//! request's data is decoded.

use std::sync::Mutex;

use pjrt_client::ElementType;
use pjrt_formats::jax_export::Dim;

use crate::config::{DimBound, ShapeLimits};

/// Every input's element type and dimensions, in the model's order: what one executable is
/// compiled for.
pub(crate) type Signature = Vec<(ElementType, Vec<i64>)>;

/// A bound on one dimension of a request input.
struct Bounded {
    input: usize,
    dim: usize,
    symbol: String,
    bound: DimBound,
}

pub(crate) struct Signatures {
    pinned: Vec<Signature>,
    /// Compiled for requests, oldest first; never more than `max`.
    requested: Mutex<Vec<Signature>>,
    max: usize,
    bounds: Vec<Bounded>,
}

impl Signatures {
    /// The limits of `limits`, for request inputs whose dimensions are `dims` (as exported):
    /// every bounded name must be a symbolic dimension of one of them.
    pub fn new(limits: &ShapeLimits, dims: &[&[Dim]]) -> Result<Signatures, String> {
        let mut bounds = Vec::new();
        for (symbol, bound) in &limits.dims {
            let before = bounds.len();
            for (input, dims) in dims.iter().enumerate() {
                for (dim, d) in dims.iter().enumerate() {
                    if matches!(d, Dim::Symbolic(s) if s == symbol) {
                        bounds.push(Bounded { input, dim, symbol: symbol.clone(), bound: bound.clone() });
                    }
                }
            }
            if bounds.len() == before {
                let mut names: Vec<&str> = dims
                    .iter()
                    .flat_map(|d| d.iter())
                    .filter_map(|d| match d {
                        Dim::Symbolic(s) if s.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.') => {
                            Some(s.as_str())
                        }
                        _ => None,
                    })
                    .collect();
                names.sort_unstable();
                names.dedup();
                return Err(format!(
                    "symbolic_dims names {symbol:?}, which no input of the model has as a dimension (its symbolic \
                     dimensions: {})",
                    if names.is_empty() { "none".to_string() } else { names.join(", ") }
                ));
            }
        }
        Ok(Signatures { pinned: Vec::new(), requested: Mutex::new(Vec::new()), max: limits.max_request_shapes, bounds })
    }

    /// Keeps `signature` as one compiled at load.
    pub fn pin(&mut self, signature: Signature) {
        if !self.pinned.contains(&signature) {
            self.pinned.push(signature);
        }
    }

    /// The signatures compiled at load.
    pub fn pinned(&self) -> &[Signature] {
        &self.pinned
    }

    pub fn is_pinned(&self, signature: &Signature) -> bool {
        self.pinned.contains(signature)
    }

    /// Whether an executable is kept for `signature` (at load or for a request).
    pub fn is_compiled(&self, signature: &Signature) -> bool {
        self.is_pinned(signature) || self.requested.lock().unwrap_or_else(|e| e.into_inner()).contains(signature)
    }

    /// Whether one more signature may be compiled for requests: the message if not.
    pub fn check_room(&self, model: &str) -> Result<(), String> {
        let requested = self.requested.lock().unwrap_or_else(|e| e.into_inner());
        if requested.len() >= self.max {
            return Err(format!(
                "model {model:?} has compiled the {} input shapes requests may have it compile (max_request_shapes in its \
                 config.json): send one of the shapes it has, or reload it with a larger bound",
                self.max
            ));
        }
        Ok(())
    }

    /// Notes `signature` compiled for a request.
    pub fn add(&self, signature: Signature) {
        let mut requested = self.requested.lock().unwrap_or_else(|e| e.into_inner());
        if !requested.contains(&signature) {
            requested.push(signature);
        }
    }

    /// Checks request input `input`'s `shape` against the bounds on its symbolic dimensions.
    pub fn check_dims(&self, input: usize, name: &str, shape: &[i64]) -> Result<(), String> {
        for b in self.bounds.iter().filter(|b| b.input == input) {
            if let Some(&size) = shape.get(b.dim) {
                if !b.bound.allows(size) {
                    return Err(format!(
                        "input {name:?} has {size} for its dimension {} ({}), but the model's config allows {} \
                         (symbolic_dims)",
                        b.dim, b.symbol, b.bound
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_name_symbolic_dimensions_and_the_cap_counts_request_shapes() {
        let dims = [Dim::Symbolic("b".into()), Dim::Fixed(8)];
        let limits = ShapeLimits { dims: vec![("b".into(), DimBound::range(1, 4))], max_request_shapes: 1 };
        let signatures = Signatures::new(&limits, &[&dims]).unwrap();
        assert!(signatures.check_dims(0, "x", &[4, 8]).is_ok());
        let e = signatures.check_dims(0, "x", &[5, 8]).unwrap_err();
        assert!(e.contains("has 5 for its dimension 0 (b), but the model's config allows 1 to 4"), "{e}");
        signatures.check_room("m").unwrap();
        signatures.add(vec![(ElementType::F32, vec![2, 8])]);
        assert!(signatures.is_compiled(&vec![(ElementType::F32, vec![2, 8])]));
        assert!(signatures.check_room("m").unwrap_err().contains("max_request_shapes"));
        let wrong = ShapeLimits { dims: vec![("t".into(), DimBound::range(1, 4))], max_request_shapes: 1 };
        let e = Signatures::new(&wrong, &[&dims]).err().unwrap();
        assert!(e.contains("symbolic dimensions: b"), "{e}");
    }
}
