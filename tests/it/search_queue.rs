//! The HARD search queue end to end, with every client on one HTTP/2 connection as a
//! gateway carries its players: players sharing it are never refused a search, a flood
//! of HARD Suggests over it has its excess refused while the players are not, and the
//! trusted client header tells the clients on it apart (issue 24).
//!
//! These assert the queue's decisions only (who is refused), never a latency: the
//! players' pace beside a flood is measured by `benches/search_queue.rs`. The queue's
//! size follows the measured time a search holds its slot (`--search-wait-budget-ms`
//! over it), and a search is refused if it cannot start before its call's deadline, so
//! on a busy machine a slower search means fewer places: that sizing is tested with an
//! injected clock beside the queue (`src/service/searches.rs`). Here the servers take
//! the largest budget and a minute's deadline, so that what decides is whose search it
//! is (the caps per player, the ranks), not how fast this machine searches.

use crate::common;

use allfives::proto::v1 as pb;
use allfives::proto::v1::all_fives_service_client::AllFivesServiceClient;
use common::searching::{flood_request, move_once, new_bot_match};
use common::{TestServer, reason, ring};
use tonic::transport::Channel;

/// Players, each in a match of their own against three HARD bots.
const PLAYERS: u64 = 8;
/// Players beside a flood.
const PLAYERS_BESIDE_A_FLOOD: u64 = 4;
/// Moves each player makes (a new match when one is over).
const MOVES: u32 = 12;

/// The flags that take the machine's speed out of the queue's decisions: the largest
/// wait budget (the queue then holds 64 searches a slot while a search holds its slot
/// under 156 ms, and still the 5 a slot these tests need at most while it holds it up
/// to 2 s) and calls that may last a minute (a waiter's expected wait is compared with
/// it: at most 6 rounds of the slots here).
const UNHURRIED: [&str; 4] = [
    "--search-wait-budget-ms",
    "10000",
    "--request-timeout-ms",
    "60000",
];

/// What one player saw.
#[derive(Debug, Default)]
struct Played {
    /// Calls answered.
    answered: u32,
    /// Calls refused SEARCH_QUEUE_FULL (the move is made again).
    refused: u32,
    /// Any other failure.
    failed: Vec<String>,
}

impl Played {
    fn add(&mut self, other: Played) {
        self.answered += other.answered;
        self.refused += other.refused;
        self.failed.extend(other.failed);
    }
}

/// One player on `channel`: bot matches one after another until it has made
/// [`MOVES`] moves. No pause between moves: how often a player asks changes how much
/// it waits, not whether its search has a place.
async fn player(channel: Channel, number: u64) -> Played {
    let mut client = AllFivesServiceClient::new(channel);
    let mut played = Played::default();
    let mut step = number;
    while played.answered < MOVES {
        let (mut state, mut view, credential) = new_bot_match(&mut client).await;
        while played.answered < MOVES && view.phase != pb::Phase::Over as i32 {
            step += 1;
            match move_once(&mut client, &state, &view, &credential, step as usize).await {
                Ok(next) => {
                    played.answered += 1;
                    (state, view) = next;
                }
                // Nothing was done: the same move is made again with the same token.
                Err(status) if reason(&status) == "SEARCH_QUEUE_FULL" => {
                    played.refused += 1;
                    if played.refused > 100 {
                        return played;
                    }
                }
                Err(status) => {
                    played.failed.push(format!("{status:?}"));
                    return played;
                }
            }
        }
    }
    played
}

/// `count` players on `channel`, all of them at once.
async fn players(channel: &Channel, count: u64) -> Played {
    let tasks: Vec<_> = (0..count)
        .map(|n| tokio::spawn(player(channel.clone(), n)))
        .collect();
    let mut all = Played::default();
    for task in tasks {
        all.add(task.await.expect("player"));
    }
    all
}

/// Eight players, each against three HARD bots, whose calls a gateway carries over
/// one connection, each making its moves at once: more searches than two cores get
/// through, so they queue, and none is ever refused SEARCH_QUEUE_FULL: each player
/// has its own places. Fails on the queue that shared its places per connection
/// (commit 8201ca0: a connection ran at most one search of two cores and had two
/// waiting).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_sharing_one_connection_are_never_refused_a_search() {
    let _load = common::heavy().await;
    let server = TestServer::start_with(ring(1, 24), &UNHURRIED).await;
    let channel = server.channel().await;
    let played = players(&channel, PLAYERS).await;
    eprintln!("{PLAYERS} players on one connection: {played:?}");
    assert!(played.failed.is_empty(), "{:?}", played.failed);
    assert_eq!(played.refused, 0, "players refused a search");
    assert_eq!(u64::from(played.answered), PLAYERS * u64::from(MOVES));
}

/// Callers of a flood, spread over its matches.
const FLOODERS: usize = 32;
/// The matches a flood asks for.
const FLOOD_MATCHES: u64 = 3;
/// The worlds of a flood's Suggest: a quick search, so that the queue's hold stays
/// short on a busy machine; how many the flood asks for, not how long each takes, is
/// what it tests.
const FLOOD_WORLDS: u32 = 128;

/// Players share their connection with a flood: 32 callers asking HARD Suggests over
/// 3 matches, each again as soon as it is answered or
/// refused. The flood holds at most its share (per match: one running, two waiting),
/// so its excess is refused SEARCH_QUEUE_FULL; the players, whose searches rank before
/// the flood's, are never refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_over_the_shared_connection_is_refused_and_the_players_are_not() {
    let _load = common::heavy().await;
    let args = [&UNHURRIED[..], &["--allow-client-seeds"]].concat();
    let server = TestServer::start_with(ring(1, 24), &args).await;
    let channel = server.channel().await;
    let mut flooder = AllFivesServiceClient::new(channel.clone());
    let mut requests = Vec::new();
    for seed in 0..FLOOD_MATCHES {
        requests.push(flood_request(&mut flooder, seed, FLOOD_WORLDS).await);
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flood: Vec<_> = (0..FLOODERS)
        .map(|n| {
            let mut client = flooder.clone();
            let req = requests[n % requests.len()].clone();
            let stop = std::sync::Arc::clone(&stop);
            tokio::spawn(async move {
                let (mut served, mut refused) = (0u32, 0u32);
                // Until the players are done, and at least once each: the 32 callers
                // asking at once for the flood's 9 places are refused in that round.
                while !stop.load(std::sync::atomic::Ordering::Relaxed) || served + refused == 0 {
                    match client.suggest(req.clone()).await {
                        Ok(_) => served += 1,
                        Err(status) => {
                            assert_eq!(reason(&status), "SEARCH_QUEUE_FULL", "{status:?}");
                            refused += 1;
                            // A refused caller asks again at once, but lets the runtime
                            // serve others (a refusal takes no time).
                            tokio::task::yield_now().await;
                        }
                    }
                }
                (served, refused)
            })
        })
        .collect();
    let played = players(&channel, PLAYERS_BESIDE_A_FLOOD).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (mut served, mut refused) = (0, 0);
    for caller in flood {
        let (s, r) = caller.await.expect("flooder");
        served += s;
        refused += r;
    }
    eprintln!(
        "{PLAYERS_BESIDE_A_FLOOD} players beside a flood ({served} served, {refused} refused): {played:?}"
    );
    assert!(played.failed.is_empty(), "{:?}", played.failed);
    assert_eq!(played.refused, 0, "players refused a search");
    assert_eq!(
        u64::from(played.answered),
        PLAYERS_BESIDE_A_FLOOD * u64::from(MOVES)
    );
    assert!(refused > 0, "the flood was never refused");
    assert!(served > 0, "the flood was never served");
}

/// Sends `per_client` HARD Suggests of the most worlds for one match at once from each
/// of two clients on one connection, named by `x-forwarded-for` (one of them after a
/// forged entry), and answers how many of the calls were served.
async fn served_for_two_forwarded_clients(server: &TestServer, per_client: usize) -> usize {
    let channel = server.channel().await;
    let mut client = AllFivesServiceClient::new(channel);
    // The most worlds: the longer a search holds its slot, the surer a burst is all in.
    let req = flood_request(&mut client, 7, 1024).await;
    let calls: Vec<_> = ["203.0.113.1", "6.6.6.6, 203.0.113.2"]
        .into_iter()
        .flat_map(|address| std::iter::repeat_n(address, per_client))
        .map(|address| {
            let mut client = client.clone();
            let mut call = tonic::Request::new(req.clone());
            call.metadata_mut()
                .insert("x-forwarded-for", address.parse().expect("metadata"));
            tokio::spawn(async move { client.suggest(call).await })
        })
        .collect();
    let mut served = 0;
    for call in calls {
        match call.await.expect("call") {
            Ok(_) => served += 1,
            Err(status) => assert_eq!(reason(&status), "SEARCH_QUEUE_FULL", "{status:?}"),
        }
    }
    served
}

/// With `--trusted-client-header x-forwarded-for`, two clients on one connection whose
/// gateway named different addresses are two players: each holds its own share of one
/// match's searches (one running and two waiting), so three calls from each, sent at
/// once, are all served however long a search takes. Without the flag the header is
/// nobody's word: the same six calls are one player's, who holds three places, so a
/// burst of them has some refused (unless a search ended before the burst's fourth call
/// came, which a burst repeated five times does not see five times).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trusted_client_header_tells_clients_on_one_connection_apart() {
    let _load = common::heavy().await;
    let per_client = 1 + 2;
    let trusting = [
        &UNHURRIED[..],
        &[
            "--allow-client-seeds",
            "--trusted-client-header",
            "x-forwarded-for",
        ],
    ]
    .concat();
    let trusting = TestServer::start_with(ring(1, 24), &trusting).await;
    let apart = served_for_two_forwarded_clients(&trusting, per_client).await;
    assert_eq!(apart, 2 * per_client, "the two clients were one");
    let plain = [&UNHURRIED[..], &["--allow-client-seeds"]].concat();
    let plain = TestServer::start_with(ring(1, 24), &plain).await;
    let mut bursts = Vec::new();
    while bursts.len() < 5 && bursts.iter().all(|&refused| refused == 0) {
        let together = served_for_two_forwarded_clients(&plain, per_client).await;
        bursts.push(2 * per_client - together);
    }
    eprintln!(
        "refused of {} per burst, not trusted: {bursts:?}",
        2 * per_client
    );
    assert!(
        bursts.iter().any(|&refused| refused > 0),
        "a forged header was believed: {bursts:?}"
    );
}
