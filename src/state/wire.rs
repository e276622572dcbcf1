//! The protobuf wire format, by hand: a writer that appends fields to a `Vec<u8>` in one
//! pass and a reader over a byte slice, for the messages on every call's hot path (the
//! token's plaintext here, the API's answers in `service::codec`), where prost's
//! generated code cost more than the game itself.
//!
//! Both follow prost byte for byte: the writer leaves out fields at their zero value
//! and packs repeated numbers, as prost does, and the reader takes what prost takes
//! (fields in any order, unknown fields skipped, packed or unpacked repeated numbers,
//! integers truncated to their field's width) and refuses what it refuses.

/// Wire types.
pub const VARINT: u8 = 0;
pub const FIXED64: u8 = 1;
pub const LEN: u8 = 2;
const START_GROUP: u8 = 3;
const END_GROUP: u8 = 4;
pub const FIXED32: u8 = 5;

/// How deep unknown groups may nest before a message is refused (prost's limit).
const RECURSION_LIMIT: u32 = 100;

/// The bytes are not a well-formed protobuf message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

#[inline]
pub fn put_varint(buf: &mut Vec<u8>, value: u64) {
    if value < 0x80 {
        buf.push(value as u8);
    } else {
        put_long_varint(buf, value);
    }
}

fn put_long_varint(buf: &mut Vec<u8>, mut value: u64) {
    let mut bytes = [0u8; 10];
    let mut n = 0;
    while value >= 0x80 {
        bytes[n] = value as u8 | 0x80;
        value >>= 7;
        n += 1;
    }
    bytes[n] = value as u8;
    buf.extend_from_slice(&bytes[..=n]);
}

#[inline]
pub fn put_key(buf: &mut Vec<u8>, field: u32, wire_type: u8) {
    put_varint(buf, u64::from(field << 3 | u32::from(wire_type)));
}

/// A key and a varint value, both under 128 the usual case: one write.
#[inline]
fn put_key_varint(buf: &mut Vec<u8>, field: u32, value: u64) {
    let key = field << 3;
    if key < 0x80 && value < 0x80 {
        buf.extend_from_slice(&[key as u8, value as u8]);
    } else {
        put_key(buf, field, VARINT);
        put_varint(buf, value);
    }
}

/// ZigZag, as `sint32` stores numbers.
pub fn zigzag(value: i32) -> u64 {
    u64::from(((value << 1) ^ (value >> 31)) as u32)
}

/// A `uint32` (or enum) field: left out when 0.
#[inline]
pub fn put_uint32(buf: &mut Vec<u8>, field: u32, value: u32) {
    if value != 0 {
        put_key_varint(buf, field, u64::from(value));
    }
}

/// An `int32` (or enum) field: left out when 0; a negative number takes ten bytes, as
/// protobuf has it.
#[inline]
pub fn put_int32(buf: &mut Vec<u8>, field: u32, value: i32) {
    if value != 0 {
        put_key_varint(buf, field, i64::from(value) as u64);
    }
}

/// A packed `repeated uint32` field: left out when empty.
#[inline]
pub fn put_packed_uint32(buf: &mut Vec<u8>, field: u32, values: &[u32]) {
    if !values.is_empty() {
        put_len(buf, field, |b| {
            for &v in values {
                put_varint(b, u64::from(v));
            }
        });
    }
}

/// An `optional uint32` field: written whenever present, 0 included.
#[inline]
pub fn put_optional_uint32(buf: &mut Vec<u8>, field: u32, value: Option<u32>) {
    if let Some(value) = value {
        put_key_varint(buf, field, u64::from(value));
    }
}

/// A `bool` field: left out when false.
#[inline]
pub fn put_bool(buf: &mut Vec<u8>, field: u32, value: bool) {
    if value {
        put_key_varint(buf, field, 1);
    }
}

/// A `fixed64` field: left out when 0.
pub fn put_fixed64(buf: &mut Vec<u8>, field: u32, value: u64) {
    if value != 0 {
        put_key(buf, field, FIXED64);
        buf.extend_from_slice(&value.to_le_bytes());
    }
}

/// A `bytes` field: left out when empty.
#[inline]
pub fn put_bytes(buf: &mut Vec<u8>, field: u32, value: &[u8]) {
    if !value.is_empty() {
        put_key(buf, field, LEN);
        put_varint(buf, value.len() as u64);
        buf.extend_from_slice(value);
    }
}

/// A length-delimited field whose content `write` appends (an embedded message, or
/// packed numbers), its length written in front of it afterwards: one pass, with a
/// move of the content only when the length takes more than one byte.
#[inline]
pub fn put_len(buf: &mut Vec<u8>, field: u32, write: impl FnOnce(&mut Vec<u8>)) {
    let key = field << 3 | u32::from(LEN);
    if key < 0x80 {
        buf.extend_from_slice(&[key as u8, 0]);
    } else {
        put_varint(buf, u64::from(key));
        buf.push(0);
    }
    let at = buf.len() - 1;
    write(buf);
    let len = buf.len() - at - 1;
    if len < 0x80 {
        buf[at] = len as u8;
    } else {
        widen_len(buf, at, len);
    }
}

/// Puts a length that takes more than the one byte kept for it at `at`, moving the
/// message after it along.
fn widen_len(buf: &mut Vec<u8>, at: usize, len: usize) {
    let end = buf.len();
    put_long_varint(buf, len as u64);
    let n = buf.len() - end;
    let mut prefix = [0u8; 10];
    prefix[..n].copy_from_slice(&buf[end..]);
    buf.truncate(end);
    buf.resize(end + n - 1, 0);
    buf.copy_within(at + 1..end, at + n);
    buf[at..at + n].copy_from_slice(&prefix[..n]);
}

/// A reader over one message's bytes.
#[derive(Clone, Copy)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf }
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Bytes not read yet.
    #[cfg(test)]
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    #[inline]
    pub fn varint(&mut self) -> Result<u64, Malformed> {
        if let Some((&byte, rest)) = self.buf.split_first()
            && byte < 0x80
        {
            self.buf = rest;
            return Ok(u64::from(byte));
        }
        self.long_varint()
    }

    /// A varint of more than one byte (or none: refused).
    fn long_varint(&mut self) -> Result<u64, Malformed> {
        let mut value = 0u64;
        for (i, &byte) in self.buf.iter().enumerate().take(10) {
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                // The tenth byte may only hold the top bit of a u64.
                if i == 9 && byte >= 0x02 {
                    return Err(Malformed);
                }
                self.buf = &self.buf[i + 1..];
                return Ok(value);
            }
        }
        Err(Malformed)
    }

    /// The next field's number and wire type.
    pub fn key(&mut self) -> Result<(u32, u8), Malformed> {
        let key = self.varint()?;
        let key = u32::try_from(key).map_err(|_| Malformed)?;
        let wire_type = (key & 7) as u8;
        if wire_type > FIXED32 || key >> 3 == 0 {
            return Err(Malformed);
        }
        Ok((key >> 3, wire_type))
    }

    fn take(&mut self, len: u64) -> Result<&'a [u8], Malformed> {
        let len = usize::try_from(len).map_err(|_| Malformed)?;
        if len > self.buf.len() {
            return Err(Malformed);
        }
        let (head, rest) = self.buf.split_at(len);
        self.buf = rest;
        Ok(head)
    }

    /// A length-delimited field's content (the key already read, of wire type `LEN`).
    pub fn len_delimited(&mut self, wire_type: u8) -> Result<&'a [u8], Malformed> {
        if wire_type != LEN {
            return Err(Malformed);
        }
        let len = self.varint()?;
        self.take(len)
    }

    /// A varint field's value (the key already read).
    pub fn varint_field(&mut self, wire_type: u8) -> Result<u64, Malformed> {
        if wire_type != VARINT {
            return Err(Malformed);
        }
        self.varint()
    }

    pub fn fixed64_field(&mut self, wire_type: u8) -> Result<u64, Malformed> {
        if wire_type != FIXED64 {
            return Err(Malformed);
        }
        let bytes = self.take(8)?;
        let mut le = [0u8; 8];
        le.copy_from_slice(bytes);
        Ok(u64::from_le_bytes(le))
    }

    /// A repeated varint field, packed (one `LEN` field) or not (one value): calls
    /// `push` with each value.
    pub fn repeated_varint(
        &mut self,
        wire_type: u8,
        mut push: impl FnMut(u64),
    ) -> Result<(), Malformed> {
        if wire_type == LEN {
            let mut packed = Reader::new(self.len_delimited(LEN)?);
            while !packed.is_empty() {
                push(packed.varint()?);
            }
            Ok(())
        } else {
            push(self.varint_field(wire_type)?);
            Ok(())
        }
    }

    /// A repeated varint field's values left undecoded, packed (one `LEN` field's
    /// content) or not (one value's bytes), each checked to be a varint as
    /// [`Reader::repeated_varint`] checks it: the bytes, and how many values they hold.
    pub fn repeated_varint_bytes(&mut self, wire_type: u8) -> Result<(&'a [u8], usize), Malformed> {
        if wire_type == LEN {
            let bytes = self.len_delimited(LEN)?;
            Ok((bytes, count_varints(bytes)?))
        } else {
            let start = self.buf;
            self.varint_field(wire_type)?;
            Ok((&start[..start.len() - self.buf.len()], 1))
        }
    }

    /// Skips a field this reader does not know.
    pub fn skip(&mut self, field: u32, wire_type: u8) -> Result<(), Malformed> {
        self.skip_nested(field, wire_type, RECURSION_LIMIT)
    }

    fn skip_nested(&mut self, field: u32, wire_type: u8, depth: u32) -> Result<(), Malformed> {
        match wire_type {
            VARINT => self.varint().map(drop),
            FIXED64 => self.take(8).map(drop),
            LEN => self.len_delimited(LEN).map(drop),
            FIXED32 => self.take(4).map(drop),
            START_GROUP => loop {
                let depth = depth.checked_sub(1).ok_or(Malformed)?;
                let (inner, inner_type) = self.key()?;
                if inner_type == END_GROUP {
                    return if inner == field {
                        Ok(())
                    } else {
                        Err(Malformed)
                    };
                }
                self.skip_nested(inner, inner_type, depth)?;
            },
            _ => Err(Malformed),
        }
    }
}

/// How many varints `bytes` holds back to back, if it is nothing but well-formed ones.
pub fn count_varints(bytes: &[u8]) -> Result<usize, Malformed> {
    // Usually every value takes one byte: one pass over the bytes, no branch per byte.
    if bytes.iter().fold(0, |high, &b| high | b) < 0x80 {
        return Ok(bytes.len());
    }
    let mut r = Reader::new(bytes);
    let mut n = 0;
    while !r.is_empty() {
        r.varint()?;
        n += 1;
    }
    Ok(n)
}

/// The `uint32` a varint holds, truncated as prost truncates it.
pub fn uint32(value: u64) -> u32 {
    value as u32
}

/// The `sint32` a varint holds (ZigZag), truncated as prost truncates it.
pub fn sint32(value: u64) -> i32 {
    let value = value as u32;
    ((value >> 1) as i32) ^ -((value & 1) as i32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn varints_and_zigzag_match_prost() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u32::MAX as u64,
            u64::MAX,
        ] {
            let mut ours = Vec::new();
            put_varint(&mut ours, v);
            let mut theirs = Vec::new();
            prost::encoding::encode_varint(v, &mut theirs);
            assert_eq!(ours, theirs);
            assert_eq!(Reader::new(&ours).varint(), Ok(v));
        }
        for v in [0i32, 1, -1, 2, -2, 63, -64, 64, i32::MAX, i32::MIN] {
            assert_eq!(sint32(zigzag(v)), v);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
        // Eleven bytes, and a tenth byte holding more than the top bit, are refused.
        assert_eq!(Reader::new(&[0xff; 11]).varint(), Err(Malformed));
        let mut over = vec![0xff; 9];
        over.push(0x02);
        assert_eq!(Reader::new(&over).varint(), Err(Malformed));
        assert_eq!(Reader::new(&[0x80]).varint(), Err(Malformed));
    }

    #[test]
    fn a_long_field_gets_its_length_in_front() {
        for n in [0usize, 1, 127, 128, 200, 16_383, 16_384, 20_000] {
            let payload: Vec<u8> = (0..n).map(|i| i as u8).collect();
            let mut ours = vec![0xAA];
            put_len(&mut ours, 5, |b| b.extend_from_slice(&payload));
            let mut theirs = vec![0xAA];
            prost::encoding::bytes::encode(5, &payload, &mut theirs);
            assert_eq!(ours, theirs, "{n} bytes");
        }
    }

    #[test]
    fn groups_are_skipped_and_stray_ends_refused() {
        // Field 9 a group holding a varint field 2, then varint field 10.
        let bytes = [0x4B, 0x10, 0x05, 0x4C, 0x50, 0x07];
        let mut r = Reader::new(&bytes);
        let (field, wire_type) = r.key().unwrap();
        r.skip(field, wire_type).unwrap();
        assert_eq!(r.key(), Ok((10, VARINT)));
        assert_eq!(r.varint(), Ok(7));
        assert!(r.is_empty());
        let mut r = Reader::new(&[0x4C]);
        let (field, wire_type) = r.key().unwrap();
        assert_eq!(r.skip(field, wire_type), Err(Malformed));
        // prost agrees on both.
        use crate::proto::internal::HandResult;
        assert!(HandResult::decode(&bytes[..]).is_ok());
        assert!(HandResult::decode(&[0x4Cu8][..]).is_err());
    }
}
