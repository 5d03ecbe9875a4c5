//! A small, allocation-free MessagePack walker over a borrowed byte slice, for the
//! `NT_AMDGPU_METADATA` note.
//!
//! Values borrow from the input; arrays and maps are lazy views whose elements are decoded
//! when iterated. Every length is checked against the bytes that remain and nesting is limited
//! to [`MAX_DEPTH`], so no input panics or overflows the stack.
//!
//! Ref: MessagePack specification (formats); markers decoded with `rmp::decode`.

use rmp::decode::{read_marker, Bytes, RmpRead};
use rmp::Marker;

use crate::status::{Error, Result, Status};

/// The deepest nesting of arrays and maps accepted.
pub const MAX_DEPTH: u32 = 32;

/// A decoded MessagePack value, borrowing from the input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    /// `nil`.
    Nil,
    /// `true` / `false`.
    Bool(bool),
    /// A non-negative integer.
    Uint(u64),
    /// A negative integer.
    Int(i64),
    /// A 32-bit float.
    F32(f32),
    /// A 64-bit float.
    F64(f64),
    /// A UTF-8 string.
    Str(&'a str),
    /// A binary blob.
    Bin(&'a [u8]),
    /// An extension value: type and data.
    Ext(i8, &'a [u8]),
    /// An array.
    Array(Array<'a>),
    /// A map.
    Map(Map<'a>),
}

/// A lazily decoded array: `len` elements encoded back to back in `bytes`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Array<'a> {
    len: u32,
    bytes: &'a [u8],
    depth: u32,
}

/// A lazily decoded map: `len` key/value pairs encoded back to back in `bytes`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Map<'a> {
    len: u32,
    bytes: &'a [u8],
    depth: u32,
}

/// A reader over the input that remembers its absolute byte offset (for messages).
#[derive(Clone, Copy, Debug)]
struct Cursor<'a> {
    rd: Bytes<'a>,
    base: u64,
}

impl<'a> Cursor<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Cursor {
            rd: Bytes::new(bytes),
            base: 0,
        }
    }
    fn pos(&self) -> u64 {
        self.base + self.rd.position()
    }
    fn rest(&self) -> &'a [u8] {
        self.rd.remaining_slice()
    }
}

fn malformed(what: &str, at: u64) -> Error {
    crate::error!(
        Status::InvalidCodeObject,
        "metadata msgpack: {what} at byte {at}"
    )
}

/// Decodes one value from the front of `input` and returns it with the rest of the input.
///
/// # Errors
/// `Status::InvalidCodeObject` naming the byte offset for truncated input, a reserved marker,
/// invalid UTF-8 in a string, or nesting deeper than [`MAX_DEPTH`].
pub fn decode(input: &[u8]) -> Result<(Value<'_>, &[u8])> {
    let mut rd = Cursor::new(input);
    let v = decode_at(&mut rd, 0)?;
    Ok((v, rd.rest()))
}

fn take<'a>(rd: &mut Cursor<'a>, n: u64) -> Result<&'a [u8]> {
    let rest = rd.rest();
    let n = usize::try_from(n)
        .ok()
        .filter(|&n| n <= rest.len())
        .ok_or_else(|| malformed("length past the end", rd.pos()))?;
    let (head, tail) = rest.split_at(n);
    let base = rd.pos() + n as u64;
    *rd = Cursor {
        rd: Bytes::new(tail),
        base,
    };
    Ok(head)
}

fn read_len<'a>(rd: &mut Cursor<'a>, width: u8) -> Result<u32> {
    let at = rd.pos();
    let v = match width {
        1 => rd.rd.read_data_u8().map(u32::from),
        2 => rd.rd.read_data_u16().map(u32::from),
        _ => rd.rd.read_data_u32(),
    };
    v.map_err(|_| malformed("truncated length", at))
}

fn decode_at<'a>(rd: &mut Cursor<'a>, depth: u32) -> Result<Value<'a>> {
    let at = rd.pos();
    let marker = read_marker(&mut rd.rd).map_err(|_| malformed("truncated value", at))?;
    let trunc = |_| malformed("truncated value", at);
    Ok(match marker {
        Marker::FixPos(v) => Value::Uint(u64::from(v)),
        Marker::FixNeg(v) => Value::Int(i64::from(v)),
        Marker::Null => Value::Nil,
        Marker::True => Value::Bool(true),
        Marker::False => Value::Bool(false),
        Marker::U8 => Value::Uint(u64::from(rd.rd.read_data_u8().map_err(trunc)?)),
        Marker::U16 => Value::Uint(u64::from(rd.rd.read_data_u16().map_err(trunc)?)),
        Marker::U32 => Value::Uint(u64::from(rd.rd.read_data_u32().map_err(trunc)?)),
        Marker::U64 => Value::Uint(rd.rd.read_data_u64().map_err(trunc)?),
        Marker::I8 => int(i64::from(rd.rd.read_data_i8().map_err(trunc)?)),
        Marker::I16 => int(i64::from(rd.rd.read_data_i16().map_err(trunc)?)),
        Marker::I32 => int(i64::from(rd.rd.read_data_i32().map_err(trunc)?)),
        Marker::I64 => int(rd.rd.read_data_i64().map_err(trunc)?),
        Marker::F32 => Value::F32(rd.rd.read_data_f32().map_err(trunc)?),
        Marker::F64 => Value::F64(rd.rd.read_data_f64().map_err(trunc)?),
        Marker::FixStr(n) => string(take(rd, u64::from(n))?, at)?,
        Marker::Str8 => {
            let n = read_len(rd, 1)?;
            string(take(rd, u64::from(n))?, at)?
        }
        Marker::Str16 => {
            let n = read_len(rd, 2)?;
            string(take(rd, u64::from(n))?, at)?
        }
        Marker::Str32 => {
            let n = read_len(rd, 4)?;
            string(take(rd, u64::from(n))?, at)?
        }
        Marker::Bin8 => {
            let n = read_len(rd, 1)?;
            Value::Bin(take(rd, u64::from(n))?)
        }
        Marker::Bin16 => {
            let n = read_len(rd, 2)?;
            Value::Bin(take(rd, u64::from(n))?)
        }
        Marker::Bin32 => {
            let n = read_len(rd, 4)?;
            Value::Bin(take(rd, u64::from(n))?)
        }
        Marker::FixExt1 => ext(rd, 1, at)?,
        Marker::FixExt2 => ext(rd, 2, at)?,
        Marker::FixExt4 => ext(rd, 4, at)?,
        Marker::FixExt8 => ext(rd, 8, at)?,
        Marker::FixExt16 => ext(rd, 16, at)?,
        Marker::Ext8 => {
            let n = read_len(rd, 1)?;
            ext(rd, n, at)?
        }
        Marker::Ext16 => {
            let n = read_len(rd, 2)?;
            ext(rd, n, at)?
        }
        Marker::Ext32 => {
            let n = read_len(rd, 4)?;
            ext(rd, n, at)?
        }
        Marker::FixArray(n) => Value::Array(container(rd, u32::from(n), 1, depth, at).map(
            |(len, bytes)| Array {
                len,
                bytes,
                depth: depth + 1,
            },
        )?),
        Marker::Array16 => {
            let n = read_len(rd, 2)?;
            Value::Array(container(rd, n, 1, depth, at).map(|(len, bytes)| Array {
                len,
                bytes,
                depth: depth + 1,
            })?)
        }
        Marker::Array32 => {
            let n = read_len(rd, 4)?;
            Value::Array(container(rd, n, 1, depth, at).map(|(len, bytes)| Array {
                len,
                bytes,
                depth: depth + 1,
            })?)
        }
        Marker::FixMap(n) => Value::Map(container(rd, u32::from(n), 2, depth, at).map(
            |(len, bytes)| Map {
                len,
                bytes,
                depth: depth + 1,
            },
        )?),
        Marker::Map16 => {
            let n = read_len(rd, 2)?;
            Value::Map(container(rd, n, 2, depth, at).map(|(len, bytes)| Map {
                len,
                bytes,
                depth: depth + 1,
            })?)
        }
        Marker::Map32 => {
            let n = read_len(rd, 4)?;
            Value::Map(container(rd, n, 2, depth, at).map(|(len, bytes)| Map {
                len,
                bytes,
                depth: depth + 1,
            })?)
        }
        Marker::Reserved => return Err(malformed("reserved marker 0xc1", at)),
    })
}

fn int(v: i64) -> Value<'static> {
    if v >= 0 {
        Value::Uint(v.unsigned_abs())
    } else {
        Value::Int(v)
    }
}

fn string(bytes: &[u8], at: u64) -> Result<Value<'_>> {
    core::str::from_utf8(bytes)
        .map(Value::Str)
        .map_err(|_| malformed("string is not UTF-8", at))
}

fn ext<'a>(rd: &mut Cursor<'a>, n: u32, at: u64) -> Result<Value<'a>> {
    let ty = rd
        .rd
        .read_data_i8()
        .map_err(|_| malformed("truncated ext", at))?;
    Ok(Value::Ext(ty, take(rd, u64::from(n))?))
}

/// Skips `count * per` values after a container header, returning the count and the exact
/// bytes they occupy.
fn container<'a>(
    rd: &mut Cursor<'a>,
    count: u32,
    per: u32,
    depth: u32,
    at: u64,
) -> Result<(u32, &'a [u8])> {
    if depth >= MAX_DEPTH {
        return Err(malformed("nesting deeper than 32", at));
    }
    let start = rd.rest();
    // Each element takes at least one byte: reject impossible counts before looping.
    let elements = u64::from(count) * u64::from(per);
    if elements > start.len() as u64 {
        return Err(malformed("element count past the end", at));
    }
    for _ in 0..elements {
        decode_at(rd, depth + 1)?;
    }
    let used = start.len() - rd.rest().len();
    Ok((count, &start[..used]))
}

impl<'a> Value<'a> {
    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&'a str> {
        match *self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
    /// The unsigned integer, if this is a non-negative integer.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Uint(v) => Some(v),
            _ => None,
        }
    }
    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }
    /// The array, if this is one.
    pub fn as_array(&self) -> Option<Array<'a>> {
        match *self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
    /// The map, if this is one.
    pub fn as_map(&self) -> Option<Map<'a>> {
        match *self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }
}

impl<'a> Array<'a> {
    /// Number of elements.
    pub fn len(&self) -> u32 {
        self.len
    }
    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The elements in order. Each was decoded once already when the array was read, so the
    /// iterator yields `Ok` for every element of a well-formed array.
    pub fn iter(&self) -> ArrayIter<'a> {
        ArrayIter {
            rd: Cursor::new(self.bytes),
            left: self.len,
            depth: self.depth,
        }
    }
}

/// Iterator over an [`Array`].
#[derive(Clone, Debug)]
pub struct ArrayIter<'a> {
    rd: Cursor<'a>,
    left: u32,
    depth: u32,
}

impl<'a> Iterator for ArrayIter<'a> {
    type Item = Result<Value<'a>>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let v = decode_at(&mut self.rd, self.depth);
        if v.is_err() {
            self.left = 0;
        }
        Some(v)
    }
}

impl<'a> Map<'a> {
    /// Number of key/value pairs.
    pub fn len(&self) -> u32 {
        self.len
    }
    /// Whether the map has no pairs.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The pairs in order.
    pub fn iter(&self) -> MapIter<'a> {
        MapIter {
            rd: Cursor::new(self.bytes),
            left: self.len,
            depth: self.depth,
        }
    }
    /// The value of the first pair whose key is the string `key`.
    ///
    /// # Errors
    /// `Status::InvalidCodeObject` when the map's bytes are malformed.
    pub fn get(&self, key: &str) -> Result<Option<Value<'a>>> {
        for pair in self.iter() {
            let (k, v) = pair?;
            if k.as_str() == Some(key) {
                return Ok(Some(v));
            }
        }
        Ok(None)
    }
}

/// Iterator over a [`Map`]'s pairs.
#[derive(Clone, Debug)]
pub struct MapIter<'a> {
    rd: Cursor<'a>,
    left: u32,
    depth: u32,
}

impl<'a> Iterator for MapIter<'a> {
    type Item = Result<(Value<'a>, Value<'a>)>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let pair = decode_at(&mut self.rd, self.depth)
            .and_then(|k| Ok((k, decode_at(&mut self.rd, self.depth)?)));
        if pair.is_err() {
            self.left = 0;
        }
        Some(pair)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn decodes_scalars_and_containers() {
        // {"a": [1, -2, "xy", true, nil], "b": {"c": 300}}
        let bytes = [
            0x82, 0xa1, b'a', 0x95, 0x01, 0xfe, 0xa2, b'x', b'y', 0xc3, 0xc0, 0xa1, b'b', 0x81,
            0xa1, b'c', 0xcd, 0x01, 0x2c,
        ];
        let (v, rest) = decode(&bytes).unwrap();
        assert!(rest.is_empty());
        let m = v.as_map().unwrap();
        assert_eq!(m.len(), 2);
        let a = m.get("a").unwrap().unwrap().as_array().unwrap();
        let items: std::vec::Vec<_> = a.iter().map(|v| v.unwrap()).collect();
        assert_eq!(
            items,
            [
                Value::Uint(1),
                Value::Int(-2),
                Value::Str("xy"),
                Value::Bool(true),
                Value::Nil
            ]
        );
        let c = m
            .get("b")
            .unwrap()
            .unwrap()
            .as_map()
            .unwrap()
            .get("c")
            .unwrap()
            .unwrap();
        assert_eq!(c.as_u64(), Some(300));
        assert_eq!(m.get("zz").unwrap(), None);
    }

    #[test]
    fn rejects_truncation_depth_and_bad_utf8() {
        let e = decode(&[0x92, 0x01]).unwrap_err();
        assert_eq!(e.status(), Status::InvalidCodeObject);
        assert!(decode(&[0xdd, 0xff, 0xff, 0xff, 0xff])
            .unwrap_err()
            .detail()
            .to_string()
            .contains("past the end"));
        assert!(decode(&[0xa2, 0xff, 0xfe])
            .unwrap_err()
            .detail()
            .to_string()
            .contains("UTF-8"));
        assert!(decode(&[0xc1])
            .unwrap_err()
            .detail()
            .to_string()
            .contains("reserved"));
        let deep = [0x91u8; 100];
        assert!(decode(&deep)
            .unwrap_err()
            .detail()
            .to_string()
            .contains("nesting"));
        assert!(decode(&[]).is_err());
    }
}
