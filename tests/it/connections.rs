//! Connections over their whole life, against the real server on loopback: ageing and
//! draining lose no call, and idle connections cannot crowd out a new client (issue 16;
//! docs/RELIABILITY.md, "Connections").

use crate::common;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use allfives::proto::v1 as pb;
use allfives::proto::v1::all_fives_service_client::AllFivesServiceClient;
use common::child::ChildServer;
use common::{TestServer, dealt_token, ring};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tonic::codegen::Service;
use tonic::codegen::http::Uri;
use tonic::transport::Endpoint;

/// A connector for tonic that counts the TCP connections it makes (and the attempts).
#[derive(Clone)]
struct Counting {
    addr: std::net::SocketAddr,
    made: Arc<AtomicU64>,
    tried: Arc<AtomicU64>,
}

impl Service<Uri> for Counting {
    type Response = TokioIo<TcpStream>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = std::io::Result<Self::Response>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Uri) -> Self::Future {
        let (addr, made) = (self.addr, Arc::clone(&self.made));
        self.tried.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            let stream = TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            made.fetch_add(1, Ordering::Relaxed);
            Ok(TokioIo::new(stream))
        })
    }
}

/// Connection attempts of every counting channel (for a hung call's report).
static TRIED: std::sync::LazyLock<Arc<AtomicU64>> =
    std::sync::LazyLock::new(|| Arc::new(AtomicU64::new(0)));

/// A channel to `addr` and the count of TCP connections it has made.
async fn counting_channel(
    addr: std::net::SocketAddr,
) -> (tonic::transport::Channel, Arc<AtomicU64>) {
    let made = Arc::new(AtomicU64::new(0));
    let channel = Endpoint::from_static("http://allfives.test")
        .connect_with_connector(Counting {
            addr,
            made: Arc::clone(&made),
            tried: Arc::clone(&TRIED),
        })
        .await
        .expect("connect");
    (channel, made)
}

/// The longest one call of the no-pause client may take (calls take milliseconds).
const CALL_BOUND: Duration = Duration::from_secs(20);

/// How long the no-pause client calls: the 60 s, or `ALLFIVES_AGEING_SECS`
/// (to hunt a rare failure for longer).
fn ageing_run() -> Duration {
    let secs = std::env::var("ALLFIVES_AGEING_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    Duration::from_secs(secs)
}

/// Against the real binary (or `ALLFIVES_ATTACKED_BINARY`, to see the test fail on a
/// build without the fix); its log (`ALLFIVES_LOG`, `warn` by default) is kept in the
/// test's temporary directory and its path printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_calling_without_pause_loses_no_call_to_connection_ageing() {
    let _load = common::measuring().await;
    let run = ageing_run();
    let log = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("connection-ageing.log");
    let server = ChildServer::start(&["--max-connection-age-secs", "1"], Some(log.clone()));
    let (token, creds) = dealt_token(&mut common::connect(server.addr).await).await;
    let (channel, made) = counting_channel(server.addr).await;
    // Two loops on one channel, as an app with a game screen and a lobby would.
    let started = Instant::now();
    let addr = server.addr;
    let loops = (0..2).map(|_| {
        let made = Arc::clone(&made);
        let mut client = AllFivesServiceClient::new(channel.clone());
        let request = pb::ScoreRequest {
            state: token.clone().into(),
            viewer: Some(0),
            credential: creds.of(0),
            ..Default::default()
        };
        tokio::spawn(async move {
            let (mut calls, mut resent, mut failures) = (0u64, BTreeMap::new(), Vec::new());
            while started.elapsed() < run {
                calls += 1;
                // What gRPC's own libraries do transparently, tonic leaves to the caller:
                // a request the server did not process (never sent, or refused by the
                // server's GOAWAY) is sent again. Nothing else is retried.
                loop {
                    // Bounded, so that a call that never ends fails the test with its
                    // reason instead of hanging the run (seen once in CI: a call
                    // pending with no connection open, the server idle).
                    let call = client.score(request.clone());
                    let Ok(answer) = tokio::time::timeout(CALL_BOUND, call).await else {
                        let report = hung(addr, &mut client, &request, &made).await;
                        failures.push(format!("no answer within {CALL_BOUND:?}: {report}"));
                        break;
                    };
                    match answer {
                        Ok(_) => break,
                        Err(status) => match not_processed(&status) {
                            Some(why) => *resent.entry(why).or_insert(0u64) += 1,
                            None => {
                                failures.push(describe(&status));
                                break;
                            }
                        },
                    }
                }
            }
            (calls, resent, failures)
        })
    });
    let (mut calls, mut resent, mut failures) = (0, BTreeMap::new(), Vec::new());
    for result in futures_join(loops).await {
        let (n, u, f) = result.expect("loop");
        calls += n;
        for (why, n) in u {
            *resent.entry(why).or_insert(0) += n;
        }
        failures.extend(f);
    }
    let connections = made.load(Ordering::Relaxed);
    println!(
        "connection ageing: {calls} calls without pause over {run:?} at \
         --max-connection-age-secs 1 on {connections} connections: {} failed; requests the server did not process, sent again: \
         {resent:?}; the server's log: {}",
        failures.len(),
        log.display()
    );
    assert!(failures.is_empty(), "calls failed: {failures:#?}");
    assert!(
        connections >= run.as_secs() / 2,
        "the connections were not aged ({connections} made)"
    );
}

/// What is known when a call got no answer, to tell a wedged client from a server that
/// lost the call (seen once: a call pending with no connection open, the server idle):
/// the connections made and tried, this process's TCP sockets to the server (`ss`),
/// and whether another call on the same channel, and one on a new channel, is
/// answered.
async fn hung(
    addr: std::net::SocketAddr,
    client: &mut AllFivesServiceClient<tonic::transport::Channel>,
    request: &pb::ScoreRequest,
    made: &AtomicU64,
) -> String {
    let port = format!(":{}", addr.port());
    let sockets = std::process::Command::new("ss")
        .arg("-tan")
        .output()
        .map(|out| {
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|line| line.contains(&port))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let bound = Duration::from_secs(5);
    let answered = |answer: Result<Result<_, tonic::Status>, _>| match answer {
        Ok(Ok(_)) => "answered".to_owned(),
        Ok(Err(status)) => describe(&status),
        Err(_) => format!("no answer within {bound:?}"),
    };
    let same = answered(tokio::time::timeout(bound, client.score(request.clone())).await);
    let mut fresh = AllFivesServiceClient::new(counting_channel(addr).await.0);
    let new = answered(tokio::time::timeout(bound, fresh.score(request.clone())).await);
    format!(
        "{} connections made by the channel, {} attempts by every counting channel; sockets to the server: {sockets:?}; another call \
         on the channel: {same}; on a new channel: {new}",
        made.load(Ordering::Relaxed),
        TRIED.load(Ordering::Relaxed),
    )
}

/// A failed call's code, message and the chain of errors under it (h2's says which
/// frame and reason).
fn describe(status: &tonic::Status) -> String {
    let mut out = format!("{:?}: {}", status.code(), status.message());
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(error) = source {
        out.push_str(&format!(" <- {error:?}"));
        source = error.source();
    }
    out
}

/// Whether the server did not process the call's request, so sending it again cannot
/// do anything twice: hyper never wrote it (its connection closed first: "canceled"),
/// or HTTP/2 says it was refused unprocessed (a GOAWAY from the server, which covers the
/// streams above its last stream id and any the client tried after it, RFC 9113 §6.8;
/// or a REFUSED_STREAM reset). These are what gRPC core and grpc-go retry
/// transparently; tonic leaves them to the caller (docs/clients.md).
fn not_processed(status: &tonic::Status) -> Option<&'static str> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(error) = source {
        if let Some(hyper) = error.downcast_ref::<hyper::Error>()
            && hyper.is_canceled()
        {
            return Some("never sent");
        }
        if let Some(h2) = error.downcast_ref::<h2::Error>() {
            if h2.is_go_away() && h2.is_remote() {
                return Some("refused by the server's GOAWAY");
            }
            if h2.reason() == Some(h2::Reason::REFUSED_STREAM) {
                return Some("REFUSED_STREAM");
            }
            return None;
        }
        source = error.source();
    }
    None
}

/// Awaits every handle in order.
async fn futures_join<T>(
    handles: impl Iterator<Item = tokio::task::JoinHandle<T>>,
) -> Vec<Result<T, tokio::task::JoinError>> {
    let mut out = Vec::new();
    for handle in handles {
        out.push(handle.await);
    }
    out
}

/// Raises this process's soft open-files limit to its hard limit; the limit after.
fn raise_open_files_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit write and read the struct passed; no other memory.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1024;
        }
        limit.rlim_cur = limit.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
    }
    limit.rlim_cur
}

/// The idle-connections attacker opens this many connections at once, each given
/// [`ATTACK_CONNECT_TIMEOUT`]: a server at its cap leaves new connections in its
/// backlog (and, once that is full, unanswered), and those must not stall the attack.
/// The timeout outlasts one SYN retransmit (at 1 s): loopback drops a few SYNs of a burst.
const ATTACK_BATCH: usize = 100;
const ATTACK_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// How long the new client may take to connect and be answered: the bound,
/// 1 s, some 50 times what it takes here (3 to 22 ms); without the eviction it waits
/// until an idle connection closes by itself (the idle timeout, 120 s, or on a server
/// without one their 300 s age, since they answer PINGs).
const SERVED_WITHIN: Duration = Duration::from_secs(1);

/// What the idle connections saw, added up over all of them.
#[derive(Default)]
struct IdleCounts {
    /// The server's SETTINGS arrived: the server took the connection and serves it.
    greeted: AtomicU64,
    /// PINGs from the server, each answered.
    pings: AtomicU64,
    /// The server closed the connection (its end of the stream, after a GOAWAY or not).
    closed: AtomicU64,
}

/// One idle HTTP/2 connection as the attacker holds it: the preface and an
/// empty SETTINGS (already written), then never a stream; the server's SETTINGS and
/// every PING acknowledged (a PING ACK with the same payload), so HTTP/2 keepalive never
/// closes it. Ends when the server closes it (EOF, after its GOAWAY or not), or a read
/// or write fails.
async fn hold_idle(mut conn: TcpStream, counts: Arc<IdleCounts>) {
    use common::raw::{ACK, PING, SETTINGS};
    let (mut buf, mut chunk, mut greeted) = (Vec::new(), [0u8; 512], false);
    loop {
        match conn.read(&mut chunk).await {
            Ok(n) if n > 0 => buf.extend(&chunk[..n]),
            _ => break,
        }
        let mut answer = Vec::new();
        for frame in common::raw::parse(&mut buf) {
            if frame.flags & ACK != 0 {
                continue;
            }
            if frame.kind == SETTINGS {
                if !greeted {
                    greeted = true;
                    counts.greeted.fetch_add(1, Ordering::Relaxed);
                }
                answer.extend(common::raw::frame(SETTINGS, ACK, 0, &[]));
            } else if frame.kind == PING {
                counts.pings.fetch_add(1, Ordering::Relaxed);
                answer.extend(common::raw::frame(PING, ACK, 0, &frame.payload));
            }
        }
        if !answer.is_empty() && conn.write_all(&answer).await.is_err() {
            break;
        }
    }
    counts.closed.fetch_add(1, Ordering::Relaxed);
}

/// Opens `count` idle connections to `addr` ([`hold_idle`]), [`ATTACK_BATCH`] at a time:
/// the tasks holding those that opened, and how many did.
async fn open_idle(
    addr: std::net::SocketAddr,
    count: usize,
    counts: &Arc<IdleCounts>,
) -> (tokio::task::JoinSet<()>, usize) {
    let (mut holders, mut opened) = (tokio::task::JoinSet::new(), 0);
    for first in (0..count).step_by(ATTACK_BATCH) {
        let mut connects = tokio::task::JoinSet::new();
        for _ in first..count.min(first + ATTACK_BATCH) {
            connects.spawn(tokio::time::timeout(ATTACK_CONNECT_TIMEOUT, async move {
                let mut conn = TcpStream::connect(addr).await?;
                conn.write_all(&common::raw::hello()).await?;
                Ok::<_, std::io::Error>(conn)
            }));
        }
        while let Some(connected) = connects.join_next().await {
            if let Ok(Ok(Ok(conn))) = connected {
                opened += 1;
                holders.spawn(hold_idle(conn, Arc::clone(counts)));
            }
        }
    }
    (holders, opened)
}

/// The attacker: one client fills the whole `--max-connections` with idle HTTP/2
/// connections that answer PINGs (so HTTP/2 keepalive never closes them), opened as fast
/// as the server takes them. A new client must still be served:
/// at the cap the server evicts the connection idle the longest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_idle_connections_from_one_client_do_not_keep_a_new_client_out() {
    let _load = common::measuring().await;
    // Each connection costs this process a descriptor, and the server (which inherits
    // the raised limit) another.
    let limit = raise_open_files_limit();
    let count = 5000.min(usize::try_from(limit.saturating_sub(512)).unwrap_or(5000));
    // The production cap (4096) unless the descriptors here allow fewer.
    let cap = 4096.min(count * 4 / 5);
    // The real binary, or another build to attack (`ALLFIVES_ATTACKED_BINARY`). PINGs
    // every second, so the idle connections answer some while the test runs.
    let server = ChildServer::start(
        &[
            "--max-connections",
            &cap.to_string(),
            "--http2-keepalive-secs",
            "1",
        ],
        None,
    );
    let addr = server.addr;
    // Serving before the attack starts.
    drop(common::connect(addr).await);
    let counts = Arc::new(IdleCounts::default());
    let started = Instant::now();
    let (holders, opened) = open_idle(addr, count, &counts).await;
    let opening = started.elapsed();
    // A new client connects and calls, within a bound.
    let started = Instant::now();
    let served = tokio::time::timeout(SERVED_WITHIN, async {
        let channel = Endpoint::from_shared(format!("http://{addr}"))
            .expect("url")
            .connect()
            .await
            .map_err(|error| format!("connect: {error}"))?;
        AllFivesServiceClient::new(channel)
            .new_game(pb::NewGameRequest::default())
            .await
            .map_err(|status| describe(&status))
    })
    .await;
    let waited = started.elapsed();
    let figure = |n: &AtomicU64| n.load(Ordering::Relaxed);
    println!(
        "idle connections: {opened} of {count} idle HTTP/2 connections (answering PINGs) \
         opened in {opening:?} against --max-connections {cap}; {} greeted by the server, \
         {} closed by it, {} PINGs answered; the new client: {} after {waited:?}",
        figure(&counts.greeted),
        figure(&counts.closed),
        figure(&counts.pings),
        match &served {
            Ok(Ok(_)) => "served".to_string(),
            Ok(Err(error)) => format!("failed ({error})"),
            Err(_) => "not served".to_string(),
        },
    );
    assert!(
        opened > cap,
        "the attack did not reach the cap: {opened} connections opened"
    );
    match served {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => panic!("the new client failed: {error}"),
        Err(_) => panic!(
            "a new client was not served within {SERVED_WITHIN:?} while the idle \
             connections stayed open"
        ),
    }
    drop(holders);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_idle_past_the_idle_timeout_is_closed_and_the_next_call_reconnects() {
    let _load = common::measuring().await;
    let server = TestServer::start_with(ring(1, 3), &["--idle-timeout-secs", "1"]).await;
    let (channel, made) = counting_channel(server.addr).await;
    let mut client = AllFivesServiceClient::new(channel);
    // Calls closer together than the timeout keep the connection.
    for _ in 0..4 {
        client
            .new_game(pb::NewGameRequest::default())
            .await
            .expect("a call");
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    assert_eq!(
        made.load(Ordering::Relaxed),
        1,
        "a busy connection was closed"
    );
    // Idle past it: the server closes the connection; the next call reconnects.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    client
        .new_game(pb::NewGameRequest::default())
        .await
        .expect("the call after an idle close");
    let connections = made.load(Ordering::Relaxed);
    println!("idle timeout: at --idle-timeout-secs 1, {connections} connections for 5 calls");
    assert_eq!(connections, 2, "the idle connection was not closed");
}

/// What the server sent on a raw connection until `until` said stop (or the connection
/// closed, or 10 s passed): every frame, in order.
async fn read_until(
    conn: &mut TcpStream,
    buf: &mut Vec<u8>,
    seen: &mut Vec<common::raw::Frame>,
    until: impl Fn(&common::raw::Frame) -> bool,
) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut chunk = [0u8; 16 * 1024];
    loop {
        for frame in common::raw::parse(buf) {
            let stop = until(&frame);
            seen.push(frame);
            if stop {
                return true;
            }
        }
        match tokio::time::timeout_at(deadline, conn.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => buf.extend(&chunk[..n]),
            _ => return false,
        }
    }
}

/// A GOAWAY frame's last stream id and error code.
fn goaway(frame: &common::raw::Frame) -> Option<(u32, u32)> {
    let p = &frame.payload;
    (frame.kind == common::raw::GOAWAY && p.len() >= 8).then(|| {
        (
            u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff,
            u32::from_be_bytes([p[4], p[5], p[6], p[7]]),
        )
    })
}

/// h2 0.4.20 ignores a stream opened after its final GOAWAY (above its last stream id),
/// as RFC 9113 §6.8 says, but then took a WINDOW_UPDATE for that stream as one on an
/// idle stream: a PROTOCOL_ERROR that tore the connection down with every call still
/// in it. gRPC core sends such a WINDOW_UPDATE right after a stream's HEADERS; grpcio
/// saw the GOAWAY(PROTOCOL_ERROR) about once in 200,000 calls at a 1 s connection age.
/// Here a call in flight (its body not sent yet) when the connection ages must still
/// be answered after the client sends exactly that (vendor/h2 has the fix).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_update_for_a_stream_refused_by_goaway_does_not_break_the_connection() {
    let _load = common::measuring().await;
    use common::raw::{self, ACK, DATA, END_STREAM, HEADERS, PING, WINDOW_UPDATE};
    let server = TestServer::start_with(ring(1, 3), &["--max-connection-age-secs", "1"]).await;
    let score = common::score_message(&mut server.client().await).await;
    let path = "/allfives.v1.AllFivesService/Score";
    let mut conn = TcpStream::connect(server.addr).await.expect("connect");
    let mut out = raw::hello();
    out.extend(raw::frame(raw::SETTINGS, ACK, 0, &[]));
    // Stream 1: a call whose body is still to come when the connection ages.
    out.extend(raw::headers(1, path));
    conn.write_all(&out).await.expect("write");
    let (mut buf, mut seen) = (Vec::new(), Vec::new());
    // The first GOAWAY (last stream id 2^31-1) and its PING; the PING answered.
    assert!(
        read_until(&mut conn, &mut buf, &mut seen, |f| f.kind == PING).await,
        "no PING after the first GOAWAY: {seen:?}"
    );
    let ping = seen.last().map(|f| f.payload.clone()).unwrap_or_default();
    conn.write_all(&raw::frame(PING, ACK, 0, &ping))
        .await
        .expect("write");
    // The final GOAWAY: stream 1 is the last the server takes.
    assert!(
        read_until(&mut conn, &mut buf, &mut seen, |f| goaway(f)
            .is_some_and(|(last, _)| last < 0x7fff_ffff))
        .await,
        "no final GOAWAY: {seen:?}"
    );
    assert_eq!(seen.last().and_then(goaway), Some((1, 0)));
    // Stream 3, sent as the GOAWAY crossed it, and its WINDOW_UPDATE, as gRPC core
    // sends them; then the rest of stream 1.
    let mut out = raw::headers(3, path);
    out.extend(raw::frame(WINDOW_UPDATE, 0, 3, &65535u32.to_be_bytes()));
    let mut body = vec![0];
    body.extend((score.len() as u32).to_be_bytes());
    body.extend(&score);
    out.extend(raw::frame(DATA, END_STREAM, 1, &body));
    conn.write_all(&out).await.expect("write");
    // Stream 1 is answered: its message, then its trailers.
    let answered = read_until(&mut conn, &mut buf, &mut seen, |f| {
        f.stream == 1 && f.kind == HEADERS && f.flags & END_STREAM != 0
    })
    .await;
    let errors: Vec<_> = seen
        .iter()
        .filter_map(goaway)
        .filter(|&(_, code)| code != 0)
        .collect();
    assert!(
        answered && errors.is_empty(),
        "the call in flight was lost: GOAWAYs with errors {errors:?}, frames {seen:?}"
    );
    let message = seen
        .iter()
        .find(|f| f.stream == 1 && f.kind == DATA && f.payload.len() > 5);
    assert!(message.is_some(), "no answer to stream 1: {seen:?}");
}
