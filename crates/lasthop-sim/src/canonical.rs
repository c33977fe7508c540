//! The canonical text of a result (docs/results.md): what Python's
//! `json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)`
//! writes for the same document, byte for byte, so that the simulator's output can be stored
//! as it comes, without being parsed and written again.
//!
//! - Object keys in code-point order (UTF-8 byte order is the same order).
//! - Integers as digits; floats as Python's `repr`: the shortest digits that read back as the
//!   same double (zmij, as serde_json uses), in positional notation when the decimal exponent
//!   `e` (value = 0.d₁d₂… × 10ᵉ) satisfies −4 < e ≤ 16, else `d.ddde±XX` with at least two
//!   exponent digits; a whole number keeps `.0`. A non-finite float is `null`, as serde_json
//!   writes it (results never hold one).
//! - Strings escaped as `ensure_ascii` does: `\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, every
//!   other character outside U+0020..U+007E as `\uXXXX` (lowercase hex, UTF-16 surrogate pairs
//!   above U+FFFF).

use serde_json::Value;
use std::fmt::Write;

/// The canonical text of `v`.
pub fn to_string(v: &Value) -> String {
    let mut out = String::with_capacity(1 << 12);
    write_value(v, &mut out);
    out
}

/// The canonical text of anything serializable, written as it is serialized: sequences stream
/// into the output, and only each object's members are held until they can be sorted (no
/// `serde_json::Value` tree of the whole document).
pub fn to_canonical<T: serde::Serialize + ?Sized>(v: &T) -> Result<String, String> {
    let mut out = String::with_capacity(1 << 16);
    v.serialize(Canon { out: &mut out }).map_err(|e| e.0)?;
    Ok(out)
}

/// A value that cannot be written (a map key that is not a string).
#[derive(Debug)]
pub struct CanonError(String);

impl std::fmt::Display for CanonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for CanonError {}
impl serde::ser::Error for CanonError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        CanonError(msg.to_string())
    }
}

struct Canon<'a> {
    out: &'a mut String,
}

/// An array being written.
struct Seq<'a> {
    out: &'a mut String,
    first: bool,
}

/// An object being written: each member goes straight into the output as `"key":value`, and
/// its span is noted; if the members did not come in key order, `finish` puts them in order
/// (one copy of this object's text, not of the document). Structs whose fields are declared in
/// key order (the large ones in `output.rs`) cost no copy at all.
struct Obj<'a> {
    out: &'a mut String,
    /// Where the first member starts (just after `{`).
    start: usize,
    /// Each member's key and the span of its `"key":value` in `out`.
    members: Vec<(String, usize, usize)>,
    /// The `{"Variant":` of a struct or tuple variant, closed after the value.
    variant: bool,
}

impl<'a> Obj<'a> {
    fn new(out: &'a mut String, len: usize, variant: bool) -> Self {
        out.push('{');
        let start = out.len();
        Obj { out, start, members: Vec::with_capacity(len), variant }
    }

    /// Start a member: the separator and the key.
    fn key(&mut self, key: String) {
        if !self.members.is_empty() {
            self.out.push(',');
        }
        let at = self.out.len();
        write_str(&key, self.out);
        self.out.push(':');
        self.members.push((key, at, at));
    }

    /// End the member whose value was just written.
    fn value_end(&mut self) {
        let end = self.out.len();
        if let Some(m) = self.members.last_mut() {
            m.2 = end;
        }
    }

    fn finish(mut self) {
        if !self.members.windows(2).all(|w| w[0].0 <= w[1].0) {
            let text = self.out[self.start..].to_owned();
            self.out.truncate(self.start);
            self.members.sort_by(|a, b| a.0.cmp(&b.0));
            for (i, (_, s, e)) in self.members.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                self.out.push_str(&text[s - self.start..e - self.start]);
            }
        }
        self.out.push('}');
        if self.variant {
            self.out.push('}');
        }
    }

    fn member<T: serde::Serialize + ?Sized>(&mut self, key: String, v: &T) -> Result<(), CanonError> {
        self.key(key);
        v.serialize(Canon { out: self.out })?;
        self.value_end();
        Ok(())
    }
}

/// Integers: their digits.
macro_rules! out_ints {
    ($($method:ident: $t:ty),*) => {
        $(fn $method(self, v: $t) -> Result<(), CanonError> {
            self.out.push_str(itoa::Buffer::new().format(v));
            Ok(())
        })*
    };
}

/// Integer map keys: their digits.
macro_rules! key_ints {
    ($($method:ident: $t:ty),*) => {
        $(fn $method(self, v: $t) -> Result<String, CanonError> {
            Ok(v.to_string())
        })*
    };
}

/// A map key: strings as they are; integers and other scalars as Python's `json.dumps` turns
/// such keys into strings.
struct KeyText;

impl serde::Serializer for KeyText {
    type Ok = String;
    type Error = CanonError;
    type SerializeSeq = serde::ser::Impossible<String, CanonError>;
    type SerializeTuple = serde::ser::Impossible<String, CanonError>;
    type SerializeTupleStruct = serde::ser::Impossible<String, CanonError>;
    type SerializeTupleVariant = serde::ser::Impossible<String, CanonError>;
    type SerializeMap = serde::ser::Impossible<String, CanonError>;
    type SerializeStruct = serde::ser::Impossible<String, CanonError>;
    type SerializeStructVariant = serde::ser::Impossible<String, CanonError>;

    fn serialize_str(self, v: &str) -> Result<String, CanonError> {
        Ok(v.to_owned())
    }
    fn serialize_char(self, v: char) -> Result<String, CanonError> {
        Ok(v.to_string())
    }
    fn serialize_bool(self, v: bool) -> Result<String, CanonError> {
        Ok(if v { "true" } else { "false" }.into())
    }
    key_ints!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64);
    key_ints!(serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64);
    fn serialize_f64(self, v: f64) -> Result<String, CanonError> {
        let mut s = String::new();
        write_f64(v, &mut s);
        Ok(s)
    }
    fn serialize_f32(self, v: f32) -> Result<String, CanonError> {
        self.serialize_f64(v as f64)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<String, CanonError> {
        Ok(variant.to_owned())
    }
    fn serialize_newtype_struct<T: serde::Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<String, CanonError> {
        v.serialize(self)
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String, CanonError> {
        Err(CanonError("a map key of bytes".into()))
    }
    fn serialize_none(self) -> Result<String, CanonError> {
        Err(CanonError("a map key that is None".into()))
    }
    fn serialize_some<T: serde::Serialize + ?Sized>(self, v: &T) -> Result<String, CanonError> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<String, CanonError> {
        Err(CanonError("a map key that is ()".into()))
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, CanonError> {
        Err(CanonError("a map key that is a unit struct".into()))
    }
    fn serialize_newtype_variant<T: serde::Serialize + ?Sized>(self, _: &'static str, _: u32, _: &'static str, _: &T) -> Result<String, CanonError> {
        Err(CanonError("a map key that is an enum with data".into()))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, CanonError> {
        Err(CanonError("a map key that is a sequence".into()))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, CanonError> {
        Err(CanonError("a map key that is a tuple".into()))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, CanonError> {
        Err(CanonError("a map key that is a tuple".into()))
    }
    fn serialize_tuple_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self::SerializeTupleVariant, CanonError> {
        Err(CanonError("a map key that is a tuple".into()))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, CanonError> {
        Err(CanonError("a map key that is a map".into()))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, CanonError> {
        Err(CanonError("a map key that is a struct".into()))
    }
    fn serialize_struct_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self::SerializeStructVariant, CanonError> {
        Err(CanonError("a map key that is a struct".into()))
    }
}

impl<'a> serde::Serializer for Canon<'a> {
    type Ok = ();
    type Error = CanonError;
    type SerializeSeq = Seq<'a>;
    type SerializeTuple = Seq<'a>;
    type SerializeTupleStruct = Seq<'a>;
    type SerializeTupleVariant = Seq<'a>;
    type SerializeMap = Obj<'a>;
    type SerializeStruct = Obj<'a>;
    type SerializeStructVariant = Obj<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), CanonError> {
        self.out.push_str(if v { "true" } else { "false" });
        Ok(())
    }
    out_ints!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64, serialize_i128: i128);
    out_ints!(serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64, serialize_u128: u128);
    fn serialize_f32(self, v: f32) -> Result<(), CanonError> {
        // As serde_json reads an f32 back: the double nearest its shortest decimal.
        let mut buf = zmij::Buffer::new();
        let x: f64 = if v.is_finite() { buf.format_finite(v).parse().unwrap_or(v as f64) } else { v as f64 };
        write_f64(x, self.out);
        Ok(())
    }
    fn serialize_f64(self, v: f64) -> Result<(), CanonError> {
        write_f64(v, self.out);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), CanonError> {
        write_str(v.encode_utf8(&mut [0; 4]), self.out);
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), CanonError> {
        write_str(v, self.out);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), CanonError> {
        // As serde_json does: an array of numbers.
        self.out.push('[');
        for (i, b) in v.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            write!(self.out, "{b}").expect("write to String");
        }
        self.out.push(']');
        Ok(())
    }
    fn serialize_none(self) -> Result<(), CanonError> {
        self.out.push_str("null");
        Ok(())
    }
    fn serialize_some<T: serde::Serialize + ?Sized>(self, v: &T) -> Result<(), CanonError> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), CanonError> {
        self.out.push_str("null");
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), CanonError> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), CanonError> {
        write_str(variant, self.out);
        Ok(())
    }
    fn serialize_newtype_struct<T: serde::Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<(), CanonError> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: serde::Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), CanonError> {
        self.out.push('{');
        write_str(variant, self.out);
        self.out.push(':');
        v.serialize(Canon { out: self.out })?;
        self.out.push('}');
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Seq<'a>, CanonError> {
        self.out.push('[');
        Ok(Seq { out: self.out, first: true })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq<'a>, CanonError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Seq<'a>, CanonError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(self, _: &'static str, _: u32, variant: &'static str, _: usize) -> Result<Seq<'a>, CanonError> {
        self.out.push('{');
        write_str(variant, self.out);
        self.out.push_str(":[");
        Ok(Seq { out: self.out, first: true })
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Obj<'a>, CanonError> {
        Ok(Obj::new(self.out, len.unwrap_or(0), false))
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Obj<'a>, CanonError> {
        Ok(Obj::new(self.out, len, false))
    }
    fn serialize_struct_variant(self, _: &'static str, _: u32, variant: &'static str, len: usize) -> Result<Obj<'a>, CanonError> {
        self.out.push('{');
        write_str(variant, self.out);
        self.out.push(':');
        Ok(Obj::new(self.out, len, true))
    }
}

impl Seq<'_> {
    fn element<T: serde::Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CanonError> {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        v.serialize(Canon { out: self.out })
    }
}

/// `SerializeSeq`, `SerializeTuple` and `SerializeTupleStruct` are one thing here: an array.
macro_rules! seq_impl {
    ($trait:ident, $method:ident) => {
        impl serde::ser::$trait for Seq<'_> {
            type Ok = ();
            type Error = CanonError;
            fn $method<T: serde::Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CanonError> {
                self.element(v)
            }
            fn end(self) -> Result<(), CanonError> {
                self.out.push(']');
                Ok(())
            }
        }
    };
}
seq_impl!(SerializeSeq, serialize_element);
seq_impl!(SerializeTuple, serialize_element);
seq_impl!(SerializeTupleStruct, serialize_field);
impl serde::ser::SerializeTupleVariant for Seq<'_> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_field<T: serde::Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CanonError> {
        self.element(v)
    }
    fn end(self) -> Result<(), CanonError> {
        self.out.push_str("]}");
        Ok(())
    }
}
impl serde::ser::SerializeMap for Obj<'_> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_key<T: serde::Serialize + ?Sized>(&mut self, k: &T) -> Result<(), CanonError> {
        let k = k.serialize(KeyText)?;
        self.key(k);
        Ok(())
    }
    fn serialize_value<T: serde::Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CanonError> {
        v.serialize(Canon { out: self.out })?;
        self.value_end();
        Ok(())
    }
    fn end(self) -> Result<(), CanonError> {
        self.finish();
        Ok(())
    }
}
/// A struct and a struct variant's fields: members of an object.
macro_rules! struct_impl {
    ($trait:ident) => {
        impl serde::ser::$trait for Obj<'_> {
            type Ok = ();
            type Error = CanonError;
            fn serialize_field<T: serde::Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> Result<(), CanonError> {
                self.member(key.to_owned(), v)
            }
            fn end(self) -> Result<(), CanonError> {
                self.finish();
                Ok(())
            }
        }
    };
}
struct_impl!(SerializeStruct);
struct_impl!(SerializeStructVariant);

fn write_value(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                write!(out, "{u}").expect("write to String");
            } else if let Some(i) = n.as_i64() {
                write!(out, "{i}").expect("write to String");
            } else {
                write_f64(n.as_f64().unwrap_or(f64::NAN), out);
            }
        }
        Value::String(s) => write_str(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_unstable();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(k, out);
                out.push(':');
                write_value(&m[k.as_str()], out);
            }
            out.push('}');
        }
    }
}

/// Python's `repr(x)` of a finite double; `null` otherwise.
pub fn write_f64(x: f64, out: &mut String) {
    // Integral values below 1e16 (counts, bytes, nanoseconds, and 0.0: most of a result's
    // time series) are the integer and ".0" in Python's repr; the general path gives the same.
    if x.abs() < 1e16 && x == x.trunc() {
        if x.is_sign_negative() {
            out.push('-');
        }
        out.push_str(itoa::Buffer::new().format(x.abs() as u64));
        out.push_str(".0");
        return;
    }
    write_f64_general(x, out)
}

/// [`write_f64`] for any value (the reference its fast path is tested against).
fn write_f64_general(x: f64, out: &mut String) {
    if !x.is_finite() {
        out.push_str("null");
        return;
    }
    let mut buf = zmij::Buffer::new();
    let s = buf.format_finite(x);
    let (neg, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (mant, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].trim_start_matches('+').parse::<i32>().expect("an exponent")),
        None => (s, 0),
    };
    let (int_part, frac_part) = mant.split_once('.').unwrap_or((mant, ""));
    let mut all = [0u8; 64]; // zmij writes at most 17 significant digits and a few zeros
    let mut len = 0;
    for b in int_part.bytes().chain(frac_part.bytes()) {
        all[len] = b;
        len += 1;
    }
    let all = &all[..len];
    let lead = all.iter().take_while(|&&b| b == b'0').count();
    let (digits, decpt): (&[u8], i32) = if lead == all.len() {
        (b"0", 1)
    } else {
        let d = &all[lead..];
        let trail = d.iter().rev().take_while(|&&b| b == b'0').count();
        (&d[..d.len() - trail], int_part.len() as i32 + exp - lead as i32)
    };
    if neg {
        out.push('-');
    }
    let digits = std::str::from_utf8(digits).expect("ASCII digits");
    let n = digits.len() as i32;
    if decpt <= -4 || decpt > 16 {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        write!(out, "e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs()).expect("write to String");
    } else if decpt <= 0 {
        out.push_str("0.");
        for _ in 0..-decpt {
            out.push('0');
        }
        out.push_str(digits);
    } else if decpt < n {
        out.push_str(&digits[..decpt as usize]);
        out.push('.');
        out.push_str(&digits[decpt as usize..]);
    } else {
        out.push_str(digits);
        for _ in 0..decpt - n {
            out.push('0');
        }
        out.push_str(".0");
    }
}

/// The escapes JSON has a short form for (`\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`), as
/// Python's json writes them.
pub fn short_escape(c: char) -> Option<&'static str> {
    Some(match c {
        '"' => "\\\"",
        '\\' => "\\\\",
        '\n' => "\\n",
        '\r' => "\\r",
        '\t' => "\\t",
        '\u{8}' => "\\b",
        '\u{c}' => "\\f",
        _ => return None,
    })
}

fn write_str(s: &str, out: &mut String) {
    out.push('"');
    // Runs of printable ASCII other than `"` and `\\` go out as they are (keys, names); the
    // rest one character at a time.
    let plain = |b: u8| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\';
    let mut rest = s;
    while !rest.is_empty() {
        let n = rest.bytes().take_while(|&b| plain(b)).count();
        out.push_str(&rest[..n]);
        rest = &rest[n..];
        let Some(ch) = rest.chars().next() else { break };
        rest = &rest[ch.len_utf8()..];
        match short_escape(ch) {
            Some(e) => out.push_str(e),
            None => {
                let mut units = [0u16; 2];
                for u in ch.encode_utf16(&mut units) {
                    write!(out, "\\u{u:04x}").expect("write to String");
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(x: f64) -> String {
        let mut s = String::new();
        write_f64(x, &mut s);
        s
    }

    /// Values whose Python `repr` is known (CPython 3.11).
    #[test]
    fn floats_as_python_repr() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (5.0, "5.0"),
            (-2.5, "-2.5"),
            (0.1, "0.1"),
            (1.0 / 3.0, "0.3333333333333333"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (0.000123, "0.000123"),
            (0.0000123, "1.23e-05"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1234567890123456.0, "1234567890123456.0"),
            (12345678901234567.0, "1.2345678901234568e+16"),
            (123456789.125, "123456789.125"),
            (62779200.0, "62779200.0"),
            (0.19580656070341562, "0.19580656070341562"),
            (1e100, "1e+100"),
            (1.5e-300, "1.5e-300"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (2.0f64.powi(60), "1.152921504606847e+18"),
            (f64::NAN, "null"),
        ];
        for &(x, want) in cases {
            assert_eq!(f(x), want, "{x:e}");
        }
    }

    /// The integral fast path writes what the general path writes: every integer up to 2^20,
    /// both signs, powers of two and ten and their neighbours up to and past 1e16, and random
    /// integral values of every magnitude.
    #[test]
    fn integral_fast_path_equals_the_general_path() {
        let g = |x: f64| {
            let mut s = String::new();
            write_f64_general(x, &mut s);
            s
        };
        let mut xs: Vec<f64> = (0..=1 << 20).map(|i| i as f64).collect();
        for k in 0..64 {
            let p = 2f64.powi(k);
            xs.extend([p - 1.0, p, p + 1.0]);
        }
        for k in 0..=17 {
            let p = 10f64.powi(k);
            xs.extend([p - 1.0, p, p + 1.0, p * 9.0, 9_999_999_999_999_998.0]);
        }
        let mut r = lasthop_core::rng::Rng::from_seed(7);
        for _ in 0..200_000 {
            let e = r.gen_range_inclusive(59) as i32;
            xs.push((r.next_f64() * 2f64.powi(e)).trunc());
        }
        for x in xs {
            for x in [x, -x] {
                assert_eq!(f(x), g(x), "{x:e}");
            }
        }
    }

    #[test]
    fn strings_and_objects_as_python_json_dumps() {
        let v: Value = serde_json::from_str(
            r#"{"b":[1,-2,3.0,null,true],"a":"x\"\\\n\u0001é😀\u007f/","aa":{},"B":[]}"#,
        )
        .expect("JSON");
        assert_eq!(to_string(&v), r#"{"B":[],"a":"x\"\\\n\u0001\u00e9\ud83d\ude00\u007f/","aa":{},"b":[1,-2,3.0,null,true]}"#);
    }

    /// The streaming writer against the `Value` one on a document with every kind of member:
    /// nested structs, options, maps with string and integer keys, enums, f32, sequences.
    #[test]
    #[allow(clippy::disallowed_types)] // a map in no particular order is what this tests
    fn streaming_writer_equals_the_value_writer() {
        use std::collections::{BTreeMap, HashMap};
        #[derive(serde::Serialize)]
        enum E {
            Unit,
            New(u8),
            Tup(u8, f64),
            St { z: u8, a: f64 },
        }
        #[derive(serde::Serialize)]
        struct Inner {
            zeta: f64,
            alpha: Option<u32>,
            #[serde(skip_serializing_if = "Option::is_none")]
            skipped: Option<u32>,
            name: String,
        }
        #[derive(serde::Serialize)]
        struct Doc {
            z: Vec<Inner>,
            b: HashMap<String, f64>,
            a: BTreeMap<u32, Vec<f64>>,
            e: Vec<E>,
            t: (u8, i64, bool),
            nan: f64,
            big: u128,
        }
        let doc = Doc {
            z: vec![
                Inner { zeta: 1e-7, alpha: None, skipped: None, name: "é\n\"".into() },
                Inner { zeta: 12345678901234567.0, alpha: Some(3), skipped: Some(1), name: "".into() },
            ],
            b: [("y".to_string(), 0.1), ("x".to_string(), 3.5), ("10".to_string(), f64::MAX)].into_iter().collect(),
            a: [(10, vec![0.5, -0.0]), (9, vec![]), (100, vec![1e22])].into_iter().collect(),
            e: vec![E::Unit, E::New(1), E::Tup(2, 2.5), E::St { z: 1, a: 0.25 }],
            t: (1, -5, true),
            nan: f64::NAN,
            big: 1u128 << 40,
        };
        let streamed = to_canonical(&doc).expect("serializable");
        let via_value = to_string(&serde_json::to_value(&doc).expect("serializable"));
        assert_eq!(streamed, via_value);
        assert!(streamed.contains("\"a\":{\"10\":[0.5,-0.0],\"100\":[1e+22],\"9\":[]}"), "{streamed}");
        // An f32 is written as serde_json writes it (shortest for f32) and read back as Python
        // reads that text.
        assert_eq!(to_canonical(&[0.1f32, 3.5, f32::MAX]).expect("floats"), "[0.1,3.5,3.4028235e+38]");
    }
}
