//! The metrics' HTTP endpoint: `GET /metrics` over plain HTTP/1 on its own listener,
//! so the gRPC port never speaks to scrapers and the metrics port never carries the
//! API. Its own budget: at most [`MAX_SCRAPE_CONNECTIONS`] connections, a request head
//! within [`HEADER_READ_TIMEOUT`], a connection closed after
//! [`SCRAPE_CONNECTION_LIFETIME`].
//!
//! The drain at shutdown is hyper-util's `GracefulShutdown` in a few lines of our own:
//! that type can only close its connections at shutdown (its connection trait is
//! sealed), and these also close at the end of their lifetime.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::{CONTENT_TYPE, Metrics};

/// How long a scraper may take to send its request head.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Scrape connections open at once. Prometheus keeps one per scraper; past the cap the
/// endpoint stops accepting (new ones wait in the backlog), so slow or idle
/// connections to it can never take the descriptors the gRPC port needs.
const MAX_SCRAPE_CONNECTIONS: usize = 16;

/// How long a scrape connection may stay open (then it is closed gracefully; a
/// scraper reconnects): bounds how long an idle keep-alive connection holds its place.
const SCRAPE_CONNECTION_LIFETIME: Duration = Duration::from_secs(60);

/// How long in-flight scrapes get once the endpoint shuts down.
const SCRAPE_DRAIN: Duration = Duration::from_secs(1);

/// Serves `GET /metrics` on `listener` until `shutdown` completes; then stops
/// accepting, lets in-flight scrapes finish (a second at most) and returns. Any other
/// path is 404, any other method on `/metrics` 405.
pub async fn serve_metrics(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let (closing, closed) = watch::channel(false);
    let mut connections = JoinSet::new();
    let places = Arc::new(tokio::sync::Semaphore::new(MAX_SCRAPE_CONNECTIONS));
    tokio::pin!(shutdown);
    loop {
        // A place under the cap first, then accept (at the cap: the backlog waits).
        let place = tokio::select! {
            () = &mut shutdown => break,
            place = Arc::clone(&places).acquire_owned() => match place {
                Ok(place) => place,
                Err(_) => break,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let (metrics, closed) = (Arc::clone(&metrics), closed.clone());
                    connections.spawn(async move {
                        connection(stream, metrics, closed).await;
                        drop(place);
                    });
                }
                Err(error) => {
                    // Out of file descriptors, most likely: wait rather than spin.
                    tracing::warn!(%error, "metrics endpoint cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            // Reap finished connections so the set does not grow.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    let _ = closing.send(true);
    let drained = tokio::time::timeout(SCRAPE_DRAIN, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::debug!("metrics connections still open at shutdown; closing them");
    }
    // Dropping the set aborts whatever is left.
}

/// One scraper's connection (keep-alive), closed gracefully when `closed` turns true
/// or after [`SCRAPE_CONNECTION_LIFETIME`] (then given [`SCRAPE_DRAIN`] to finish).
async fn connection(stream: TcpStream, metrics: Arc<Metrics>, mut closed: watch::Receiver<bool>) {
    let _ = stream.set_nodelay(true);
    let service = service_fn(move |request: Request<Incoming>| {
        std::future::ready(Ok::<_, Infallible>(respond(&metrics, &request)))
    });
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        _ = closed.changed() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
        () = tokio::time::sleep(SCRAPE_CONNECTION_LIFETIME) => {
            connection.as_mut().graceful_shutdown();
            match tokio::time::timeout(SCRAPE_DRAIN, connection).await {
                Ok(result) => result,
                Err(_) => Ok(()),
            }
        }
    };
    if let Err(error) = result {
        tracing::debug!(%error, "metrics connection ended with an error");
    }
}

fn respond<B>(metrics: &Metrics, request: &Request<B>) -> Response<String> {
    if request.uri().path() != "/metrics" {
        return plain(
            StatusCode::NOT_FOUND,
            "not found; metrics are at /metrics\n",
        );
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "use GET\n");
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    match metrics.encode() {
        Ok(text) => {
            let mut response = Response::new(text);
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
            response
        }
        Err(error) => {
            tracing::error!(%error, "cannot encode the metrics");
            plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "cannot encode the metrics\n",
            )
        }
    }
}

fn plain(status: StatusCode, body: &str) -> Response<String> {
    let mut response = Response::new(body.to_owned());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
