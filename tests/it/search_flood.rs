//! HARD searches under attack, judged by the server's decisions and counts, never by
//! the machine's speed: a search whose call expired (`grpc-timeout`, or the server's
//! own `--request-timeout-ms` for the bots' searches) or was cancelled (RST_STREAM)
//! starts at most one more world, as the server counts
//! (`allfives_hard_searches_stopped_total`, `allfives_hard_search_worlds_after_stop_total`:
//! `service::searches::SearchStop`); a flood of HARD Suggests for one match from one
//! connection is refused past its share (`SEARCH_QUEUE_FULL`) while another player is
//! still served; and on tokio's paused clock a bot's call answers exactly the bots'
//! floor after its search got a slot, however long it waited for the slot and whatever
//! the bot weighed. The CPU a world costs and the latency under a flood are measured by
//! `.ci/search-flood` (release build); docs/RELIABILITY.md quotes it.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use allfives::proto::v1 as pb;
use allfives::proto::v1::all_fives_service_client::AllFivesServiceClient;
use allfives::service::suggest::SUGGEST_MAX_WORLDS;
use common::{Client, Creds, TestServer, bot, new_match, reason, ring};
use tonic::Code;
use tonic::transport::Endpoint;

/// The seed of the match searched: a two-player lead, the costliest position.
const SEED: u64 = 7;

/// Stopped searches each test sees before it judges them.
const STOPPED: u64 = 6;

/// The most calls a test makes to see [`STOPPED`] searches stopped part way: a call
/// whose search ended before its stop came, or whose stop came before it searched,
/// shows nothing and is made again (with a deadline moved toward the search's middle).
const MOST_CALLS: u32 = 200;

/// A hang guard: far longer than anything here waits for.
const HANG: Duration = Duration::from_secs(60);

/// A new client on its own HTTP/2 connection.
async fn connect(server: &TestServer) -> Client {
    let channel = Endpoint::from_shared(format!("http://{}", server.addr))
        .expect("url")
        .connect()
        .await
        .expect("connect");
    AllFivesServiceClient::new(channel)
}

/// A two-player hot-seat match just dealt (seed [`SEED`]): its token, credentials and
/// the seat on turn, to lead.
async fn lead(client: &mut Client) -> (Vec<u8>, Creds, u32) {
    let rules = pb::Rules {
        players: 2,
        ..Default::default()
    };
    let (state, _, creds) = new_match(client, rules, SEED).await;
    let dealt = common::deal(client, state).await;
    let turn = dealt.1.turn.expect("a seat leads");
    assert!(dealt.1.layout.is_empty());
    (dealt.0, creds, turn)
}

/// The biggest HARD Suggest a client may make, for the lead.
fn hard(state: &[u8], creds: &Creds, seat: u32) -> pb::SuggestRequest {
    pb::SuggestRequest {
        state: state.to_vec().into(),
        seat,
        level: pb::BotLevel::Hard as i32,
        worlds: 1024,
        seed: Some(1),
        credential: creds.of(seat),
    }
}

/// The value of metric line `name` (with its labels) in the server's exposition.
fn metric(server: &TestServer, name: &str) -> u64 {
    let text = server.metrics.encode().expect("encode");
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

/// Waits until `server` shows its search queue (its task has made it: a test server
/// starts in a task of its own, and its port takes connections before).
async fn serving(server: &TestServer) {
    until("the server's search queue", || {
        let text = server.metrics.encode().expect("encode");
        text.contains("allfives_hard_searches_stopped_total")
    })
    .await;
}

/// HARD searches running and waiting on the server now.
fn searching(server: &TestServer) -> (u64, u64) {
    (
        metric(server, r#"allfives_hard_searches{state="running"}"#),
        metric(server, r#"allfives_hard_searches{state="waiting"}"#),
    )
}

/// The server's stopped searches and the worlds they started after their call ended.
fn stops(server: &TestServer) -> (u64, u64) {
    (
        metric(server, "allfives_hard_searches_stopped_total"),
        metric(server, "allfives_hard_search_worlds_after_stop_total"),
    )
}

/// Waits (polling, no timing) until `done` holds.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let wait = async {
        while !done() {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(HANG, wait)
        .await
        .unwrap_or_else(|_| panic!("hung waiting for {what}"));
}

/// Waits until no search runs or waits on `server`: every search has given its slot
/// back, so it is counted in [`stops`] if its call ended while it ran.
async fn settled(server: &TestServer) {
    until("the searches to end", || searching(server) == (0, 0)).await;
}

/// One round: runs `call`, waits until every search on `server` has given its slot
/// back, and answers what `call` did with the searches the server stopped meanwhile and
/// the worlds they started after their call ended.
async fn counted<T>(server: &TestServer, call: impl Future<Output = T>) -> (T, (u64, u64)) {
    let before = stops(server);
    let done = call.await;
    settled(server).await;
    let after = stops(server);
    (done, (after.0 - before.0, after.1 - before.1))
}

/// The stopped searches of a test's rounds, and the worlds they started after their
/// call ended.
#[derive(Debug, Default)]
struct Tally {
    calls: u32,
    stopped: u64,
    worlds_after: u64,
}

impl Tally {
    /// Adds a round's counts; whether to go on ([`STOPPED`] not yet seen).
    fn add(&mut self, what: &str, (stopped, worlds_after): (u64, u64)) -> bool {
        self.calls += 1;
        self.stopped += stopped;
        self.worlds_after += worlds_after;
        assert!(
            self.calls <= MOST_CALLS || self.stopped >= STOPPED,
            "{what}: {self:?} (a search never stopped part way)"
        );
        self.stopped < STOPPED
    }

    /// At most one world after its call ended for each stopped search: the one whose
    /// question was answered just before the end.
    fn judge(&self, what: &str) {
        eprintln!("{what}: {self:?}");
        assert!(
            self.worlds_after <= self.stopped,
            "{what}: {} stopped searches started {} worlds after their call ended (at \
             most one each)",
            self.stopped,
            self.worlds_after
        );
    }
}

/// The next deadline after a call with `deadline` whose search was stopped part way
/// (`stopped`), else that answered (the search finished first) or not (the deadline
/// came before the search began): toward the search's middle, whatever the machine's
/// speed, never below `shortest`.
fn next_deadline(
    deadline: Duration,
    stopped: bool,
    answered: bool,
    shortest: Duration,
) -> Duration {
    match (stopped, answered) {
        (true, _) => deadline,
        (false, true) => (deadline / 2).max(shortest),
        (false, false) => (deadline * 2).min(Duration::from_secs(2)),
    }
}

/// A failed call's code is the deadline's: the client's, or the server's at its own.
fn expired(status: &tonic::Status) {
    assert!(
        matches!(status.code(), Code::DeadlineExceeded | Code::Cancelled),
        "{status:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_suggest_starts_at_most_one_world_after_its_deadline() {
    let server = TestServer::start(ring(1, 1)).await;
    let mut client = connect(&server).await;
    let (state, creds, seat) = lead(&mut client).await;
    // Deadlines (grpc-timeout) from 3 ms, moved toward the search's middle.
    let mut deadline = Duration::from_millis(3);
    let mut tally = Tally::default();
    loop {
        let mut req = tonic::Request::new(hard(&state, &creds, seat));
        req.set_timeout(deadline);
        let (answer, counts) = counted(&server, client.suggest(req)).await;
        let stopped = counts.0 > 0;
        if stopped {
            expired(
                answer
                    .as_ref()
                    .expect_err("a stopped search answers nothing"),
            );
        }
        deadline = next_deadline(
            deadline,
            stopped,
            answer.is_ok(),
            Duration::from_micros(100),
        );
        if !tally.add("expired Suggests", counts) {
            break;
        }
    }
    tally.judge("expired Suggests");
    // Not stopped, the same search answers in full, with the worlds it sampled: the
    // cap, whatever was asked.
    let answer = client
        .suggest(hard(&state, &creds, seat))
        .await
        .expect("a search with time to finish")
        .into_inner();
    assert_eq!(answer.worlds, SUGGEST_MAX_WORLDS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_suggest_starts_at_most_one_world_after_its_client_gave_up() {
    let server = TestServer::start(ring(1, 1)).await;
    let mut client = connect(&server).await;
    let (state, creds, seat) = lead(&mut client).await;
    let mut tally = Tally::default();
    loop {
        // No deadline sent. Once the server shows the search in its slot, the client
        // gives up: its call's future is dropped, which resets the stream (RST_STREAM),
        // and the server drops the call. A search that answered first shows nothing.
        let mut c = client.clone();
        let req = hard(&state, &creds, seat);
        let call = tokio::spawn(async move { c.suggest(req).await });
        let (_, counts) = counted(&server, async {
            until("the search to start", || {
                searching(&server).0 > 0 || call.is_finished()
            })
            .await;
            call.abort();
            let _ = call.await;
        })
        .await;
        if !tally.add("cancelled Suggests", counts) {
            break;
        }
    }
    tally.judge("cancelled Suggests");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_call_stops_its_bots_searches_and_does_nothing() {
    // A table of two HARD bots: Deal plays the whole hand in the call, four full
    // searches of 512 worlds and the rest small. Replicas with one key ring: `server`
    // keeps the default deadline; on `short` every call's deadline is the server's own
    // (`--request-timeout-ms`), so it is the server that ends the call and tells the
    // search at that moment. The limit moves toward the bots' searches' middle (a
    // replica started anew for each limit), whatever the machine's speed.
    let args = ["--allow-client-seeds", "--bot-worlds", "512"];
    let server = TestServer::start_with(ring(1, 1), &args).await;
    let mut client = connect(&server).await;
    let hard_bot = bot(pb::BotLevel::Hard);
    let new = client
        .new_game(pb::NewGameRequest {
            rules: Some(pb::Rules {
                players: 2,
                ..Default::default()
            }),
            seed: Some(SEED),
            viewer: None,
            seats: vec![hard_bot.clone(), hard_bot.clone()],
        })
        .await
        .expect("NewGame")
        .into_inner();
    let deal = || pb::DealRequest {
        state: new.state.clone().into(),
        ..Default::default()
    };
    let mut limit = Duration::from_millis(10);
    let mut short: Option<(Duration, TestServer, Client)> = None;
    let mut tally = Tally::default();
    loop {
        if short.as_ref().is_none_or(|(at, _, _)| *at != limit) {
            let ms = limit.as_millis().to_string();
            let flags = [&args[..], &["--request-timeout-ms", &ms]].concat();
            let replica = TestServer::start_with(ring(1, 1), &flags).await;
            serving(&replica).await;
            let hurried = connect(&replica).await;
            short = Some((limit, replica, hurried));
        }
        let Some((_, replica, hurried)) = short.as_mut() else {
            unreachable!("started above")
        };
        let (answer, counts) = counted(replica, hurried.deal(deal())).await;
        let stopped = counts.0 > 0;
        if stopped {
            let status = answer
                .as_ref()
                .expect_err("a stopped search answers nothing");
            expired(status);
        }
        let shortest = Duration::from_millis(1);
        limit = next_deadline(limit, stopped, answer.is_ok(), shortest);
        // Whole milliseconds, as the flag takes them.
        limit = Duration::from_millis(limit.as_millis().max(1) as u64);
        if !tally.add("expired bot calls", counts) {
            break;
        }
    }
    tally.judge("expired bot calls");
    // The stopped calls did nothing: the token is the match's still, and the call
    // answers the same every time it is made in full.
    let a = client.deal(deal()).await.expect("Deal").into_inner();
    let b = client.deal(deal()).await.expect("Deal again").into_inner();
    assert_eq!(a.events, b.events);
    assert_eq!(a.view, b.view);
    assert!(!a.events.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_connection_flooding_is_refused_past_its_share_and_another_is_served() {
    // A flood: no test that measures runs beside it.
    let _load = common::measuring().await;
    let server = TestServer::start(ring(1, 1)).await;
    let mut flooder = connect(&server).await;
    let (state, creds, seat) = lead(&mut flooder).await;
    // One connection sends 32 of the biggest HARD Suggests at once, twice over.
    let mut refused = 0;
    let mut served = 0;
    let mut other_served = 0;
    for _ in 0..2 {
        let calls: Vec<_> = (0..32)
            .map(|_| {
                let mut c = flooder.clone();
                let req = hard(&state, &creds, seat);
                tokio::spawn(async move { c.suggest(req).await })
            })
            .collect();
        // Meanwhile another player, on another connection from the same host (one
        // client: the queue tells clients apart by address), asks for a search in its
        // own match: its share is free.
        let mut other = connect(&server).await;
        let (other_state, other_creds, other_seat) = lead(&mut other).await;
        let mine = other
            .suggest(hard(&other_state, &other_creds, other_seat))
            .await;
        assert!(mine.is_ok(), "another connection refused: {mine:?}");
        other_served += 1;
        for call in calls {
            match call.await.expect("task") {
                Ok(_) => served += 1,
                Err(status) => {
                    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
                    assert_eq!(reason(&status), "SEARCH_QUEUE_FULL");
                    refused += 1;
                }
            }
        }
    }
    eprintln!("flooder: {served} served, {refused} refused; the other: {other_served} served");
    assert!(refused > 0, "a flood from one connection was never refused");
    assert!(served > 0);
}

/// The bots' floor per full search in the floor's test below.
const FLOOR: Duration = Duration::from_millis(8);

/// How long that test's bot's search waits for a slot: less than the floor, which a
/// floor counted from the call's start would eat into.
const SLOT_WAIT: Duration = Duration::from_millis(3);

/// The attack of issue 25 on the bots' time floor, decided on tokio's paused clock: a
/// player loads the server with HARD Suggests of its own, so its bot's search waits
/// for a slot, then times its calls against one HARD bot. How long the bot thought
/// depends on how many moves it weighed; the call must not show it. Here the service
/// is called in process with its slots held by other searches for [`SLOT_WAIT`] of the
/// paused clock (the search itself takes none of it: tokio does not move a paused
/// clock while a blocking task runs), and every call in which the bot made one decision
/// must answer exactly [`FLOOR`] after the slot was given, whatever the number of legal
/// moves the bot weighed (counted on a mirror of the match). With the floor counted
/// from the call's start, the wait would eat into it: the call would answer
/// `FLOOR - SLOT_WAIT` after the slot, leaving the search's own time to show.
#[tokio::test(start_paused = true)]
async fn bots_call_answers_a_floor_after_its_search_got_a_slot_whatever_its_tiles() {
    use allfives::call::CallContext;
    use allfives::config::Config;
    use allfives::connection::{ClientId, ConnectionId, Tracker};
    use allfives::engine::{Game, Rules, Seat};
    use allfives::metrics::Metrics;
    use allfives::proto::v1::all_fives_service_server::AllFivesService;
    use allfives::proto::v1::event::Kind;
    use allfives::service::Api;
    use allfives::service::convert::{end_in, tile_in};
    use allfives::service::searches::Owner;
    use allfives::state::{MATCH_ID_LEN, MatchId, Tokens};
    use clap::Parser;
    use std::collections::BTreeSet;
    use tokio::time::Instant;

    let config = Config::try_parse_from(["allfives", "--allow-client-seeds"]).expect("config");
    let api = Api::new(
        Arc::new(Tokens::new(Arc::new(ring(1, 1)), 64)),
        Arc::new(Metrics::new()),
        config.policy(),
    )
    .with_bot_move_floor(FLOOR);
    let searches = api.searches();
    let slots = searches.limits().slots;
    let connection = Tracker::in_process();
    // A call made now on the paused clock, with a deadline far beyond the test.
    let call = |method: &str| {
        let path = format!("/allfives.v1.AllFivesService/{method}");
        let now = Instant::now().into_std();
        CallContext::new(
            Arc::clone(&connection),
            None,
            &path,
            now,
            None,
            Duration::from_secs(3600),
        )
    };
    fn request<T>(call: CallContext, message: T) -> tonic::Request<T> {
        let mut req = tonic::Request::new(message);
        req.extensions_mut().insert(call);
        req
    }
    let bot_seat: u32 = 1;
    // The legal moves the bot weighed, in the calls with one decision of it.
    let mut weighed = BTreeSet::new();
    let mut timed = 0;
    for seed in 1..=4u64 {
        let new = api
            .new_game(request(
                call("NewGame"),
                common::against_a_bot(pb::BotLevel::Hard, seed),
            ))
            .await
            .expect("NewGame")
            .into_inner();
        let creds = Creds::from_new_game(&new);
        let mut mirror = Game::new(Rules::for_players(2), seed).expect("game");
        let mut state = new.state;
        let mut view = new.view.expect("view");
        while view.winner_side.is_none() {
            // Every slot held by another player's search, from now.
            let held: Vec<_> = (0..slots)
                .map(|n| {
                    let owner = Owner {
                        client: ClientId::Connection(ConnectionId(1000 + n as u64)),
                        match_id: MatchId([n as u8; MATCH_ID_LEN]),
                        seat: None,
                    };
                    let far = Instant::now().into_std() + Duration::from_secs(3600);
                    searches.enter(owner, far).expect("a free slot")
                })
                .collect();
            let api = api.clone();
            let creds = creds.of(0);
            let state_now = state.clone();
            let (deal, play) = (view.turn != Some(0), view.legal_moves.first().copied());
            let answer = if deal {
                let req = request(
                    call("Deal"),
                    pb::DealRequest {
                        state: state_now.into(),
                        viewer: Some(0),
                        credential: creds,
                    },
                );
                tokio::spawn(async move {
                    let a = api.deal(req).await.map(|a| a.into_inner());
                    (Instant::now(), a.map(|a| (a.state, a.view, a.events)))
                })
            } else if let Some(m) = play {
                let req = request(
                    call("Play"),
                    pb::PlayRequest {
                        state: state_now.into(),
                        seat: 0,
                        tile: m.tile,
                        end: m.end,
                        credential: creds,
                        viewer: Some(0),
                    },
                );
                tokio::spawn(async move {
                    let a = api.play(req).await.map(|a| a.into_inner());
                    (Instant::now(), a.map(|a| (a.state, a.view, a.events)))
                })
            } else {
                let req = request(
                    call("Draw"),
                    pb::DrawRequest {
                        state: state_now.into(),
                        seat: 0,
                        credential: creds,
                        viewer: Some(0),
                    },
                );
                tokio::spawn(async move {
                    let a = api.draw(req).await.map(|a| a.into_inner());
                    (Instant::now(), a.map(|a| (a.state, a.view, a.events)))
                })
            };
            // A call whose bot searches waits for a slot; the others answer at once.
            until("the call to wait or answer", || {
                searches.counts().1 == 1 || answer.is_finished()
            })
            .await;
            let searched = searches.counts().1 == 1;
            if searched {
                tokio::time::advance(SLOT_WAIT).await;
            }
            let slot_given = Instant::now();
            drop(held);
            let (answered, result) = answer.await.expect("the call's task");
            let (next, next_view, events) = result.expect("the call");
            state = next;
            view = next_view.expect("view");
            // The bot's decisions in this call, replayed on the mirror: the legal moves
            // it weighed before each.
            let mut decisions = Vec::new();
            for event in events {
                match event.kind.expect("event") {
                    Kind::Dealt(_) => {
                        mirror.deal().expect("mirror deal");
                    }
                    Kind::TilePlayed(p) => {
                        if p.seat == bot_seat {
                            decisions.push(mirror.legal_moves().len());
                        }
                        let tile = tile_in(p.tile.as_ref()).expect("tile");
                        let end = end_in(p.end).expect("end");
                        mirror.play(p.seat as Seat, tile, end).expect("mirror play");
                    }
                    Kind::TileDrawn(d) => {
                        if d.seat == bot_seat {
                            decisions.push(0);
                        }
                        mirror.draw(d.seat as Seat).expect("mirror draw");
                    }
                    _ => {}
                }
            }
            if let [moves] = decisions[..]
                && moves > 0
            {
                assert!(searched, "the bot moved without a search slot");
                assert_eq!(
                    answered - slot_given,
                    FLOOR,
                    "seed {seed}: a call whose bot weighed {moves} moves answered \
                     {:?} after its search got a slot, {:?} after the call began",
                    answered - slot_given,
                    answered - slot_given + SLOT_WAIT,
                );
                weighed.insert(moves);
                timed += 1;
            }
        }
    }
    eprintln!(
        "{timed} calls, the bot weighing {weighed:?} moves: each answered the floor after its slot"
    );
    // Both few and many moves weighed: the answer's time did not follow them.
    assert!(timed >= 20, "{timed}");
    assert!(
        weighed.first() == Some(&1) && weighed.last() >= Some(&4),
        "{weighed:?}"
    );
}
