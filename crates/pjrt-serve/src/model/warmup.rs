//! Warm-up: before a model is served (`READY`), every input signature compiled at load (a
//! static model's, a batched model's buckets, the buckets of `symbolic_dims` size lists, and
//! the samples' shapes) runs once on every replica, with zeros or with the samples its
//! `config.json` names, so that its first request costs what its tenth does.

use std::time::{Duration, Instant};

use pjrt_client::HostArray;
use pjrt_formats::jax_export::Dim;
use pjrt_formats::npy::NpyArray;

use super::{load_error, RequestArray, ServedModel, TensorSpec};
use crate::config::{DimBound, ShapeLimits};
use crate::error::{context, ServeError};
use crate::statistics::Phases;

/// The most buckets `symbolic_dims` size lists may make (their product): more are compiled on
/// their first request, as any other shape.
pub(crate) const MAX_SIZE_BUCKETS: usize = 32;

/// What a warm-up did.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Warmed {
    /// Its executions (compiled signatures × replicas).
    pub executions: usize,
    /// Their time in all.
    pub elapsed: Duration,
}

/// The request shapes of the buckets `limits`' size lists make for request inputs of `dims`:
/// every assignment of the listed sizes to the symbolic dimensions, when each symbolic
/// dimension is a name with a size list and they make at most [`MAX_SIZE_BUCKETS`]; else none.
pub(crate) fn size_buckets(dims: &[&[Dim]], limits: &ShapeLimits) -> Vec<Vec<Vec<i64>>> {
    let mut symbols: Vec<(&str, &[i64])> = Vec::new();
    for d in dims.iter().flat_map(|d| d.iter()) {
        let Dim::Symbolic(name) = d else { continue };
        if symbols.iter().any(|(s, _)| s == name) {
            continue;
        }
        match limits.dims.iter().find(|(n, _)| n == name) {
            Some((_, DimBound::Sizes(sizes))) => symbols.push((name, sizes)),
            _ => return Vec::new(),
        }
    }
    let count = symbols.iter().try_fold(1usize, |n, (_, sizes)| n.checked_mul(sizes.len()));
    if symbols.is_empty() || count.is_none_or(|n| n > MAX_SIZE_BUCKETS) {
        return Vec::new();
    }
    let mut buckets = Vec::new();
    for k in 0..count.unwrap_or(0) {
        let mut rest = k;
        let mut value = Vec::with_capacity(symbols.len());
        for (name, sizes) in &symbols {
            value.push((*name, sizes[rest % sizes.len()]));
            rest /= sizes.len();
        }
        let size_of = |d: &Dim| match d {
            Dim::Fixed(n) => *n,
            Dim::Symbolic(s) => value.iter().find(|(n, _)| n == s).map_or(0, |(_, v)| *v),
        };
        buckets.push(dims.iter().map(|d| d.iter().map(size_of).collect()).collect());
    }
    buckets
}

impl ServedModel {
    /// Reads the warm-up samples of its config, one per request input named (by its name), as
    /// its datatype: checked against the input's type and fixed dimensions.
    pub(super) fn read_samples(&self) -> Result<Vec<Option<HostArray>>, ServeError> {
        let mut samples: Vec<Option<HostArray>> = vec![None; self.inputs.len()];
        for (name, path) in &self.config.warmup.samples {
            let names: Vec<&str> = self.inputs.iter().map(|s| s.name.as_str()).collect();
            let Some(k) = self.inputs.iter().position(|s| &s.name == name) else {
                return Err(load_error(
                    &self.config,
                    format!("warmup samples name {name:?}, which is no input a request gives ({})", names.join(", ")),
                ));
            };
            let what = || format!("warmup sample {name:?} ({})", path.display());
            let spec: &TensorSpec = &self.inputs[k];
            let array = NpyArray::read(path)
                .map_err(pjrt_formats::Error::from)
                .and_then(|a| a.to_host_array(Some(spec.datatype.element_type())))
                .map_err(|e| load_error(&self.config, context(what(), e)))?;
            let fits = array.dims().len() == spec.shape.len()
                && array.dims().iter().zip(&spec.shape).all(|(&n, &want)| want < 0 || n == want);
            if !fits {
                return Err(load_error(
                    &self.config,
                    format!(
                        "{}: shape {:?}, but input {name:?} takes {:?} (-1: any size)",
                        what(),
                        array.dims(),
                        spec.shape
                    ),
                ));
            }
            samples[k] = Some(array);
        }
        Ok(samples)
    }

    /// Runs every signature compiled at load once on every replica: each request input zeros,
    /// or its sample (`samples`, in the order of [`ServedModel::inputs`]) where the shapes agree.
    pub(super) fn warm_up(&self, samples: &[Option<HostArray>]) -> Result<Warmed, ServeError> {
        let started = Instant::now();
        let mut executions = 0;
        for signature in self.signatures.pinned() {
            for replica in 0..self.replicas.len() {
                let mut inputs = Vec::with_capacity(self.request_inputs.len());
                for (k, &i) in self.request_inputs.iter().enumerate() {
                    let (element_type, dims) = &signature[i];
                    let array = match samples.get(k).and_then(Option::as_ref) {
                        Some(sample) if sample.element_type() == *element_type && sample.dims() == &dims[..] => {
                            sample.clone()
                        }
                        _ => zeros(*element_type, dims).map_err(|e| load_error(&self.config, e))?,
                    };
                    inputs.push(RequestArray::from(array));
                }
                self.run(inputs, replica, &mut Phases::default())
                    .map_err(|e| load_error(&self.config, context(format!("warm-up of {signature:?}"), e)))?;
                executions += 1;
            }
        }
        Ok(Warmed { executions, elapsed: started.elapsed() })
    }

    /// Its warm-up at load, if it warmed up.
    pub(crate) fn warmed(&self) -> Option<Warmed> {
        self.warmed
    }

    /// How long its warm-up took, in milliseconds (0 without one).
    pub fn warmup_ms(&self) -> f64 {
        self.warmed.map_or(0.0, |w| w.elapsed.as_secs_f64() * 1e3)
    }
}

/// An array of zeros (a value of every element type).
fn zeros(element_type: pjrt_client::ElementType, dims: &[i64]) -> Result<HostArray, pjrt_client::Error> {
    let count = dims.iter().try_fold(1usize, |n, &d| usize::try_from(d).ok().and_then(|d| n.checked_mul(d)));
    let bytes = count.and_then(|c| element_type.host_bytes(c)).unwrap_or(0);
    HostArray::new(element_type, dims.to_vec(), vec![0; bytes])
}
