//! The partial-body attack of issue 16 against the real binary: many connections each
//! open 256 calls whose bodies stop one byte short of 16 KiB. The server's memory stays
//! under 96 MiB (the pod's limit is 128 MiB) and an honest client's calls made during
//! the attack all succeed (docs/RELIABILITY.md, "The memory budget").

use crate::common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use allfives::proto::v1 as pb;
use allfives::proto::v1::all_fives_service_client::AllFivesServiceClient;
use common::child::ChildServer;
use common::raw;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The bound the issue sets on the server's resident memory.
const RSS_BOUND_KIB: u64 = 96 * 1024;
/// Streams a connection opens, and the message each declares (the default request
/// limit, 16384 bytes with the 5-byte prefix), of which it sends all but one byte.
const STREAMS: u32 = 256;
const MESSAGE: usize = 16384 - 5;
const ATTACK: Duration = Duration::from_secs(4);

/// One attacking connection's bytes: the preface, SETTINGS, then for each stream its
/// HEADERS (a Suggest call) and DATA: the prefix of a 16379-byte message and all of it
/// but the last byte, without END_STREAM.
fn attack_bytes() -> Vec<u8> {
    let mut out = raw::hello();
    let mut body = vec![0];
    body.extend((MESSAGE as u32).to_be_bytes());
    body.extend(std::iter::repeat_n(0x55, MESSAGE - 1));
    for i in 0..STREAMS {
        let stream = 2 * i + 1;
        out.extend(raw::headers(stream, "/allfives.v1.AllFivesService/Suggest"));
        for chunk in body.chunks(16384) {
            out.extend(raw::frame(raw::DATA, 0, stream, chunk));
        }
    }
    out
}

/// Attacks with `connections` connections until `until`: each writes its bytes (as
/// much as the server lets it), reads and drops what comes back, and reconnects when
/// the server closes it.
async fn attack(addr: SocketAddr, connections: usize, until: Instant) {
    let bytes = std::sync::Arc::new(attack_bytes());
    let tasks: Vec<_> = (0..connections)
        .map(|_| {
            let bytes = std::sync::Arc::clone(&bytes);
            tokio::spawn(async move {
                while Instant::now() < until {
                    let Ok(conn) = TcpStream::connect(addr).await else {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    };
                    let (mut read, mut write) = conn.into_split();
                    let drain = tokio::spawn(async move {
                        let mut buf = vec![0u8; 64 * 1024];
                        while matches!(read.read(&mut buf).await, Ok(n) if n > 0) {}
                    });
                    let left = until.saturating_duration_since(Instant::now());
                    let _ = tokio::time::timeout(left, write.write_all(&bytes)).await;
                    let left = until.saturating_duration_since(Instant::now());
                    let _ = tokio::time::timeout(left, drain).await;
                }
            })
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
}

/// An honest player's calls, one after another until `until`: NewGame, Deal, Score.
/// Every failure's code and message.
async fn honest(addr: SocketAddr, until: Instant) -> (u32, Vec<String>) {
    let mut client = loop {
        if let Ok(client) = AllFivesServiceClient::connect(format!("http://{addr}")).await {
            break client;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let (mut calls, mut failures) = (0, Vec::new());
    let fail = |status: tonic::Status| format!("{:?}: {}", status.code(), status.message());
    while Instant::now() < until {
        calls += 3;
        let new = match client
            .new_game(common::hot_seat(pb::Rules::default(), None))
            .await
        {
            Ok(answer) => answer.into_inner(),
            Err(status) => {
                failures.push(fail(status));
                continue;
            }
        };
        let creds = common::Creds::from_new_game(&new);
        let dealt = match client
            .deal(pb::DealRequest {
                state: new.state.into(),
                ..Default::default()
            })
            .await
        {
            Ok(answer) => answer.into_inner(),
            Err(status) => {
                failures.push(fail(status));
                continue;
            }
        };
        let score = pb::ScoreRequest {
            state: dealt.state.into(),
            viewer: Some(0),
            credential: creds.of(0),
            ..Default::default()
        };
        if let Err(status) = client.score(score).await {
            failures.push(fail(status));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (calls, failures)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_partial_body_attack_keeps_memory_bounded_and_honest_calls_served() {
    let _load = common::measuring().await;
    let server = ChildServer::start(&[], None);
    // Up once it answers.
    let _ = honest(server.addr, Instant::now()).await;
    let mut results = Vec::new();
    for connections in [16, 64, 256] {
        let until = Instant::now() + ATTACK;
        let sampler = {
            let pid = server.child.id();
            tokio::spawn(async move {
                let mut peak = 0;
                while Instant::now() < until {
                    if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status"))
                        && let Some(kib) = status
                            .lines()
                            .find(|l| l.starts_with("VmRSS:"))
                            .and_then(|l| l.split_whitespace().nth(1))
                            .and_then(|v| v.parse::<u64>().ok())
                    {
                        peak = peak.max(kib);
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                peak
            })
        };
        let attacking = tokio::spawn(attack(server.addr, connections, until));
        // The honest player starts once the attack is under way.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (calls, failures) = honest(server.addr, until).await;
        let _ = attacking.await;
        let peak = sampler.await.expect("sampler");
        let (now, hwm) = server.rss_kib();
        println!(
            "partial-body attack: {connections} connections x {STREAMS} streams x 16 KiB \
             one byte short for {ATTACK:?}: server RSS peak {peak} KiB (high-water mark \
             {hwm} KiB, {now} KiB after); honest calls meanwhile {calls}, failed {}",
            failures.len()
        );
        results.push((connections, hwm, failures));
    }
    for (connections, hwm, failures) in results {
        assert!(
            hwm < RSS_BOUND_KIB,
            "{connections} connections: the server's RSS reached {hwm} KiB"
        );
        assert!(
            failures.is_empty(),
            "{connections} connections: honest calls failed: {failures:?}"
        );
    }
}
