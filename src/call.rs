//! A call's context: which connection it came on and when it must be over. Made once
//! per call by the connection layer (`server::connections`), carried as a request
//! extension, and read by every layer and handler that needs it: the calls-in-flight
//! budget (`server::admission`) and the HARD search queue (`service::searches`). It
//! sits below both `server` and `service`, so neither imports the other for it.

use std::time::{Duration, Instant};

/// A connection's number, unique for the server's life (`server::connections`). It
/// keys what is kept per connection: its calls in flight, its searches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId(pub u64);

impl ConnectionId {
    /// The connection of a call made without the server's transport (a test or a
    /// benchmark calling the service in process): all such calls share it.
    pub const IN_PROCESS: ConnectionId = ConnectionId(u64::MAX);
}

/// What the transport knows of a call, as a request extension.
#[derive(Clone, Copy, Debug)]
pub struct CallContext {
    /// The connection the call came on.
    pub connection: ConnectionId,
    /// When the call must be over: the earlier of the server's `--request-timeout-ms`
    /// and the client's `grpc-timeout`, counted from the call's headers.
    pub deadline: Instant,
}

impl CallContext {
    /// The context of a call on `connection` whose headers arrived `now` with
    /// `grpc_timeout` (the header's value, if any), on a server whose own limit is
    /// `server_timeout`.
    pub fn new(
        connection: ConnectionId,
        now: Instant,
        grpc_timeout_header: Option<&[u8]>,
        server_timeout: Duration,
    ) -> CallContext {
        let timeout = grpc_timeout_header
            .and_then(grpc_timeout)
            .map_or(server_timeout, |asked| asked.min(server_timeout));
        CallContext {
            connection,
            deadline: now.checked_add(timeout).unwrap_or(now),
        }
    }
}

/// A `grpc-timeout` header's value (`<1 to 8 digits><H|M|S|m|u|n>`, gRPC over
/// HTTP/2), or `None` if it is not one (then it is ignored, as tonic's server timeout
/// ignores it, and the server's own limit applies).
pub fn grpc_timeout(value: &[u8]) -> Option<Duration> {
    let (&unit, digits) = value.split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    Some(match unit {
        b'H' => Duration::from_secs(n * 3600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts_are_read_in_every_unit_and_anything_else_is_ignored() {
        let read = |v: &str| grpc_timeout(v.as_bytes());
        assert_eq!(read("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(read("2M"), Some(Duration::from_secs(120)));
        assert_eq!(read("3S"), Some(Duration::from_secs(3)));
        assert_eq!(read("10m"), Some(Duration::from_millis(10)));
        assert_eq!(read("250u"), Some(Duration::from_micros(250)));
        assert_eq!(read("99999999n"), Some(Duration::from_nanos(99_999_999)));
        assert_eq!(
            read("99999999H"),
            Some(Duration::from_secs(99_999_999 * 3600))
        );
        for bad in [
            "",
            "m",
            "S",
            "123456789m",
            "10",
            "10x",
            "1x",
            "-1S",
            "1.5S",
            " 1S",
            "1 S",
            "1s",
            "１S",
        ] {
            assert_eq!(read(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_calls_deadline_is_the_earlier_of_its_timeout_and_the_servers() {
        let now = Instant::now();
        let server = Duration::from_secs(2);
        let deadline = |header: Option<&str>| {
            CallContext::new(ConnectionId(1), now, header.map(str::as_bytes), server).deadline - now
        };
        assert_eq!(deadline(None), Duration::from_secs(2));
        assert_eq!(deadline(Some("1S")), Duration::from_secs(1));
        assert_eq!(deadline(Some("1H")), Duration::from_secs(2));
        assert_eq!(deadline(Some("junk")), Duration::from_secs(2));
        assert_eq!(deadline(Some("0m")), Duration::ZERO);
    }
}
