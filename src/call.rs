//! A call's context: the connection it came on (its tracker, `crate::connection`),
//! which client it is from, which method it calls, and when it must be over. Made once per call by the connection layer
//! (`server::connections`), carried as a request extension, and read by every layer and
//! handler that needs it: the call log and metrics (`server::call_log`), the
//! calls-in-flight budget (`server::admission`), the body check
//! (`server::request_body`), the handlers and the HARD search queue
//! (`service::searches`). It sits below both `server` and `service`, so neither
//! imports the other for it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::connection::{ClientId, Tracker};
use crate::routes::Route;

/// What the transport knows of a call, as a request extension: made once, by the
/// connection layer (`server::connections`) when the call's headers arrive, and read by
/// every layer and handler after it. A call that reaches the service without one is the
/// server's fault (answered INTERNAL); a test or a benchmark calling the service in
/// process gives it [`CallContext::in_process`].
#[derive(Clone, Debug)]
pub struct CallContext {
    /// The connection the call came on: what it holds and is doing, in one place.
    pub connection: Arc<Tracker>,
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
    /// The context of a call on `connection` to `path`, whose headers arrived `now`
    /// with `grpc_timeout` (the header's value, if any) and, when the server trusts a
    /// client header, `forwarded` (its last line), on a server whose own limit is
    /// `server_timeout`.
    pub fn new(
        connection: Arc<Tracker>,
        forwarded: Option<&[u8]>,
        path: &str,
        now: Instant,
        grpc_timeout_header: Option<&[u8]>,
        server_timeout: Duration,
    ) -> CallContext {
        let asked = grpc_timeout_header.and_then(grpc_timeout);
        let server_limit = asked.is_none_or(|asked| asked >= server_timeout);
        let timeout = asked.map_or(server_timeout, |asked| asked.min(server_timeout));
        CallContext {
            client: connection.client(forwarded),
            connection,
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
    /// (a test or a benchmark calling the service), on `connection` (made once with
    /// [`Tracker::in_process`], as the server makes one per connection), over `timeout`
    /// from now.
    pub fn in_process(connection: &Arc<Tracker>, path: &str, timeout: Duration) -> CallContext {
        CallContext::new(
            Arc::clone(connection),
            None,
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
    fn a_calls_deadline_is_the_earlier_of_its_timeout_and_the_servers() {
        let now = Instant::now();
        let server = Duration::from_secs(2);
        let deadline = |header: Option<&str>| {
            let conn = Tracker::in_process();
            let path = "/allfives.v1.AllFivesService/Play";
            let context =
                CallContext::new(conn, None, path, now, header.map(str::as_bytes), server);
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
