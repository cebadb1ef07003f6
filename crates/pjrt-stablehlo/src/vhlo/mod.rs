//! VHLO, StableHLO's versioned dialect: the one table of which op versions, attributes and
//! types exist in which StableHLO version and what each op version holds (`table`, used by
//! the reader and the writer alike), the versions read and written ([`versions`]), and how the
//! reader turns VHLO ops back into StableHLO (`legalize`).

mod legalize;
mod table;
pub(crate) mod versions;

pub(crate) use legalize::{legalize, property_names, split_inherent};
pub(crate) use table::{
    default_of, enum_by_code, enum_by_kind, introduced, op_versions, scalar_by_code, scalar_by_element, DefaultValue,
};
