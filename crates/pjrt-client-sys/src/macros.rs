//! The macros every declaration goes through: `opaque!` for handles, `c_enum!` for C enums,
//! `pjrt_struct!` for structs that start with `struct_size` (it implements `Args`, with the
//! header's `STRUCT_SIZE`). Declared first in `lib.rs`, so that every later module sees them.

/// Declares opaque handle types.
macro_rules! opaque {
    ($($name:ident),+ $(,)?) => {$(
        /// An opaque handle owned by the plugin.
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            _marker: ::core::marker::PhantomData<(*mut u8, ::core::marker::PhantomPinned)>,
        }
    )+};
}

/// Declares a C enum as an `i32` newtype with associated constants.
macro_rules! c_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident = $value:expr),+ $(,)? }) => {
        $(#[$m])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
        pub struct $name(pub i32);
        #[allow(non_upper_case_globals)]
        impl $name {
            $(pub const $variant: $name = $name($value);)+
        }
    };
}

/// Declares an args struct and its `STRUCT_SIZE` (offset of the last field plus its size).
///
/// The first field must be `struct_size: usize` (the pattern demands it, which is what makes the
/// `Args` impl sound); nothing else is assumed: most structs go on with `extension_start`, some
/// extension args structs do not have one and are declared as the API describes them.
macro_rules! pjrt_struct {
    ($(#[$m:meta])* $name:ident { struct_size: usize $(, $field:ident : $ty:ty)* $(,)? }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        pub struct $name { pub struct_size: usize $(, pub $field: $ty)* }
        // SAFETY: repr(C), first field `struct_size: usize` (required by the pattern), every field
        // type is valid zeroed.
        unsafe impl $crate::Args for $name {
            const STRUCT_SIZE: usize = pjrt_struct!(@size $name; struct_size: usize $(, $field : $ty)*);
        }
    };
    (@size $name:ident; $field:ident : $ty:ty) => {
        ::core::mem::offset_of!($name, $field) + ::core::mem::size_of::<$ty>()
    };
    (@size $name:ident; $field:ident : $ty:ty, $($rest:ident : $rty:ty),+) => {
        pjrt_struct!(@size $name; $($rest : $rty),+)
    };
}
