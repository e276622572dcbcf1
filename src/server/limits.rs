//! Limits every call meets before its method runs: at most `--max-calls-in-flight`
//! calls in flight over all connections (past it a call is answered RESOURCE_EXHAUSTED
//! `OVERLOADED` at once, its body unread), and a deadline, the shorter of the client's
//! `grpc-timeout` and `--request-timeout-ms` (past it CANCELLED, as tonic's own server
//! timeout answers, and the call's work is dropped).
//!
//! With the request message limit, the cap on calls in flight bounds the request bytes
//! the server holds (docs/RELIABILITY.md, "The memory budget").

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::Semaphore;
use tonic::Status;
use tonic::body::Body;
use tonic::codegen::http::{HeaderMap, Request, Response};
use tonic::codegen::{Bytes, Service, StdError};

use crate::service::status::ApiError;

/// The shared budget of calls in flight and the server's call timeout.
#[derive(Clone)]
pub struct Limits {
    slots: Arc<Semaphore>,
    timeout: Duration,
}

impl Limits {
    pub fn new(max_calls_in_flight: usize, timeout: Duration) -> Limits {
        Limits {
            slots: Arc::new(Semaphore::new(max_calls_in_flight)),
            timeout,
        }
    }

    /// `inner` under these limits.
    pub fn wrap<S>(&self, inner: S) -> Limited<S> {
        Limited {
            inner,
            limits: self.clone(),
        }
    }

    /// Calls in flight now.
    #[cfg(test)]
    fn in_flight(&self, cap: usize) -> usize {
        cap - self.slots.available_permits()
    }
}

/// A service under [`Limits`].
#[derive(Clone)]
pub struct Limited<S> {
    inner: S,
    limits: Limits,
}

impl<S, B, ResBody> Service<Request<B>> for Limited<S>
where
    S: Service<Request<B>, Response = Response<ResBody>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<StdError>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let Ok(slot) = Arc::clone(&self.limits.slots).try_acquire_owned() else {
            let refusal = Status::from(ApiError::Overloaded).into_http::<Body>();
            return Box::pin(std::future::ready(Ok(refusal)));
        };
        let timeout = grpc_timeout(request.headers()).map_or(self.limits.timeout, |client| {
            client.min(self.limits.timeout)
        });
        let response = self.inner.call(request);
        Box::pin(async move {
            let _slot = slot;
            match tokio::time::timeout(timeout, response).await {
                Ok(response) => response.map(|r| r.map(Body::new)),
                Err(_) => Ok(Status::cancelled("Timeout expired").into_http::<Body>()),
            }
        })
    }
}

/// The client's deadline from `grpc-timeout` (gRPC over HTTP/2: at most 8 digits and a
/// unit, `H` `M` `S` `m` `u` `n`); `None` if absent or malformed (then the server's
/// timeout alone applies, as tonic does).
fn grpc_timeout(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = value.split_at_checked(value.len().checked_sub(1)?)?;
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;
    use tonic::codegen::http::HeaderValue;

    fn timeout_of(value: &'static str) -> Option<Duration> {
        let mut headers = HeaderMap::new();
        headers.insert("grpc-timeout", HeaderValue::from_static(value));
        grpc_timeout(&headers)
    }

    #[test]
    fn grpc_timeout_headers_are_read_as_the_spec_writes_them() {
        assert_eq!(timeout_of("3S"), Some(Duration::from_secs(3)));
        assert_eq!(timeout_of("250m"), Some(Duration::from_millis(250)));
        assert_eq!(
            timeout_of("99999999u"),
            Some(Duration::from_micros(99_999_999))
        );
        assert_eq!(timeout_of("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(timeout_of("2M"), Some(Duration::from_secs(120)));
        assert_eq!(timeout_of("5n"), Some(Duration::from_nanos(5)));
        for bad in ["", "S", "123456789m", "1x", "-1S", "1.5S", "１S"] {
            let mut headers = HeaderMap::new();
            if let Ok(v) = HeaderValue::from_str(bad) {
                headers.insert("grpc-timeout", v);
            }
            assert_eq!(grpc_timeout(&headers), None, "{bad:?}");
        }
    }

    /// A service that answers only when told.
    #[derive(Clone)]
    struct Held(Arc<tokio::sync::Notify>);

    impl Service<Request<()>> for Held {
        type Response = Response<Body>;
        type Error = std::convert::Infallible;
        type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Self::Error>> + Send>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: Request<()>) -> Self::Future {
            let release = Arc::clone(&self.0);
            Box::pin(async move {
                release.notified().await;
                Ok(Response::new(Body::empty()))
            })
        }
    }

    fn code(response: &Response<Body>) -> Code {
        response
            .headers()
            .get("grpc-status")
            .map_or(Code::Ok, |v| Code::from_bytes(v.as_bytes()))
    }

    #[tokio::test]
    async fn past_the_cap_calls_are_refused_at_once_and_a_finished_call_frees_its_slot() {
        let limits = Limits::new(2, Duration::from_secs(60));
        let release = Arc::new(tokio::sync::Notify::new());
        let mut service = limits.wrap(Held(Arc::clone(&release)));
        let first = tokio::spawn(service.call(Request::new(())));
        let second = tokio::spawn(service.call(Request::new(())));
        tokio::task::yield_now().await;
        assert_eq!(limits.in_flight(2), 2);
        let refused = service.call(Request::new(())).await.expect("answered");
        assert_eq!(code(&refused), Code::ResourceExhausted);
        release.notify_one();
        let done = first.await.expect("task").expect("answered");
        assert_eq!(code(&done), Code::Ok);
        assert_eq!(limits.in_flight(2), 1, "the finished call's slot is free");
        release.notify_one();
        second.await.expect("task").expect("answered");
        assert_eq!(limits.in_flight(2), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_past_the_shorter_deadline_is_cancelled_and_frees_its_slot() {
        let limits = Limits::new(1, Duration::from_secs(5));
        let mut service = limits.wrap(Held(Arc::new(tokio::sync::Notify::new())));
        let mut request = Request::new(());
        request
            .headers_mut()
            .insert("grpc-timeout", HeaderValue::from_static("100m"));
        let started = tokio::time::Instant::now();
        let answer = service.call(request).await.expect("answered");
        assert_eq!(code(&answer), Code::Cancelled);
        assert_eq!(started.elapsed(), Duration::from_millis(100));
        assert_eq!(limits.in_flight(1), 0);
        let answer = service.call(Request::new(())).await.expect("answered");
        assert_eq!(code(&answer), Code::Cancelled);
        assert_eq!(
            started.elapsed(),
            Duration::from_millis(5100),
            "the server's own"
        );
    }
}
