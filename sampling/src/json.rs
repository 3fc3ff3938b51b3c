//! nrpt's JSON, and the one convention for the numbers JSON has no literal for: a NaN
//! is written as the string `"NaN"`, +∞ as `"inf"` and −∞ as `"-inf"`, wherever a
//! number stands (a field, an element of a list, a value inside an option); every other
//! number is a JSON number in its shortest round-trip form. Every file and every
//! `--json` line nrpt writes goes through [`to_string`] (or its siblings), and every
//! reader of nrpt's JSON through [`from_slice`] (or its siblings), which reads those three
//! strings where a number is expected, so a value reads back to the same bits.
//!
//! Why strings rather than `null` (what serde_json writes by itself): `null` cannot say
//! which of NaN, +∞ and −∞ it was, nor tell a non-finite number from an absent one (an
//! `Option` that is `None`), and the merges of shards rebuild a run's report to the byte
//! from what the shards wrote. The names are the ones Python's `float()` and NumPy
//! read. Readers also accept `null` where a field's meaning says what it stands for
//! (`E[T]` without a round trip: +∞), as the files of earlier releases have it.
//!
//! Both directions wrap serde_json's serializer and deserializer: the types themselves
//! carry no annotation. (A reader buffers an untagged enum or a flattened struct before
//! it knows the type; a number inside one is read as serde_json reads it.)
//!
//! Kept whole past 600 lines: serde's serializer and deserializer traits are long lists
//! of methods, each forwarded with the numbers renamed; its tests are at the end.

use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, Visitor};
use serde::ser::{self, Serialize, Serializer};
use serde_json::Value;

/// How nrpt writes the non-finite `x` (`"NaN"`, `"inf"`, `"-inf"`), or `None` for a
/// finite number.
pub fn name(x: f64) -> Option<&'static str> {
    if x.is_finite() {
        None
    } else if x.is_nan() {
        Some("NaN")
    } else if x > 0.0 {
        Some("inf")
    } else {
        Some("-inf")
    }
}

/// The number a name of [`name`] stands for.
pub fn named(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// `value` as one line of nrpt's JSON.
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    serde_json::to_string(&Numbers(value))
}

/// `value` as indented nrpt JSON (the files).
pub(crate) fn to_string_pretty<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    serde_json::to_string_pretty(&Numbers(value))
}

/// `value` as the bytes of one line of nrpt's JSON.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&Numbers(value))
}

/// `value` as a JSON value, its non-finite numbers as their names.
pub fn to_value<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Value> {
    serde_json::to_value(Numbers(value))
}

/// A `T` from nrpt's JSON text.
pub fn from_str<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = T::deserialize(Lenient(&mut de))?;
    de.end()?;
    Ok(value)
}

/// A `T` from nrpt's JSON bytes.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = T::deserialize(Lenient(&mut de))?;
    de.end()?;
    Ok(value)
}

/// A `T` from a JSON value of nrpt's.
pub fn from_value<T: DeserializeOwned>(value: Value) -> serde_json::Result<T> {
    T::deserialize(Lenient(value))
}

// ------------------------------------------------------------------ writing

/// A value whose non-finite numbers serialize as their names.
struct Numbers<'a, T: ?Sized>(&'a T);

impl<T: Serialize + ?Sized> Serialize for Numbers<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(Named(s))
    }
}

/// A serializer that writes non-finite numbers as their names and passes everything
/// else to `S`, through every level of nesting.
struct Named<S>(S);

impl<S: Serializer> Serializer for Named<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Named<S::SerializeSeq>;
    type SerializeTuple = Named<S::SerializeTuple>;
    type SerializeTupleStruct = Named<S::SerializeTupleStruct>;
    type SerializeTupleVariant = Named<S::SerializeTupleVariant>;
    type SerializeMap = Named<S::SerializeMap>;
    type SerializeStruct = Named<S::SerializeStruct>;
    type SerializeStructVariant = Named<S::SerializeStructVariant>;

    fn serialize_f64(self, v: f64) -> Result<S::Ok, S::Error> {
        match name(v) {
            Some(n) => self.0.serialize_str(n),
            None => self.0.serialize_f64(v),
        }
    }
    fn serialize_f32(self, v: f32) -> Result<S::Ok, S::Error> {
        match name(f64::from(v)) {
            Some(n) => self.0.serialize_str(n),
            None => self.0.serialize_f32(v),
        }
    }
    fn serialize_bool(self, v: bool) -> Result<S::Ok, S::Error> {
        self.0.serialize_bool(v)
    }
    fn serialize_i8(self, v: i8) -> Result<S::Ok, S::Error> {
        self.0.serialize_i8(v)
    }
    fn serialize_i16(self, v: i16) -> Result<S::Ok, S::Error> {
        self.0.serialize_i16(v)
    }
    fn serialize_i32(self, v: i32) -> Result<S::Ok, S::Error> {
        self.0.serialize_i32(v)
    }
    fn serialize_i64(self, v: i64) -> Result<S::Ok, S::Error> {
        self.0.serialize_i64(v)
    }
    fn serialize_i128(self, v: i128) -> Result<S::Ok, S::Error> {
        self.0.serialize_i128(v)
    }
    fn serialize_u8(self, v: u8) -> Result<S::Ok, S::Error> {
        self.0.serialize_u8(v)
    }
    fn serialize_u16(self, v: u16) -> Result<S::Ok, S::Error> {
        self.0.serialize_u16(v)
    }
    fn serialize_u32(self, v: u32) -> Result<S::Ok, S::Error> {
        self.0.serialize_u32(v)
    }
    fn serialize_u64(self, v: u64) -> Result<S::Ok, S::Error> {
        self.0.serialize_u64(v)
    }
    fn serialize_u128(self, v: u128) -> Result<S::Ok, S::Error> {
        self.0.serialize_u128(v)
    }
    fn serialize_char(self, v: char) -> Result<S::Ok, S::Error> {
        self.0.serialize_char(v)
    }
    fn serialize_str(self, v: &str) -> Result<S::Ok, S::Error> {
        self.0.serialize_str(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<S::Ok, S::Error> {
        self.0.serialize_bytes(v)
    }
    fn serialize_none(self) -> Result<S::Ok, S::Error> {
        self.0.serialize_none()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<S::Ok, S::Error> {
        self.0.serialize_some(&Numbers(v))
    }
    fn serialize_unit(self) -> Result<S::Ok, S::Error> {
        self.0.serialize_unit()
    }
    fn serialize_unit_struct(self, name: &'static str) -> Result<S::Ok, S::Error> {
        self.0.serialize_unit_struct(name)
    }
    fn serialize_unit_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
    ) -> Result<S::Ok, S::Error> {
        self.0.serialize_unit_variant(name, index, variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0.serialize_newtype_struct(name, &Numbers(v))
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0
            .serialize_newtype_variant(name, index, variant, &Numbers(v))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        self.0.serialize_seq(len).map(Named)
    }
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        self.0.serialize_tuple(len).map(Named)
    }
    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        self.0.serialize_tuple_struct(name, len).map(Named)
    }
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        self.0
            .serialize_tuple_variant(name, index, variant, len)
            .map(Named)
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        self.0.serialize_map(len).map(Named)
    }
    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        self.0.serialize_struct(name, len).map(Named)
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        self.0
            .serialize_struct_variant(name, index, variant, len)
            .map(Named)
    }
    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// The compound serializers whose one method takes an element: each forwards it with its
/// numbers named.
macro_rules! forward_elements {
    ($($trait:ident::$method:ident),* $(,)?) => {$(
        impl<S: ser::$trait> ser::$trait for Named<S> {
            type Ok = S::Ok;
            type Error = S::Error;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), S::Error> {
                self.0.$method(&Numbers(v))
            }
            fn end(self) -> Result<S::Ok, S::Error> {
                self.0.end()
            }
        }
    )*};
}

forward_elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
);

impl<S: ser::SerializeMap> ser::SerializeMap for Named<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), S::Error> {
        self.0.serialize_key(&Numbers(k))
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), S::Error> {
        self.0.serialize_value(&Numbers(v))
    }
    fn end(self) -> Result<S::Ok, S::Error> {
        self.0.end()
    }
}

/// The struct serializers: each forwards a field with its numbers named.
macro_rules! forward_fields {
    ($($trait:ident),* $(,)?) => {$(
        impl<S: ser::$trait> ser::$trait for Named<S> {
            type Ok = S::Ok;
            type Error = S::Error;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                v: &T,
            ) -> Result<(), S::Error> {
                self.0.serialize_field(key, &Numbers(v))
            }
            fn skip_field(&mut self, key: &'static str) -> Result<(), S::Error> {
                self.0.skip_field(key)
            }
            fn end(self) -> Result<S::Ok, S::Error> {
                self.0.end()
            }
        }
    )*};
}

forward_fields!(SerializeStruct, SerializeStructVariant);

// ------------------------------------------------------------------ reading

/// A deserializer that reads the names of non-finite numbers where a number is
/// expected and passes everything else to `D`, through every level of nesting.
struct Lenient<D>(D);

/// Forwards the `deserialize_*` methods that take only a visitor.
macro_rules! lenient_forward {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
            self.0.$method(Lenient(visitor))
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Lenient<D> {
    type Error = D::Error;

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(Number(visitor))
    }
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(Number(visitor))
    }
    lenient_forward! {
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_char deserialize_str deserialize_string
        deserialize_bytes deserialize_byte_buf deserialize_option deserialize_unit
        deserialize_seq deserialize_map deserialize_identifier deserialize_ignored_any
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_unit_struct(name, Lenient(visitor))
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_newtype_struct(name, Lenient(visitor))
    }
    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple(len, Lenient(visitor))
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple_struct(name, len, Lenient(visitor))
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_struct(name, fields, Lenient(visitor))
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_enum(name, variants, Lenient(visitor))
    }
    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// Forwards the `visit_*` methods that take a plain value.
macro_rules! visit_forward {
    ($($method:ident: $ty:ty),* $(,)?) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
            self.0.$method(v)
        }
    )*};
}

/// A visitor (wrapped as [`Lenient`]) whose nested values are read leniently too.
impl<'de, V: Visitor<'de>> Visitor<'de> for Lenient<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }
    visit_forward! {
        visit_bool: bool, visit_i8: i8, visit_i16: i16, visit_i32: i32, visit_i64: i64,
        visit_i128: i128, visit_u8: u8, visit_u16: u16, visit_u32: u32, visit_u64: u64,
        visit_u128: u128, visit_f32: f32, visit_f64: f64, visit_char: char,
        visit_str: &str, visit_borrowed_str: &'de str, visit_string: String,
        visit_bytes: &[u8], visit_borrowed_bytes: &'de [u8], visit_byte_buf: Vec<u8>,
    }
    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none()
    }
    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit()
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.0.visit_some(Lenient(d))
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.0.visit_newtype_struct(Lenient(d))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(Lenient(seq))
    }
    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(Lenient(map))
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.0.visit_enum(Lenient(data))
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Lenient<S> {
    type Value = S::Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Lenient(d))
    }
}

impl<'de, A: de::SeqAccess<'de>> de::SeqAccess<'de> for Lenient<A> {
    type Error = A::Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Lenient(seed))
    }
    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: de::MapAccess<'de>> de::MapAccess<'de> for Lenient<A> {
    type Error = A::Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(Lenient(seed))
    }
    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(Lenient(seed))
    }
    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: de::EnumAccess<'de>> de::EnumAccess<'de> for Lenient<A> {
    type Error = A::Error;
    type Variant = Lenient<A::Variant>;
    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), A::Error> {
        let (value, variant) = self.0.variant_seed(Lenient(seed))?;
        Ok((value, Lenient(variant)))
    }
}

impl<'de, A: de::VariantAccess<'de>> de::VariantAccess<'de> for Lenient<A> {
    type Error = A::Error;
    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Lenient(seed))
    }
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Lenient(visitor))
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.struct_variant(fields, Lenient(visitor))
    }
}

/// The visitor of a number: a JSON number, or the name of a non-finite one.
struct Number<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for Number<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number, or \"NaN\", \"inf\" or \"-inf\"")
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<V::Value, E> {
        self.0.visit_f64(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<V::Value, E> {
        self.0.visit_u64(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<V::Value, E> {
        self.0.visit_i64(v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<V::Value, E> {
        match named(v) {
            Some(x) => self.0.visit_f64(x),
            None => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Serialize};

    #[derive(Debug, Serialize, Deserialize)]
    enum Shape {
        Point(f64),
        Pair(f32, f64),
        Named { at: f64 },
    }

    #[derive(Debug, Serialize, Deserialize)]
    struct Report {
        x: f64,
        y: f32,
        list: Vec<f64>,
        maybe: Option<f64>,
        absent: Option<f64>,
        nested: BTreeMap<String, Vec<Option<f32>>>,
        shapes: Vec<Shape>,
        count: u64,
        label: String,
    }

    /// The bits of a number, every NaN alike.
    fn bits(x: f64) -> u64 {
        if x.is_nan() { 1 } else { x.to_bits() }
    }

    #[test]
    fn non_finite_numbers_are_written_as_names_and_read_back_to_their_bits() {
        let r = Report {
            x: f64::NAN,
            y: f32::NEG_INFINITY,
            list: vec![0.1, -0.0, f64::INFINITY, 5e-324, f64::NAN, f64::MAX],
            maybe: Some(f64::NEG_INFINITY),
            absent: None,
            nested: BTreeMap::from([("a".into(), vec![Some(f32::NAN), None, Some(1.5)])]),
            shapes: vec![
                Shape::Point(f64::INFINITY),
                Shape::Pair(f32::NAN, 2.0),
                Shape::Named { at: f64::NAN },
            ],
            count: 7,
            label: "inf".into(),
        };
        let text = super::to_string(&r).unwrap();
        assert!(
            text.starts_with(r#"{"x":"NaN","y":"-inf","list":[0.1,-0.0,"inf",5e-324,"NaN","#),
            "{text}"
        );
        assert!(text.contains(r#""maybe":"-inf","absent":null"#), "{text}");
        for back in [
            super::from_str::<Report>(&text).unwrap(),
            super::from_slice::<Report>(super::to_string_pretty(&r).unwrap().as_bytes()).unwrap(),
            super::from_value::<Report>(super::to_value(&r).unwrap()).unwrap(),
        ] {
            assert_eq!(bits(back.x), 1);
            assert_eq!(back.y, f32::NEG_INFINITY);
            let got: Vec<u64> = back.list.iter().map(|&x| bits(x)).collect();
            let want: Vec<u64> = r.list.iter().map(|&x| bits(x)).collect();
            assert_eq!(got, want);
            assert_eq!(back.maybe, Some(f64::NEG_INFINITY));
            assert_eq!(back.absent, None);
            let a = &back.nested["a"];
            assert!(a[0].unwrap().is_nan() && a[1].is_none() && a[2] == Some(1.5));
            assert!(matches!(back.shapes[0], Shape::Point(x) if x == f64::INFINITY));
            assert!(matches!(back.shapes[1], Shape::Pair(a, b) if a.is_nan() && b == 2.0));
            assert!(matches!(back.shapes[2], Shape::Named { at } if at.is_nan()));
            assert_eq!((back.count, back.label.as_str()), (7, "inf"));
        }
    }

    #[test]
    fn only_the_three_names_stand_for_numbers() {
        #[derive(Debug, Deserialize)]
        struct One {
            #[allow(dead_code)]
            x: f64,
        }
        for bad in [
            r#"{"x":"nan"}"#,
            r#"{"x":"Infinity"}"#,
            r#"{"x":"1.5"}"#,
            r#"{"x":null}"#,
        ] {
            let e = super::from_str::<One>(bad).unwrap_err().to_string();
            assert!(e.contains("expected a number, or \"NaN\""), "{bad}: {e}");
        }
        assert_eq!(super::named("-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(super::name(1.0), None);
    }
}
