//! [`Outputs`]: the outputs of a single-device execution, small enough to return by value
//! cheaply, and without a heap allocation for a single output.

use std::fmt;
use std::iter::FusedIterator;
use std::ops::{Deref, DerefMut};

use smallvec::SmallVec;

use crate::buffer::Buffer;

/// How many outputs [`Outputs`] holds inline; more take one allocation of the exact size.
///
/// One, not more: `Outputs` is moved by value at every return and `?`, and each extra inline
/// buffer adds 80 bytes to every move. Measured with `pjrt bench dispatch` (a one-output program,
/// alternating builds): 4 inline made the safe call 1.5–2.5% slower than 1 inline, where the
/// programs with several outputs pay one `malloc` of a few hundred bytes instead.
const INLINE_OUTPUTS: usize = 1;

/// The outputs of an execution on one device, in the program's output order, as returned by
/// [`crate::LoadedExecutable::execute`].
///
/// It is a slice of [`Buffer`]s (`outputs[0]`, `outputs.len()`, `for b in &outputs`), iterates
/// by value (`for b in outputs`, `outputs.into_iter().next()`), and becomes a `Vec` with
/// [`Outputs::into_vec`] (without copying when there are several). A single output is held
/// inline, so returning it allocates nothing; several take one allocation of the exact size.
///
/// ```
/// # use pjrt_client::{Buffer, CompileOptions, ExecuteOptions, Program};
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
/// let program = Program::mlir_text(r#"
///   func.func @main(%a: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
///     %0 = stablehlo.add %a, %a : tensor<2xf32>
///     %1 = stablehlo.multiply %a, %a : tensor<2xf32>
///     return %0, %1 : tensor<2xf32>, tensor<2xf32>
///   }"#)?;
/// let exe = client.compile(&program, &CompileOptions::new())?;
/// let x = client.upload(&[3f32, 4.], &[2])?;
/// let outputs = exe.execute(&[&x], &ExecuteOptions::new())?;
/// assert_eq!(outputs.len(), 2);
/// assert_eq!(outputs[1].to_vec::<f32>()?, [9., 16.]);
/// for output in &outputs {
///     assert_eq!(output.dimensions()?, [2]);
/// }
/// // By value: move the buffers out (here the first; the rest are dropped).
/// let sum: Buffer = exe.execute(&[&x], &ExecuteOptions::new())?.into_iter().next().expect("one output at least");
/// assert_eq!(sum.to_vec::<f32>()?, [6., 8.]);
/// let all: Vec<Buffer> = exe.execute(&[&x], &ExecuteOptions::new())?.into_vec();
/// assert_eq!(all.len(), 2);
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub struct Outputs(SmallVec<[Buffer; INLINE_OUTPUTS]>);

impl Outputs {
    /// No outputs yet, with room for `count` (one is held inline; more are allocated at once,
    /// so that pushing them never reallocates).
    pub(crate) fn with_capacity(count: usize) -> Outputs {
        Outputs(SmallVec::with_capacity(count))
    }

    pub(crate) fn push(&mut self, buffer: Buffer) {
        self.0.push(buffer);
    }

    /// The outputs as a `Vec` (allocates only when they were held inline).
    pub fn into_vec(self) -> Vec<Buffer> {
        self.0.into_vec()
    }
}

impl From<Vec<Buffer>> for Outputs {
    /// Keeps the vector's allocation.
    fn from(buffers: Vec<Buffer>) -> Outputs {
        Outputs(SmallVec::from_vec(buffers))
    }
}

impl From<Outputs> for Vec<Buffer> {
    fn from(outputs: Outputs) -> Vec<Buffer> {
        outputs.into_vec()
    }
}

impl Deref for Outputs {
    type Target = [Buffer];

    fn deref(&self) -> &[Buffer] {
        &self.0
    }
}

impl DerefMut for Outputs {
    fn deref_mut(&mut self) -> &mut [Buffer] {
        &mut self.0
    }
}

impl fmt::Debug for Outputs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl IntoIterator for Outputs {
    type Item = Buffer;
    type IntoIter = OutputsIntoIter;

    fn into_iter(self) -> OutputsIntoIter {
        OutputsIntoIter(self.0.into_iter())
    }
}

impl<'a> IntoIterator for &'a Outputs {
    type Item = &'a Buffer;
    type IntoIter = std::slice::Iter<'a, Buffer>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// The by-value iterator of [`Outputs`] (see there); the buffers it has not yielded are dropped
/// with it.
pub struct OutputsIntoIter(smallvec::IntoIter<[Buffer; INLINE_OUTPUTS]>);

impl Iterator for OutputsIntoIter {
    type Item = Buffer;

    fn next(&mut self) -> Option<Buffer> {
        self.0.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl DoubleEndedIterator for OutputsIntoIter {
    fn next_back(&mut self) -> Option<Buffer> {
        self.0.next_back()
    }
}

impl ExactSizeIterator for OutputsIntoIter {}

impl FusedIterator for OutputsIntoIter {}

impl fmt::Debug for OutputsIntoIter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.as_slice()).finish()
    }
}
