//! Overload, oversized messages and slow or broken clients, against a real server on
//! loopback: excess calls are refused quickly and the rest served, memory stays
//! bounded, and a normal client is served promptly throughout. See
//! docs/RELIABILITY.md.

use crate::common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use allfives::proto::v1 as pb;
use allfives::proto::v1::all_fives_service_client::AllFivesServiceClient;
use common::{Client, TestServer, dealt_token, raw, reason, ring};
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tonic::Code;
use tonic::transport::Endpoint;

/// Resident memory of this process (server and clients), in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// A new client on its own HTTP/2 connection.
async fn connect(addr: SocketAddr) -> Client {
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .expect("url")
        .connect()
        .await
        .expect("connect");
    AllFivesServiceClient::new(channel)
}

/// How long a test waits for something that must happen before it calls it a hang: a
/// guard, not a bar (a busy machine is slow; the verdicts are what happened).
const HANG: Duration = Duration::from_secs(120);

/// A normal client's round of calls (NewGame, Deal, Score), each served: returns the
/// slowest call, for the log (how long it takes is the machine's, not a verdict).
async fn normal_round(addr: SocketAddr) -> Duration {
    let mut slowest = Duration::ZERO;
    let started = Instant::now();
    let mut client = connect(addr).await;
    slowest = slowest.max(started.elapsed());
    for _ in 0..3 {
        let started = Instant::now();
        let (state, creds) = dealt_token(&mut client).await;
        let view = client
            .score(pb::ScoreRequest {
                state: state.into(),
                viewer: Some(0),
                credential: creds.of(0),
                ..Default::default()
            })
            .await
            .expect("Score")
            .into_inner()
            .view
            .expect("view");
        assert_eq!(view.hand.len(), 9);
        slowest = slowest.max(started.elapsed());
    }
    slowest
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn far_past_the_concurrency_limit_excess_calls_are_refused_quickly_and_the_rest_served() {
    let _load = common::measuring().await;
    let server = TestServer::start_with(ring(1, 3), &["--concurrency-limit", "4"]).await;
    let addr = server.addr;
    let (token, creds) = dealt_token(&mut server.client().await).await;
    let credential = creds.of(0);
    let rss_before = rss_kib();
    let started = Instant::now();

    // 8 connections, 64 calls at once on each, 4 rounds: 2048 calls, 512 at a time,
    // against a limit of 4 per connection.
    let mut rounds = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let token = token.clone();
        let credential = credential.clone();
        rounds.spawn(async move {
            let client = connect(addr).await;
            let mut outcomes = Vec::new();
            for _ in 0..4 {
                let mut calls = tokio::task::JoinSet::new();
                for _ in 0..64 {
                    let mut client = client.clone();
                    let state = token.clone();
                    let credential = credential.clone();
                    calls.spawn(async move {
                        let started = Instant::now();
                        let result = client
                            .score(pb::ScoreRequest {
                                state: state.into(),
                                viewer: Some(0),
                                credential,
                                ..Default::default()
                            })
                            .await;
                        (result.map(|r| r.into_inner()), started.elapsed())
                    });
                }
                while let Some(joined) = calls.join_next().await {
                    outcomes.push(joined.expect("call task"));
                }
            }
            outcomes
        });
    }
    let mut ok = 0;
    let mut refused = std::collections::BTreeMap::<String, (u32, Duration)>::new();
    let mut slowest_ok = Duration::ZERO;
    while let Some(joined) = rounds.join_next().await {
        for (result, elapsed) in joined.expect("connection task") {
            match result {
                Ok(answer) => {
                    ok += 1;
                    slowest_ok = slowest_ok.max(elapsed);
                    let view = answer.view.expect("view");
                    assert_eq!(view.hand.len(), 9, "an accepted call is answered in full");
                }
                Err(status) => {
                    let entry = refused
                        .entry(format!("{:?}", status.code()))
                        .or_insert((0, Duration::ZERO));
                    entry.0 += 1;
                    entry.1 = entry.1.max(elapsed);
                    assert!(
                        matches!(status.code(), Code::ResourceExhausted | Code::Unavailable),
                        "{status:?}"
                    );
                }
            }
        }
    }
    let rss_after = rss_kib();
    println!(
        "overload: 2048 calls, 512 at once over 8 connections against a limit of 4 per \
         connection: {ok} served (slowest {slowest_ok:?}), refused (count, slowest) \
         {refused:?}, in {:?}; RSS {rss_before} -> {rss_after} KiB",
        started.elapsed()
    );
    // HTTP/2 clients queue past the server's MAX_CONCURRENT_STREAMS; what a client sends
    // before it has read that setting is refused at once (REFUSED_STREAM: UNAVAILABLE).
    assert!(ok > 0);
    assert!(
        rss_after < rss_before + 64 * 1024,
        "memory grew from {rss_before} to {rss_after} KiB"
    );
    // The server serves normally afterwards.
    let after = normal_round(addr).await;
    println!("overload: afterwards a normal client's slowest call took {after:?}");
}

/// Just enough HTTP/2, by hand, to be the clients a real HTTP/2 stack never is: one
/// that ignores the server's stream limit, one that never reads, one that stops in the
/// middle of the connection preface.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_ignores_the_stream_limit_has_the_excess_refused_at_once() {
    let _load = common::measuring().await;
    let server = TestServer::start_with(ring(1, 3), &["--concurrency-limit", "4"]).await;
    let message = common::score_message(&mut server.client().await).await;
    const CALLS: u32 = 100;
    let (mut served, mut refused, mut slowest) = (0, 0, Duration::ZERO);
    for _ in 0..4 {
        // All the calls in one write, before the server's SETTINGS could be read.
        let mut conn = TcpStream::connect(server.addr).await.expect("connect");
        let mut burst = raw::hello();
        for i in 0..CALLS {
            burst.extend(raw::call(
                2 * i + 1,
                "/allfives.v1.AllFivesService/Score",
                &message,
            ));
        }
        let started = Instant::now();
        conn.write_all(&burst).await.expect("write");
        let mut bodies = BTreeMap::<u32, Vec<u8>>::new();
        let mut done = BTreeMap::<u32, &str>::new();
        let mut buf = Vec::new();
        while (done.len() as u32) < CALLS {
            let mut chunk = [0u8; 16384];
            // A guard against a hang, not a speed bar: a busy machine is slow, not stuck.
            let n = tokio::time::timeout(HANG, conn.read(&mut chunk))
                .await
                .expect("the server answers every stream")
                .expect("read");
            assert!(
                n > 0,
                "connection closed with {} streams answered",
                done.len()
            );
            buf.extend_from_slice(&chunk[..n]);
            for f in raw::parse(&mut buf) {
                match f.kind {
                    raw::RST_STREAM => {
                        // REFUSED_STREAM first; then STREAM_CLOSED for the DATA frame
                        // that followed the refused HEADERS.
                        let code = u32::from_be_bytes(f.payload[..4].try_into().expect("code"));
                        if done.get(&f.stream) != Some(&"refused") {
                            assert_eq!(code, raw::REFUSED_STREAM, "stream {}", f.stream);
                            done.insert(f.stream, "refused");
                            slowest = slowest.max(started.elapsed());
                        }
                    }
                    raw::DATA => {
                        bodies.entry(f.stream).or_default().extend(&f.payload);
                        if f.flags & raw::END_STREAM != 0 {
                            done.insert(f.stream, "served");
                        }
                    }
                    raw::HEADERS if f.flags & raw::END_STREAM != 0 => {
                        done.insert(f.stream, "served");
                    }
                    raw::GOAWAY => panic!("GOAWAY: {:?}", f.payload),
                    _ => {}
                }
            }
        }
        for (stream, outcome) in &done {
            if *outcome == "served" {
                // A full answer: the length-prefixed ScoreResponse with the seat's hand.
                let body = &bodies[stream];
                let answer = pb::ScoreResponse::decode(&body[5..]).expect("a ScoreResponse");
                assert_eq!(answer.view.expect("view").hand.len(), 9);
                served += 1;
            } else {
                refused += 1;
            }
        }
    }
    println!(
        "overload: a client ignoring the limit of 4: {served} calls served, {refused} refused \
         (RST_STREAM REFUSED_STREAM, UNAVAILABLE to gRPC clients), the last refusal after \
         {slowest:?}"
    );
    assert!(refused > 0 && served >= 4);
    // The server serves normally afterwards.
    let after = normal_round(server.addr).await;
    println!("overload: afterwards a normal client's slowest call took {after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_messages_are_refused_with_out_of_range() {
    let server = TestServer::start(ring(1, 3)).await;
    let mut client = server.client().await;
    // Over --max-message-bytes (16384 by default): refused before decoding.
    let status = client
        .score(pb::ScoreRequest {
            state: vec![1; 20_000].into(),
            ..Default::default()
        })
        .await
        .expect_err("oversized");
    assert_eq!(status.code(), Code::OutOfRange, "{status:?}");
    // Within the message limit, but longer than any token: refused as a token.
    let status = client
        .score(pb::ScoreRequest {
            state: vec![1; 16_000].into(),
            ..Default::default()
        })
        .await
        .expect_err("too long for a token");
    assert_eq!(
        (status.code(), reason(&status).as_str()),
        (Code::InvalidArgument, "TOKEN_MALFORMED")
    );
    // The server serves normally afterwards.
    normal_round(server.addr).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_silent_and_half_greeted_connections_does_not_stop_others() {
    let _load = common::measuring().await;
    let server = TestServer::start(ring(1, 3)).await;
    let addr = server.addr;
    let rss_before = rss_kib();
    // 900 connections held open (fewer under a low descriptor limit: each costs this
    // process two): a third send nothing (as a half-open connection looks to the
    // server), a third stop inside the HTTP/2 preface, a third after the preface inside
    // the first frame.
    let limit = allfives::server::open_files_limit().unwrap_or(1024);
    let count = 900.min(usize::try_from(limit.saturating_sub(256) / 3).unwrap_or(900));
    let mut held = Vec::new();
    for i in 0..count {
        let mut conn = TcpStream::connect(addr).await.expect("connect");
        match i % 3 {
            0 => {}
            1 => conn.write_all(&raw::PREFACE[..10]).await.expect("write"),
            _ => {
                let hello = raw::hello();
                conn.write_all(&hello[..raw::PREFACE.len() + 5])
                    .await
                    .expect("write")
            }
        }
        held.push(conn);
    }
    // Meanwhile 2000 more connect and hang up at once.
    let churn = tokio::spawn(async move {
        for _ in 0..2000 {
            drop(TcpStream::connect(addr).await.expect("connect"));
        }
    });
    let slowest = normal_round(addr).await;
    churn.await.expect("churn");
    let slowest = slowest.max(normal_round(addr).await);
    let rss_after = rss_kib();
    println!(
        "slow clients: with {count} silent or half-greeted connections held and 2000 more \
         opened and dropped, a normal client's slowest call took {slowest:?}; RSS \
         {rss_before} -> {rss_after} KiB"
    );
    assert!(
        rss_after < rss_before + 64 * 1024,
        "memory grew from {rss_before} to {rss_after} KiB"
    );
    drop(held);
}

/// Reads from `conn` until the server closes it: the time since `since` that took, or
/// `None` if it did not by `since + limit`.
async fn closed_within(conn: &mut TcpStream, since: Instant, limit: Duration) -> Option<Duration> {
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at((since + limit).into(), conn.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0) | Err(_)) => return Some(since.elapsed()),
            Ok(Ok(_)) => {}
        }
    }
}

/// Whether the server sends anything on `conn` within `limit` (its SETTINGS, once it
/// has accepted the connection and read the preface).
async fn answered_within(conn: &mut TcpStream, limit: Duration) -> bool {
    let mut buf = [0u8; 4096];
    matches!(
        tokio::time::timeout(limit, conn.read(&mut buf)).await,
        Ok(Ok(n)) if n > 0
    )
}

/// A raw connection that has sent the preface and SETTINGS: an HTTP/2 client that
/// makes no call.
async fn greeted(addr: SocketAddr) -> TcpStream {
    let mut conn = TcpStream::connect(addr).await.expect("connect");
    conn.write_all(&raw::hello()).await.expect("write");
    conn
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_unfinished_connections_are_closed_at_the_max_connection_age() {
    let _load = common::measuring().await;
    // Age 1 s; the grace after the GOAWAY is the request timeout plus a second.
    let server = TestServer::start_with(
        ring(1, 3),
        &[
            "--max-connection-age-secs",
            "1",
            "--request-timeout-ms",
            "200",
        ],
    )
    .await;
    let started = Instant::now();
    let mut silent = TcpStream::connect(server.addr).await.expect("connect");
    let mut partial = TcpStream::connect(server.addr).await.expect("connect");
    partial.write_all(&raw::PREFACE[..10]).await.expect("write");
    let mut idle = greeted(server.addr).await;
    idle.write_all(&raw::frame(raw::SETTINGS, 1, 0, &[]))
        .await
        .expect("write");
    let limit = HANG;
    let (silent, partial, idle) = tokio::join!(
        closed_within(&mut silent, started, limit),
        closed_within(&mut partial, started, limit),
        closed_within(&mut idle, started, limit),
    );
    println!(
        "slow clients: at --max-connection-age-secs 1 the server closed a silent \
         connection after {silent:?}, one stopped inside the preface after {partial:?}, an \
         idle HTTP/2 connection after {idle:?}"
    );
    // The decision: every connection is closed (when, printed above, is the machine's
    // speed as much as the server's: no bar is set on it).
    for (what, closed) in [("silent", silent), ("partial", partial), ("idle", idle)] {
        assert!(closed.is_some(), "the {what} connection stayed open");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_send_no_preface_are_closed_at_the_handshake_timeout() {
    let _load = common::measuring().await;
    let server = TestServer::start_with(ring(1, 3), &["--handshake-timeout-ms", "500"]).await;
    let started = Instant::now();
    let mut silent = TcpStream::connect(server.addr).await.expect("connect");
    let mut partial = TcpStream::connect(server.addr).await.expect("connect");
    partial.write_all(&raw::PREFACE[..10]).await.expect("write");
    let mut idle = greeted(server.addr).await;
    // A real client that waits past the deadline before its first call.
    let mut client = connect(server.addr).await;
    let limit = HANG;
    let (silent, partial) = tokio::join!(
        closed_within(&mut silent, started, limit),
        closed_within(&mut partial, started, limit),
    );
    println!(
        "slow clients: at --handshake-timeout-ms 500 the server closed a silent connection \
         after {silent:?}, one stopped inside the preface after {partial:?}"
    );
    // The decision: both are closed (when is printed above, with no bar on it).
    for (what, closed) in [("silent", silent), ("partial", partial)] {
        assert!(closed.is_some(), "the {what} connection stayed open");
    }
    // Whoever sent the preface in time is left alone.
    let idle = closed_within(&mut idle, started, Duration::from_secs(2)).await;
    assert_eq!(idle, None, "an HTTP/2 connection was closed");
    client
        .new_game(pb::NewGameRequest::default())
        .await
        .expect("a call after the deadline on a connection that sent the preface in time");
}

/// A raw HTTP/2 connection with a call open: its headers sent, its body never.
async fn with_a_call_open(addr: SocketAddr) -> TcpStream {
    let mut conn = greeted(addr).await;
    // The HEADERS frame only: the body never comes.
    let call = raw::headers(1, "/allfives.v1.AllFivesService/NewGame");
    conn.write_all(&call).await.expect("write");
    conn
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_connection_cap_the_idlest_connection_makes_room_and_busy_ones_stay() {
    let _load = common::measuring().await;
    let server = TestServer::start_with(
        ring(1, 3),
        &[
            "--max-connections",
            "2",
            "--request-timeout-ms",
            "60000",
            "--body-timeout-ms",
            "60000",
        ],
    )
    .await;
    let addr = server.addr;
    // Two idle HTTP/2 connections fill the cap; the older one was idle the longest.
    let mut older = greeted(addr).await;
    assert!(answered_within(&mut older, Duration::from_secs(10)).await);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut newer = greeted(addr).await;
    assert!(answered_within(&mut newer, Duration::from_secs(10)).await);

    // A real client past the cap is served at once: the idlest connection is told to
    // go (GOAWAY) and closed within the eviction grace, the other left alone.
    let started = Instant::now();
    let mut client = connect(addr).await;
    client
        .new_game(pb::NewGameRequest::default())
        .await
        .expect("a call past the cap is served");
    let served = started.elapsed();
    let evicted = closed_within(&mut older, started, HANG).await;
    assert!(evicted.is_some(), "the idlest connection was not closed");
    // The client's own connection is now the newest idle one and `newer` the idlest.
    drop(client);

    // Busy connections are never evicted: with both places held by calls in flight, a
    // new connection waits (its TCP handshake done in the kernel's backlog).
    drop(newer);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let _busy_one = with_a_call_open(addr).await;
    let _busy_two = with_a_call_open(addr).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut third = greeted(addr).await;
    assert!(
        !answered_within(&mut third, Duration::from_millis(1500)).await,
        "a connection past the cap was served while every connection had a call open"
    );
    drop(_busy_one);
    assert!(
        answered_within(&mut third, Duration::from_secs(10)).await,
        "a waiting connection was not accepted after one closed"
    );
    println!(
        "connection cap: at --max-connections 2 with both connections idle a new client \
         was served after {served:?} (the idlest closed after {evicted:?}); with both busy \
         a new connection waited until one closed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_sends_calls_but_never_reads_does_not_stop_others() {
    let _load = common::measuring().await;
    let server = TestServer::start(ring(1, 3)).await;
    let addr = server.addr;
    let message = common::score_message(&mut server.client().await).await;
    let rss_before = rss_kib();
    // 3000 calls written as fast as the server takes them, never a byte read: no
    // SETTINGS ACK, no WINDOW_UPDATE, the answers piling up unread.
    let mut conn = TcpStream::connect(addr).await.expect("connect");
    let writer = tokio::spawn(async move {
        conn.write_all(&raw::hello()).await.expect("write");
        let mut written = 0u32;
        for i in 0..3000u32 {
            let call = raw::call(2 * i + 1, "/allfives.v1.AllFivesService/Score", &message);
            let write = conn.write_all(&call);
            match tokio::time::timeout(Duration::from_secs(2), write).await {
                Ok(Ok(())) => written += 1,
                Ok(Err(_)) => return (written, "the server closed the connection", conn),
                Err(_) => return (written, "the server stopped reading", conn),
            }
        }
        (written, "all written", conn)
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let slowest = normal_round(addr).await;
    let (written, how, conn) = writer.await.expect("writer");
    let slowest = slowest.max(normal_round(addr).await);
    let rss_after = rss_kib();
    println!(
        "slow clients: a client that never reads wrote {written} calls ({how}); a normal \
         client's slowest call meanwhile took {slowest:?}; RSS {rss_before} -> {rss_after} KiB"
    );
    assert!(
        rss_after < rss_before + 64 * 1024,
        "memory grew from {rss_before} to {rss_after} KiB"
    );
    drop(conn);
}

/// CPU seconds (user + system) a process has used, from /proc.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .expect("comm")
        .1
        .split_whitespace()
        .collect();
    let ticks: f64 =
        fields[11].parse::<f64>().expect("utime") + fields[12].parse::<f64>().expect("stime");
    ticks / 100.0
}

/// Finding 3 of docs/RELIABILITY.md: once the process is out of file descriptors,
/// tonic's accept loop retried `accept` at once, forever (EMFILE leaves the connection
/// in the backlog), and burnt a whole core until a descriptor freed. The server now
/// pauses 100 ms after an accept error; once descriptors free it accepts again.
#[test]
fn out_of_file_descriptors_the_server_does_not_spin() {
    let _load = common::measuring_blocking();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = std::process::Command::new("sh")
        .args(["-c", "ulimit -n 64; exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_allfives"))
        .args([
            "--addr",
            &addr,
            "--metrics-addr",
            "off",
            "--log-filter",
            "error",
        ])
        .spawn()
        .expect("start the server");
    let up = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        std::net::TcpStream::connect(&addr).is_ok()
    });
    assert!(up, "the server did not come up");
    // Past the 64 descriptors the process may hold.
    let held: Vec<_> = (0..100)
        .filter_map(|_| std::net::TcpStream::connect(&addr).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let before = cpu_seconds(child.id());
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_seconds(child.id()) - before;
    drop(held);
    // Descriptors free again: a new connection is served.
    let served = (|| {
        use std::io::{Read, Write};
        let mut conn = std::net::TcpStream::connect(&addr).ok()?;
        conn.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        conn.write_all(&raw::hello()).ok()?;
        let mut buf = [0u8; 1024];
        let n = conn.read(&mut buf).ok()?;
        Some(raw::parse(&mut buf[..n].to_vec()).first()?.kind == raw::SETTINGS)
    })();
    let _ = child.kill();
    let _ = child.wait();
    println!("out of descriptors: the server used {used:.2} CPU seconds in 2 s");
    assert!(used < 0.5, "the accept loop spun: {used:.2} CPU s in 2 s");
    assert_eq!(
        served,
        Some(true),
        "no HTTP/2 SETTINGS on a new connection once descriptors were free"
    );
}

/// A call that runs past the server's own time limit is answered DEADLINE_EXCEEDED with
/// `REQUEST_TIMEOUT`; past the client's own, earlier `grpc-timeout`, DEADLINE_EXCEEDED
/// alone. A call is made long by the HARD bot's floor (a second a full search, past
/// either limit), and whichever notices the deadline first, the admission layer or the
/// service, answers the same. Any call that fails must fail so; a machine slow enough
/// to time out a call without the floor only changes which call that is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_deadline_is_deadline_exceeded_with_the_servers_reason_for_its_limit() {
    let server = TestServer::start_with(
        ring(1, 3),
        &[
            "--allow-client-seeds",
            "--request-timeout-ms",
            "300",
            "--bot-move-floor-ms",
            "1000",
            "--bot-worlds",
            "16",
        ],
    )
    .await;
    let mut client = server.client().await;
    let past_the_servers_limit = |status: tonic::Status| {
        assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
        assert_eq!(reason(&status), "REQUEST_TIMEOUT", "{status:?}");
    };
    // Deals until a call of the human's makes the HARD bot search (the Deal when the
    // bot leads, or the human's first Play, which the bot answers), then makes the same
    // call again with a grpc-timeout sooner than the server's limit.
    let mut seen = (0, false);
    for seed in 0..40 {
        let new = client
            .new_game(common::against_a_bot(pb::BotLevel::Hard, seed))
            .await
            .expect("NewGame")
            .into_inner();
        let creds = common::Creds::from_new_game(&new);
        let deal = pb::DealRequest {
            state: new.state.clone().into(),
            viewer: Some(0),
            credential: creds.of(0),
        };
        let (method, message) = match client.deal(deal.clone()).await {
            Err(status) => {
                past_the_servers_limit(status);
                ("Deal", deal.encode_to_vec())
            }
            Ok(dealt) => {
                let dealt = dealt.into_inner();
                let view = dealt.view.expect("view");
                let Some(first) = view.legal_moves.first() else {
                    continue;
                };
                let play = pb::PlayRequest {
                    state: dealt.state.clone().into(),
                    seat: 0,
                    tile: first.tile,
                    end: first.end,
                    viewer: Some(0),
                    credential: creds.of(0),
                };
                match client.play(play.clone()).await {
                    Ok(_) => continue,
                    Err(status) => past_the_servers_limit(status),
                }
                ("Play", play.encode_to_vec())
            }
        };
        seen.0 += 1;
        // Sent with h2 itself: tonic's client ends a call at its grpc-timeout on its own
        // timer (CANCELLED), and the test would read that instead of the server's.
        let status = h2_call(server.addr, method, &message, "100m").await;
        if status.code() == Code::Ok {
            // Timed out above by the machine's slowness alone, not the bot's floor.
            continue;
        }
        assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
        assert_eq!(reason(&status), "", "{status:?}");
        seen.1 = true;
        break;
    }
    assert!(seen.0 > 0, "no call of 40 matches made the HARD bot search");
    assert!(seen.1, "no call past the client's own deadline");
}

/// The status the server answers to one call of the API's `method` with `message`
/// and a `grpc-timeout` of `timeout`, made over a new HTTP/2 connection with h2 (no
/// gRPC client's timer of its own).
async fn h2_call(addr: SocketAddr, method: &str, message: &[u8], timeout: &str) -> tonic::Status {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let (mut h2, connection) = h2::client::handshake(tcp).await.expect("handshake");
    tokio::spawn(connection);
    let request = tonic::codegen::http::Request::post(format!(
        "http://{addr}/allfives.v1.AllFivesService/{method}"
    ))
    .header("content-type", "application/grpc")
    .header("te", "trailers")
    .header("grpc-timeout", timeout)
    .body(())
    .expect("a request");
    let (answer, mut body) = h2.send_request(request, false).expect("sent");
    let mut framed = vec![0];
    framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
    framed.extend_from_slice(message);
    body.send_data(framed.into(), true).expect("body");
    let answer = answer.await.expect("an answer");
    if let Some(status) = tonic::Status::from_header_map(answer.headers()) {
        return status;
    }
    let mut body = answer.into_body();
    while body.data().await.is_some() {}
    let trailers = body.trailers().await.expect("trailers").expect("a status");
    tonic::Status::from_header_map(&trailers).expect("a status")
}
