//! The protobuf wire format's writer, by hand: appends fields to a `Vec<u8>` in one
//! pass, for the API's answers ([`super::answer_writer`]), written on every call, where
//! prost's generated code cost more than the game itself (docs/PERFORMANCE.md). It
//! follows prost byte for byte (fields at their zero value left out, repeated numbers
//! packed); the tests below and the answer writer's compare it with prost.

/// Wire types.
pub const VARINT: u8 = 0;
pub const LEN: u8 = 2;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_match_prost() {
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
        }
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
}
