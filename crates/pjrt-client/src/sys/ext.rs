//! Extension structs (declared by hand, gated by each extension's own struct_size).

#![allow(non_camel_case_types, non_snake_case, missing_docs)]
