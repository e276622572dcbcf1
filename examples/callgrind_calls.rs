//! Instructions per call of each RPC, counted by callgrind: the API's generated server
//! called in process (no network, no server layers), each request decoded, handled and
//! its answer encoded and framed by tonic with the service's codec, then read back.
//!
//! The calls replay one two-player hot-seat match (both seats claimed, client seed 7,
//! the token cache off, so every token is opened by the cipher and replayed): NewGame
//! (no seed: the server draws one), Deal, a Play of the hand's fifth tile, a Draw,
//! Score and a MEDIUM Suggest, each the same request `--calls` times, each RPC in a
//! function of its own (`run_<rpc>`) whose inclusive count callgrind divides:
//!
//! ```sh
//! cargo build --release --example callgrind_calls
//! valgrind --tool=callgrind --callgrind-out-file=cg.out \
//!     target/release/examples/callgrind_calls --calls 2000
//! callgrind_annotate --inclusive=yes cg.out | grep 'callgrind_calls::run_'
//! ```
//!
//! Each `run_` count divided by `--calls` plus one (a first call, not timed) is one
//! call's instructions (docs/PERFORMANCE.md, "Answers encoded by prost"); `--only Play`
//! runs one RPC. Without valgrind it prints each RPC's time per call.
//!
//! `--only Result` measures a signed result instead (docs/PERFORMANCE.md, "Signed
//! results"): a result's claims written and signed (`run_sign`, what the answer that
//! ends a match pays once), and a spectator's Score of a finished match (two EASY bots
//! to 50, client seed 7; the token cache on, as served, so every call finds its game
//! there) by a server that signs results (`run_score_over_signed`: its result kept
//! after the first) and by one that does not (`run_score_over`).

use std::hint::black_box;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use allfives::call::CallContext;
use allfives::connection::Tracker;
use allfives::metrics::Metrics;
use allfives::proto::v1 as pb;
use allfives::proto::v1::all_fives_service_server::AllFivesServiceServer;
use allfives::results::ResultKeys;
use allfives::service::Api;
use allfives::service::certify::Certifier;
use allfives::service::steps::Policy;
use allfives::state::{KeyRing, Tokens};
use http_body::{Body, Frame, SizeHint};
use prost::Message;
use tonic::codegen::{Bytes, Service, http};

type Server = AllFivesServiceServer<Api>;

/// A request body of one frame.
struct OneFrame(Option<Bytes>);

impl Body for OneFrame {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Poll::Ready(self.0.take().map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.0.as_ref().map_or(0, |b| b.len() as u64))
    }
}

/// A gRPC message as it travels: uncompressed, its length in front.
fn framed(message: &impl Message) -> Bytes {
    let body = message.encode_to_vec();
    let mut out = Vec::with_capacity(5 + body.len());
    out.push(0);
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    out.into()
}

/// One unary call through the generated server: the answer's message bytes (unframed),
/// or the call's status.
async fn call(server: &mut Server, method: &str, body: Bytes) -> Result<Vec<u8>, String> {
    let path = format!("/allfives.v1.AllFivesService/{method}");
    // The context the server's connection layer gives every call, on one connection
    // (the server makes a connection's tracker once, not per call).
    static CONNECTION: std::sync::LazyLock<Arc<Tracker>> =
        std::sync::LazyLock::new(Tracker::in_process);
    let context = CallContext::in_process(&CONNECTION, &path, std::time::Duration::from_secs(60));
    let request = http::Request::builder()
        .method("POST")
        .uri(path)
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .extension(context)
        .body(OneFrame(Some(body)))
        .expect("a request");
    std::future::poll_fn(|cx| Service::<http::Request<OneFrame>>::poll_ready(server, cx))
        .await
        .expect("ready");
    let response = server.call(request).await.expect("served");
    let mut status = response.headers().get("grpc-status").cloned();
    let mut body = response.into_body();
    let mut data = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        let frame = frame.expect("a frame");
        if let Some(trailers) = frame.trailers_ref() {
            status = trailers.get("grpc-status").cloned();
        } else if let Some(bytes) = frame.data_ref() {
            data.extend_from_slice(bytes);
        }
    }
    match status.as_ref().map(|s| s.as_bytes()) {
        Some(b"0") if data.len() >= 5 => Ok(data.split_off(5)),
        other => Err(format!("{method}: grpc-status {other:?}")),
    }
}

/// The answer to `request`, decoded.
fn answer<A: Message + Default>(
    rt: &tokio::runtime::Runtime,
    server: &mut Server,
    method: &str,
    request: &impl Message,
) -> A {
    let bytes = rt
        .block_on(call(server, method, framed(request)))
        .unwrap_or_else(|e| panic!("{e}"));
    A::decode(&bytes[..]).expect("an answer prost decodes")
}

/// The requests measured, each a step of the same match.
struct Requests {
    new_game: Bytes,
    deal: Bytes,
    play: Bytes,
    draw: Bytes,
    score: Bytes,
    suggest: Bytes,
}

fn new_game_request(seed: Option<u64>) -> pb::NewGameRequest {
    pb::NewGameRequest {
        rules: Some(pb::Rules {
            players: 2,
            ..Default::default()
        }),
        seed,
        viewer: Some(0),
        seats: vec![
            pb::SeatSetup {
                bot: 0,
                claim: true,
                display_name: String::new(),
                pass: String::new(),
            };
            2
        ],
    }
}

fn requests(rt: &tokio::runtime::Runtime, server: &mut Server) -> Requests {
    let new_game: pb::NewGameResponse = answer(rt, server, "NewGame", &new_game_request(Some(7)));
    let credential = |seat: u32| {
        new_game
            .credentials
            .iter()
            .find(|c| c.seat == seat)
            .expect("both seats claimed")
            .credential
            .clone()
    };
    let deal_request = pb::DealRequest {
        state: new_game.state.clone().into(),
        viewer: Some(0),
        credential: credential(0),
    };
    let dealt: pb::DealResponse = answer(rt, server, "Deal", &deal_request);
    let mut state = dealt.state;
    let (mut play, mut draw, mut score, mut suggest) = (None, None, None, None);
    while play.is_none() || draw.is_none() {
        // The view of the seat on turn.
        let probe = pb::ScoreRequest {
            state: state.clone().into(),
            viewer: Some(0),
            credential: credential(0),
            include_hand_events: false,
        };
        let turn = answer::<pb::ScoreResponse>(rt, server, "Score", &probe)
            .view
            .and_then(|v| v.turn)
            .expect("the hand goes on until both requests are found");
        let seen = pb::ScoreRequest {
            viewer: Some(turn),
            credential: credential(turn),
            ..probe
        };
        let view = answer::<pb::ScoreResponse>(rt, server, "Score", &seen)
            .view
            .expect("a view");
        if view.must_draw {
            let request = pb::DrawRequest {
                state: state.clone().into(),
                seat: turn,
                viewer: Some(turn),
                credential: credential(turn),
            };
            let drawn: pb::DrawResponse = answer(rt, server, "Draw", &request);
            draw.get_or_insert(request);
            state = drawn.state;
            continue;
        }
        let legal = view.legal_moves.first().expect("a legal move");
        let request = pb::PlayRequest {
            state: state.clone().into(),
            seat: turn,
            tile: legal.tile,
            end: legal.end,
            viewer: Some(turn),
            credential: credential(turn),
        };
        let played: pb::PlayResponse = answer(rt, server, "Play", &request);
        if view.layout.len() == 4 {
            play = Some(request);
            score = Some(seen);
            suggest = Some(pb::SuggestRequest {
                state: state.clone().into(),
                seat: turn,
                level: pb::BotLevel::Medium as i32,
                worlds: 0,
                seed: None,
                credential: credential(turn),
            });
        }
        state = played.state;
    }
    Requests {
        new_game: framed(&new_game_request(None)),
        deal: framed(&deal_request),
        play: framed(&play.expect("found")),
        draw: framed(&draw.expect("found")),
        score: framed(&score.expect("found")),
        suggest: framed(&suggest.expect("found")),
    }
}

/// `calls` calls of `method` with `body`, each answered.
fn run(
    rt: &tokio::runtime::Runtime,
    server: &mut Server,
    method: &str,
    body: &Bytes,
    calls: usize,
) -> usize {
    let mut bytes = 0;
    for _ in 0..calls {
        let answer = rt
            .block_on(call(server, method, body.clone()))
            .unwrap_or_else(|e| panic!("{e}"));
        bytes += black_box(answer).len();
    }
    bytes
}

macro_rules! runners {
    ($($name:ident => $method:literal, $field:ident;)*) => {
        $(
            #[inline(never)]
            fn $name(rt: &tokio::runtime::Runtime, s: &mut Server, r: &Requests, n: usize) -> usize {
                run(rt, s, $method, &r.$field, n)
            }
        )*
        const RUNNERS: &[(&str, fn(&tokio::runtime::Runtime, &mut Server, &Requests, usize) -> usize)] =
            &[$(($method, $name)),*];
    };
}

/// A spectator's Score of a finished match of two EASY bots (to 50, client seed 7).
fn finished_score(rt: &tokio::runtime::Runtime, server: &mut Server) -> Bytes {
    let bot = pb::SeatSetup {
        bot: pb::BotLevel::Easy as i32,
        claim: false,
        display_name: String::new(),
        pass: String::new(),
    };
    let new_game = pb::NewGameRequest {
        rules: Some(pb::Rules {
            players: 2,
            target: 50,
            ..Default::default()
        }),
        seed: Some(7),
        viewer: None,
        seats: vec![bot; 2],
    };
    let mut state = answer::<pb::NewGameResponse>(rt, server, "NewGame", &new_game).state;
    loop {
        let deal = pb::DealRequest {
            state: state.clone().into(),
            ..Default::default()
        };
        let dealt: pb::DealResponse = answer(rt, server, "Deal", &deal);
        state = dealt.state;
        if dealt.view.is_some_and(|v| v.phase() == pb::Phase::Over) {
            break;
        }
    }
    framed(&pb::ScoreRequest {
        state: state.into(),
        ..Default::default()
    })
}

#[inline(never)]
fn run_score_over(rt: &tokio::runtime::Runtime, s: &mut Server, score: &Bytes, n: usize) -> usize {
    // Its body differs from run_score_over_signed's, so that the linker does not fold
    // the two into one symbol, which callgrind would count as one.
    run(rt, s, "Score", score, n) + black_box(0)
}

/// `n` results of `view`'s match written and signed (none kept).
#[inline(never)]
fn run_sign(
    certifier: &Certifier,
    keys: &ResultKeys,
    view: &pb::GameView,
    sheet: &pb::ScoreSheet,
    n: usize,
) -> usize {
    let mut bytes = 0;
    for i in 0..n {
        let claims = certifier
            .claims(view, sheet, false, 1_800_000_000 + i as u64)
            .expect("a finished match");
        bytes += black_box(keys.sign(&claims).expect("signed")).len();
    }
    bytes
}

#[inline(never)]
fn run_score_over_signed(
    rt: &tokio::runtime::Runtime,
    s: &mut Server,
    score: &Bytes,
    n: usize,
) -> usize {
    run(rt, s, "Score", score, n)
}

/// A finished match's Score by a server that signs results and by one that does not.
fn measure_results(rt: &tokio::runtime::Runtime, ring: Arc<KeyRing>, policy: Policy, calls: usize) {
    let api = Api::new(
        Arc::new(Tokens::new(ring, 64)),
        Arc::new(Metrics::new()),
        policy,
    );
    let keys = Arc::new(ResultKeys::new(vec![(1, [9; 32])], None).expect("a result key"));
    let certifier = Certifier::new(Arc::clone(&keys), "allfives".to_owned(), 604_800);
    let mut unsigned = AllFivesServiceServer::new(api.clone());
    let mut signed = AllFivesServiceServer::new(api.with_certifier(certifier.clone()));
    let score = finished_score(rt, &mut unsigned);
    let answer = rt
        .block_on(call(&mut unsigned, "Score", score.clone()))
        .unwrap_or_else(|e| panic!("{e}"));
    let scored = pb::ScoreResponse::decode(&answer[..]).expect("a Score answer");
    let (view, sheet) = (scored.view.expect("a view"), scored.sheet.expect("a sheet"));
    run_sign(&certifier, &keys, &view, &sheet, 1);
    let start = Instant::now();
    let bytes = run_sign(&certifier, &keys, &view, &sheet, calls);
    let per_call = start.elapsed() / calls as u32;
    println!(
        "results signed: {calls}, {per_call:?} each, {} B each",
        bytes / calls
    );
    type Runner = fn(&tokio::runtime::Runtime, &mut Server, &Bytes, usize) -> usize;
    let runs: [(&str, &mut Server, Runner); 2] = [
        (
            "Score of a finished match, unsigned",
            &mut unsigned,
            run_score_over,
        ),
        (
            "Score of a finished match, signed",
            &mut signed,
            run_score_over_signed,
        ),
    ];
    for (what, server, runner) in runs {
        runner(rt, server, &score, 1);
        let start = Instant::now();
        let bytes = runner(rt, server, &score, calls);
        let per_call = start.elapsed() / calls as u32;
        println!(
            "{what}: {calls} calls, {per_call:?} a call, {} B an answer",
            bytes / calls
        );
    }
}

runners! {
    run_new_game => "NewGame", new_game;
    run_deal => "Deal", deal;
    run_play => "Play", play;
    run_draw => "Draw", draw;
    run_score => "Score", score;
    run_suggest => "Suggest", suggest;
}

fn main() {
    let mut calls = 2000;
    let mut only = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--calls" => {
                calls = args.next().and_then(|n| n.parse().ok()).expect("--calls N");
            }
            "--only" => only = Some(args.next().expect("--only RPC")),
            _ => {
                eprintln!("usage: callgrind_calls [--calls N] [--only RPC]");
                std::process::exit(2);
            }
        }
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let ring = Arc::new(KeyRing::new(vec![(1, [7; 32])], None).expect("a ring"));
    let policy = Policy {
        allow_client_seeds: true,
        ..Policy::default()
    };
    let api = Api::new(
        Arc::new(Tokens::uncached(Arc::clone(&ring))),
        Arc::new(Metrics::new()),
        policy,
    );
    if only.as_deref() == Some("Result") {
        measure_results(&rt, ring, policy, calls);
        return;
    }
    let mut server = AllFivesServiceServer::new(api);
    let requests = requests(&rt, &mut server);
    for &(method, runner) in RUNNERS {
        if only.as_ref().is_some_and(|o| o != method) {
            continue;
        }
        // One call first, so that no RPC pays for a first call's set-up.
        runner(&rt, &mut server, &requests, 1);
        let start = Instant::now();
        let bytes = runner(&rt, &mut server, &requests, calls);
        let per_call = start.elapsed() / calls as u32;
        println!(
            "{method:8} {calls} calls, {per_call:?} a call, {} B an answer",
            bytes / calls
        );
    }
}
