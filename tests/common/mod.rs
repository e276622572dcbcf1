//! Starting a real server on an ephemeral port and helpers shared by the tests.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use allfives::config::Config;
use allfives::proto::v1 as pb;
use allfives::proto::v1::all_fives_service_client::AllFivesServiceClient;
use allfives::state::KeyRing;
use clap::Parser;
use tokio::sync::oneshot;
use tonic::transport::Channel;

pub type Client = AllFivesServiceClient<Channel>;

/// A server running in this process; stopped when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    pub handle: tokio::task::JoinHandle<()>,
}

impl TestServer {
    pub async fn start(ring: KeyRing) -> TestServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = oneshot::channel::<()>();
        let config = Config::try_parse_from([
            "allfives",
            "--drain-seconds",
            "1",
            "--shutdown-delay-ms",
            "0",
        ])
        .expect("config");
        let handle = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            allfives::server::run(listener, &config, Arc::new(ring), shutdown)
                .await
                .expect("server");
        });
        TestServer {
            addr,
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
