//! The connection loop: accepts from [`Incoming`] and serves each connection with
//! hyper (HTTP/2, and HTTP/1 for gRPC-Web), closing it gracefully when it reaches its
//! age, stays idle too long, is evicted at the connection cap, or the server shuts
//! down. Ours rather than tonic's `Server`, whose connection ageing (0.14) either closes
//! a connection without any GOAWAY at age plus grace, losing the calls in flight, or
//! (without a grace) panics; see docs/RELIABILITY.md, "Connection ageing".
//!
//! hyper-util's `GracefulShutdown` does the shutdown half of this (signal every
//! connection, wait for them all), but only that: its connection trait is sealed, so a
//! connection it watches cannot also be closed at its age or when idle. The drain
//! below is the same few lines (a `watch` channel whose receivers the connections hold).
//!
//! Closing gracefully is hyper's two-step GOAWAY for HTTP/2 (first "no new streams"
//! with the highest stream id, then after a PING round trip the last stream taken), so
//! a call the client sent meanwhile is either served or refused unprocessed, which
//! gRPC clients retry on a new connection. Calls already taken get the grace to finish;
//! then the connection is dropped.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::sync::watch;
use tokio_stream::StreamExt;

use super::incoming::{Connection, Incoming};
use super::stack::Stack;
use crate::connection::Tracker;

/// When connections are closed.
#[derive(Clone, Copy, Debug)]
pub struct Lifetimes {
    /// Close after about this long (each connection within ±10% of it, so that the
    /// connections of a burst do not all reconnect at once); `None`: never.
    pub age: Option<Duration>,
    /// Calls in flight get this long to finish once a connection starts closing.
    pub grace: Duration,
    /// Close a connection with no call open this long; `None`: never.
    pub idle: Option<Duration>,
    /// How long an idle connection evicted at the cap may take to close.
    pub evict_grace: Duration,
}

/// Serves every connection `incoming` yields with `stack` until `shutdown` completes;
/// then stops accepting (the listener closes), closes every connection gracefully and
/// returns once they have all closed. The caller bounds that wait.
pub async fn serve<F>(
    incoming: Incoming,
    http: Builder<TokioExecutor>,
    stack: Stack,
    lifetimes: Lifetimes,
    shutdown: F,
) where
    F: Future<Output = ()>,
{
    let (stop, stopping) = watch::channel(());
    {
        let mut incoming = pin!(incoming);
        let mut shutdown = pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                next = incoming.next() => match next {
                    Some(Ok(connection)) => {
                        tokio::spawn(serve_one(
                            connection,
                            http.clone(),
                            stack.clone(),
                            lifetimes,
                            stopping.clone(),
                        ));
                    }
                    // `Incoming` deals with accept errors itself and never yields one.
                    Some(Err(_)) => continue,
                    None => break,
                },
            }
        }
        // `incoming` (the listener) is dropped here: new connections are refused.
    }
    let _ = stop.send(());
    drop(stopping);
    // Every connection task holds a receiver until it ends.
    stop.closed().await;
}

/// Serves one connection until it closes: see the module's documentation.
async fn serve_one(
    connection: Connection,
    http: Builder<TokioExecutor>,
    stack: Stack,
    lifetimes: Lifetimes,
    mut stopping: watch::Receiver<()>,
) {
    let tracker: Arc<Tracker> = Arc::clone(connection.registered().tracker());
    let age = lifetimes
        .age
        .map(|age| jittered(age, connection.registered().id().0));
    let service = stack.for_connection(&connection);
    let served = http.serve_connection(TokioIo::new(connection), TowerToHyperService::new(service));
    let mut served = pin!(served);
    let mut aged = pin!(sleep_for(age));
    let mut grace = pin!(tokio::time::sleep(Duration::MAX / 4));
    let mut closing = false;
    loop {
        let why = tokio::select! {
            result = served.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%error, "connection ended with an error");
                }
                return;
            }
            () = &mut grace, if closing => {
                tracing::debug!("closing grace over: dropping the connection");
                return;
            }
            () = &mut aged, if !closing => ("age", lifetimes.grace),
            () = tracker.idle_for(lifetimes.idle), if !closing => ("idle", lifetimes.grace),
            () = tracker.evicted(), if !closing => ("evicted at the connection cap", lifetimes.evict_grace),
            _ = stopping.changed(), if !closing => ("shutdown", Duration::MAX / 4),
        };
        tracing::debug!(why = why.0, "closing a connection gracefully");
        tracker.close();
        served.as_mut().graceful_shutdown();
        grace.as_mut().reset(tokio::time::Instant::now() + why.1);
        closing = true;
    }
}

/// Sleeps `duration`, or forever for `None`.
async fn sleep_for(duration: Option<Duration>) {
    match duration {
        Some(duration) => tokio::time::sleep(duration).await,
        None => std::future::pending().await,
    }
}

/// `age` moved by up to ±10%, spread evenly over connection numbers (a Weyl sequence:
/// consecutive connections land far apart).
fn jittered(age: Duration, number: u64) -> Duration {
    let fraction = (number.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) as f64 / (1u64 << 53) as f64;
    age.mul_f64(0.9 + 0.2 * fraction)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_are_spread_within_ten_percent() {
        let age = Duration::from_secs(300);
        let ages: Vec<Duration> = (0..1000).map(|n| jittered(age, n)).collect();
        assert!(
            ages.iter()
                .all(|a| *a >= age.mul_f64(0.9) && *a <= age.mul_f64(1.1))
        );
        let below = ages.iter().filter(|a| **a < age).count();
        assert!((400..600).contains(&below), "{below} of 1000 below the age");
        assert_ne!(jittered(age, 1), jittered(age, 2));
    }
}
