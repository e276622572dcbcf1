//! Starting a real server on an ephemeral port and helpers shared by the tests.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use allfives::config::Config;
use allfives::metrics::{Metrics, serve_metrics};
use allfives::proto::v1 as pb;
use allfives::proto::v1::all_fives_service_client::AllFivesServiceClient;
use allfives::state::KeyRing;
use clap::Parser;
use tokio::sync::oneshot;
use tonic::transport::Channel;

pub type Client = AllFivesServiceClient<Channel>;

/// A server running in this process, with its metrics endpoint; stopped when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    /// Where `GET /metrics` answers (plain HTTP/1).
    pub metrics_addr: SocketAddr,
    /// The registry the server counts in.
    pub metrics: Arc<Metrics>,
    stop: Option<oneshot::Sender<()>>,
    /// Ends when the gRPC server has stopped and then the metrics endpoint.
    pub handle: tokio::task::JoinHandle<()>,
}

impl TestServer {
    pub async fn start(ring: KeyRing) -> TestServer {
        TestServer::start_with(ring, &[]).await
    }

    /// As [`TestServer::start`], with more flags (`--concurrency-limit 4`, …) after the
    /// test defaults (short drain, no shutdown delay).
    pub async fn start_with(ring: KeyRing, extra_args: &[&str]) -> TestServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let metrics_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind metrics");
        let metrics_addr = metrics_listener.local_addr().expect("metrics addr");
        let metrics = Arc::new(Metrics::new());
        let (stop, stopped) = oneshot::channel::<()>();
        let defaults = [
            "allfives",
            "--drain-seconds",
            "1",
            "--shutdown-delay-ms",
            "0",
        ];
        let config = Config::try_parse_from(defaults.iter().chain(extra_args)).expect("config");
        let shared = Arc::clone(&metrics);
        let handle = tokio::spawn(async move {
            // As `main` does: the metrics endpoint stops once the gRPC server has.
            let (grpc_done, grpc_stopped) = oneshot::channel::<()>();
            let scrapes = tokio::spawn(serve_metrics(
                metrics_listener,
                Arc::clone(&shared),
                async {
                    let _ = grpc_stopped.await;
                },
            ));
            let shutdown = async {
                let _ = stopped.await;
            };
            let result =
                allfives::server::run(listener, &config, Arc::new(ring), shared, shutdown).await;
            drop(grpc_done);
            scrapes.await.expect("metrics endpoint");
            result.expect("server");
        });
        TestServer {
            addr,
            metrics_addr,
            metrics,
            stop: Some(stop),
            handle,
        }
    }

    pub async fn client(&self) -> Client {
        let url = format!("http://{}", self.addr);
        for _ in 0..50 {
            if let Ok(client) = AllFivesServiceClient::connect(url.clone()).await {
                return client;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("server at {url} did not come up")
    }

    pub async fn channel(&self) -> Channel {
        let url = format!("http://{}", self.addr);
        Channel::from_shared(url)
            .expect("url")
            .connect()
            .await
            .expect("connect")
    }

    /// `GET <path>` on the metrics endpoint over real TCP: the status code, the
    /// content type and the body.
    pub async fn scrape(&self, path: &str) -> (u16, String, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(self.metrics_addr)
            .await
            .expect("connect to metrics");
        let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut response = String::new();
        tokio::time::timeout(
            std::time::Duration::from_secs(5),
            stream.read_to_string(&mut response),
        )
        .await
        .expect("metrics answer in time")
        .expect("read");
        let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|c| c.parse().ok())
            .expect("a status line");
        let content_type = lines
            .filter_map(|l| l.split_once(':'))
            .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
            .map(|(_, value)| value.trim().to_owned())
            .unwrap_or_default();
        (status, content_type, body.to_owned())
    }

    pub fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A fixed key ring, as two replicas would share.
pub fn ring(id: u8, byte: u8) -> KeyRing {
    KeyRing::new(vec![(id, [byte; 32])], None).expect("ring")
}

/// The `ErrorInfo` reason of a status.
pub fn reason(status: &tonic::Status) -> String {
    use tonic_types::StatusExt;
    status
        .get_error_details()
        .error_info()
        .map(|i| i.reason.clone())
        .unwrap_or_default()
}

/// The fields a status's `BadRequest` names.
pub fn bad_fields(status: &tonic::Status) -> Vec<String> {
    use tonic_types::StatusExt;
    status
        .get_error_details()
        .bad_request()
        .map(|b| b.field_violations.iter().map(|v| v.field.clone()).collect())
        .unwrap_or_default()
}

pub fn tile(a: u32, b: u32) -> pb::Tile {
    pb::Tile { a, b }
}

/// A dealt game's token: NewGame with the defaults, then Deal, from `client`.
pub async fn dealt_token(client: &mut Client) -> Vec<u8> {
    let new = client
        .new_game(pb::NewGameRequest::default())
        .await
        .expect("NewGame")
        .into_inner();
    deal(client, new.state).await.0
}

/// A new match's token and view.
pub async fn new_match(
    client: &mut Client,
    rules: pb::Rules,
    seed: u64,
) -> (Vec<u8>, pb::GameView) {
    let r = client
        .new_game(pb::NewGameRequest {
            rules: Some(rules),
            seed: Some(seed),
            viewer: None,
        })
        .await
        .expect("NewGame")
        .into_inner();
    (r.state, r.view.expect("view"))
}

/// Deals the next hand.
pub async fn deal(client: &mut Client, state: Vec<u8>) -> (Vec<u8>, pb::GameView) {
    let r = client
        .deal(pb::DealRequest {
            state: state.into(),
            viewer: None,
        })
        .await
        .expect("Deal")
        .into_inner();
    (r.state, r.view.expect("view"))
}
