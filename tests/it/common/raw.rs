//! Raw HTTP/2 for tests that must send what a well-behaved client never would:
//! frames written by hand (HPACK literals only) and parsed back.

pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub const DATA: u8 = 0;
pub const HEADERS: u8 = 1;
pub const RST_STREAM: u8 = 3;
pub const SETTINGS: u8 = 4;
pub const PING: u8 = 6;
pub const GOAWAY: u8 = 7;
pub const WINDOW_UPDATE: u8 = 8;
pub const ACK: u8 = 1;
pub const END_STREAM: u8 = 1;
pub const END_HEADERS: u8 = 4;
pub const REFUSED_STREAM: u32 = 7;

pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut out = len.to_be_bytes()[1..].to_vec();
    out.extend([kind, flags]);
    out.extend(stream.to_be_bytes());
    out.extend(payload);
    out
}

/// The client preface and an empty SETTINGS frame.
pub fn hello() -> Vec<u8> {
    let mut out = PREFACE.to_vec();
    out.extend(frame(SETTINGS, 0, 0, &[]));
    out
}

/// The HEADERS frame of a gRPC call to `path` on `stream` (HPACK literals, no
/// Huffman; END_HEADERS, not END_STREAM: the body follows).
pub fn headers(stream: u32, path: &str) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", path),
        (":authority", "localhost"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ] {
        block.push(0); // literal without indexing, new name
        block.push(name.len() as u8);
        block.extend(name.as_bytes());
        block.push(value.len() as u8);
        block.extend(value.as_bytes());
    }
    frame(HEADERS, END_HEADERS, stream, &block)
}

/// A unary gRPC call on `stream`: its HEADERS and one DATA frame holding the
/// length-prefixed message.
pub fn call(stream: u32, path: &str, message: &[u8]) -> Vec<u8> {
    let mut out = headers(stream, path);
    let mut body = vec![0];
    body.extend((message.len() as u32).to_be_bytes());
    body.extend(message);
    out.extend(frame(DATA, END_STREAM, stream, &body));
    out
}

#[derive(Debug)]
pub struct Frame {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

/// Splits whole frames off the front of `buf`.
pub fn parse(buf: &mut Vec<u8>) -> Vec<Frame> {
    let mut frames = Vec::new();
    while buf.len() >= 9 {
        let len = u32::from_be_bytes([0, buf[0], buf[1], buf[2]]) as usize;
        if buf.len() < 9 + len {
            break;
        }
        let stream = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & 0x7fff_ffff;
        frames.push(Frame {
            kind: buf[3],
            flags: buf[4],
            stream,
            payload: buf[9..9 + len].to_vec(),
        });
        buf.drain(..9 + len);
    }
    frames
}
