//! The calls-in-flight budget: at most `--max-calls-in-flight` calls in flight over all
//! connections, shared fairly between connections; and the owner of each call's
//! deadline (its [`CallContext`]'s, counted from its headers): past it the call's work
//! is dropped and the call answered DEADLINE_EXCEEDED, with reason `REQUEST_TIMEOUT`
//! when the server's own limit ran out (`service::status::deadline_passed`, which the
//! service also answers with when it notices first: the same answer either way). The
//! service below only reads the time left, to stop its work. Ours: tower's
//! `ConcurrencyLimit` and `LoadShed` refuse or queue with no notion of whose call it is
//! or whether its body has arrived, which is what the fair share below needs; tower's
//! `Timeout` fails the call with an error where a gRPC client expects an answer.
//!
//! **Fair shares.** A call whose request body has not fully arrived yet is *stalled*.
//! When every slot is taken, a call from a connection holding fewer calls than another
//! takes the slot of that connection's oldest stalled call, which is answered
//! RESOURCE_EXHAUSTED `OVERLOADED` (nothing was done: its request was not even read).
//! So a client holding slots with bodies it never finishes cannot keep others out,
//! however many connections it opens; calls doing real work are never displaced. With
//! no stalled call to displace, the call is refused `OVERLOADED` at once, unread.
//! The body check (`super::request_body`), which follows the gRPC framing anyway, says
//! when the body's first message has arrived, through the [`BodyArrived`] hook this
//! layer puts in the request's extensions.
//!
//! With the request message limit, the cap bounds the request bytes the server holds
//! (docs/RELIABILITY.md, "The memory budget").

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use http_body::Body as HttpBody;
use tonic::Status;
use tonic::body::Body;
use tonic::codegen::http::{Request, Response};
use tonic::codegen::{Bytes, Service, StdError};

use crate::call::CallContext;
use crate::connection::{BudgetShare, CallSlot, Tracker};
use crate::service::status::{ApiError, deadline_passed};

/// The shared budget of calls in flight.
#[derive(Clone)]
pub struct Admission {
    budget: Arc<Budget>,
}

impl Admission {
    pub fn new(max_calls_in_flight: usize) -> Admission {
        Admission {
            budget: Arc::new(Budget {
                cap: max_calls_in_flight.max(1),
                state: Mutex::default(),
            }),
        }
    }

    /// `inner` under this budget.
    pub fn wrap<S>(&self, inner: S) -> Admitted<S> {
        Admitted {
            inner,
            admission: self.clone(),
        }
    }

    /// Calls in flight now.
    #[cfg(test)]
    fn in_flight(&self) -> usize {
        self.budget.lock().in_flight
    }
}

/// The budget. Each connection's share of it (its calls holding a slot, those stalled)
/// is kept in its tracker ([`BudgetShare`]), read and changed only under this lock.
struct Budget {
    cap: usize,
    state: Mutex<BudgetState>,
}

#[derive(Default)]
struct BudgetState {
    in_flight: usize,
    /// The connections holding a stalled call, each once: where a call at the cap
    /// looks for one to displace. At most as many as calls in flight.
    stalling: Vec<Arc<Tracker>>,
}

impl BudgetState {
    /// `tracker` has no stalled call any more.
    fn unlist(&mut self, tracker: &Arc<Tracker>) {
        if let Some(i) = self.stalling.iter().position(|t| Arc::ptr_eq(t, tracker)) {
            self.stalling.swap_remove(i);
        }
    }
}

/// Takes `slot` out of `share`'s stalled calls; `true` if that left none.
fn unstall(share: &mut BudgetShare, slot: &Arc<CallSlot>) -> bool {
    let before = share.stalled.len();
    share.stalled.retain(|s| !Arc::ptr_eq(s, slot));
    before != share.stalled.len() && share.stalled.is_empty()
}

impl Budget {
    fn lock(&self) -> MutexGuard<'_, BudgetState> {
        // Every update leaves the counts consistent before anything can panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot for a call on `tracker`'s connection, taking a stalled call's from a
    /// connection holding more if every slot is held; `None`: refused.
    fn admit(self: &Arc<Self>, tracker: &Arc<Tracker>) -> Option<Place> {
        let mut state = self.lock();
        if state.in_flight >= self.cap {
            let ours = tracker.budget().held;
            let victim = state
                .stalling
                .iter()
                .map(|t| (t.budget().held, t))
                .filter(|&(held, _)| held > ours + 1)
                .max_by_key(|&(held, _)| held)
                .map(|(_, t)| Arc::clone(t))?;
            let (displaced, emptied) = {
                let mut share = victim.budget();
                let displaced = share.stalled.pop_front()?;
                share.held -= 1;
                (displaced, share.stalled.is_empty())
            };
            if emptied {
                state.unlist(&victim);
            }
            displaced.released.store(true, Ordering::Release);
            state.in_flight -= 1;
            displaced.displaced.notify_one();
        }
        state.in_flight += 1;
        let slot = Arc::new(CallSlot::default());
        let first_stalled = {
            let mut share = tracker.budget();
            share.held += 1;
            share.stalled.push_back(Arc::clone(&slot));
            share.stalled.len() == 1
        };
        if first_stalled {
            state.stalling.push(Arc::clone(tracker));
        }
        Some(Place {
            budget: Arc::clone(self),
            tracker: Arc::clone(tracker),
            slot,
        })
    }
}

/// A call's place in the budget: its slot, and its connection's tracker.
#[derive(Clone)]
struct Place {
    budget: Arc<Budget>,
    tracker: Arc<Tracker>,
    slot: Arc<CallSlot>,
}

impl Place {
    /// The request body has fully arrived: the call can no longer be displaced.
    fn body_done(&self) {
        let slot = &self.slot;
        if slot.body_done.swap(true, Ordering::AcqRel) || slot.released.load(Ordering::Acquire) {
            return;
        }
        let mut state = self.budget.lock();
        if unstall(&mut self.tracker.budget(), slot) {
            state.unlist(&self.tracker);
        }
    }

    /// The call ended: its slot is free (once; a displaced call's already is).
    fn release(&self) {
        let mut state = self.budget.lock();
        if self.slot.released.swap(true, Ordering::AcqRel) {
            return;
        }
        state.in_flight -= 1;
        let emptied = {
            let mut share = self.tracker.budget();
            share.held -= 1;
            unstall(&mut share, &self.slot)
        };
        if emptied {
            state.unlist(&self.tracker);
        }
    }
}

/// Gives a call's slot back when its future ends or is dropped.
struct HeldCall(Place);

impl Drop for HeldCall {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// The hook this layer leaves in a request's extensions: the body check calls
/// [`BodyArrived::arrived`] once the body's first message (or its end) has arrived,
/// and from then on the call can no longer be displaced.
#[derive(Clone)]
pub struct BodyArrived(Place);

impl BodyArrived {
    pub fn arrived(&self) {
        self.0.body_done();
    }
}

/// A service under an [`Admission`] budget.
#[derive(Clone)]
pub struct Admitted<S> {
    inner: S,
    admission: Admission,
}

impl<S, B, ResBody> Service<Request<B>> for Admitted<S>
where
    S: Service<Request<B>, Response = Response<ResBody>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ResBody: HttpBody<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<StdError>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        let Some(context) = request.extensions().get::<CallContext>() else {
            return Box::pin(std::future::ready(Ok(CallContext::missing().into_http())));
        };
        let Some(place) = self.admission.budget.admit(&context.connection) else {
            return Box::pin(std::future::ready(Ok(overloaded())));
        };
        let deadline = tokio::time::Instant::from_std(context.deadline);
        let timed_out = deadline_passed(context);
        request.extensions_mut().insert(BodyArrived(place.clone()));
        // HeldCall from here, so that the slot is given back even if the future is dropped
        // before it is first polled.
        let held = HeldCall(place);
        let response = self.inner.call(request);
        Box::pin(async move {
            tokio::select! {
                result = tokio::time::timeout_at(deadline, response) => match result {
                    Ok(response) => response.map(|r| r.map(Body::new)),
                    Err(_) => Ok(Status::from(timed_out).into_http::<Body>()),
                },
                () = held.0.slot.displaced.notified() => Ok(overloaded()),
            }
        })
    }
}

fn overloaded() -> Response<Body> {
    Status::from(ApiError::Overloaded).into_http::<Body>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body::Frame;
    use std::time::Duration;
    use tonic::Code;

    /// A service that reads its request's body to the end if it can (a stalled body
    /// never ends) and then says it arrived, as the body check does, then answers only
    /// when told.
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
            let arrived = request.extensions().get::<BodyArrived>().cloned();
            let mut body = request.into_body();
            Box::pin(async move {
                while let Some(Ok(_)) =
                    std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
                {
                }
                if let Some(arrived) = arrived {
                    arrived.arrived();
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

    thread_local! {
        /// The connections of the test running on this thread (each test has a thread
        /// of its own, and its tasks run on it), by number.
        static CONNECTIONS: std::cell::RefCell<std::collections::HashMap<u64, Arc<Tracker>>> =
            Default::default();
    }

    /// Connection `n` of this test.
    fn connection(n: u64) -> Arc<Tracker> {
        CONNECTIONS.with_borrow_mut(|all| {
            Arc::clone(all.entry(n).or_insert_with(|| {
                Tracker::new(
                    crate::connection::ConnectionId(n),
                    None,
                    tokio::time::Instant::now(),
                    None,
                )
            }))
        })
    }

    fn on<B>(body: B, connection: u64) -> Request<B> {
        with_timeout(body, connection, None, Duration::from_secs(60))
    }

    /// A request on `connection` whose headers arrive now, with `grpc_timeout`, on a
    /// server whose limit is `server`.
    fn with_timeout<B>(
        body: B,
        connection: u64,
        grpc_timeout: Option<&[u8]>,
        server: Duration,
    ) -> Request<B> {
        let mut request = Request::new(body);
        request.extensions_mut().insert(CallContext::new(
            self::connection(connection),
            None,
            "/allfives.v1.AllFivesService/Play",
            tokio::time::Instant::now().into_std(),
            grpc_timeout,
            server,
        ));
        request
    }

    fn code(response: &Response<Body>) -> Code {
        response
            .headers()
            .get("grpc-status")
            .map_or(Code::Ok, |v| Code::from_bytes(v.as_bytes()))
    }

    /// The `ErrorInfo` reason of a trailers-only answer, if it has one.
    fn reason(response: &Response<Body>) -> Option<String> {
        use tonic_types::StatusExt;
        let status = Status::from_header_map(response.headers())?;
        status
            .get_error_details()
            .error_info()
            .map(|i| i.reason.clone())
    }

    #[tokio::test]
    async fn past_the_cap_calls_are_refused_at_once_and_a_finished_call_frees_its_slot() {
        let admission = Admission::new(2);
        let release = Arc::new(tokio::sync::Notify::new());
        let mut service = admission.wrap(Answering(Arc::clone(&release)));
        let first = tokio::spawn(service.call(on(Body::empty(), 1)));
        let second = tokio::spawn(service.call(on(Body::empty(), 1)));
        tokio::task::yield_now().await;
        assert_eq!(admission.in_flight(), 2);
        let refused = service.call(on(Body::empty(), 2)).await.expect("answered");
        assert_eq!(code(&refused), Code::ResourceExhausted);
        release.notify_one();
        let done = first.await.expect("task").expect("answered");
        assert_eq!(code(&done), Code::Ok);
        assert_eq!(admission.in_flight(), 1, "the finished call's slot is free");
        release.notify_one();
        second.await.expect("task").expect("answered");
        assert_eq!(admission.in_flight(), 0);
    }

    #[tokio::test]
    async fn stalled_calls_of_a_connection_holding_more_make_room_for_another_connection() {
        let admission = Admission::new(4);
        let mut stalling = admission.wrap(Answering(Arc::new(tokio::sync::Notify::new())));
        let hog: Vec<_> = (0..4)
            .map(|_| tokio::spawn(stalling.call(on(Stalled, 1))))
            .collect();
        tokio::task::yield_now().await;
        assert_eq!(admission.in_flight(), 4);
        // Another connection's calls take the hog's oldest stalled slots, until both
        // hold as many.
        let release = Arc::new(tokio::sync::Notify::new());
        let mut fair = admission.wrap(Answering(Arc::clone(&release)));
        let taken: Vec<_> = (0..2)
            .map(|_| tokio::spawn(fair.call(on(Body::empty(), 2))))
            .collect();
        tokio::task::yield_now().await;
        assert_eq!(admission.in_flight(), 4);
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
        assert_eq!(admission.in_flight(), 2, "the hog's two remaining calls");
        drop(hog);
    }

    #[tokio::test]
    async fn calls_whose_bodies_arrived_are_never_displaced() {
        let admission = Admission::new(2);
        let release = Arc::new(tokio::sync::Notify::new());
        let mut busy = admission.wrap(Answering(Arc::clone(&release)));
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
    fn a_call_whose_body_arrived_keeps_its_slot() {
        let admission = Admission::new(2);
        let slots: Vec<_> = (0..2)
            .map(|_| admission.budget.admit(&connection(1)).expect("a slot"))
            .collect();
        BodyArrived(slots[0].clone()).arrived();
        assert!(
            admission.budget.admit(&connection(2)).is_some(),
            "the stalled one is displaced"
        );
        assert!(slots[1].slot.released.load(Ordering::Acquire));
        assert!(
            admission.budget.admit(&connection(3)).is_none(),
            "the one whose body arrived is not"
        );
        assert!(!slots[0].slot.released.load(Ordering::Acquire));
    }

    /// Reads its request's body to the end if it can, then answers only when told:
    /// unlike [`Answering`] it never says the body arrived; the body check must.
    #[derive(Clone)]
    struct Holding(Arc<tokio::sync::Notify>);

    impl Service<Request<Body>> for Holding {
        type Response = Response<Body>;
        type Error = std::convert::Infallible;
        type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Self::Error>> + Send>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: Request<Body>) -> Self::Future {
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

    /// A request body that sends its one message, then waits (the client has not
    /// ended its stream).
    struct MessageThenWait(Option<Bytes>);

    impl HttpBody for MessageThenWait {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            match self.0.take() {
                Some(message) => Poll::Ready(Some(Ok(Frame::data(message)))),
                None => Poll::Pending,
            }
        }
    }

    #[tokio::test]
    async fn a_call_dropped_before_it_is_polled_gives_its_slot_back() {
        let admission = Admission::new(1);
        let mut service = admission.wrap(Answering(Arc::new(tokio::sync::Notify::new())));
        drop(service.call(on(Body::empty(), 1)));
        assert_eq!(admission.in_flight(), 0);
        assert_eq!(share(1), (0, 0));
    }

    /// Connection `n`'s share of the budget: calls holding a slot, stalled calls.
    fn share(n: u64) -> (usize, usize) {
        let tracker = connection(n);
        let share = tracker.budget();
        (share.held, share.stalled.len())
    }

    #[tokio::test]
    async fn once_every_call_has_ended_no_connection_holds_anything_of_the_budget() {
        let admission = Admission::new(4);
        let mut stalling = admission.wrap(Answering(Arc::new(tokio::sync::Notify::new())));
        let release = Arc::new(tokio::sync::Notify::new());
        let mut answering = admission.wrap(Answering(Arc::clone(&release)));
        // Connection 1 stalls four calls; connection 2's two calls and then connection
        // 3's one displace three of them; connection 4 is refused.
        let stalled: Vec<_> = (0..4)
            .map(|_| tokio::spawn(stalling.call(on(Stalled, 1))))
            .collect();
        tokio::task::yield_now().await;
        assert_eq!(share(1), (4, 4));
        assert_eq!(admission.budget.lock().stalling.len(), 1);
        let mut working: Vec<_> = (0..2)
            .map(|_| tokio::spawn(answering.call(on(Body::empty(), 2))))
            .collect();
        // Their bodies arrive (or connection 3 could displace one of them).
        tokio::task::yield_now().await;
        working.push(tokio::spawn(answering.call(on(Body::empty(), 3))));
        tokio::task::yield_now().await;
        assert_eq!((share(1), share(2), share(3)), ((1, 1), (2, 0), (1, 0)));
        let refused = answering
            .call(on(Body::empty(), 4))
            .await
            .expect("answered");
        assert_eq!(code(&refused), Code::ResourceExhausted);
        assert_eq!(share(4), (0, 0));
        for _ in 0..3 {
            release.notify_one();
        }
        for call in working {
            call.await.expect("task").expect("answered");
        }
        for call in stalled {
            call.abort();
            let _ = call.await;
        }
        // Nothing to clean up: each share is back to nothing, and no connection is
        // listed as stalling.
        assert_eq!(admission.in_flight(), 0);
        for n in 1..=4 {
            assert_eq!(share(n), (0, 0), "connection {n}");
        }
        assert!(admission.budget.lock().stalling.is_empty());
    }

    #[tokio::test]
    async fn the_body_check_tells_the_budget_which_bodies_have_arrived() {
        use super::super::request_body::RequestBody;
        let admission = Admission::new(2);
        let release = Arc::new(tokio::sync::Notify::new());
        let mut service = admission.wrap(RequestBody::new(
            Holding(Arc::clone(&release)),
            Duration::from_secs(60),
        ));
        // One gRPC message (flag 0, length 3, "abc"), and the stream left open: the
        // message is whole, so the call is not stalled, though its body has not ended.
        let whole = || Body::new(String::from("\0\0\0\0\x03abc"));
        let open = || {
            Body::new(MessageThenWait(Some(Bytes::from_static(
                b"\0\0\0\0\x03abc",
            ))))
        };
        let working: Vec<_> = (0..2)
            .map(|_| tokio::spawn(service.call(on(open(), 1))))
            .collect();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let refused = service.call(on(whole(), 2)).await.expect("answered");
        assert_eq!(
            code(&refused),
            Code::ResourceExhausted,
            "calls whose message arrived are not displaced"
        );
        for call in working {
            assert!(!call.is_finished(), "still held");
            call.abort();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(admission.in_flight(), 0);
        // The same with bodies that never come: the newcomer takes one's slot.
        let stalled: Vec<_> = (0..2)
            .map(|_| tokio::spawn(service.call(on(Body::new(Stalled), 1))))
            .collect();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let newcomer = tokio::spawn(service.call(on(whole(), 2)));
        let displaced = stalled.into_iter().next().expect("a call");
        let answer = displaced.await.expect("task").expect("answered");
        assert_eq!(
            code(&answer),
            Code::ResourceExhausted,
            "a stalled body is displaced"
        );
        release.notify_one();
        assert_eq!(
            code(&newcomer.await.expect("task").expect("answered")),
            Code::Ok
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_past_the_shorter_deadline_is_answered_deadline_exceeded_and_frees_its_slot() {
        let admission = Admission::new(1);
        let mut service = admission.wrap(Answering(Arc::new(tokio::sync::Notify::new())));
        let started = tokio::time::Instant::now();
        // The client's own deadline, sooner than the server's: no reason.
        let request = with_timeout(Body::empty(), 1, Some(b"100m"), Duration::from_secs(5));
        let answer = service.call(request).await.expect("answered");
        assert_eq!(code(&answer), Code::DeadlineExceeded);
        assert_eq!(reason(&answer), None);
        assert_eq!(started.elapsed(), Duration::from_millis(100));
        assert_eq!(admission.in_flight(), 0);
        // The server's own limit: REQUEST_TIMEOUT.
        let request = with_timeout(Body::empty(), 1, None, Duration::from_secs(5));
        let answer = service.call(request).await.expect("answered");
        assert_eq!(code(&answer), Code::DeadlineExceeded);
        assert_eq!(reason(&answer).as_deref(), Some("REQUEST_TIMEOUT"));
        assert_eq!(
            started.elapsed(),
            Duration::from_millis(5100),
            "the server's own"
        );
        // A call without a context is the server's bug, refused unserved.
        let answer = service
            .call(Request::new(Body::empty()))
            .await
            .expect("answered");
        assert_eq!(code(&answer), Code::Internal);
        assert_eq!(admission.in_flight(), 0);
    }
}
