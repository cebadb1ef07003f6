//! Args structs for buffer_types (declared by hand from the API description).

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

#[allow(unused_imports)]
use super::types::*;
