//! RFC 8785 canonical JSON written straight from a `Serialize` value ([`super::serialized`]):
//! no `serde_json::Value` of it is built first (for a goal's projection of 1 000 items that
//! tree, and its sorting, cost as much as the rest of `goal show`).
//!
//! Each object's members are written as they come and, when their keys did not come in the
//! order of their UTF-16 code units, put in that order as the object ends; arrays, strings
//! and integers are written as they come. A number that
//! is not an integer of at most 2^53 in magnitude (RFC 8785 spells it from its double, which
//! this writer does not do), bytes, and tuple and struct variants are refused: the caller then takes the long way.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde::ser::{self, Serialize};

/// The canonical bytes of `value`, without the members of its top-level object named in
/// `leave_out`; `None` when `value` holds something this writer does not spell (see the
/// module's doc).
pub(super) fn to_vec<T: Serialize + ?Sized>(value: &T, leave_out: &[&str]) -> Option<Vec<u8>> {
    to_vec_as(value, leave_out, &[])
}

/// [`to_vec`], with each member `to` of the top-level object named in `same_as` (`(to,
/// from)`) not serialized but written with the bytes of member `from`, which the caller
/// knows to be equal to it; `None` also when there is no member `from`.
pub(super) fn to_vec_as<T: Serialize + ?Sized>(
    value: &T,
    leave_out: &[&str],
    same_as: &[(&str, &str)],
) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    value
        .serialize(Writer {
            out: &mut out,
            top: Top { leave_out, same_as },
        })
        .ok()?;
    Some(out)
}

/// What applies to the top-level object only: the members left out, and those written as
/// copies of another ([`to_vec_as`]). Empty for every value below it.
#[derive(Clone, Copy, Default)]
struct Top<'k> {
    leave_out: &'k [&'k str],
    same_as: &'k [(&'k str, &'k str)],
}

/// Why a value has no canonical form here.
#[derive(Debug)]
pub(super) struct Unsupported;

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a value RFC 8785 spells in a way this writer does not")
    }
}

impl std::error::Error for Unsupported {}

impl ser::Error for Unsupported {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Unsupported
    }
}

/// Writes one value into `out`; `top` applies to the object it is, if it is one.
struct Writer<'a, 'k> {
    out: &'a mut Vec<u8>,
    top: Top<'k>,
}

fn string(out: &mut Vec<u8>, s: &str) {
    // Most strings have nothing to escape: written as they are.
    if !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        return;
    }
    // serde_json escapes as RFC 8785 does: `\"`, `\\`, `\b\f\n\r\t`, other controls as
    // `\u00xx` in lower case, everything else as itself.
    let _ = serde_json::to_writer(&mut *out, s);
}

fn integer(out: &mut Vec<u8>, n: impl Into<i128>) -> Result<(), Unsupported> {
    const EXACT: i128 = 1 << 53;
    let n = n.into();
    if n.abs() > EXACT {
        return Err(Unsupported);
    }
    out.extend_from_slice(n.to_string().as_bytes());
    Ok(())
}

/// An array being written: whether it has an element yet.
struct Array<'a> {
    out: &'a mut Vec<u8>,
    any: bool,
}

impl Array<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        if self.any {
            self.out.push(b',');
        }
        self.any = true;
        value.serialize(Writer {
            out: self.out,
            top: Top::default(),
        })
    }

    fn end(self) {
        self.out.push(b']');
    }
}

/// An object being written. Its members go straight into `out`, each at its place when the
/// keys come in order; the members of an object whose keys did not are put in order once
/// it ends (one move of its bytes, not a buffer per member).
struct Object<'a, 'k> {
    out: &'a mut Vec<u8>,
    top: Top<'k>,
    /// Where the first member starts in `out` (just after the `{`).
    start: usize,
    /// Each member's key, where it starts in `out` (its key's opening quote) and where its
    /// value does.
    members: Vec<(Cow<'static, str>, usize, usize)>,
    /// The members to write as copies of another, as `(key, the other's key)`.
    copies: Vec<(Cow<'static, str>, &'k str)>,
    /// Whether the keys so far came in order.
    sorted: bool,
    /// Whether every key so far compares as bytes do ([`key_order`]).
    narrow: bool,
    key: Option<Cow<'static, str>>,
}

/// The order of RFC 8785: keys as sequences of UTF-16 code units. UTF-8 bytes sort as code
/// points do, and code points as UTF-16 units do but for U+E000..=U+FFFF against U+10000
/// and above: keys without those (`narrow`: no byte from 0xEE up) compare as bytes, cheaper.
fn key_order(a: &str, b: &str, narrow: bool) -> Ordering {
    if narrow {
        a.cmp(b)
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

fn is_narrow(key: &str) -> bool {
    key.bytes().all(|b| b < 0xEE)
}

impl Object<'_, '_> {
    fn member<T: Serialize + ?Sized>(
        &mut self,
        key: Cow<'static, str>,
        value: &T,
    ) -> Result<(), Unsupported> {
        if self.top.leave_out.contains(&key.as_ref()) {
            return Ok(());
        }
        if let Some(&(_, from)) = self.top.same_as.iter().find(|(to, _)| *to == key) {
            self.copies.push((key, from));
            return Ok(());
        }
        let at = self.key(&key);
        let value_at = self.out.len();
        value.serialize(Writer {
            out: &mut *self.out,
            top: Top::default(),
        })?;
        self.members.push((key, at, value_at));
        Ok(())
    }

    /// Writes the comma before a member and its key; where the member starts.
    fn key(&mut self, key: &str) -> usize {
        self.narrow = self.narrow && is_narrow(key);
        if let Some((last, ..)) = self.members.last() {
            self.out.push(b',');
            if self.sorted && key_order(last, key, self.narrow) == Ordering::Greater {
                self.sorted = false;
            }
        }
        let at = self.out.len();
        string(self.out, key);
        self.out.push(b':');
        at
    }

    fn end(mut self) -> Result<(), Unsupported> {
        for (key, from) in std::mem::take(&mut self.copies) {
            let i = self
                .members
                .iter()
                .position(|(k, ..)| k == from)
                .ok_or(Unsupported)?;
            let value_at = self.members[i].2;
            let value_end = match self.members.get(i + 1) {
                Some(&(_, next, _)) => next - 1,
                None => self.out.len(),
            };
            let at = self.key(&key);
            let copy_at = self.out.len();
            self.out.extend_from_within(value_at..value_end);
            self.members.push((key, at, copy_at));
        }
        if !self.sorted {
            // Each member's bytes, `key:value` without the comma after it, in key order.
            let written = self.out.split_off(self.start);
            let ends: Vec<usize> = self
                .members
                .iter()
                .skip(1)
                .map(|&(_, at, _)| at - self.start - 1)
                .chain(std::iter::once(written.len()))
                .collect();
            let mut order: Vec<usize> = (0..self.members.len()).collect();
            let narrow = self.narrow;
            order.sort_by(|&a, &b| key_order(&self.members[a].0, &self.members[b].0, narrow));
            for (n, &i) in order.iter().enumerate() {
                if n > 0 {
                    self.out.push(b',');
                }
                let from = self.members[i].1 - self.start;
                self.out.extend_from_slice(&written[from..ends[i]]);
            }
        }
        self.out.push(b'}');
        Ok(())
    }
}

/// `Writer`'s integer methods: each writes its integer ([`integer`]).
macro_rules! integers {
    ($($method:ident: $ty:ty),*) => {$(
        fn $method(self, v: $ty) -> Result<(), Unsupported> {
            integer(self.out, v)
        }
    )*};
}

/// `Key`'s integer methods: each spells its integer as serde_json spells such a key.
macro_rules! key_integers {
    ($($method:ident: $ty:ty),*) => {$(
        fn $method(self, v: $ty) -> Result<String, Unsupported> {
            Ok(v.to_string())
        }
    )*};
}

/// A map key: a string, or what serde_json writes as one.
struct Key;

impl ser::Serializer for Key {
    type Ok = String;
    type Error = Unsupported;
    type SerializeSeq = ser::Impossible<String, Unsupported>;
    type SerializeTuple = ser::Impossible<String, Unsupported>;
    type SerializeTupleStruct = ser::Impossible<String, Unsupported>;
    type SerializeTupleVariant = ser::Impossible<String, Unsupported>;
    type SerializeMap = ser::Impossible<String, Unsupported>;
    type SerializeStruct = ser::Impossible<String, Unsupported>;
    type SerializeStructVariant = ser::Impossible<String, Unsupported>;

    fn serialize_str(self, v: &str) -> Result<String, Unsupported> {
        Ok(v.to_owned())
    }
    fn serialize_char(self, v: char) -> Result<String, Unsupported> {
        Ok(v.to_string())
    }
    fn serialize_bool(self, v: bool) -> Result<String, Unsupported> {
        Ok(v.to_string())
    }
    fn serialize_i64(self, v: i64) -> Result<String, Unsupported> {
        Ok(v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<String, Unsupported> {
        Ok(v.to_string())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<String, Unsupported> {
        Ok(variant.to_owned())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<String, Unsupported> {
        value.serialize(self)
    }
    key_integers!(
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32
    );
    fn serialize_f32(self, _: f32) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_f64(self, _: f64) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_none(self) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_unit(self) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Unsupported> {
        Err(Unsupported)
    }
}

impl<'a, 'k> ser::Serializer for Writer<'a, 'k> {
    type Ok = ();
    type Error = Unsupported;
    type SerializeSeq = Array<'a>;
    type SerializeTuple = Array<'a>;
    type SerializeTupleStruct = Array<'a>;
    type SerializeTupleVariant = ser::Impossible<(), Unsupported>;
    type SerializeMap = Object<'a, 'k>;
    type SerializeStruct = Object<'a, 'k>;
    type SerializeStructVariant = ser::Impossible<(), Unsupported>;

    fn serialize_bool(self, v: bool) -> Result<(), Unsupported> {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    integers!(
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64
    );
    fn serialize_i128(self, v: i128) -> Result<(), Unsupported> {
        integer(self.out, v)
    }
    fn serialize_u128(self, v: u128) -> Result<(), Unsupported> {
        integer(self.out, i128::try_from(v).map_err(|_| Unsupported)?)
    }
    fn serialize_f64(self, v: f64) -> Result<(), Unsupported> {
        // An integral double of at most 2^53 is spelled as that integer; others are not
        // written here.
        if v.fract() == 0.0 && v.abs() <= 9_007_199_254_740_992.0 {
            #[allow(clippy::cast_possible_truncation)]
            return integer(self.out, v as i64);
        }
        Err(Unsupported)
    }
    fn serialize_f32(self, v: f32) -> Result<(), Unsupported> {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_char(self, v: char) -> Result<(), Unsupported> {
        string(self.out, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), Unsupported> {
        string(self.out, v);
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), Unsupported> {
        Err(Unsupported)
    }
    fn serialize_none(self) -> Result<(), Unsupported> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Unsupported> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Unsupported> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Unsupported> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Unsupported> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Unsupported> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Unsupported> {
        // `{"variant": value}`, as serde_json writes an externally tagged variant.
        let mut object = self.serialize_map(Some(1))?;
        object.member(Cow::Borrowed(variant), value)?;
        object.end()
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Array<'a>, Unsupported> {
        self.out.push(b'[');
        Ok(Array {
            out: self.out,
            any: false,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Array<'a>, Unsupported> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Array<'a>, Unsupported> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Object<'a, 'k>, Unsupported> {
        self.out.push(b'{');
        Ok(Object {
            start: self.out.len(),
            out: self.out,
            top: self.top,
            members: Vec::with_capacity(len.unwrap_or(0)),
            copies: Vec::new(),
            sorted: true,
            narrow: true,
            key: None,
        })
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Object<'a, 'k>, Unsupported> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Unsupported> {
        Err(Unsupported)
    }
}

/// The three sequence traits of serde, all an [`Array`]: `$element` is the trait's name for
/// adding one.
macro_rules! array {
    ($($trait:ident :: $element:ident),*) => {$(
        impl ser::$trait for Array<'_> {
            type Ok = ();
            type Error = Unsupported;
            fn $element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
                self.element(value)
            }
            fn end(self) -> Result<(), Unsupported> {
                Array::end(self);
                Ok(())
            }
        }
    )*};
}

array!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field
);

impl ser::SerializeMap for Object<'_, '_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Unsupported> {
        self.key = Some(Cow::Owned(key.serialize(Key)?));
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        let key = self.key.take().ok_or(Unsupported)?;
        self.member(key, value)
    }
    fn end(self) -> Result<(), Unsupported> {
        Object::end(self)
    }
}

impl ser::SerializeStruct for Object<'_, '_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Unsupported> {
        self.member(Cow::Borrowed(key), value)
    }
    fn end(self) -> Result<(), Unsupported> {
        Object::end(self)
    }
}

#[cfg(test)]
mod tests {
    use super::{to_vec, to_vec_as};
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// What RFC 8785 makes of `value`, by the canonicalizer of JSON text.
    fn reference(value: &Value) -> Vec<u8> {
        crate::canon::canonicalize(&serde_json::to_vec(value).unwrap()).unwrap()
    }

    fn key() -> impl Strategy<Value = String> {
        // Keys whose UTF-8 and UTF-16 orders differ too (U+E000.. against U+10000..).
        prop_oneof![
            "[a-z]{0,3}",
            "[\u{0}-\u{7f}]{0,3}",
            prop::sample::select(vec![
                "\u{e000}",
                "\u{ffff}",
                "\u{10000}",
                "\u{1f600}",
                "é",
                "\u{7f}"
            ])
            .prop_map(str::to_owned),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-(1i64 << 53)..=(1i64 << 53)).prop_map(|n| json!(n)),
            any::<u32>().prop_map(|n| json!(n)),
            "\\PC{0,8}".prop_map(Value::String),
            "[\u{0}-\u{1f}\"\\\\\u{7f}\u{2028}]{0,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(key(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// JSON whose objects hold their members in any order (a `Value`'s come sorted).
    #[derive(Debug, Clone)]
    enum Shuffled {
        Leaf(Value),
        Array(Vec<Shuffled>),
        Object(Vec<(String, Shuffled)>),
    }

    impl serde::Serialize for Shuffled {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::{SerializeMap, SerializeSeq};
            match self {
                Shuffled::Leaf(v) => v.serialize(s),
                Shuffled::Array(items) => {
                    let mut seq = s.serialize_seq(Some(items.len()))?;
                    for item in items {
                        seq.serialize_element(item)?;
                    }
                    seq.end()
                }
                Shuffled::Object(members) => {
                    let mut map = s.serialize_map(Some(members.len()))?;
                    for (k, v) in members {
                        map.serialize_entry(k, v)?;
                    }
                    map.end()
                }
            }
        }
    }

    fn shuffled() -> impl Strategy<Value = Shuffled> {
        value()
            .prop_map(Shuffled::Leaf)
            .prop_recursive(3, 48, 6, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..6).prop_map(Shuffled::Array),
                    prop::collection::btree_map(key(), inner, 0..6)
                        .prop_flat_map(|m| Just(m.into_iter().collect::<Vec<_>>()).prop_shuffle())
                        .prop_map(Shuffled::Object),
                ]
            })
    }

    proptest! {
        #[test]
        fn it_writes_what_the_canonicalizer_of_text_writes(value in value()) {
            prop_assert_eq!(to_vec(&value, &[]).unwrap(), reference(&value));
        }

        #[test]
        fn it_puts_members_written_in_any_order_in_order(value in shuffled()) {
            let text = serde_json::to_vec(&value).unwrap();
            let expected = crate::canon::canonicalize(&text).unwrap();
            prop_assert_eq!(to_vec(&value, &[]).unwrap(), expected);
        }

        #[test]
        fn a_member_written_as_a_copy_is_what_serializing_it_writes(value in value(), other in value()) {
            // Copies before, between and after what they copy, beside left-out members.
            let whole = json!({ "m": value.clone(), "a": value.clone(), "z": value.clone(), "k": other.clone(), "seq": 1 });
            let expected = json!({ "m": value.clone(), "a": value.clone(), "z": value, "k": other });
            let copied = to_vec_as(&whole, &["seq"], &[("a", "m"), ("z", "m")]).unwrap();
            prop_assert_eq!(&copied, &reference(&expected));
            prop_assert_eq!(copied, to_vec(&whole, &["seq"]).unwrap());
        }

        #[test]
        fn it_leaves_out_only_the_named_top_level_members(value in value()) {
            let wrapped = json!({ "fingerprint": "x", "seq": 3, "kept": value.clone(), "inner": { "seq": 1 } });
            let expected = json!({ "kept": value, "inner": { "seq": 1 } });
            prop_assert_eq!(to_vec(&wrapped, &["fingerprint", "seq"]).unwrap(), reference(&expected));
        }
    }

    #[test]
    fn structs_options_and_variants_are_written_as_serde_json_writes_them() {
        #[derive(serde::Serialize)]
        #[serde(rename_all = "snake_case")]
        enum Kind {
            Plain,
            Wrapped(u8),
        }
        #[derive(serde::Serialize)]
        struct Item {
            zeta: Option<u8>,
            alpha: Kind,
            beta: Kind,
            #[serde(skip_serializing_if = "Option::is_none")]
            gone: Option<u8>,
            gamma: Vec<(u8, char)>,
            delta: f64,
        }
        let item = Item {
            zeta: None,
            alpha: Kind::Plain,
            beta: Kind::Wrapped(7),
            gone: None,
            gamma: vec![(1, 'é')],
            delta: 3.0,
        };
        let value = serde_json::to_value(&item).unwrap();
        assert_eq!(to_vec(&item, &[]).unwrap(), reference(&value));
    }

    #[test]
    fn a_copy_of_a_member_that_is_not_there_is_refused() {
        assert!(to_vec_as(&json!({ "a": 1, "b": 1 }), &[], &[("b", "c")]).is_none());
        assert!(to_vec_as(&json!({ "a": 1, "b": 1 }), &["a"], &[("b", "a")]).is_none());
        // Only the top-level object's members are copies.
        assert_eq!(
            to_vec_as(
                &json!({ "x": { "b": 2, "a": 1 }, "a": 1 }),
                &[],
                &[("b", "a")]
            )
            .unwrap(),
            br#"{"a":1,"x":{"a":1,"b":2}}"#
        );
    }

    #[test]
    fn what_it_does_not_spell_is_refused() {
        assert!(to_vec(&json!(0.5), &[]).is_none());
        assert!(to_vec(&json!([1, { "a": 1e300 }]), &[]).is_none());
        assert!(to_vec(&json!((1u64 << 53) + 1), &[]).is_none());
        assert_eq!(
            to_vec(&json!(1u64 << 53), &[]).unwrap(),
            b"9007199254740992"
        );
        assert_eq!(
            to_vec(&json!(-(1i64 << 53)), &[]).unwrap(),
            b"-9007199254740992"
        );
    }
}
