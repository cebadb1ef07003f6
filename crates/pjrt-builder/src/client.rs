//! What needs `pjrt-client` (feature `client`, on by default): the finished [`Program`], the
//! check against a [`Plugin`]'s StableHLO version, and constants from [`HostArray`]s.

use pjrt_client::{HostArray, Plugin, Program};
use pjrt_types::ElementType;

use crate::error::BuildError;
use crate::function::{Function, Value};

impl Function {
    /// The finished program, returning `outputs`: MLIR text ([`Function::to_mlir`]) as a
    /// [`Program`] with its parameters declared ([`Program::with_parameters`]), so executables
    /// check their arguments. The function stays usable (finish it again with other outputs).
    pub fn finish(&self, outputs: &[&Value<'_>]) -> Result<Program, BuildError> {
        let text = self.to_mlir(outputs)?;
        let parameters: Vec<(ElementType, Vec<i64>)> = self.parameter_types();
        Ok(Program::mlir_text(text)?.with_parameters(parameters))
    }

    /// Checks that `plugin` reads the StableHLO this function uses: its
    /// `stablehlo_current_version` must be at least [`Function::required_stablehlo_version`]
    /// ([`Function::check_version`]). A plugin that does not report its version passes (there
    /// is nothing to check against).
    pub fn check_plugin(&self, plugin: &Plugin) -> Result<(), BuildError> {
        match plugin.stablehlo_current_version() {
            Some(reads) => self.check_version(reads),
            None => Ok(()),
        }
    }

    /// A constant holding a [`HostArray`]'s values (weights read from `.npy` or safetensors
    /// files through `pjrt_formats`, say), with its element type and shape.
    pub fn constant_array(&self, array: &HostArray) -> Result<Value<'_>, BuildError> {
        self.constant_bits(array.element_type(), array.data(), array.dims())
    }
}
