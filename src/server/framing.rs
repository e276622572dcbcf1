//! The gRPC framing of a request body, followed as its bytes arrive: messages, each a
//! flag byte (0: not compressed), a big-endian 4-byte length and that many bytes. The
//! one parser of it in the server (`super::request_body` runs it on every body); tonic
//! frames again what it decodes, behind it. Ours: no kept crate follows gRPC framing
//! incrementally with a say on each message before the service sees it.

/// The length of a gRPC message's header: a flag byte and a 4-byte length.
const HEADER: usize = 5;

/// A decoder run on each whole message of a route: `Err` if it is not the route's
/// request.
pub type Check = fn(&[u8]) -> Result<(), prost::DecodeError>;

/// The largest message [`Framing`] buffers to check (health's and reflection's
/// requests are names, tens of bytes); a longer one is passed on unchecked, to be
/// refused by `--max-message-bytes` (16 KiB by default) or, past a limit raised above
/// this, decoded by the service itself.
pub const MAX_CHECKED: u32 = 64 * 1024;

/// Where a body is in its gRPC framing: messages, each a flag byte (0: not
/// compressed), a big-endian 4-byte length and that many bytes.
#[derive(Debug)]
pub struct Framing {
    /// The header being read, and how much of it has arrived.
    header: [u8; HEADER],
    have: usize,
    /// Bytes of the current message still to come.
    left: u32,
    /// Messages begun.
    messages: u32,
    /// Whether the route takes exactly one message (then an empty body is malformed).
    one_message: bool,
    /// The route's message check, and the current message's bytes while it has one.
    check: Option<Check>,
    message: Vec<u8>,
}

impl Framing {
    pub fn new(one_message: bool, check: Option<Check>) -> Framing {
        Framing {
            header: [0; HEADER],
            have: 0,
            left: 0,
            messages: 0,
            one_message,
            check,
            message: Vec::new(),
        }
    }

    /// Runs the route's check on the message just completed.
    fn checked(&mut self) -> Result<(), String> {
        let Some(check) = self.check else {
            return Ok(());
        };
        let result = check(&self.message);
        self.message.clear();
        result.map_err(|e| format!("the message is not the method's request: {e}"))
    }

    /// Whether the current message's bytes are kept for the check.
    fn buffering(&self) -> bool {
        self.check.is_some()
    }

    /// Follows the framing through `data`; the error says what is wrong.
    pub fn data(&mut self, mut data: &[u8]) -> Result<(), String> {
        while !data.is_empty() {
            if self.left > 0 {
                let n = data.len().min(self.left as usize);
                // `n` is at most `self.left`, a u32.
                self.left -= n as u32;
                if self.buffering() {
                    self.message.extend_from_slice(&data[..n]);
                    if self.left == 0 {
                        self.checked()?;
                    }
                }
                data = &data[n..];
                continue;
            }
            let n = data.len().min(HEADER - self.have);
            self.header[self.have..self.have + n].copy_from_slice(&data[..n]);
            self.have += n;
            data = &data[n..];
            if self.have == HEADER {
                self.have = 0;
                match self.header[0] {
                    0 => {}
                    1 => {
                        return Err("a message is flagged compressed, but the call \
                                    negotiated no grpc-encoding (this server takes none)"
                            .to_owned());
                    }
                    flag => {
                        return Err(format!(
                            "a message's flag is {flag}: not gRPC framing (0 or 1)"
                        ));
                    }
                }
                let [_, a, b, c, d] = self.header;
                self.left = u32::from_be_bytes([a, b, c, d]);
                self.messages += 1;
                if self.left > MAX_CHECKED {
                    // Too long to be the route's request; its service refuses the length.
                    self.check = None;
                    self.message = Vec::new();
                } else if self.left == 0 {
                    self.checked()?;
                }
            }
        }
        Ok(())
    }

    /// Whether the body's first message has arrived whole.
    pub fn first_message_whole(&self) -> bool {
        self.messages > 1 || (self.messages == 1 && self.left == 0)
    }

    /// Checks that the body ended between messages, having sent one if it must.
    pub fn end(&self) -> Result<(), String> {
        if self.have > 0 {
            return Err(format!(
                "the body ended inside a message's header ({} of {HEADER} bytes)",
                self.have
            ));
        }
        if self.left > 0 {
            return Err(format!(
                "the body ended inside a message, {} bytes short of its length",
                self.left
            ));
        }
        if self.one_message && self.messages == 0 {
            return Err("the body holds no message".to_owned());
        }
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// One gRPC message: its flag, its declared length and the bytes that follow.
    pub(in crate::server) fn message(flag: u8, len: u32, body: &[u8]) -> Vec<u8> {
        let mut out = vec![flag];
        out.extend(len.to_be_bytes());
        out.extend(body);
        out
    }

    #[test]
    fn well_framed_bodies_pass_in_any_split() {
        let mut body = message(0, 3, b"abc");
        body.extend(message(0, 0, b""));
        for split in 0..=body.len() {
            let mut framing = Framing::new(true, None);
            let (a, b) = body.split_at(split);
            assert_eq!(framing.data(a), Ok(()));
            assert_eq!(framing.data(b), Ok(()));
            assert_eq!(framing.end(), Ok(()), "split at {split}");
            assert_eq!(framing.messages, 2);
            assert!(framing.first_message_whole());
        }
    }

    #[test]
    fn the_first_message_is_whole_once_its_last_byte_has_arrived() {
        let body = message(0, 3, b"abc");
        let mut framing = Framing::new(true, None);
        for byte in &body[..body.len() - 1] {
            framing.data(std::slice::from_ref(byte)).expect("framing");
            assert!(!framing.first_message_whole());
        }
        framing.data(&body[body.len() - 1..]).expect("framing");
        assert!(framing.first_message_whole());
        let mut empty = Framing::new(true, None);
        empty.data(&message(0, 0, b"")).expect("framing");
        assert!(empty.first_message_whole(), "an empty message is whole");
    }

    #[test]
    fn bad_flags_short_bodies_and_empty_bodies_are_refused() {
        for flag in [1, 2, 0x80, 0xff] {
            let mut framing = Framing::new(true, None);
            assert!(framing.data(&message(flag, 1, b"x")).is_err(), "{flag}");
        }
        for cut in 1..9 {
            let mut framing = Framing::new(true, None);
            framing
                .data(&message(0, 4, b"abcd")[..cut])
                .expect("framing");
            assert!(framing.end().is_err(), "cut at {cut}");
        }
        assert!(Framing::new(true, None).end().is_err());
        assert_eq!(Framing::new(false, None).end(), Ok(()));
    }
}
