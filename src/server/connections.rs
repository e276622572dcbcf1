//! The connections being served. [`Registry`] holds each one's [`Tracker`] (what it is
//! doing and holds, in one struct: `crate::connection`), by its number; the
//! connection loop ([`super::serve`]) closes a connection that stayed idle too long,
//! and at the connection cap [`Registry::evict_idlest`] closes the one idle the longest
//! so that a new client is served (docs/RELIABILITY.md, "Connections").
//!
//! [`Tracked`] is the per-connection service hyper calls, the first layer of the stack
//! (`super::stack`): it counts a call open from its headers until its response body is
//! done (or dropped), and makes the call's [`CallContext`] (the connection's tracker;
//! the client: the peer's address, or `--trusted-client-header`'s when one is set; the
//! deadline from `grpc-timeout` and `--request-timeout-ms`), carried as a request
//! extension with tonic's `TcpConnectInfo` (so `Request::remote_addr()` names the
//! peer).
//!
//! Ours: hyper-util's `GracefulShutdown` closes connections only at shutdown (and its
//! connection trait is sealed), while a connection here also closes at its age, when
//! idle, and when evicted at the cap, which needs what each connection is doing.

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use http_body::{Body as HttpBody, Frame, SizeHint};
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;
use tonic::body::Body;
use tonic::codegen::http::{HeaderName, Request, Response};
use tonic::codegen::{Bytes, Service, StdError};
use tonic::transport::server::TcpConnectInfo;

use crate::call::CallContext;
use crate::connection::{ConnectionId, OpenCall, Tracker};

/// Every connection open, by its number.
#[derive(Default)]
pub struct Registry {
    live: Mutex<HashMap<ConnectionId, Arc<Tracker>>>,
    next: AtomicU64,
    epoch: OnceInstant,
}

/// The instant milliseconds are counted from (the registry's creation).
struct OnceInstant(Instant);

impl Default for OnceInstant {
    fn default() -> Self {
        OnceInstant(Instant::now())
    }
}

impl Registry {
    /// Registers a new connection from `peer` holding `permit` (its place under the
    /// cap); the connection leaves the registry when the returned [`Registered`] is
    /// dropped.
    pub fn register(
        self: &Arc<Self>,
        permit: OwnedSemaphorePermit,
        peer: Option<IpAddr>,
    ) -> Registered {
        let id = ConnectionId(self.next.fetch_add(1, Ordering::Relaxed));
        let tracker = Tracker::new(id, peer, self.epoch.0, Some(permit));
        self.lock().insert(id, Arc::clone(&tracker));
        Registered {
            tracker,
            registry: Arc::clone(self),
        }
    }

    /// Connections open.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Tells the connection idle the longest (no call open, not told already) to close,
    /// and gives its place under the cap back at once: it closes within its eviction
    /// grace. With no idle connection, one whose only open calls are `Watch` streams is
    /// told instead (its streams end with OK, and their clients watch again, on another
    /// connection): a stream holds a connection open for as long as it likes, and
    /// connections holding nothing else must not keep new clients out. `false` if every
    /// connection has a call in flight ([`Tracker::eviction_rank`]).
    pub fn evict_idlest(&self) -> bool {
        let chosen = {
            let live = self.lock();
            live.values()
                .filter_map(|t| Some((t.eviction_rank()?, t)))
                .min_by_key(|(rank, _)| *rank)
                .map(|(_, t)| Arc::clone(t))
        };
        let Some(tracker) = chosen else {
            return false;
        };
        tracker.evict();
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ConnectionId, Arc<Tracker>>> {
        // A panic while the map was held leaves it consistent (inserts and removes
        // only), so a poisoned lock is still usable.
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A connection's place in the registry; dropping it removes the connection and gives
/// its place under the cap back (if eviction has not already). Its tracker goes with
/// the last call that holds it.
pub struct Registered {
    tracker: Arc<Tracker>,
    registry: Arc<Registry>,
}

impl Registered {
    pub fn tracker(&self) -> &Arc<Tracker> {
        &self.tracker
    }

    /// The connection's number, unique in this registry.
    pub fn id(&self) -> ConnectionId {
        self.tracker.id()
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.registry.lock().remove(&self.tracker.id());
        self.tracker.give_place_back();
    }
}

/// The service hyper calls on one connection: see the module's documentation.
#[derive(Clone)]
pub struct Tracked<S> {
    inner: S,
    tracker: Arc<Tracker>,
    info: TcpConnectInfo,
    /// The server's `--request-timeout-ms`.
    timeout: Duration,
    /// The server's `--trusted-client-header`.
    client_header: Option<HeaderName>,
}

impl<S> Tracked<S> {
    pub fn new(
        inner: S,
        connection: &Registered,
        info: TcpConnectInfo,
        timeout: Duration,
        client_header: Option<HeaderName>,
    ) -> Self {
        Tracked {
            inner,
            tracker: Arc::clone(connection.tracker()),
            info,
            timeout,
            client_header,
        }
    }
}

impl<S, B, ResBody> Service<Request<B>> for Tracked<S>
where
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<StdError>,
    S: Service<Request<Body>, Response = Response<ResBody>>,
    S::Future: Send + 'static,
    ResBody: HttpBody<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<StdError>,
{
    type Response = Response<TrackedBody>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let mut request = request.map(Body::new);
        let header = request.headers().get("grpc-timeout").map(|v| v.as_bytes());
        // The last line of the header: the one the nearest proxy wrote.
        let forwarded = self
            .client_header
            .as_ref()
            .and_then(|name| request.headers().get_all(name).iter().next_back())
            .map(|v| v.as_bytes());
        let context = CallContext::new(
            Arc::clone(&self.tracker),
            forwarded,
            request.uri().path(),
            std::time::Instant::now(),
            header,
            self.timeout,
        );
        let open = self.tracker.opened();
        request.extensions_mut().insert(context);
        request.extensions_mut().insert(self.info.clone());
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|body| TrackedBody {
                inner: Body::new(body),
                _open: open,
            }))
        })
    }
}

/// A response body that keeps its call counted open until it is done or dropped.
pub struct TrackedBody {
    inner: Body,
    _open: OpenCall,
}

impl HttpBody for TrackedBody {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::ClientId;
    use tokio::sync::Semaphore;

    fn permit(cap: &Arc<Semaphore>) -> OwnedSemaphorePermit {
        Arc::clone(cap).try_acquire_owned().expect("a permit")
    }

    #[tokio::test]
    async fn the_idlest_connection_is_evicted_and_its_place_given_back_at_once() {
        let cap = Arc::new(Semaphore::new(3));
        let registry = Arc::new(Registry::default());
        let first = registry.register(permit(&cap), None);
        tokio::time::sleep(Duration::from_millis(5)).await;
        let busy = registry.register(permit(&cap), None);
        let _call = busy.tracker().opened();
        let second = registry.register(permit(&cap), None);
        assert_eq!(cap.available_permits(), 0);

        assert!(registry.evict_idlest());
        assert_eq!(
            cap.available_permits(),
            1,
            "the place is given back at once"
        );
        tokio::time::timeout(Duration::from_secs(1), first.tracker().evicted())
            .await
            .expect("the idlest (oldest idle) connection is told");
        // The busy one is never chosen; the second idle one is next.
        assert!(registry.evict_idlest());
        tokio::time::timeout(Duration::from_secs(1), second.tracker().evicted())
            .await
            .expect("then the other idle one");
        assert!(
            !registry.evict_idlest(),
            "a connection with a call open stays"
        );
        drop((first, second));
        assert_eq!(registry.len(), 1);
        assert_eq!(cap.available_permits(), 2);
        drop(busy);
        assert_eq!(cap.available_permits(), 3);
    }

    #[tokio::test]
    async fn a_connection_holding_only_watch_streams_is_evicted_when_none_is_idle() {
        let cap = Arc::new(Semaphore::new(3));
        let registry = Arc::new(Registry::default());
        // A Watch call: open on its connection, and one of its streams.
        let watch = |t: &Arc<Tracker>| {
            assert!(t.open_watch(8));
            t.opened()
        };
        let watching = registry.register(permit(&cap), None);
        let _streams = [watch(watching.tracker()), watch(watching.tracker())];
        let busy = registry.register(permit(&cap), None);
        let _call = busy.tracker().opened();
        let mixed = registry.register(permit(&cap), None);
        let _both = [watch(mixed.tracker()), mixed.tracker().opened()];
        assert!(registry.evict_idlest());
        tokio::time::timeout(Duration::from_secs(1), watching.tracker().evicted())
            .await
            .expect("the connection of streams only is told");
        assert_eq!(cap.available_permits(), 1);
        // A connection with a call in flight stays, streams or not.
        assert!(!registry.evict_idlest());
    }

    /// A service that keeps the context of the call it was given.
    #[derive(Clone)]
    struct Sees(Arc<Mutex<Option<CallContext>>>);

    impl Service<Request<Body>> for Sees {
        type Response = Response<Body>;
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<Response<Body>, Self::Error>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: Request<Body>) -> Self::Future {
            *self.0.lock().unwrap() = request.extensions().get::<CallContext>().cloned();
            std::future::ready(Ok(Response::new(Body::empty())))
        }
    }

    /// The client a call on a new connection is from, by what `Tracked` put in its
    /// context, the server trusting `header`, the call sending `sent`.
    async fn client_of(header: Option<&str>, sent: &[(&str, &str)]) -> (ClientId, ClientId) {
        client_from(None, header, sent).await
    }

    /// As [`client_of`], the connection coming from `peer`.
    async fn client_from(
        peer: Option<std::net::SocketAddr>,
        header: Option<&str>,
        sent: &[(&str, &str)],
    ) -> (ClientId, ClientId) {
        let cap = Arc::new(Semaphore::new(1));
        let registry = Arc::new(Registry::default());
        let conn = registry.register(permit(&cap), peer.map(|p| p.ip()));
        let seen = Arc::new(Mutex::new(None));
        let inner = Sees(Arc::clone(&seen));
        let info = TcpConnectInfo {
            local_addr: None,
            remote_addr: peer,
        };
        let header = header.map(|h| HeaderName::from_bytes(h.as_bytes()).unwrap());
        let mut tracked = Tracked::new(inner, &conn, info, Duration::from_secs(1), header);
        let mut request = Request::new(Body::empty());
        for (name, value) in sent {
            let name = HeaderName::from_bytes(name.as_bytes()).unwrap();
            request.headers_mut().append(name, value.parse().unwrap());
        }
        drop(tracked.call(request).await.unwrap());
        let context = seen.lock().unwrap().clone().expect("a context");
        (context.client, ClientId::Connection(conn.id()))
    }

    #[tokio::test]
    async fn connections_from_one_host_are_one_client() {
        let from = |peer: &str| Some(peer.parse().unwrap());
        let (a, _) = client_from(from("198.51.100.4:40001"), None, &[]).await;
        let (b, _) = client_from(from("198.51.100.4:40002"), None, &[]).await;
        assert_eq!(a, b);
        assert_eq!(a, ClientId::Address("198.51.100.4".parse().unwrap()));
        // IPv6: one /64 is one host.
        let (c, _) = client_from(from("[2001:db8::1]:1"), None, &[]).await;
        let (d, _) = client_from(from("[2001:db8::ffff:2]:1"), None, &[]).await;
        assert_eq!(c, d);
        // Untrusted, a forwarding header changes nothing.
        let sent = [("x-forwarded-for", "203.0.113.9")];
        let (e, _) = client_from(from("198.51.100.4:40003"), None, &sent).await;
        assert_eq!(e, a);
    }

    #[tokio::test]
    async fn a_trusted_header_names_the_client_and_an_untrusted_one_changes_nothing() {
        let ip = |s: &str| ClientId::Address(s.parse().unwrap());
        let xff = Some("x-forwarded-for");
        let (client, _) = client_of(xff, &[("x-forwarded-for", "6.6.6.6, 203.0.113.9")]).await;
        assert_eq!(client, ip("203.0.113.9"));
        // Two lines: the last is the nearest proxy's.
        let lines = [
            ("x-forwarded-for", "203.0.113.1"),
            ("x-forwarded-for", "203.0.113.2"),
        ];
        assert_eq!(client_of(xff, &lines).await.0, ip("203.0.113.2"));
        // No header, a bad one, another header, or none trusted: the connection.
        for (trusted, sent) in [
            (xff, &[][..]),
            (xff, &[("x-forwarded-for", "unknown")][..]),
            (xff, &[("x-real-ip", "203.0.113.9")][..]),
            (None, &[("x-forwarded-for", "203.0.113.9")][..]),
        ] {
            let (client, connection) = client_of(trusted, sent).await;
            assert_eq!(client, connection, "{trusted:?} {sent:?}");
        }
    }
}
