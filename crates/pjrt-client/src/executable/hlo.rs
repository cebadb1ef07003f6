//! The parts of XLA's HLO protos needed to read an entry computation's signature. Field numbers from the
//! published `hlo.proto` / `xla_data.proto`.

use crate::compile_options::proto::ShapeProto;
use pjrt_types::ElementType;

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct HloModuleProtoWithConfig {
    #[prost(message, optional, tag = "1")]
    pub hlo_module: Option<HloModuleProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct HloModuleProto {
    #[prost(message, optional, tag = "4")]
    pub host_program_shape: Option<ProgramShapeProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ProgramShapeProto {
    #[prost(message, repeated, tag = "1")]
    pub parameters: Vec<ShapeProto>,
    #[prost(message, optional, tag = "2")]
    pub result: Option<ShapeProto>,
}

/// `xla.PrimitiveType.TUPLE`.
pub(crate) const TUPLE: i32 = 13;

/// Maps `xla.PrimitiveType` to the PJRT element type, for the values known for certain.
pub(crate) fn element_type(primitive: i32) -> Option<ElementType> {
    Some(match primitive {
        1 => ElementType::PRED,
        2 => ElementType::S8,
        3 => ElementType::S16,
        4 => ElementType::S32,
        5 => ElementType::S64,
        6 => ElementType::U8,
        7 => ElementType::U16,
        8 => ElementType::U32,
        9 => ElementType::U64,
        10 => ElementType::F16,
        11 => ElementType::F32,
        12 => ElementType::F64,
        15 => ElementType::C64,
        16 => ElementType::BF16,
        18 => ElementType::C128,
        19 => ElementType::F8E5M2,
        20 => ElementType::F8E4M3FN,
        21 => ElementType::S4,
        22 => ElementType::U4,
        23 => ElementType::F8E4M3B11FNUZ,
        24 => ElementType::F8E5M2FNUZ,
        25 => ElementType::F8E4M3FNUZ,
        26 => ElementType::S2,
        27 => ElementType::U2,
        28 => ElementType::F8E4M3,
        29 => ElementType::F8E3M4,
        30 => ElementType::S1,
        31 => ElementType::U1,
        32 => ElementType::F4E2M1FN,
        33 => ElementType::F8E8M0FNU,
        // Not in the published xla_data.proto yet; read from the current CPU plugin's
        // compiled parameters (f6E3M2FN and f6E2M3FN programs).
        35 => ElementType::F6E3M2FN,
        36 => ElementType::F6E2M3FN,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hlo_primitive_types_map_to_element_types() {
        // Sub-byte parameters must be known so that `pjrt run` uploads widened arrays as them.
        let cases = [(21, ElementType::S4), (22, ElementType::U4), (26, ElementType::S2), (27, ElementType::U2)];
        let more = [(30, ElementType::S1), (31, ElementType::U1), (32, ElementType::F4E2M1FN)];
        let f6 = [(35, ElementType::F6E3M2FN), (36, ElementType::F6E2M3FN), (16, ElementType::BF16)];
        for (primitive, t) in cases.into_iter().chain(more).chain(f6) {
            assert_eq!(element_type(primitive), Some(t), "{primitive}");
        }
        assert_eq!(element_type(TUPLE), None);
        assert_eq!(element_type(34), None); // BUFFER
    }
}
