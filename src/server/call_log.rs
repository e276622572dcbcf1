//! The call log: every call's outcome logged (failures as WARN, at most one line per
//! [`WARN_EVERY`](crate::throttle::WARN_EVERY)) and counted in the metrics.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use tonic::Code;
use tonic::codegen::Service;
use tonic::codegen::http;

use crate::call::CallContext;
use crate::metrics::Metrics;
use crate::routes::Route;
use crate::throttle::SharedThrottle;

/// WARN lines of calls answered UNKNOWN, INTERNAL or DATA_LOSS: one per period, with
/// how many were held back, so a client that provokes them cannot flood the log.
static CALL_FAILED: SharedThrottle = SharedThrottle::new();

/// WARN lines of calls whose service failed without an answer.
static SERVICE_FAILED: SharedThrottle = SharedThrottle::new();

/// Wraps the routes: an event when the response is ready (code and latency) or the call
/// is abandoned, in a `call` span with the gRPC method; the same outcome is counted in
/// the metrics (an abandoned call, its client gone, as CANCELLED; a call past its
/// deadline is answered below, by the admission layer, with DEADLINE_EXCEEDED).
///
/// Streams HTTP/2 refuses past `--concurrency-limit` never get here, so they are not
/// counted; calls refused by the limits inside (OVERLOADED, the deadline) are.
#[derive(Clone)]
pub(super) struct CallLog<S> {
    pub(super) inner: S,
    pub(super) metrics: Arc<Metrics>,
}

impl<S, B, ResBody> Service<http::Request<B>> for CallLog<S>
where
    S: Service<http::Request<B>, Response = http::Response<ResBody>>,
    S::Future: Send + 'static,
    S::Error: std::fmt::Display,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        // The span of the call's log lines is made only when a line is written: an
        // enabled span on every call would cost more than a tenth of a bare call.
        let uri = request.uri().clone();
        let route = request
            .extensions()
            .get::<CallContext>()
            .and_then(|context| context.route);
        let metrics = Arc::clone(&self.metrics);
        let response = self.inner.call(request);
        Box::pin(async move {
            let mut pending = Pending {
                start: Instant::now(),
                done: false,
                route,
                metrics,
                uri,
            };
            let result = response.await;
            pending.done = true;
            let elapsed = pending.start.elapsed();
            let micros = elapsed.as_micros();
            let code = match &result {
                Ok(response) => {
                    // An error is a trailers-only response (status in the headers);
                    // otherwise the status follows the message, and is OK unless the
                    // body fails, which unary calls do not.
                    let code = response
                        .headers()
                        .get("grpc-status")
                        .map_or(Code::Ok, |v| Code::from_bytes(v.as_bytes()));
                    match code {
                        Code::Unknown | Code::Internal | Code::DataLoss => {
                            if let Some(held_back) = CALL_FAILED.check() {
                                call_span(&pending.uri).in_scope(|| {
                                    tracing::warn!(?code, micros, held_back, "call failed")
                                })
                            }
                        }
                        _ => {
                            if tracing::enabled!(tracing::Level::DEBUG) {
                                call_span(&pending.uri)
                                    .in_scope(|| tracing::debug!(?code, micros, "call done"))
                            }
                        }
                    }
                    code
                }
                Err(error) => {
                    if let Some(held_back) = SERVICE_FAILED.check() {
                        call_span(&pending.uri)
                            .in_scope(|| tracing::warn!(%error, micros, held_back, "call failed"));
                    }
                    Code::Unknown
                }
            };
            pending.metrics.call_done(route, code, elapsed);
            result
        })
    }
}

/// The span of a call's log lines: `call`, with the gRPC path as `method`.
fn call_span(uri: &http::Uri) -> tracing::Span {
    tracing::info_span!("call", method = uri.path())
}

/// Logs and counts a call dropped before its response: past its deadline or cancelled
/// by the client.
struct Pending {
    start: Instant,
    done: bool,
    route: Option<&'static Route>,
    metrics: Arc<Metrics>,
    uri: http::Uri,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.done {
            let elapsed = self.start.elapsed();
            self.metrics.call_done(self.route, Code::Cancelled, elapsed);
            if tracing::enabled!(tracing::Level::DEBUG) {
                call_span(&self.uri).in_scope(|| {
                    tracing::debug!(
                        micros = elapsed.as_micros(),
                        "call abandoned (deadline passed or client cancelled)"
                    )
                });
            }
        }
    }
}
