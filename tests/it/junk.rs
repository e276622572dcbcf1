// Each test here runs alone in a child process (`common::alone`): the tests count the
// WARN lines the whole process logs, through a global tracing subscriber
// (`set_global_default`). A scoped one (`with_default`) would not do: it sees only its
// own thread's events, and the servers log from the tasks of multi-threaded runtimes'
// workers. In a shared process the lines of every other test's servers would be
// counted too.

//! Junk requests against a real server on loopback: protobuf that does not decode,
//! bad gRPC framing and bad gRPC-Web base64 are the client's error (INVALID_ARGUMENT,
//! `MALFORMED_REQUEST`), never INTERNAL, and write no WARN line; good calls in between
//! are served. A body that stalls is answered CANCELLED, `REQUEST_BODY_TIMEOUT`; a
//! client that resets its stream mid-body is counted CANCELLED; h2's WARN line per
//! rapid-reset connection is rate-limited. See docs/RELIABILITY.md.

use crate::common;

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Mutex, Once, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use allfives::proto::v1 as pb;
use allfives::proto::v1::all_fives_service_client::AllFivesServiceClient;
use allfives::routes::{ROUTES, Route};
use allfives::throttle::PeerWarnings;
use common::{TestServer, raw, reason, ring};
use hyper::body::{Body as HttpBody, Frame};
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tonic::body::Body;
use tonic::codegen::{Bytes, Service, http};
use tonic::transport::Channel;
use tonic::{Code, Status};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::{Context as LayerContext, Layer, SubscriberExt};

const API: &str = "/allfives.v1.AllFivesService/";
const HEALTH_CHECK: &str = "/grpc.health.v1.Health/Check";

// ---------------------------------------------------------------------------------
// The log: every WARN or ERROR line the process writes, kept for the tests to count.

/// A WARN or ERROR line: its target and its fields.
#[derive(Clone, Debug)]
struct Line {
    target: String,
    text: String,
}

static LINES: Mutex<Vec<Line>> = Mutex::new(Vec::new());

/// Records each event that reaches it.
struct Recorder;

impl<S: tracing::Subscriber> Layer<S> for Recorder {
    fn on_event(&self, event: &tracing::Event<'_>, _: LayerContext<'_, S>) {
        let mut text = String::new();
        event.record(&mut Fields(&mut text));
        let line = Line {
            target: event.metadata().target().to_owned(),
            text,
        };
        eprintln!("log: WARN {} {}", line.target, line.text);
        LINES
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(line);
    }
}

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, "{}={value:?} ", field.name());
    }
}

/// Installs the process's subscriber once: WARN and up, h2's and hyper's peer lines
/// rate-limited as `allfives::throttle::PeerWarnings` does, then recorded.
fn record_logs() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let subscriber = tracing_subscriber::registry()
            .with(LevelFilter::WARN)
            .with(PeerWarnings::default())
            .with(Recorder);
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
    });
}

/// How many lines have been recorded so far.
fn lines_so_far() -> usize {
    LINES.lock().unwrap_or_else(PoisonError::into_inner).len()
}

/// The lines recorded since `mark` whose target starts with `prefix`.
fn lines_since(mark: usize, prefix: &str) -> Vec<Line> {
    LINES.lock().unwrap_or_else(PoisonError::into_inner)[mark..]
        .iter()
        .filter(|l| l.target.starts_with(prefix))
        .cloned()
        .collect()
}

// ---------------------------------------------------------------------------------
// Raw gRPC over HTTP/2: any bytes as the body, through a real client connection.

/// A request body of these chunks, then the end, or nothing more, ever (`stall`).
struct Chunks {
    parts: VecDeque<Bytes>,
    stall: bool,
}

impl HttpBody for Chunks {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        match self.parts.pop_front() {
            Some(part) => Poll::Ready(Some(Ok(Frame::data(part)))),
            None if self.stall => Poll::Pending,
            None => Poll::Ready(None),
        }
    }
}

/// A gRPC message: flag, big-endian length, bytes.
fn framed(flag: u8, message: &[u8]) -> Vec<u8> {
    let mut out = vec![flag];
    out.extend((message.len() as u32).to_be_bytes());
    out.extend(message);
    out
}

/// Sends `parts` as the body of a call to `path` on `channel` (then the end of the
/// body, unless `stall`): the call's status (OK for an answer).
async fn raw_call(channel: &Channel, path: &str, parts: Vec<Vec<u8>>, stall: bool) -> Status {
    let mut channel = channel.clone();
    let body = Chunks {
        parts: parts.into_iter().map(Bytes::from).collect(),
        stall,
    };
    let request = http::Request::builder()
        .method(http::Method::POST)
        .uri(path)
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(Body::new(body))
        .expect("request");
    std::future::poll_fn(|cx| channel.poll_ready(cx))
        .await
        .expect("channel ready");
    let response = channel.call(request).await.expect("an HTTP/2 answer");
    if let Some(status) = Status::from_header_map(response.headers()) {
        return status;
    }
    let mut body = response.into_body();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        let frame = frame.expect("the answer's body");
        if let Some(trailers) = frame.trailers_ref() {
            return Status::from_header_map(trailers).expect("grpc-status in the trailers");
        }
    }
    panic!("no grpc-status for {path}")
}

/// Asserts that `status` is the refusal of a malformed request.
fn assert_malformed(status: &Status, what: &str) {
    assert_eq!(
        (status.code(), reason(status).as_str()),
        (Code::InvalidArgument, "MALFORMED_REQUEST"),
        "{what}: {status:?}"
    );
}

/// Calls answered by code, from the metrics endpoint.
async fn calls_by_code(server: &TestServer) -> BTreeMap<String, f64> {
    let (_, _, text) = server.scrape("/metrics").await;
    let mut codes = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("allfives_grpc_calls_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.split_once("} ") else {
            continue;
        };
        let Some((_, code)) = labels.split_once("code=\"") else {
            continue;
        };
        let code = code.trim_end_matches('"').to_owned();
        *codes.entry(code).or_insert(0.0) += value.parse::<f64>().unwrap_or(0.0);
    }
    codes
}

// ---------------------------------------------------------------------------------
// Junk protobuf, made per method and checked undecodable with prost.

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let len = 1 + (self.next() as usize) % max;
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// Whether `bytes` decode as the request of `route`.
fn decodes(route: &Route, bytes: &[u8]) -> bool {
    (route.decode_request)(bytes).is_ok()
}

/// Every route the server answers gRPC on: the route table (generated from the protos:
/// the API's methods, health's and reflection's), which must hold the API's every
/// method as the descriptor that reflection serves has it.
fn routes() -> &'static [Route] {
    let set = prost_types::FileDescriptorSet::decode(allfives::proto::v1::FILE_DESCRIPTOR_SET)
        .expect("descriptor set");
    for file in set.file.iter().filter(|f| f.package() == "allfives.v1") {
        for service in &file.service {
            for method in &service.method {
                let path = format!("/allfives.v1.{}/{}", service.name(), method.name());
                let route = Route::of_path(&path).expect("every method has a route");
                assert_eq!(format!(".{}", route.request), method.input_type());
            }
        }
    }
    assert!(ROUTES.len() >= 14, "{ROUTES:?}");
    &ROUTES
}

/// Messages of other types, some of which `method`'s request cannot decode (a field
/// number whose wire type differs).
fn other_messages() -> Vec<Vec<u8>> {
    let tile = Some(pb::Tile { a: 5, b: 6 });
    vec![
        pb::PlayRequest {
            state: vec![7; 40].into(),
            seat: 1,
            tile,
            end: 2,
            ..Default::default()
        }
        .encode_to_vec(),
        pb::NewGameRequest {
            rules: Some(pb::Rules {
                players: 3,
                target: 100,
                ..Default::default()
            }),
            viewer: Some(1),
            seed: Some(9),
            ..Default::default()
        }
        .encode_to_vec(),
        pb::ScoreResponse {
            sheet: None,
            view: Some(pb::GameView {
                moves: 3,
                hand: vec![pb::Tile { a: 1, b: 2 }],
                ..Default::default()
            }),
            hand_events: Vec::new(),
        }
        .encode_to_vec(),
        tonic_health::pb::HealthCheckRequest {
            service: "allfives.v1.AllFivesService".into(),
        }
        .encode_to_vec(),
        pb::Tile { a: 3, b: 4 }.encode_to_vec(),
    ]
}

/// Hand-made protobuf that no message decodes: field 0, wire types 6 and 7, a length
/// past the end, a varint of eleven bytes, a group never closed, an end-group alone.
const BROKEN: [&[u8]; 7] = [
    &[0x00, 0x01],
    &[0x0e, 0x01],
    &[0x0f, 0x01],
    &[0x0a, 0x05, 0x01],
    &[
        0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
    ],
    &[0x0b, 0x08, 0x01],
    &[0x0c],
];

/// Junk for `route`: the broken ones, random bytes prost refuses, other messages it
/// refuses; (kind, bytes).
fn junk_for(route: &Route, rng: &mut Rng) -> Vec<(&'static str, Vec<u8>)> {
    let mut junk: Vec<_> = BROKEN.iter().map(|b| ("broken", b.to_vec())).collect();
    let mut random = 0;
    while random < 24 {
        let bytes = rng.bytes(48);
        if !decodes(route, &bytes) {
            junk.push(("random", bytes));
            random += 1;
        }
    }
    for other in other_messages() {
        if !decodes(route, &other) {
            junk.push(("wrong type", other));
        }
    }
    for (_, bytes) in &junk {
        assert!(!decodes(route, bytes), "{}: {bytes:?} decodes", route.path);
    }
    junk
}

// ---------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn junk_protobuf_for_every_method_is_invalid_argument_malformed_request() {
    if !common::alone::alone(
        module_path!(),
        "junk_protobuf_for_every_method_is_invalid_argument_malformed_request",
    )
    .await
    {
        return;
    }
    record_logs();
    let server = TestServer::start_default(ring(1, 3)).await;
    let channel = server.channel().await;
    let mut client = AllFivesServiceClient::new(channel.clone());
    let mark = lines_so_far();
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let (mut sent, mut streaming, mut served) = (0, 0, 0);
    let mut kinds = BTreeMap::<&str, u32>::new();
    for route in routes() {
        for (i, (kind, bytes)) in junk_for(route, &mut rng).into_iter().enumerate() {
            let status = raw_call(&channel, route.path, vec![framed(0, &bytes)], false).await;
            assert_malformed(&status, &format!("{kind} {} {bytes:?}", route.path));
            sent += 1;
            // A request stream's answer (reflection's) starts before the stream is
            // read, and the metrics count a streaming call by its start
            // (docs/metrics.md).
            if route.client_streaming {
                streaming += 1;
            }
            *kinds.entry(kind).or_default() += 1;
            // A good call on the same connection every few junk ones.
            if i % 5 == 0 {
                client
                    .new_game(pb::NewGameRequest::default())
                    .await
                    .expect("a good call between junk ones");
                served += 1;
            }
        }
    }
    let codes = calls_by_code(&server).await;
    let warns = lines_since(mark, "allfives");
    println!(
        "junk: {sent} undecodable requests to every route (API, health, reflection) over HTTP/2 \
         ({kinds:?}) answered INVALID_ARGUMENT \
         MALFORMED_REQUEST, {served} good calls served between them; calls by code {codes:?}; \
         {} WARN lines",
        warns.len()
    );
    assert_eq!(
        codes.get("INVALID_ARGUMENT").copied(),
        Some(f64::from(sent - streaming))
    );
    assert_eq!(codes.get("INTERNAL"), None, "{codes:?}");
    assert!(warns.is_empty(), "WARN lines for junk calls: {warns:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_grpc_framing_on_every_route_is_invalid_argument_malformed_request() {
    if !common::alone::alone(
        module_path!(),
        "bad_grpc_framing_on_every_route_is_invalid_argument_malformed_request",
    )
    .await
    {
        return;
    }
    record_logs();
    let server = TestServer::start_default(ring(1, 3)).await;
    let channel = server.channel().await;
    let mut client = AllFivesServiceClient::new(channel.clone());
    let score = common::score_message(&mut client).await;
    let health = tonic_health::pb::HealthCheckRequest::default().encode_to_vec();
    let mark = lines_so_far();
    let mut sent = 0;
    for (path, message) in [
        (format!("{API}Score"), &score),
        (format!("{API}NewGame"), &Vec::new()),
        (HEALTH_CHECK.to_owned(), &health),
    ] {
        let good = framed(0, message);
        let mut long = good.clone();
        long[1..5].copy_from_slice(&(message.len() as u32 + 100).to_be_bytes());
        let mut two = good.clone();
        two.extend(framed(1, message));
        let cases: Vec<(&str, Vec<Vec<u8>>)> = vec![
            (
                "compressed flag, no grpc-encoding",
                vec![framed(1, message)],
            ),
            ("flag 2", vec![framed(2, message)]),
            ("flag 0x80", vec![framed(0x80, message)]),
            ("declared length past the end", vec![long.clone()]),
            (
                "declared length past the end, in pieces",
                long.chunks(3).map(<[u8]>::to_vec).collect(),
            ),
            ("a header cut short", vec![good[..3].to_vec()]),
            ("no message", vec![]),
            ("a compressed second message", vec![two]),
        ];
        for (what, parts) in cases {
            let status = raw_call(&channel, &path, parts, false).await;
            assert_malformed(&status, &format!("{what} on {path}"));
            sent += 1;
            // The same connection serves a good call next.
            let status = raw_call(&channel, &path, vec![good.clone()], false).await;
            assert_eq!(status.code(), Code::Ok, "{path}: {status:?}");
        }
    }
    let codes = calls_by_code(&server).await;
    let warns = lines_since(mark, "allfives");
    println!(
        "junk: {sent} calls with bad gRPC framing (API and health) answered INVALID_ARGUMENT \
         MALFORMED_REQUEST, a good call served after each; calls by code {codes:?}; {} WARN \
         lines",
        warns.len()
    );
    assert_eq!(codes.get("INTERNAL"), None, "{codes:?}");
    assert!(warns.is_empty(), "WARN lines for junk calls: {warns:?}");
}

// ---------------------------------------------------------------------------------
// gRPC-Web text over HTTP/1, by hand.

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(BASE64[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes base64 made of padded pieces one after another (as gRPC-Web text answers).
fn unbase64(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for group in text.chunks(4) {
        let mut n = 0u32;
        let mut have: u32 = 0;
        for &c in group {
            if c == b'=' {
                break;
            }
            let v = BASE64.iter().position(|&b| b == c).expect("base64") as u32;
            n |= v << (18 - 6 * have);
            have += 1;
        }
        for i in 0..have.saturating_sub(1) {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    out
}

/// Undoes chunked transfer encoding.
fn unchunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = body.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&body[..end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim(), 16).ok())
            .expect("a chunk size");
        if size == 0 {
            break;
        }
        out.extend(&body[end + 2..end + 2 + size]);
        body = &body[end + 2 + size + 2..];
    }
    out
}

/// Header lines (`name:value`) as a header map.
fn header_map<'a>(lines: impl Iterator<Item = &'a str>) -> http::HeaderMap {
    let mut map = http::HeaderMap::new();
    for line in lines {
        if let Some((name, value)) = line.split_once(':')
            && let (Ok(name), Ok(value)) = (
                http::HeaderName::from_bytes(name.trim().to_ascii_lowercase().as_bytes()),
                http::HeaderValue::from_str(value.trim()),
            )
        {
            map.append(name, value);
        }
    }
    map
}

/// A gRPC-Web text call over HTTP/1 with `body` (already base64) to `path`: its status.
async fn web_text_call(addr: SocketAddr, path: &str, body: &[u8]) -> Status {
    let mut conn = TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/grpc-web-text\r\n\
         Accept: application/grpc-web-text\r\nX-Grpc-Web: 1\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).await.expect("write");
    conn.write_all(body).await.expect("write");
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), conn.read_to_end(&mut response))
        .await
        .expect("an answer in time")
        .expect("read");
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP answer");
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let headers = header_map(head.lines().skip(1));
    if let Some(status) = Status::from_header_map(&headers) {
        return status;
    }
    let mut body = response[split + 4..].to_vec();
    if headers
        .get("transfer-encoding")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"chunked"))
    {
        body = unchunk(&body);
    }
    let mut frames = &unbase64(&body)[..];
    while frames.len() >= 5 {
        let len = u32::from_be_bytes([frames[1], frames[2], frames[3], frames[4]]) as usize;
        let (flag, payload) = (frames[0], &frames[5..5 + len]);
        if flag & 0x80 != 0 {
            let text = String::from_utf8_lossy(payload).into_owned();
            return Status::from_header_map(&header_map(text.split("\r\n")))
                .expect("grpc-status in the trailers");
        }
        frames = &frames[5 + len..];
    }
    panic!("no grpc-status: {head}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_grpc_web_text_is_invalid_argument_malformed_request() {
    if !common::alone::alone(
        module_path!(),
        "bad_grpc_web_text_is_invalid_argument_malformed_request",
    )
    .await
    {
        return;
    }
    record_logs();
    let server = TestServer::start_default(ring(1, 3)).await;
    let mark = lines_so_far();
    let path = format!("{API}NewGame");
    let good = base64(&framed(0, &pb::NewGameRequest::default().encode_to_vec()));
    let status = web_text_call(server.addr, &path, good.as_bytes()).await;
    assert_eq!(status.code(), Code::Ok, "{status:?}");

    let mut rng = Rng(0x5eed_0000_0000_0002);
    let mut cases: Vec<(String, String)> = vec![
        ("not base64".into(), "!!!!".into()),
        (
            "not base64 after a good message".into(),
            format!("{good}*A=="),
        ),
        (
            "base64 cut inside a group".into(),
            good[..good.len() - 1].into(),
        ),
        (
            "a compressed flag".into(),
            base64(&framed(1, &pb::NewGameRequest::default().encode_to_vec())),
        ),
        ("a header cut short".into(), base64(&[0, 0, 0])),
        (
            "declared length past the end".into(),
            base64(&[0, 0, 0, 0, 9, 8]),
        ),
    ];
    for bytes in BROKEN {
        cases.push((
            format!("broken protobuf {bytes:?}"),
            base64(&framed(0, bytes)),
        ));
    }
    let new_game = Route::of_path(&path).expect("NewGame's route");
    while cases.len() < 40 {
        let bytes = rng.bytes(48);
        if !decodes(new_game, &bytes) {
            cases.push((format!("random {bytes:?}"), base64(&framed(0, &bytes))));
        }
    }
    for (what, body) in &cases {
        let status = web_text_call(server.addr, &path, body.as_bytes()).await;
        assert_malformed(&status, what);
        let status = web_text_call(server.addr, &path, good.as_bytes()).await;
        assert_eq!(
            status.code(),
            Code::Ok,
            "a good call after {what}: {status:?}"
        );
    }
    let codes = calls_by_code(&server).await;
    let warns = lines_since(mark, "allfives");
    println!(
        "junk: {} bad gRPC-Web text calls over HTTP/1 (base64, framing, protobuf) answered \
         INVALID_ARGUMENT MALFORMED_REQUEST, a good one served after each; calls by code \
         {codes:?}; {} WARN lines",
        cases.len(),
        warns.len()
    );
    assert_eq!(codes.get("INTERNAL"), None, "{codes:?}");
    assert!(warns.is_empty(), "WARN lines for junk calls: {warns:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stalls_is_cancelled_at_the_body_timeout() {
    if !common::alone::alone(
        module_path!(),
        "a_body_that_stalls_is_cancelled_at_the_body_timeout",
    )
    .await
    {
        return;
    }
    record_logs();
    let server = TestServer::start_with(ring(1, 3), &["--body-timeout-ms", "300"]).await;
    let channel = server.channel().await;
    let mark = lines_so_far();
    let message = pb::NewGameRequest {
        rules: Some(pb::Rules {
            players: 2,
            target: 50,
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec();
    let whole = framed(0, &message);
    let mut slowest = Duration::ZERO;
    for cut in [3, whole.len() / 2, whole.len() - 1] {
        for path in [format!("{API}NewGame"), HEALTH_CHECK.to_owned()] {
            let started = Instant::now();
            let status = raw_call(&channel, &path, vec![whole[..cut].to_vec()], true).await;
            slowest = slowest.max(started.elapsed());
            assert_eq!(
                (status.code(), reason(&status).as_str()),
                (Code::Cancelled, "REQUEST_BODY_TIMEOUT"),
                "{path}, {cut} bytes then nothing: {status:?}"
            );
        }
    }
    // The connection serves a whole call next.
    let status = raw_call(&channel, &format!("{API}NewGame"), vec![whole], false).await;
    assert_eq!(status.code(), Code::Ok, "{status:?}");
    let codes = calls_by_code(&server).await;
    let warns = lines_since(mark, "allfives");
    println!(
        "junk: bodies stalled after part of a message, at --body-timeout-ms 300 (request \
         timeout 5000 ms): answered CANCELLED REQUEST_BODY_TIMEOUT, the slowest after \
         {slowest:?}; calls by code {codes:?}"
    );
    assert_eq!(codes.get("INTERNAL"), None, "{codes:?}");
    assert!(warns.is_empty(), "{warns:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_resets_mid_body_is_counted_cancelled_not_internal() {
    if !common::alone::alone(
        module_path!(),
        "a_client_that_resets_mid_body_is_counted_cancelled_not_internal",
    )
    .await
    {
        return;
    }
    record_logs();
    let server = TestServer::start_default(ring(1, 3)).await;
    let channel = server.channel().await;
    let mark = lines_so_far();
    let whole = framed(0, &pb::NewGameRequest::default().encode_to_vec());
    const CALLS: u32 = 20;
    let path = format!("{API}NewGame");
    for _ in 0..CALLS {
        // Half a message, then the client gives up: its stream is reset (CANCEL).
        let call = raw_call(&channel, &path, vec![whole[..3].to_vec()], true);
        assert!(
            tokio::time::timeout(Duration::from_millis(50), call)
                .await
                .is_err()
        );
    }
    // Every reset has reached the server once a later call on the connection is served.
    let status = raw_call(&channel, &format!("{API}NewGame"), vec![whole], false).await;
    assert_eq!(status.code(), Code::Ok, "{status:?}");
    let mut codes = calls_by_code(&server).await;
    for _ in 0..50 {
        if codes.values().sum::<f64>() >= f64::from(CALLS + 1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        codes = calls_by_code(&server).await;
    }
    let warns = lines_since(mark, "allfives");
    println!(
        "junk: {CALLS} calls reset mid-body by the client; calls by code {codes:?}; {} WARN \
         lines",
        warns.len()
    );
    assert_eq!(codes.get("CANCELLED").copied(), Some(f64::from(CALLS)));
    assert!(warns.is_empty(), "{warns:?}");
}

// ---------------------------------------------------------------------------------
// Rapid reset: h2 closes the connection with GOAWAY and writes a WARN line each time.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rapid_reset_floods_write_at_most_one_h2_warning_per_period() {
    if !common::alone::alone(
        module_path!(),
        "rapid_reset_floods_write_at_most_one_h2_warning_per_period",
    )
    .await
    {
        return;
    }
    record_logs();
    let server = TestServer::start_default(ring(1, 3)).await;
    let mark = lines_so_far();
    const CONNECTIONS: usize = 30;
    let mut closed = 0;
    for _ in 0..CONNECTIONS {
        let mut conn = TcpStream::connect(server.addr).await.expect("connect");
        let mut burst = raw::hello();
        for i in 0..200u32 {
            burst.extend(raw::headers(
                2 * i + 1,
                "/allfives.v1.AllFivesService/NewGame",
            ));
            burst.extend(raw::frame(
                raw::RST_STREAM,
                0,
                2 * i + 1,
                &8u32.to_be_bytes(),
            ));
        }
        let _ = conn.write_all(&burst).await;
        // Read until the server's GOAWAY (ENHANCE_YOUR_CALM) or the close.
        let mut buf = Vec::new();
        let mut chunk = [0u8; 16384];
        let started = Instant::now();
        'read: while started.elapsed() < Duration::from_secs(5) {
            match tokio::time::timeout(Duration::from_secs(5), conn.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                _ => break,
            }
            let mut at = 0;
            while buf.len() >= at + 9 {
                let len = u32::from_be_bytes([0, buf[at], buf[at + 1], buf[at + 2]]) as usize;
                if buf.len() < at + 9 + len {
                    break;
                }
                if buf[at + 3] == 7 && len >= 8 {
                    let code = &buf[at + 13..at + 17];
                    if u32::from_be_bytes(code.try_into().expect("code")) == 0xb {
                        closed += 1;
                        break 'read;
                    }
                }
                at += 9 + len;
            }
        }
    }
    // Let the connection tasks finish writing their lines.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let h2 = lines_since(mark, "h2");
    let held_back = lines_since(mark, "allfives::throttle");
    println!(
        "junk: {CONNECTIONS} rapid-reset connections, {closed} closed with GOAWAY \
         ENHANCE_YOUR_CALM; h2 WARN lines let through: {}, held-back notes: {}",
        h2.len(),
        held_back.len()
    );
    assert_eq!(closed, CONNECTIONS, "every flooding connection is closed");
    assert!(h2.len() <= 1, "{h2:?}");
    // A normal client is served.
    let mut client = server.client().await;
    client
        .new_game(pb::NewGameRequest::default())
        .await
        .expect("a call after the flood");
}
