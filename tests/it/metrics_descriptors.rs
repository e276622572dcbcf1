// The test runs alone in a child process (`common::alone`): it counts the descriptors
// the whole process has open (`/proc/self/fd`) and allows 8 beyond the connections it
// made, fewer than another test's server, runtime and client hold. No other test may
// open or close descriptors meanwhile, so none may share its process.

//! The metrics endpoint under a flood of slow connections: it cannot take the gRPC
//! port's descriptors (see `tests/it/metrics.rs` for the rest of the endpoint).

use crate::common;

use allfives::proto::v1 as pb;
use common::{TestServer, ring};

/// Descriptors this process has open.
fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |dir| dir.count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_connections_to_the_metrics_port_cannot_take_the_grpc_ports_descriptors() {
    if !common::alone::alone(
        module_path!(),
        "slow_connections_to_the_metrics_port_cannot_take_the_grpc_ports_descriptors",
    )
    .await
    {
        return;
    }
    use tokio::io::AsyncWriteExt;
    let server = TestServer::start(ring(1, 1)).await;
    let mut client = server.client().await;
    // Both ends are in this process: a connection the endpoint accepted costs two
    // descriptors, one it left in the backlog one.
    let limit = allfives::server::open_files_limit().unwrap_or(1024);
    let count = 1000.min(usize::try_from(limit.saturating_sub(256) / 3).unwrap_or(1000));
    let before = open_descriptors();
    // All at once, each given 1 s: past the endpoint's cap and the kernel's backlog a
    // connect waits for SYN retries, and those are not held.
    let addr = server.metrics_addr;
    let attempts: Vec<_> = (0..count)
        .map(|_| {
            tokio::spawn(async move {
                let connect = tokio::net::TcpStream::connect(addr);
                let mut conn = tokio::time::timeout(std::time::Duration::from_secs(1), connect)
                    .await
                    .ok()?
                    .ok()?;
                // A request head begun and never finished.
                let _ = conn.write_all(b"GET /metrics HTTP/1.1\r\nHo").await;
                Some(conn)
            })
        })
        .collect();
    let mut slow = Vec::with_capacity(count);
    for attempt in attempts {
        slow.extend(attempt.await.expect("connect task"));
    }
    let count = slow.len();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let grown = open_descriptors().saturating_sub(before);
    let started = std::time::Instant::now();
    client
        .new_game(pb::NewGameRequest::default())
        .await
        .expect("a gRPC call while the metrics port is flooded");
    let served = started.elapsed();
    println!(
        "metrics flood: {count} slow connections to the metrics port cost {grown} \
         descriptors here (the endpoint accepted {} of them); a gRPC call was served \
         after {served:?}",
        grown.saturating_sub(count)
    );
    assert!(
        grown <= count + 16 + 8,
        "the metrics endpoint accepted {} connections",
        grown.saturating_sub(count)
    );
    drop(slow);
    // Scrapes work again once the slow connections are gone.
    let (status, _, _) = server.scrape("/metrics").await;
    assert_eq!(status, 200);
}
