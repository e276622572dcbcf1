//! Accepting connections: at most `--max-connections` open at once, a pause after an
//! accept error instead of a busy loop, TCP keepalive and nodelay, and a deadline for a
//! new connection's first bytes. See docs/RELIABILITY.md, "Slow or broken clients".
//!
//! [`Incoming`] is the stream of connections tonic serves. It takes a permit of the
//! connection cap before it accepts, so at the cap it stops accepting and new
//! connections wait in the kernel's backlog (backpressure, nothing accepted and
//! dropped). Each [`Connection`] holds its permit until it is dropped, which is when
//! its connection task ends: the client closed it, an error, the connection age, or the
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

use super::throttle::Throttle;

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

type Acquire = Pin<Box<dyn Future<Output = Result<OwnedSemaphorePermit, AcquireError>> + Send>>;

/// The connections tonic serves: see the module's documentation.
pub struct Incoming {
    listener: TcpIncoming,
    cap: Arc<Semaphore>,
    max_connections: usize,
    handshake_timeout: Duration,
    /// A permit taken for the next connection, kept while none is ready to accept.
    permit: Option<OwnedSemaphorePermit>,
    /// Waiting for a connection to close, at the cap.
    acquiring: Option<Acquire>,
    /// Pausing after an accept error.
    backoff: Option<Pin<Box<Sleep>>>,
    accept_errors: Throttle,
    at_cap: Throttle,
}

impl Incoming {
    /// Accepts on `listener`, at most `max_connections` open at once, each closed if it
    /// has not sent the HTTP/2 preface within `handshake_timeout`.
    pub fn new(listener: TcpListener, max_connections: usize, handshake_timeout: Duration) -> Self {
        let listener = TcpIncoming::from(listener)
            .with_nodelay(Some(true))
            .with_keepalive(Some(TCP_KEEPALIVE))
            .with_keepalive_interval(Some(TCP_KEEPALIVE_INTERVAL))
            .with_keepalive_retries(Some(TCP_KEEPALIVE_RETRIES));
        Incoming {
            listener,
            cap: Arc::new(Semaphore::new(max_connections)),
            max_connections,
            handshake_timeout,
            permit: None,
            acquiring: None,
            backoff: None,
            accept_errors: Throttle::default(),
            at_cap: Throttle::default(),
        }
    }

    /// A permit for one more connection; `None` if the cap's semaphore was closed
    /// (never: nothing closes it).
    fn poll_permit(&mut self, cx: &mut Context<'_>) -> Poll<Option<OwnedSemaphorePermit>> {
        if let Some(permit) = self.permit.take() {
            return Poll::Ready(Some(permit));
        }
        if self.acquiring.is_none() {
            match Arc::clone(&self.cap).try_acquire_owned() {
                Ok(permit) => return Poll::Ready(Some(permit)),
                Err(TryAcquireError::Closed) => return Poll::Ready(None),
                Err(TryAcquireError::NoPermits) => {
                    if let Some(held_back) = self.at_cap.check() {
                        tracing::warn!(
                            max_connections = self.max_connections,
                            earlier = held_back,
                            "at the connection cap: not accepting until a connection closes"
                        );
                    }
                }
            }
        }
        let cap = &self.cap;
        let acquiring = self
            .acquiring
            .get_or_insert_with(|| Box::pin(Arc::clone(cap).acquire_owned()));
        let acquired = ready!(acquiring.as_mut().poll(cx));
        self.acquiring = None;
        Poll::Ready(acquired.ok())
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
            let Some(permit) = ready!(this.poll_permit(cx)) else {
                return Poll::Ready(None);
            };
            match Pin::new(&mut this.listener).poll_next(cx) {
                Poll::Ready(Some(Ok(stream))) => {
                    let connection = Connection::new(stream, permit, this.handshake_timeout);
                    return Poll::Ready(Some(Ok(connection)));
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => {
                    this.permit = Some(permit);
                    return Poll::Pending;
                }
                Poll::Ready(Some(Err(error))) => {
                    this.permit = Some(permit);
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
                }
            }
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
    _permit: OwnedSemaphorePermit,
}

struct Handshake {
    deadline: Pin<Box<Sleep>>,
    /// Bytes still to come before the deadline no longer applies.
    awaited: usize,
}

impl Connection {
    fn new(stream: TcpStream, permit: OwnedSemaphorePermit, handshake_timeout: Duration) -> Self {
        Connection {
            stream,
            handshake: Some(Handshake {
                deadline: Box::pin(tokio::time::sleep(handshake_timeout)),
                awaited: PREFACE_LEN,
            }),
            _permit: permit,
        }
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

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

impl Connected for Connection {
    type ConnectInfo = <TcpStream as Connected>::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.stream.connect_info()
    }
}
