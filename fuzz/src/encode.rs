//! The inverse of `arbitrary`'s decoding, for the types of this crate: turns a chosen input
//! into the bytes the fuzz target decodes back into it, so the seed corpus can be written from
//! structured values (the property tests' strategies) instead of opaque bytes.
//!
//! `arbitrary` 1.x reads integers as little-endian bytes (zeros once the data runs out), a
//! `bool` as a byte's low bit, an `Option` as a bool then the value, an array element by
//! element, a struct field by field, and an enum's variant as `(u32 * variants) >> 32`.
//! [`encode_checked`] decodes what it wrote and panics if that is not the value it started
//! from, so a format change in a future `arbitrary` shows up when the seeds are generated.

use arbitrary::{Arbitrary, Unstructured};

/// Writes a value as the bytes `arbitrary` decodes into it.
pub trait Encode {
    fn encode(&self, out: &mut Vec<u8>);
}

macro_rules! encode_integers {
    ($($ty:ty),*) => {
        $(impl Encode for $ty {
            fn encode(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        })*
    };
}

encode_integers!(u8, u16, u32, u64, i32);

impl Encode for bool {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
}

impl<T: Encode> Encode for Option<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        self.is_some().encode(out);
        if let Some(value) = self {
            value.encode(out);
        }
    }
}

impl<T: Encode, const N: usize> Encode for [T; N] {
    fn encode(&self, out: &mut Vec<u8>) {
        for value in self {
            value.encode(out);
        }
    }
}

/// Writes a struct's fields, or a variant's, in declaration order: the order `arbitrary`'s
/// derive reads them in. One list per type, so an encoder reads like the declaration it
/// mirrors.
pub fn fields(out: &mut Vec<u8>, fields: &[&dyn Encode]) {
    for field in fields {
        field.encode(out);
    }
}

/// Writes variant `index` of an enum with `count` variants, then its `fields` (none for a
/// unit variant). The discriminant is the smallest `u32` `v` with `(v * count) >> 32 == index`.
pub fn variant(out: &mut Vec<u8>, index: usize, count: usize, variant_fields: &[&dyn Encode]) {
    assert!(index < count);
    let value = ((index as u64) << 32).div_ceil(count as u64);
    debug_assert_eq!((value * count as u64) >> 32, index as u64);
    (value as u32).encode(out);
    fields(out, variant_fields);
}

/// `Encode` for a struct: its fields in declaration order, which the list must follow. The
/// struct is destructured whole, so a field cannot be left out of its encoder.
macro_rules! encode_struct {
    ($ty:ident { $($field:ident),* $(,)? }) => {
        impl $crate::encode::Encode for $ty {
            fn encode(&self, out: &mut Vec<u8>) {
                let $ty { $($field),* } = self;
                $crate::encode::fields(out, &[$($field),*]);
            }
        }
    };
}
pub(crate) use encode_struct;

/// Encodes `value` and checks that the fuzz target's decoding (`arbitrary_take_rest`, as
/// `libfuzzer-sys` calls it) gives it back.
pub fn encode_checked<T>(value: &T) -> Vec<u8>
where
    T: Encode + for<'a> Arbitrary<'a> + PartialEq + std::fmt::Debug,
{
    let mut bytes = Vec::new();
    value.encode(&mut bytes);
    let decoded = T::arbitrary_take_rest(Unstructured::new(&bytes)).expect("encoded bytes decode");
    assert_eq!(&decoded, value, "the encoding does not round-trip through arbitrary");
    bytes
}
