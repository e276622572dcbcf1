//! Accepting connections: at most `--max-connections` open at once, a pause after an
//! accept error instead of a busy loop, TCP keepalive and nodelay, a deadline for a
//! new connection's first bytes, and a lingering close. See docs/RELIABILITY.md, "Slow
//! or broken clients" and "Connections".
//!
//! [`Incoming`] is the stream of connections [`super::serve`] serves. It takes a permit
//! of the connection cap before it accepts. At the cap it first evicts the connection
//! idle the longest ([`Registry::evict_idlest`]: told to close, its permit given back at
//! once); with none idle it stops accepting, and new connections wait in the kernel's
//! backlog (backpressure, nothing accepted and dropped) until one closes or turns idle.
//! Each [`Connection`] holds its permit until it is dropped, which is when its
//! connection task ends: the client closed it, an error, its age, idleness, or the
//! handshake deadline.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio::time::Sleep;
use tokio_stream::Stream;
use tonic::transport::server::{Connected, TcpIncoming};

use super::connections::{Registered, Registry};
use crate::throttle::Throttle;

/// Pause after an accept error (out of file descriptors, most likely) before accepting
/// again. Without it the loop retries at once, forever: the failed connection stays in
/// the backlog.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// TCP keepalive on accepted sockets: probes after a minute of silence, every 10 s, 3
/// unanswered close the connection. Finds peers that vanished (90 s) on connections
/// HTTP/2 keepalive does not watch yet.
const TCP_KEEPALIVE: Duration = Duration::from_secs(60);
const TCP_KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
const TCP_KEEPALIVE_RETRIES: u32 = 3;

/// Bytes a new connection must send before the handshake deadline: the HTTP/2 client
/// preface (`PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`). Every HTTP/1.1 request this server
/// answers (gRPC-Web, CORS preflights) is longer.
const PREFACE_LEN: usize = 24;

/// At the cap with no connection idle, how often to look again for one to evict.
const EVICT_RETRY: Duration = Duration::from_millis(100);

/// After the server has closed its side, how long it reads (and discards) what the
/// client still sends before closing the socket. Closing with unread bytes makes the
/// kernel send a reset, which can destroy the last responses before the client has
/// read them; waiting for the client's own close (it closes once it has the final
/// GOAWAY) avoids that.
const LINGER: Duration = Duration::from_secs(1);

type Acquire = Pin<Box<dyn Future<Output = Result<OwnedSemaphorePermit, AcquireError>> + Send>>;

/// The connections tonic serves: see the module's documentation.
pub struct Incoming {
    listener: TcpIncoming,
    cap: Arc<Semaphore>,
    registry: Arc<Registry>,
    max_connections: usize,
    handshake_timeout: Duration,
    /// A connection accepted at the cap, waiting for a place under it.
    waiting: Option<TcpStream>,
    /// Waiting for a connection to close, at the cap.
    acquiring: Option<Acquire>,
    /// At the cap: when to look again for an idle connection to evict.
    evict_retry: Option<Pin<Box<Sleep>>>,
    /// Pausing after an accept error.
    backoff: Option<Pin<Box<Sleep>>>,
    accept_errors: Throttle,
    at_cap: Throttle,
}

impl Incoming {
    /// Accepts on `listener`, at most `max_connections` open at once (each registered in
    /// `registry`), each closed if it has not sent the HTTP/2 preface within
    /// `handshake_timeout`.
    pub fn new(
        listener: TcpListener,
        registry: Arc<Registry>,
        max_connections: usize,
        handshake_timeout: Duration,
    ) -> Self {
        let listener = TcpIncoming::from(listener)
            .with_nodelay(Some(true))
            .with_keepalive(Some(TCP_KEEPALIVE))
            .with_keepalive_interval(Some(TCP_KEEPALIVE_INTERVAL))
            .with_keepalive_retries(Some(TCP_KEEPALIVE_RETRIES));
        Incoming {
            listener,
            cap: Arc::new(Semaphore::new(max_connections)),
            registry,
            max_connections,
            handshake_timeout,
            waiting: None,
            acquiring: None,
            evict_retry: None,
            backoff: None,
            accept_errors: Throttle::default(),
            at_cap: Throttle::default(),
        }
    }

    /// A permit for one more connection; `None` if the cap's semaphore was closed
    /// (never: nothing closes it).
    fn poll_permit(&mut self, cx: &mut Context<'_>) -> Poll<Option<OwnedSemaphorePermit>> {
        let due = self
            .evict_retry
            .as_mut()
            .is_none_or(|retry| retry.as_mut().poll(cx).is_ready());
        if due {
            self.evict_retry = None;
            match self.try_permit() {
                Ok(permit) => {
                    self.acquiring = None;
                    return Poll::Ready(Some(permit));
                }
                Err(TryAcquireError::Closed) => return Poll::Ready(None),
                Err(TryAcquireError::NoPermits) => {
                    if let Some(held_back) = self.at_cap.check() {
                        tracing::warn!(
                            max_connections = self.max_connections,
                            earlier = held_back,
                            "at the connection cap with every connection busy: not accepting \
                             until one closes or turns idle"
                        );
                    }
                    let mut retry = Box::pin(tokio::time::sleep(EVICT_RETRY));
                    // Registers the timer's waker.
                    let _ = retry.as_mut().poll(cx);
                    self.evict_retry = Some(retry);
                }
            }
        }
        let cap = &self.cap;
        let acquiring = self
            .acquiring
            .get_or_insert_with(|| Box::pin(Arc::clone(cap).acquire_owned()));
        let acquired = ready!(acquiring.as_mut().poll(cx));
        self.acquiring = None;
        self.evict_retry = None;
        Poll::Ready(acquired.ok())
    }

    /// A permit now: a free one, or one given back by evicting the idlest connection.
    fn try_permit(&self) -> Result<OwnedSemaphorePermit, TryAcquireError> {
        match Arc::clone(&self.cap).try_acquire_owned() {
            Err(TryAcquireError::NoPermits) if self.registry.evict_idlest() => {
                Arc::clone(&self.cap).try_acquire_owned()
            }
            other => other,
        }
    }
}

impl Stream for Incoming {
    type Item = io::Result<Connection>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(backoff) = &mut this.backoff {
                ready!(backoff.as_mut().poll(cx));
                this.backoff = None;
            }
            // Accept first, then find it a place: at the cap that evicts an idle
            // connection only when a new one is really waiting (and holds one accepted
            // connection at most; the rest wait in the kernel's backlog).
            if this.waiting.is_none() {
                match Pin::new(&mut this.listener).poll_next(cx) {
                    Poll::Ready(Some(Ok(stream))) => this.waiting = Some(stream),
                    Poll::Ready(None) => return Poll::Ready(None),
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Some(Err(error))) => {
                        if is_connection_error(&error) {
                            // That connection is gone; the listener is fine.
                            tracing::debug!(%error, "a connection failed before it was accepted");
                            continue;
                        }
                        if let Some(held_back) = this.accept_errors.check() {
                            tracing::warn!(
                                %error,
                                earlier = held_back,
                                pause_ms = ACCEPT_BACKOFF.as_millis(),
                                "cannot accept connections (out of file descriptors?); pausing"
                            );
                        }
                        this.backoff = Some(Box::pin(tokio::time::sleep(ACCEPT_BACKOFF)));
                        continue;
                    }
                }
            }
            let Some(permit) = ready!(this.poll_permit(cx)) else {
                return Poll::Ready(None);
            };
            let Some(stream) = this.waiting.take() else {
                continue;
            };
            let peer = stream.peer_addr().ok().map(|addr| addr.ip());
            let registered = this.registry.register(permit, peer);
            let connection = Connection::new(stream, registered, this.handshake_timeout);
            return Poll::Ready(Some(Ok(connection)));
        }
    }
}

/// Errors of the one connection being accepted, not of the listener.
fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// An accepted connection: holds its permit of the connection cap until dropped, and
/// fails its reads once the handshake deadline passes before [`PREFACE_LEN`] bytes
/// arrived (hyper then closes it).
pub struct Connection {
    stream: TcpStream,
    handshake: Option<Handshake>,
    /// Closing: our side is shut; reading what the client still sends until it closes
    /// or this deadline.
    linger: Option<Pin<Box<Sleep>>>,
    registered: Registered,
}

struct Handshake {
    deadline: Pin<Box<Sleep>>,
    /// Bytes still to come before the deadline no longer applies.
    awaited: usize,
}

impl Connection {
    fn new(stream: TcpStream, registered: Registered, handshake_timeout: Duration) -> Self {
        Connection {
            stream,
            handshake: Some(Handshake {
                deadline: Box::pin(tokio::time::sleep(handshake_timeout)),
                awaited: PREFACE_LEN,
            }),
            linger: None,
            registered,
        }
    }

    /// Its place in the registry: its number and what it is doing (calls open, idle
    /// since), for the loop serving it.
    pub fn registered(&self) -> &Registered {
        &self.registered
    }
}

impl AsyncRead for Connection {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let (before, room) = (buf.filled().len(), buf.remaining());
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        let Some(handshake) = &mut this.handshake else {
            return polled;
        };
        match polled {
            Poll::Ready(Ok(())) => {
                let read = buf.filled().len() - before;
                handshake.awaited = handshake.awaited.saturating_sub(read);
                // Done, or the end of the stream (hyper sees it and closes).
                if handshake.awaited == 0 || (read == 0 && room > 0) {
                    this.handshake = None;
                }
            }
            Poll::Pending => {
                if handshake.deadline.as_mut().poll(cx).is_ready() {
                    tracing::debug!(
                        peer = ?this.stream.peer_addr().ok(),
                        "closing a connection that sent no HTTP/2 preface in time"
                    );
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no HTTP/2 preface within the handshake timeout",
                    )));
                }
            }
            Poll::Ready(Err(_)) => {}
        }
        polled
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    /// Shuts our side, then lingers: reads and discards until the client closes its
    /// side or [`LINGER`] passes (see there why).
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.linger.is_none() {
            ready!(Pin::new(&mut this.stream).poll_shutdown(cx))?;
            this.linger = Some(Box::pin(tokio::time::sleep(LINGER)));
        }
        let mut scratch = [0u8; 2048];
        loop {
            let mut buf = ReadBuf::new(&mut scratch);
            match Pin::new(&mut this.stream).poll_read(cx, &mut buf) {
                Poll::Ready(Ok(())) if buf.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => continue,
                // A reset or any error: nothing left to protect.
                Poll::Ready(Err(_)) => return Poll::Ready(Ok(())),
                Poll::Pending => {
                    if let Some(linger) = &mut this.linger
                        && linger.as_mut().poll(cx).is_ready()
                    {
                        return Poll::Ready(Ok(()));
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

impl Connected for Connection {
    type ConnectInfo = <TcpStream as Connected>::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.stream.connect_info()
    }
}
