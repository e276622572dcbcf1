//! Every call's request body, checked as it streams in, after gRPC-Web has turned it
//! into gRPC framing: the framing itself, and the deadline for the whole body
//! (`--body-timeout-ms`).
//!
//! What a call whose body is bad is answered:
//! - bytes that are not gRPC messages (a flag other than 0: this server negotiates no
//!   compression, so a compressed flag is as wrong as any other), a body that ends
//!   inside a message or holds none on a route that takes one, and anything the body
//!   layer before this one refused (gRPC-Web's base64): INVALID_ARGUMENT,
//!   `MALFORMED_REQUEST`. The client sent something this server cannot read.
//! - a message that is not its method's protobuf, on health's and reflection's routes:
//!   the same. Their services come from tonic-health and tonic-reflection with prost's
//!   codec built in, which answers INTERNAL for what it cannot decode, so their
//!   messages (a few bytes each) are decoded here first. The API's own codec
//!   (`service::codec`) refuses undecodable messages itself.
//! - a body not whole within `--body-timeout-ms` of the call's headers: CANCELLED,
//!   `REQUEST_BODY_TIMEOUT`, and the call is dropped, which frees what it buffered.
//! - a body the transport broke (the client reset the stream, the connection closed):
//!   CANCELLED, as gRPC clients report a call they cancelled. Nobody is left to read
//!   it; the code is for the log and the metrics, where a cancellation is not a
//!   server error. (gRPC-Web calls are the exception: tonic-web turns a broken body
//!   into a status of its own, without hyper's error, so it counts as malformed.)
//!
//! tonic reads a CANCELLED body error as the end of the body ("Missing request
//! message": INTERNAL), so those two answers are made here, by the call's future,
//! which drops the call instead of waiting for it; the body then waits for nothing.
//!
//! This is the one place the gRPC framing is followed: it also tells the calls-in-flight
//! budget when the first message has arrived ([`BodyArrived`]). Ours: no kept crate
//! checks gRPC framing or a body's deadline as it streams (tower-http's timeouts end a
//! body with an error tonic reads as the body's end, and answer INTERNAL).

use std::error::Error;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body as HttpBody, Frame, SizeHint};
use tokio::sync::oneshot;
use tokio::time::{Instant, Sleep};
use tonic::Status;
use tonic::body::Body;
use tonic::codegen::http;
use tonic::codegen::{Bytes, Service};

use super::admission::BodyArrived;
use super::framing::{Check, Framing};
use crate::call::CallContext;
use crate::routes::Route;
use crate::service::status::ApiError;

/// Wraps a service (the routes): each request's body is [`Checked`], and the call is
/// answered early when its body times out or breaks.
#[derive(Clone, Debug)]
pub struct RequestBody<S> {
    inner: S,
    timeout: Duration,
}

impl<S> RequestBody<S> {
    /// `inner` with bodies that must be whole within `timeout` of the headers.
    pub fn new(inner: S, timeout: Duration) -> RequestBody<S> {
        RequestBody { inner, timeout }
    }
}

impl<S> Service<http::Request<Body>> for RequestBody<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>>,
    S::Future: Send + 'static,
    S::Error: 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let (mut parts, body) = request.into_parts();
        let arrived = parts.extensions.remove::<BodyArrived>();
        let (ended, end) = oneshot::channel();
        let route = parts
            .extensions
            .get::<CallContext>()
            .and_then(|context| context.route);
        // A path no route serves answers UNIMPLEMENTED without reading its body.
        let one_message = route.is_none_or(|r| !r.client_streaming);
        // A streaming call may have answered before its body is refused: its answer's
        // end is told of the refusal.
        let refusal = (!one_message).then(Refusal::default);
        let checked = Checked {
            inner: body,
            framing: Framing::new(one_message, route.and_then(foreign_check)),
            deadline: Instant::now() + self.timeout,
            timer: None,
            ended: Some(ended),
            finished: false,
            refusal: refusal.clone(),
            arrived,
        };
        let response = self
            .inner
            .call(http::Request::from_parts(parts, Body::new(checked)));
        Box::pin(async move {
            let response = answer(response, end).await?;
            Ok(match refusal {
                Some(refusal) => response.map(|inner| {
                    Body::new(Refusable {
                        inner,
                        refusal,
                        ended: false,
                    })
                }),
                None => response,
            })
        })
    }
}

/// Why a streaming call's request body was refused, once it was: shared by the body
/// ([`Checked`]) and the answer ([`Refusable`]).
type Refusal = Arc<OnceLock<String>>;

/// A streaming call's answer, whose end says the request was malformed if its body
/// was refused. Reflection's service, for one, ends its answer with OK when its
/// request stream fails; the client is told MALFORMED_REQUEST instead.
struct Refusable {
    inner: Body,
    refusal: Refusal,
    /// Whether the trailers have gone out.
    ended: bool,
}

impl Refusable {
    /// The trailers of a refused request, if it was refused.
    fn refused(&self) -> Option<http::HeaderMap> {
        let what = self.refusal.get()?.clone();
        let mut trailers = http::HeaderMap::new();
        Status::from(ApiError::Malformed(what))
            .add_header(&mut trailers)
            .ok()?;
        Some(trailers)
    }
}

impl HttpBody for Refusable {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        let at_end = match &polled {
            Poll::Ready(None) => true,
            Poll::Ready(Some(Ok(frame))) => frame.is_trailers(),
            _ => false,
        };
        if at_end {
            self.ended = true;
            if let Some(trailers) = self.refused() {
                return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The check for the messages of a route served with prost's codec (health,
/// reflection: not ours); `None` for the API's routes, whose codec refuses junk itself.
fn foreign_check(route: &Route) -> Option<Check> {
    (!route.ours).then_some(route.decode_request)
}

/// How a body ended, told by [`Checked`] to the call's future ([`answer`]).
#[derive(Debug)]
enum End {
    /// Whole and well framed: the call goes on to its answer.
    Complete,
    /// Not whole by the deadline.
    TimedOut,
    /// The transport broke it.
    Broken,
}

/// The call's answer: the service's, unless the body times out or breaks first (then
/// the service's future is dropped, and with it the body and all it buffered).
async fn answer<F, ResBody, E>(
    response: F,
    end: oneshot::Receiver<End>,
) -> Result<http::Response<ResBody>, E>
where
    F: Future<Output = Result<http::Response<ResBody>, E>>,
    ResBody: Default,
{
    let mut response = std::pin::pin!(response);
    tokio::select! {
        biased;
        answer = &mut response => return answer,
        end = end => match end {
            Ok(End::TimedOut) => return Ok(Status::from(ApiError::BodyTimeout).into_http()),
            Ok(End::Broken) => {
                return Ok(Status::cancelled("the request's stream broke before its body was whole")
                    .into_http())
            }
            // Whole, or dropped by the service (which answers without the rest).
            Ok(End::Complete) | Err(_) => {}
        },
    }
    response.await
}

/// A request body checked as it streams: its gRPC framing, its deadline.
pub struct Checked {
    inner: Body,
    framing: Framing,
    deadline: Instant,
    /// Made the first time the body waits (most bodies arrive with their headers).
    timer: Option<Pin<Box<Sleep>>>,
    /// Told how the body ended; `None` once told.
    ended: Option<oneshot::Sender<End>>,
    /// Whether the body has ended (or failed): it yields nothing more.
    finished: bool,
    /// Where a streaming call's refusal is told to its answer.
    refusal: Option<Refusal>,
    /// Told once the first message is whole or the body has ended; `None` once told.
    arrived: Option<BodyArrived>,
}

impl Checked {
    /// Tells the calls-in-flight budget that the body has arrived, once.
    fn tell_arrived(&mut self) {
        if let Some(arrived) = self.arrived.take() {
            arrived.arrived();
        }
    }

    /// The body is refused as malformed: tonic answers the call with this error.
    fn malformed(&mut self, what: String) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        self.finished = true;
        self.tell_arrived();
        self.ended = None;
        if let Some(refusal) = &self.refusal {
            let _ = refusal.set(what.clone());
        }
        Poll::Ready(Some(Err(Status::from(ApiError::Malformed(what)))))
    }

    /// The body ended without being whole: the call's future answers it (`end`) and
    /// drops the call, so this body is never polled again. If the call's future has
    /// answered already (a streaming call), the body ends with `status` instead.
    fn fail(&mut self, end: End, status: Status) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        self.finished = true;
        self.tell_arrived();
        match self.ended.take().map(|ended| ended.send(end)) {
            Some(Ok(())) => Poll::Pending,
            _ => Poll::Ready(Some(Err(status))),
        }
    }
}

impl HttpBody for Checked {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = &mut *self;
        if this.finished {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref()
                    && let Err(what) = this.framing.data(data)
                {
                    return this.malformed(what);
                }
                if frame.is_trailers() || this.framing.first_message_whole() {
                    this.tell_arrived();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            // tonic's body made every error a status: one made from hyper's error is the
            // transport's, any other was made by a layer that read the bytes.
            Poll::Ready(Some(Err(status))) => {
                if from_transport(&status) {
                    this.fail(End::Broken, Status::cancelled(status.message().to_owned()))
                } else {
                    this.malformed(status.message().to_owned())
                }
            }
            Poll::Ready(None) => match this.framing.end() {
                Ok(()) => {
                    this.finished = true;
                    this.tell_arrived();
                    if let Some(ended) = this.ended.take() {
                        let _ = ended.send(End::Complete);
                    }
                    Poll::Ready(None)
                }
                Err(what) => this.malformed(what),
            },
            Poll::Pending => {
                let deadline = this.deadline;
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        this.fail(End::TimedOut, Status::from(ApiError::BodyTimeout))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.finished
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Whether `error` comes from the transport (hyper's error is in its sources: a reset
/// stream, a closed connection), not from a layer that refused the bytes (gRPC-Web's
/// base64).
fn from_transport(error: &(dyn Error + 'static)) -> bool {
    let mut source = Some(error);
    while let Some(error) = source {
        if error.is::<hyper::Error>() {
            return true;
        }
        source = error.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::super::framing::MAX_CHECKED;
    use super::super::framing::tests::message;
    use super::*;
    use prost::Message;

    #[test]
    fn health_and_reflection_messages_are_decoded_in_any_split() {
        let route = |path| Route::of_path(path).expect("a route");
        let check = foreign_check(route("/grpc.health.v1.Health/Check"));
        let good = tonic_health::pb::HealthCheckRequest {
            service: "allfives.v1.AllFivesService".into(),
        }
        .encode_to_vec();
        let mut body = message(0, good.len() as u32, &good);
        body.extend(message(0, 0, b""));
        let junk = message(0, 3, &[0x0a, 0x05, 0x01]);
        for split in 0..=body.len() {
            let mut framing = Framing::new(true, check);
            let (a, b) = body.split_at(split);
            assert_eq!(framing.data(a), Ok(()));
            assert_eq!(framing.data(b), Ok(()), "split at {split}");
        }
        for split in 0..=junk.len() {
            let mut framing = Framing::new(true, check);
            let (a, b) = junk.split_at(split);
            let result = framing.data(a).and_then(|()| framing.data(b));
            assert!(result.is_err(), "split at {split}");
        }
        assert!(
            Framing::new(
                false,
                foreign_check(route(
                    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
                ))
            )
            .data(&junk)
            .is_err()
        );
        assert!(foreign_check(route("/allfives.v1.AllFivesService/Play")).is_none());
        // A message too long to be checked is passed on for the service to refuse.
        let mut framing = Framing::new(true, check);
        assert_eq!(
            framing.data(&message(0, MAX_CHECKED + 1, &[0xff; 100])),
            Ok(())
        );
    }
}
