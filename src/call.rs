//! A call's context: which connection it came on, which client it is from, which method
//! it calls, and when it must be over. Made once per call by the connection layer
//! (`server::connections`), carried as a request extension, and read by every layer and
//! handler that needs it: the call log and metrics (`server::call_log`), the
//! calls-in-flight budget (`server::admission`), the body check
//! (`server::request_body`), the handlers and the HARD search queue
//! (`service::searches`). It sits below both `server` and `service`, so neither
//! imports the other for it.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

use crate::routes::Route;

/// A connection's number, unique for the server's life (`server::connections`). It
/// keys what is kept per connection: its calls in flight, its searches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId(pub u64);

impl ConnectionId {
    /// The connection of a call made without the server's transport (a test or a
    /// benchmark calling the service in process): all such calls share it.
    pub const IN_PROCESS: ConnectionId = ConnectionId(u64::MAX);
}

/// Whom a call is from, for what is shared out per client (the HARD search queue's
/// turns): the address the call came from, or, behind a gateway the operator trusts
/// (`--trusted-client-header`), the client address the gateway wrote in that header;
/// an IPv6 address by its /64, which one host is commonly given whole (so a host's
/// many connections, or many addresses of its /64, are one client). The connection
/// only when no address is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientId {
    Connection(ConnectionId),
    Address(IpAddr),
}

impl ClientId {
    /// The client of a call on `connection` from `peer` whose trusted header, when one
    /// is configured, carried `forwarded` (its last line): the address that line ends
    /// with, else the peer's address, else the connection.
    pub fn new(
        connection: ConnectionId,
        peer: Option<IpAddr>,
        forwarded: Option<&[u8]>,
    ) -> ClientId {
        forwarded
            .and_then(forwarded_address)
            .or(peer)
            .map_or(ClientId::Connection(connection), |ip| {
                ClientId::Address(host_of(ip))
            })
    }
}

/// An address as a client: IPv4 whole (an IPv4 address mapped into IPv6 too), IPv6 by
/// its first 64 bits.
fn host_of(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from_bits(v6.to_bits() & !u128::from(u64::MAX))),
        v4 => v4,
    }
}

/// The longest address entry read (an IPv6 address with a port is at most 47 bytes).
const MAX_ADDRESS_LEN: usize = 64;

/// The address a forwarding header's value ends with: `x-forwarded-for`'s entries are
/// comma separated, each proxy appending the peer it saw, so the last entry is the one
/// the trusted gateway wrote (earlier ones are the client's to forge). An entry is an
/// IP address, or one with a port (`1.2.3.4:5`, `[::1]:5`); an IPv4 address mapped
/// into IPv6 is the IPv4 address. Only the value's last bytes are read.
pub fn forwarded_address(value: &[u8]) -> Option<IpAddr> {
    let tail = &value[value.len().saturating_sub(2 * MAX_ADDRESS_LEN)..];
    let entry = match tail.iter().rposition(|&b| b == b',') {
        Some(comma) => &tail[comma + 1..],
        None if tail.len() == value.len() => tail,
        None => return None,
    };
    let entry = std::str::from_utf8(entry.trim_ascii()).ok()?;
    if entry.len() > MAX_ADDRESS_LEN {
        return None;
    }
    let ip = entry
        .parse::<IpAddr>()
        .or_else(|_| entry.parse::<SocketAddr>().map(|a| a.ip()))
        .ok()?;
    Some(ip.to_canonical())
}

/// Whether the call's connection has begun to close (at its age, or the server
/// draining), as a request extension: a long-lived call (`Watch`) ends itself then,
/// cleanly, so that its client makes it again on another connection.
#[derive(Clone, Debug)]
pub struct Closing(pub tokio::sync::watch::Receiver<bool>);

impl Closing {
    /// A call made outside a connection (in process): never closing.
    pub fn never() -> Closing {
        let (sender, receiver) = tokio::sync::watch::channel(false);
        // The sender dropped: `closed` waits for ever.
        drop(sender);
        Closing(receiver)
    }

    /// Completes once the connection begins to close (never if it cannot any more).
    pub async fn closed(&mut self) {
        if self.0.wait_for(|closing| *closing).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// What the transport knows of a call, as a request extension: made once, by the
/// connection layer (`server::connections`) when the call's headers arrive, and read by
/// every layer and handler after it. A call that reaches the service without one is the
/// server's fault (answered INTERNAL); a test or a benchmark calling the service in
/// process gives it [`CallContext::in_process`].
#[derive(Clone, Copy, Debug)]
pub struct CallContext {
    /// The connection the call came on.
    pub connection: ConnectionId,
    /// Whom it is from: its connection unless a trusted header names the client.
    pub client: ClientId,
    /// The method it calls (`None`: a path the server does not serve).
    pub route: Option<&'static Route>,
    /// When the call must be over: the earlier of the server's `--request-timeout-ms`
    /// and the client's `grpc-timeout`, counted from the call's headers.
    pub deadline: Instant,
    /// Whether the deadline is the server's own limit (no earlier `grpc-timeout`): a
    /// call past it is answered `REQUEST_TIMEOUT` (`service::status::deadline_passed`).
    pub server_limit: bool,
}

impl CallContext {
    /// The context of a call on `connection` from `client` to `path`, whose headers
    /// arrived `now` with `grpc_timeout` (the header's value, if any), on a server whose
    /// own limit is `server_timeout`.
    pub fn new(
        connection: ConnectionId,
        client: ClientId,
        path: &str,
        now: Instant,
        grpc_timeout_header: Option<&[u8]>,
        server_timeout: Duration,
    ) -> CallContext {
        let asked = grpc_timeout_header.and_then(grpc_timeout);
        let server_limit = asked.is_none_or(|asked| asked >= server_timeout);
        let timeout = asked.map_or(server_timeout, |asked| asked.min(server_timeout));
        CallContext {
            connection,
            client,
            route: Route::of_path(path),
            deadline: now.checked_add(timeout).unwrap_or(now),
            server_limit,
        }
    }

    /// The answer to a call that reached a layer or the service without its context:
    /// the server's stack is miswired (a bug, never the client's doing).
    pub fn missing() -> tonic::Status {
        tonic::Status::internal("the call has no context: the server's stack is miswired")
    }

    /// The context of a call to `path` made in process, without the server's transport
    /// (a test or a benchmark calling the service): on [`ConnectionId::IN_PROCESS`],
    /// which all such calls share, and over `timeout` from now.
    pub fn in_process(path: &str, timeout: Duration) -> CallContext {
        let connection = ConnectionId::IN_PROCESS;
        CallContext::new(
            connection,
            ClientId::Connection(connection),
            path,
            Instant::now(),
            None,
            timeout,
        )
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
    fn the_client_is_the_address_a_forwarding_header_ends_with() {
        let conn = ConnectionId(3);
        let client = |v: &str| ClientId::new(conn, None, Some(v.as_bytes()));
        let ip = |s: &str| ClientId::Address(s.parse().unwrap());
        assert_eq!(client("203.0.113.7"), ip("203.0.113.7"));
        assert_eq!(client("1.1.1.1, 10.0.0.2,203.0.113.7 "), ip("203.0.113.7"));
        assert_eq!(client("forged, 203.0.113.7"), ip("203.0.113.7"));
        assert_eq!(client("203.0.113.7:4711"), ip("203.0.113.7"));
        // IPv6 by its /64.
        assert_eq!(client("2001:db8::1"), ip("2001:db8::"));
        assert_eq!(client("[2001:db8::1:2:3:4]:443"), ip("2001:db8::"));
        assert_eq!(client("2001:db8:0:1::1"), ip("2001:db8:0:1::"));
        assert_eq!(client("::ffff:203.0.113.7"), ip("203.0.113.7"));
        let long = format!("{}, 203.0.113.7", "9".repeat(10_000));
        assert_eq!(client(&long), ip("203.0.113.7"));
        // Anything else is the connection's.
        for bad in [
            "",
            " ",
            "unknown",
            "203.0.113.7, ",
            "1.2.3.4.5",
            "203.0.113.7;x",
        ] {
            assert_eq!(client(bad), ClientId::Connection(conn), "{bad:?}");
        }
        let one_long_entry = format!("1.2.3.4{}", " ".repeat(200));
        assert_eq!(client(&one_long_entry), ClientId::Connection(conn));
        assert_eq!(
            ClientId::new(conn, None, Some(b"\xff\xfe")),
            ClientId::Connection(conn)
        );
        assert_eq!(ClientId::new(conn, None, None), ClientId::Connection(conn));
    }

    #[test]
    fn without_a_trusted_address_the_client_is_the_peers_address() {
        let peer = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        let ip = |s: &str| ClientId::Address(s.parse().unwrap());
        // Two connections from one host are one client.
        for conn in [ConnectionId(1), ConnectionId(2)] {
            assert_eq!(
                ClientId::new(conn, peer("198.51.100.4"), None),
                ip("198.51.100.4")
            );
            assert_eq!(
                ClientId::new(conn, peer("2001:db8::7"), None),
                ip("2001:db8::")
            );
            assert_eq!(
                ClientId::new(conn, peer("::ffff:198.51.100.4"), None),
                ip("198.51.100.4")
            );
        }
        // A trusted header's address comes first; a bad one falls back to the peer.
        let via = |v: &str| ClientId::new(ConnectionId(1), peer("10.0.0.9"), Some(v.as_bytes()));
        assert_eq!(via("203.0.113.7"), ip("203.0.113.7"));
        assert_eq!(via("unknown"), ip("10.0.0.9"));
    }

    #[test]
    fn a_calls_deadline_is_the_earlier_of_its_timeout_and_the_servers() {
        let now = Instant::now();
        let server = Duration::from_secs(2);
        let deadline = |header: Option<&str>| {
            let conn = ConnectionId(1);
            let client = ClientId::Connection(conn);
            let path = "/allfives.v1.AllFivesService/Play";
            let context =
                CallContext::new(conn, client, path, now, header.map(str::as_bytes), server);
            (context.deadline - now, context.server_limit)
        };
        assert_eq!(deadline(None), (Duration::from_secs(2), true));
        assert_eq!(deadline(Some("1S")), (Duration::from_secs(1), false));
        assert_eq!(deadline(Some("1H")), (Duration::from_secs(2), true));
        assert_eq!(deadline(Some("2S")), (Duration::from_secs(2), true));
        assert_eq!(deadline(Some("junk")), (Duration::from_secs(2), true));
        assert_eq!(deadline(Some("0m")), (Duration::ZERO, false));
    }
}
