//! Limits every call meets before its method runs: at most `--max-calls-in-flight`
//! calls in flight over all connections, shared fairly between connections, and a
//! deadline, the shorter of the client's `grpc-timeout` and `--request-timeout-ms`
//! (past it CANCELLED, as tonic's own server timeout answers, and the call's work is
//! dropped).
//!
//! **Fair shares.** A call whose request body has not fully arrived yet is *stalled*.
//! When every slot is taken, a call from a connection holding fewer calls than another
//! takes the slot of that connection's oldest stalled call, which is answered
//! RESOURCE_EXHAUSTED `OVERLOADED` (nothing was done: its request was not even read).
//! So a client holding slots with bodies it never finishes cannot keep others out,
//! however many connections it opens; calls doing real work are never displaced. With
//! no stalled call to displace, the call is refused `OVERLOADED` at once, unread.
//!
//! With the request message limit, the cap bounds the request bytes the server holds
//! (docs/RELIABILITY.md, "The memory budget").

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use http_body::{Body as HttpBody, Frame, SizeHint};
use tokio::sync::Notify;
use tonic::Status;
use tonic::body::Body;
use tonic::codegen::http::{HeaderMap, Request, Response};
use tonic::codegen::{Bytes, Service, StdError};
use tonic::transport::server::TcpConnectInfo;

use crate::service::status::ApiError;

/// The shared budget of calls in flight and the server's call timeout.
#[derive(Clone)]
pub struct Limits {
    admission: Arc<Admission>,
    timeout: Duration,
}

impl Limits {
    pub fn new(max_calls_in_flight: usize, timeout: Duration) -> Limits {
        Limits {
            admission: Arc::new(Admission {
                cap: max_calls_in_flight.max(1),
                state: Mutex::default(),
            }),
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
    fn in_flight(&self) -> usize {
        self.admission.lock().in_flight
    }
}

/// Which connection a call came on (the peer's address and port; tonic's connect info,
/// which the connection loop inserts). Calls without one share a key.
type ConnectionKey = Option<SocketAddr>;

struct Admission {
    cap: usize,
    state: Mutex<AdmissionState>,
}

#[derive(Default)]
struct AdmissionState {
    in_flight: usize,
    connections: HashMap<ConnectionKey, ConnectionCalls>,
}

#[derive(Default)]
struct ConnectionCalls {
    /// Calls of this connection holding a slot.
    held: usize,
    /// Those whose body has not fully arrived, oldest first.
    stalled: VecDeque<Arc<Ticket>>,
}

impl Admission {
    fn lock(&self) -> MutexGuard<'_, AdmissionState> {
        // Every update leaves the counts consistent before anything can panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot for a call on `connection`, taking a stalled call's from a connection
    /// holding more if every slot is held; `None`: refused.
    fn admit(self: &Arc<Self>, connection: ConnectionKey) -> Option<Arc<Ticket>> {
        let mut state = self.lock();
        if state.in_flight >= self.cap {
            let ours = state.connections.get(&connection).map_or(0, |c| c.held);
            let victim = state
                .connections
                .iter()
                .filter(|(_, calls)| calls.held > ours + 1 && !calls.stalled.is_empty())
                .max_by_key(|(_, calls)| calls.held)
                .map(|(key, _)| *key)?;
            let calls = state.connections.get_mut(&victim)?;
            let displaced = calls.stalled.pop_front()?;
            displaced.released.store(true, Ordering::Release);
            calls.held -= 1;
            state.in_flight -= 1;
            displaced.displaced.notify_one();
        }
        state.in_flight += 1;
        let ticket = Arc::new(Ticket {
            admission: Arc::clone(self),
            connection,
            released: AtomicBool::new(false),
            body_done: AtomicBool::new(false),
            displaced: Notify::new(),
        });
        let calls = state.connections.entry(connection).or_default();
        calls.held += 1;
        calls.stalled.push_back(Arc::clone(&ticket));
        Some(ticket)
    }
}

/// A call's slot.
struct Ticket {
    admission: Arc<Admission>,
    connection: ConnectionKey,
    /// Given back (the call ended, or it was displaced).
    released: AtomicBool,
    body_done: AtomicBool,
    /// Told when another connection's call took this slot.
    displaced: Notify,
}

impl Ticket {
    /// The request body has fully arrived: the call can no longer be displaced.
    fn body_done(self: &Arc<Self>) {
        if self.body_done.swap(true, Ordering::AcqRel) || self.released.load(Ordering::Acquire) {
            return;
        }
        let mut state = self.admission.lock();
        if let Some(calls) = state.connections.get_mut(&self.connection) {
            calls.stalled.retain(|t| !Arc::ptr_eq(t, self));
        }
    }

    /// The call ended: its slot is free (once; a displaced call's already is).
    fn release(self: &Arc<Self>) {
        let mut state = self.admission.lock();
        if self.released.swap(true, Ordering::AcqRel) {
            return;
        }
        state.in_flight -= 1;
        if let Some(calls) = state.connections.get_mut(&self.connection) {
            calls.held -= 1;
            if !self.body_done.load(Ordering::Acquire) {
                calls.stalled.retain(|t| !Arc::ptr_eq(t, self));
            }
            if calls.held == 0 {
                state.connections.remove(&self.connection);
            }
        }
    }
}

/// Gives a call's slot back when its future ends or is dropped.
struct Held(Arc<Ticket>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.release();
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
    S: Service<Request<Watched<B>>, Response = Response<ResBody>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: HttpBody<Data = Bytes>,
    ResBody: HttpBody<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<StdError>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let connection = request
            .extensions()
            .get::<TcpConnectInfo>()
            .and_then(|info| info.remote_addr);
        let Some(ticket) = self.limits.admission.admit(connection) else {
            return Box::pin(std::future::ready(Ok(overloaded())));
        };
        let timeout = grpc_timeout(request.headers()).map_or(self.limits.timeout, |client| {
            client.min(self.limits.timeout)
        });
        let request = request.map(|body| Watched::new(body, Arc::clone(&ticket)));
        let response = self.inner.call(request);
        Box::pin(async move {
            let held = Held(ticket);
            tokio::select! {
                result = tokio::time::timeout(timeout, response) => match result {
                    Ok(response) => response.map(|r| r.map(Body::new)),
                    Err(_) => Ok(Status::cancelled("Timeout expired").into_http::<Body>()),
                },
                () = held.0.displaced.notified() => Ok(overloaded()),
            }
        })
    }
}

fn overloaded() -> Response<Body> {
    Status::from(ApiError::Overloaded).into_http::<Body>()
}

/// A request body that tells its call's ticket once the first gRPC message (its 5-byte
/// prefix and the length it declares) or the body's end has arrived.
pub struct Watched<B> {
    inner: B,
    ticket: Option<Arc<Ticket>>,
    /// The message prefix read so far, and the bytes still awaited after it.
    prefix: [u8; 5],
    prefix_len: usize,
    awaited: u64,
}

impl<B> Watched<B> {
    fn new(inner: B, ticket: Arc<Ticket>) -> Self {
        Watched {
            inner,
            ticket: Some(ticket),
            prefix: [0; 5],
            prefix_len: 0,
            awaited: 0,
        }
    }

    /// Counts `data`; true once the first message is complete.
    fn arrived(&mut self, mut data: &[u8]) -> bool {
        if self.prefix_len < 5 {
            let take = (5 - self.prefix_len).min(data.len());
            self.prefix[self.prefix_len..self.prefix_len + take].copy_from_slice(&data[..take]);
            self.prefix_len += take;
            data = &data[take..];
            if self.prefix_len < 5 {
                return false;
            }
            let [_, a, b, c, d] = self.prefix;
            self.awaited = u64::from(u32::from_be_bytes([a, b, c, d]));
        }
        self.awaited = self.awaited.saturating_sub(data.len() as u64);
        self.awaited == 0
    }

    fn done(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            ticket.body_done();
        }
    }
}

impl<B> HttpBody for Watched<B>
where
    B: HttpBody<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if self.ticket.is_some() {
            match &polled {
                Poll::Ready(Some(Ok(frame))) => {
                    let complete = frame.data_ref().is_some_and(|data| self.arrived(data));
                    if complete || frame.is_trailers() {
                        self.done();
                    }
                }
                Poll::Ready(_) => self.done(),
                Poll::Pending => {}
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The client's deadline from `grpc-timeout` (gRPC over HTTP/2: at most 8 digits and a
/// unit, `H` `M` `S` `m` `u` `n`); `None` if absent or malformed (then the server's
/// timeout alone applies, as tonic does).
fn grpc_timeout(headers: &HeaderMap) -> Option<Duration> {
    crate::service::grpc_timeout(headers.get("grpc-timeout")?.as_bytes())
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

    /// A service that reads its request's body to the end if it can (a stalled body
    /// never ends), then answers only when told.
    #[derive(Clone)]
    struct Answering(Arc<tokio::sync::Notify>);

    impl<B> Service<Request<B>> for Answering
    where
        B: HttpBody + Unpin + Send + 'static,
    {
        type Response = Response<Body>;
        type Error = std::convert::Infallible;
        type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Self::Error>> + Send>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: Request<B>) -> Self::Future {
            let release = Arc::clone(&self.0);
            let mut body = request.into_body();
            Box::pin(async move {
                while let Some(Ok(_)) =
                    std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
                {
                }
                release.notified().await;
                Ok(Response::new(Body::empty()))
            })
        }
    }

    /// A request body whose bytes never come.
    struct Stalled;

    impl HttpBody for Stalled {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Pending
        }
    }

    fn on<B>(body: B, port: u16) -> Request<B> {
        let mut request = Request::new(body);
        request.extensions_mut().insert(TcpConnectInfo {
            local_addr: None,
            remote_addr: Some(SocketAddr::from(([127, 0, 0, 1], port))),
        });
        request
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
        let mut service = limits.wrap(Answering(Arc::clone(&release)));
        let first = tokio::spawn(service.call(on(Body::empty(), 1)));
        let second = tokio::spawn(service.call(on(Body::empty(), 1)));
        tokio::task::yield_now().await;
        assert_eq!(limits.in_flight(), 2);
        let refused = service.call(on(Body::empty(), 2)).await.expect("answered");
        assert_eq!(code(&refused), Code::ResourceExhausted);
        release.notify_one();
        let done = first.await.expect("task").expect("answered");
        assert_eq!(code(&done), Code::Ok);
        assert_eq!(limits.in_flight(), 1, "the finished call's slot is free");
        release.notify_one();
        second.await.expect("task").expect("answered");
        assert_eq!(limits.in_flight(), 0);
    }

    #[tokio::test]
    async fn stalled_calls_of_a_connection_holding_more_make_room_for_another_connection() {
        let limits = Limits::new(4, Duration::from_secs(60));
        let mut stalling = limits.wrap(Answering(Arc::new(tokio::sync::Notify::new())));
        let hog: Vec<_> = (0..4)
            .map(|_| tokio::spawn(stalling.call(on(Stalled, 1))))
            .collect();
        tokio::task::yield_now().await;
        assert_eq!(limits.in_flight(), 4);
        // Another connection's calls take the hog's oldest stalled slots, until both
        // hold as many.
        let release = Arc::new(tokio::sync::Notify::new());
        let mut fair = limits.wrap(Answering(Arc::clone(&release)));
        let taken: Vec<_> = (0..2)
            .map(|_| tokio::spawn(fair.call(on(Body::empty(), 2))))
            .collect();
        tokio::task::yield_now().await;
        assert_eq!(limits.in_flight(), 4);
        let mut hog = hog.into_iter();
        for displaced in hog.by_ref().take(2) {
            let answer = displaced.await.expect("task").expect("answered");
            assert_eq!(
                code(&answer),
                Code::ResourceExhausted,
                "the oldest are displaced"
            );
        }
        let refused = fair.call(on(Body::empty(), 2)).await.expect("answered");
        assert_eq!(
            code(&refused),
            Code::ResourceExhausted,
            "two each: no more room"
        );
        for _ in 0..2 {
            release.notify_one();
        }
        for call in taken {
            assert_eq!(
                code(&call.await.expect("task").expect("answered")),
                Code::Ok
            );
        }
        assert_eq!(limits.in_flight(), 2, "the hog's two remaining calls");
        drop(hog);
    }

    #[tokio::test]
    async fn calls_whose_bodies_arrived_are_never_displaced() {
        let limits = Limits::new(2, Duration::from_secs(60));
        let release = Arc::new(tokio::sync::Notify::new());
        let mut busy = limits.wrap(Answering(Arc::clone(&release)));
        let working: Vec<_> = (0..2)
            .map(|_| tokio::spawn(busy.call(on(Body::empty(), 1))))
            .collect();
        tokio::task::yield_now().await;
        let refused = busy.call(on(Body::empty(), 2)).await.expect("answered");
        assert_eq!(code(&refused), Code::ResourceExhausted);
        for _ in 0..2 {
            release.notify_one();
        }
        for call in working {
            assert_eq!(
                code(&call.await.expect("task").expect("answered")),
                Code::Ok
            );
        }
    }

    #[test]
    fn a_body_counts_as_arrived_once_its_first_message_has() {
        let limits = Limits::new(1, Duration::from_secs(1));
        let ticket = limits.admission.admit(None).expect("a slot");
        let mut watched = Watched::new(Stalled, ticket);
        assert!(!watched.arrived(&[0, 0, 0]));
        assert!(!watched.arrived(&[0, 3, 7]));
        assert!(!watched.arrived(&[8]));
        assert!(watched.arrived(&[9, 10]));
        let ticket = limits.admission.admit(None);
        assert!(ticket.is_none(), "the cap is one");
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_past_the_shorter_deadline_is_cancelled_and_frees_its_slot() {
        let limits = Limits::new(1, Duration::from_secs(5));
        let mut service = limits.wrap(Answering(Arc::new(tokio::sync::Notify::new())));
        let mut request = Request::new(Body::empty());
        request
            .headers_mut()
            .insert("grpc-timeout", HeaderValue::from_static("100m"));
        let started = tokio::time::Instant::now();
        let answer = service.call(request).await.expect("answered");
        assert_eq!(code(&answer), Code::Cancelled);
        assert_eq!(started.elapsed(), Duration::from_millis(100));
        assert_eq!(limits.in_flight(), 0);
        let answer = service
            .call(Request::new(Body::empty()))
            .await
            .expect("answered");
        assert_eq!(code(&answer), Code::Cancelled);
        assert_eq!(
            started.elapsed(),
            Duration::from_millis(5100),
            "the server's own"
        );
    }
}
