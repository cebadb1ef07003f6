//! VHLO, StableHLO's versioned dialect: which op versions exist in which StableHLO version
//! and what each holds ([`versions`], `ops`), and how the reader turns VHLO ops back into
//! StableHLO (`legalize`).

mod legalize;
mod ops;
pub(crate) mod versions;

pub(crate) use legalize::{legalize, property_names, split_inherent};
