//! Invite codes against the real server: a seated player asks a code, a friend types
//! it (in any case, without its hyphens) on another device and gets the match's
//! latest token, claims the open seat, and the match is dealt; on the memory store and
//! on two replicas sharing a Redis store (asked on one, typed on the other). A code
//! unknown, expired, or of a match with no open seat is the same NOT_FOUND; past the
//! minute's misses even a right code is refused (the guesser's bound); one client
//! guessing flat out is stopped alone, its right code too, while another client's right
//! code opens (memory and Redis); only a seated player may ask; a server without a
//! store refuses both calls. docs/security.md, "Invite codes".

use std::time::Duration;

use crate::common;

use allfives::proto::v1 as pb;
use common::{Client, TestServer, bad_fields, reason, ring};
use tonic::Code;

/// A new match of `players` whose seat 0 is claimed (its token and credential) and
/// whose other seats are open.
async fn hosted(client: &mut Client, players: u32) -> (Vec<u8>, Vec<u8>) {
    let mut seats = vec![common::OPEN; players as usize];
    seats[0] = common::CLAIMED;
    let new = client
        .new_game(pb::NewGameRequest {
            rules: Some(pb::Rules {
                players,
                ..Default::default()
            }),
            viewer: Some(0),
            seats,
            ..Default::default()
        })
        .await
        .expect("NewGame")
        .into_inner();
    (new.state, new.credentials[0].credential.clone())
}

fn ask(state: &[u8], credential: &[u8]) -> pb::CreateInviteCodeRequest {
    pb::CreateInviteCodeRequest {
        state: state.to_vec(),
        viewer: 0,
        credential: credential.to_vec(),
    }
}

async fn code_of(client: &mut Client, state: &[u8], credential: &[u8]) -> String {
    client
        .create_invite_code(ask(state, credential))
        .await
        .expect("CreateInviteCode")
        .into_inner()
        .code
}

async fn typed(
    client: &mut Client,
    code: &str,
) -> Result<pb::OpenInviteCodeResponse, tonic::Status> {
    client
        .open_invite_code(pb::OpenInviteCodeRequest {
            code: code.to_string(),
        })
        .await
        .map(tonic::Response::into_inner)
}

async fn claim(client: &mut Client, state: Vec<u8>, seat: u32) -> pb::ClaimSeatResponse {
    client
        .claim_seat(pb::ClaimSeatRequest {
            state,
            seat,
            claim_key: Vec::new(),
            display_name: format!("Friend {seat}"),
            pass: String::new(),
        })
        .await
        .expect("ClaimSeat")
        .into_inner()
}

fn not_found(answer: Result<pb::OpenInviteCodeResponse, tonic::Status>) {
    let status = answer.expect_err("no match under the code");
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
    assert_eq!(reason(&status), "INVITE_NOT_FOUND");
}

/// The whole way, the host on `a` and the friends on `b`: a code for a three-player
/// match, asked twice (the same code), typed as a person might, opened by each friend
/// in turn; the second friend's open brings the first one's claim (the latest
/// token); once every seat is taken the code is gone, and the match deals.
async fn friends_join_by_code(a: &mut Client, b: &mut Client) {
    let (state, credential) = hosted(a, 3).await;
    let invite = a
        .create_invite_code(ask(&state, &credential))
        .await
        .expect("CreateInviteCode")
        .into_inner();
    let code = invite.code.clone();
    assert_eq!(code.len(), 14, "{code}");
    assert!(
        code.chars().enumerate().all(|(i, c)| if i == 4 || i == 9 {
            c == '-'
        } else {
            c.is_ascii_digit() || c.is_ascii_uppercase()
        }),
        "{code}"
    );
    assert!((1..=900).contains(&invite.expires_in_seconds), "{invite:?}");
    // Asked again (from the host's other device, say): the same code.
    assert_eq!(code_of(b, &state, &credential).await, code);

    // A friend types it in lower case without the hyphens.
    let opened = typed(b, &code.to_lowercase().replace('-', ""))
        .await
        .expect("the code opens");
    assert_eq!(opened.state, state, "the match's latest token");
    let view = opened.view.expect("view");
    assert!(view.hand.is_empty(), "a spectator's view");
    let first = claim(b, opened.state, 1).await;
    // The second friend's open brings the match with the first friend's claim.
    let opened = typed(b, &code).await.expect("the code still opens");
    assert_eq!(opened.state, first.state);
    let seats = opened.view.expect("view").seats;
    assert_eq!(seats[1].display_name, "Friend 1");
    let second = claim(b, opened.state, 2).await;
    // Every seat taken: the code is gone, and asking another is refused.
    not_found(typed(b, &code).await);
    let status = a
        .create_invite_code(ask(&second.state, &credential))
        .await
        .expect_err("no open seat");
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert_eq!(reason(&status), "NO_OPEN_SEAT");
    let dealt = common::deal(a, second.state).await.1;
    assert_eq!(dealt.phase, pb::Phase::Playing as i32);
}

#[tokio::test]
async fn a_friend_joins_by_code_on_the_memory_store() {
    let server = TestServer::start_with(ring(1, 1), &["--match-store", "memory"]).await;
    let (mut a, mut b) = (server.client().await, server.client().await);
    friends_join_by_code(&mut a, &mut b).await;
}

/// A key's time to live in seconds, as Redis tells it.
fn ttl(redis: &common::redis::Redis, key: &str) -> i64 {
    let said = redis.cli(redis.port(), &["ttl", key]);
    said.trim().parse().expect("a ttl")
}

#[tokio::test]
async fn a_code_asked_on_one_replica_opens_on_the_other_over_redis() {
    let redis = common::redis::Redis::standalone();
    let (one, two) = common::replicas("redis", &redis.urls()).await;
    let (mut a, mut b) = (one.client().await, two.client().await);
    friends_join_by_code(&mut a, &mut b).await;
    // The code's keys are in the invites' slot, with the code's time to live.
    let keys = redis.cli(redis.port(), &["keys", "allfives:{allfives-invites}:*"]);
    assert!(keys.lines().any(|k| k.contains(":code:")), "{keys}");
    assert!(keys.lines().any(|k| k.contains(":match:")), "{keys}");
    for key in keys.lines().filter(|k| !k.contains(":misses:")) {
        let ttl = ttl(&redis, key);
        assert!((1..=900).contains(&ttl), "{key}: {ttl}");
    }
}

#[tokio::test]
async fn a_code_asked_on_one_replica_opens_on_the_other_over_a_redis_cluster() {
    let redis = common::redis::Redis::cluster();
    let (one, two) = common::replicas("redis-cluster", &redis.urls()).await;
    let (mut a, mut b) = (one.client().await, two.client().await);
    friends_join_by_code(&mut a, &mut b).await;
}

#[tokio::test]
async fn a_code_expires() {
    let args = ["--match-store", "memory", "--invite-ttl-secs", "10"];
    let server = TestServer::start_with(ring(1, 1), &args).await;
    let mut client = server.client().await;
    let (state, credential) = hosted(&mut client, 2).await;
    let invite = client
        .create_invite_code(ask(&state, &credential))
        .await
        .expect("CreateInviteCode")
        .into_inner();
    assert!((9..=10).contains(&invite.expires_in_seconds), "{invite:?}");
    typed(&mut client, &invite.code)
        .await
        .expect("open before it expires");
    tokio::time::sleep(Duration::from_millis(10_200)).await;
    not_found(typed(&mut client, &invite.code).await);
    // Asked again, the match gets a new code.
    let renewed = code_of(&mut client, &state, &credential).await;
    assert_ne!(renewed, invite.code);
    typed(&mut client, &renewed)
        .await
        .expect("the new code opens");
}

/// The guesser's bound: once the minute's misses are spent, even the right code is
/// refused (else the limit would only slow the wrong guesses down).
#[tokio::test]
async fn past_the_minute_s_misses_even_a_right_code_is_refused() {
    let redis = common::redis::Redis::standalone();
    let args = [
        "--match-store",
        "redis",
        "--match-store-url",
        &redis.urls(),
        "--invite-misses-per-minute",
        "5",
    ];
    let one = TestServer::start_with(ring(1, 1), &args).await;
    let two = TestServer::start_with(ring(1, 1), &args).await;
    let (mut a, mut b) = (one.client().await, two.client().await);
    let (state, credential) = hosted(&mut a, 2).await;
    let code = code_of(&mut a, &state, &credential).await;
    // The right code's neighbour in the last symbol: a near miss, counted on either
    // replica (the count is the store's).
    let wrong = {
        let last = code.chars().last().expect("a symbol");
        let other = if last == '0' { '1' } else { '0' };
        format!("{}{other}", &code[..code.len() - 1])
    };
    // The minute may turn during the test: then the count starts again, so guess on
    // until refused (at most 5 misses a minute get an answer).
    let mut misses = 0;
    let refused = loop {
        let client = if misses % 2 == 0 { &mut a } else { &mut b };
        match typed(client, &wrong).await {
            Err(status) if reason(&status) == "INVITE_NOT_FOUND" => misses += 1,
            Err(status) => break status,
            Ok(_) => panic!("a wrong code opened"),
        }
        assert!(misses <= 10, "never refused after {misses} misses");
    };
    assert!(misses >= 5, "refused after {misses} misses");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert_eq!(reason(&refused), "INVITE_RATE_LIMITED");
    let right = typed(&mut b, &code)
        .await
        .expect_err("the right code, past the bound");
    assert_eq!(reason(&right), "INVITE_RATE_LIMITED", "{right:?}");
}

/// What one `OpenInviteCode` came to.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Answer {
    Opened,
    NotFound,
    /// `INVITE_RATE_LIMITED`, with its `limit` metadata: "client" or "deployment".
    Limited(String),
    Other(String),
}

/// `OpenInviteCode` for `code` from the client a trusted gateway names `from`
/// (`x-forwarded-for`).
async fn typed_from(client: &mut Client, from: &str, code: &str) -> Answer {
    use tonic_types::StatusExt;
    let mut request = tonic::Request::new(pb::OpenInviteCodeRequest {
        code: code.to_string(),
    });
    request
        .metadata_mut()
        .insert("x-forwarded-for", from.parse().expect("an address"));
    match client.open_invite_code(request).await {
        Ok(_) => Answer::Opened,
        Err(status) => match reason(&status).as_str() {
            "INVITE_NOT_FOUND" => Answer::NotFound,
            "INVITE_RATE_LIMITED" if status.code() == Code::ResourceExhausted => {
                let details = status.get_error_details();
                let info = details.error_info().expect("an ErrorInfo");
                Answer::Limited(info.metadata.get("limit").cloned().unwrap_or_default())
            }
            _ => Answer::Other(format!("{status:?}")),
        },
    }
}

/// The flags of the guessing tests: clients told apart by the gateway's header, five
/// misses a client, forty in all.
const GUESSING: [&str; 6] = [
    "--trusted-client-header",
    "x-forwarded-for",
    "--invite-misses-per-client-per-minute",
    "5",
    "--invite-misses-per-minute",
    "40",
];
const PER_CLIENT: usize = 5;
const IN_ALL: usize = 40;

/// What [`one_guesses_while_a_friend_opens`] saw, in one minute.
#[derive(Debug)]
struct Seen {
    /// The guesser's answers, in order.
    guesses: Vec<Answer>,
    /// The guesser typing the right code, once stopped.
    guesser_right: Answer,
    /// The friend (another client) typing the right code.
    friend_right: Answer,
    /// A third client typing a wrong code.
    other_wrong: Answer,
    /// The invite look-ups the servers counted meanwhile: found, missed,
    /// client_limited, deployment_limited.
    counted: [u64; 4],
    /// Whether the minute turned while it ran (then the counts start again and nothing
    /// can be concluded).
    minute_turned: bool,
}

/// The invite look-ups the servers counted, summed, by result: found, missed,
/// client_limited, deployment_limited.
fn lookups(servers: &[&TestServer]) -> [u64; 4] {
    let mut sum = [0; 4];
    for server in servers {
        let text = server.metrics.encode().expect("encode");
        let results = ["found", "missed", "client_limited", "deployment_limited"];
        for (total, result) in sum.iter_mut().zip(results) {
            let series = format!("allfives_invite_code_lookups_total{{result=\"{result}\"}} ");
            *total += text
                .lines()
                .find_map(|l| l.strip_prefix(&series))
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("no {series} in\n{text}"));
        }
    }
    sum
}

/// A host on `one` asks a code; one client (`guesser`, an address) guesses wrong codes
/// flat out, three times as many as the deployment's bound, alternating between `one`
/// and `two` (two replicas, or one server twice); then it types the right code on
/// `one`, the friend (203.0.113.9) types it on `two`, and a third client a wrong one.
async fn one_guesses_while_a_friend_opens(
    one: &TestServer,
    two: &TestServer,
    guesser: &str,
) -> Seen {
    let servers: &[&TestServer] = if std::ptr::eq(one, two) {
        &[one]
    } else {
        &[one, two]
    };
    let (mut on_one, mut on_two) = (one.client().await, two.client().await);
    let minute = allfives::store::invites::minute_now();
    let before = lookups(servers);
    let (state, credential) = hosted(&mut on_one, 2).await;
    let code = code_of(&mut on_one, &state, &credential).await;
    let mut guesses = Vec::new();
    for guess in 0..3 * IN_ALL {
        // Twelve digits: a code of the alphabet, almost surely not the right one (the
        // code is 60 random bits).
        let wrong = format!("{guess:012}");
        let client = if guess % 2 == 0 {
            &mut on_one
        } else {
            &mut on_two
        };
        guesses.push(typed_from(client, guesser, &wrong).await);
    }
    let guesser_right = typed_from(&mut on_one, guesser, &code).await;
    let friend_right = typed_from(&mut on_two, "203.0.113.9", &code).await;
    let other_wrong = typed_from(&mut on_two, "192.0.2.1", "0000-0000-0000").await;
    let after = lookups(servers);
    Seen {
        guesses,
        guesser_right,
        friend_right,
        other_wrong,
        counted: [0, 1, 2, 3].map(|i| after[i] - before[i]),
        minute_turned: allfives::store::invites::minute_now() != minute,
    }
}

/// The guesser is answered for its first misses, then refused as a client for every
/// later guess and for the right code; the friend's right code opens; a third client's
/// miss is answered; the servers' metrics count each refusal as the client's. Without
/// the per-client bound, the guesser spends the deployment's misses and the friend's
/// code is refused: this fails.
fn the_guesser_alone_was_stopped(seen: &Seen) {
    assert_eq!(
        seen.friend_right,
        Answer::Opened,
        "the friend's code: {seen:?}"
    );
    let client = Answer::Limited("client".into());
    let answered = seen
        .guesses
        .iter()
        .take_while(|&a| *a == Answer::NotFound)
        .count();
    assert_eq!(answered, PER_CLIENT, "{seen:?}");
    assert!(
        seen.guesses[PER_CLIENT..].iter().all(|a| *a == client),
        "{seen:?}"
    );
    assert_eq!(seen.guesser_right, client, "the guesser's right code");
    assert_eq!(seen.other_wrong, Answer::NotFound, "{seen:?}");
    // Found: the friend's; missed: the guesser's five and the third client's;
    // client_limited: the guesser's other guesses and its right code; no refusal for
    // the deployment.
    let refused = (3 * IN_ALL - PER_CLIENT + 1) as u64;
    assert_eq!(seen.counted, [1, PER_CLIENT as u64 + 1, refused, 0]);
}

/// Runs [`one_guesses_while_a_friend_opens`] until a run falls within one minute (the
/// counts are per minute: a run across a minute's turn proves nothing; two runs in a
/// row cannot both turn), each run's guesser a client of its own (198.51.100.7, .8,
/// .9: misses of an earlier run's guesser after the turn are not the next one's), and
/// answers that run.
async fn within_a_minute(one: &TestServer, two: &TestServer) -> Seen {
    for guesser in ["198.51.100.7", "198.51.100.8", "198.51.100.9"] {
        let seen = one_guesses_while_a_friend_opens(one, two, guesser).await;
        if !seen.minute_turned {
            return seen;
        }
        eprintln!("the minute turned during the run: again");
    }
    panic!("three runs in a row crossed a minute's turn");
}

/// docs/security.md's attack on the memory store: one client guessing flat out no
/// longer switches invite codes off for everyone. The metrics tell the refusals apart.
#[tokio::test]
async fn a_right_code_opens_for_another_client_while_one_guesses_flat_out_on_the_memory_store() {
    let args = [&["--match-store", "memory"][..], &GUESSING].concat();
    let server = TestServer::start_with(ring(1, 1), &args).await;
    the_guesser_alone_was_stopped(&within_a_minute(&server, &server).await);
}

/// The same over Redis, the guesser's calls alternating between two replicas (the
/// counts are the store's: neither replica alone sees more than 3 of its 5 misses),
/// the friend on the second. The store counts the client under a pseudonym: no key holds its address.
#[tokio::test]
async fn a_right_code_opens_for_another_client_while_one_guesses_flat_out_over_redis() {
    let redis = common::redis::Redis::standalone();
    let urls = redis.urls();
    let args = [
        &["--match-store", "redis", "--match-store-url", &urls][..],
        &GUESSING,
    ]
    .concat();
    let first = TestServer::start_with(ring(1, 1), &args).await;
    let second = TestServer::start_with(ring(1, 1), &args).await;
    the_guesser_alone_was_stopped(&within_a_minute(&first, &second).await);
    let keys = redis.cli(
        redis.port(),
        &["keys", "allfives:{allfives-invites}:misses:*"],
    );
    let clients: Vec<&str> = keys
        .lines()
        .filter(|k| k.matches(':').count() == 4)
        .collect();
    // The guesser and the third client (the friend found its code: no miss).
    assert!(clients.len() >= 2, "{keys}");
    for key in &clients {
        let pseudonym = key.rsplit(':').next().unwrap_or_default();
        assert_eq!(pseudonym.len(), 32, "{key}");
        assert!(pseudonym.bytes().all(|b| b.is_ascii_hexdigit()), "{key}");
        let ttl = ttl(&redis, key);
        assert!((1..=120).contains(&ttl), "{key}: {ttl}");
    }
    for address in ["198.51.100.", "203.0.113.9", "192.0.2.1", "c63364"] {
        assert!(!keys.contains(address), "{address} in {keys}");
    }
}

/// Without `--trusted-client-header`, the header is nobody's word: every call on
/// loopback is one client (127.0.0.1), so a "friend" whose header names another address
/// is refused with the guesser. The bound is per client as the server knows clients.
#[tokio::test]
async fn an_untrusted_header_names_no_other_client() {
    let args = [
        "--match-store",
        "memory",
        "--invite-misses-per-client-per-minute",
        "5",
    ];
    let server = TestServer::start_with(ring(1, 1), &args).await;
    let mut client = server.client().await;
    for _ in 0..3 {
        let minute = allfives::store::invites::minute_now();
        let (state, credential) = hosted(&mut client, 2).await;
        let code = code_of(&mut client, &state, &credential).await;
        let mut answers = Vec::new();
        for guess in 0..PER_CLIENT + 1 {
            answers.push(typed_from(&mut client, "198.51.100.7", &format!("{guess:012}")).await);
        }
        let friend = typed_from(&mut client, "203.0.113.9", &code).await;
        if allfives::store::invites::minute_now() != minute {
            continue;
        }
        assert_eq!(
            answers[PER_CLIENT],
            Answer::Limited("client".into()),
            "{answers:?}"
        );
        assert_eq!(friend, Answer::Limited("client".into()));
        return;
    }
    panic!("three runs in a row crossed a minute's turn");
}

/// The refusal deploy/gateway/nginx.conf answers when a client address passes its
/// `limit_req` for OpenInviteCode: the headers of its `@invite_codes_limited` location
/// are a trailers-only gRPC status that clients read as the replicas' own refusal
/// (`RESOURCE_EXHAUSTED`, an `ErrorInfo` with reason `INVITE_RATE_LIMITED`, domain
/// and `limit` "client", as the server writes it for a client's spent misses), with a
/// message of its own (the gateway counts calls, not misses). `.ci/gateway-test`
/// shows nginx answering it.
#[test]
fn the_gateway_s_invite_refusal_is_the_server_s() {
    use allfives::service::status::{ApiError, DOMAIN};
    use allfives::store::RateLimit;
    use std::collections::HashMap;
    use tonic_types::{ErrorDetails, StatusExt};

    let conf = include_str!("../../deploy/gateway/nginx.conf");
    let block = conf
        .split("location @invite_codes_limited {")
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .expect("nginx.conf has a location @invite_codes_limited");
    let mut headers = tonic::codegen::http::HeaderMap::new();
    for line in block.lines().map(str::trim) {
        let Some(header) = line.strip_prefix("add_header ") else {
            continue;
        };
        let (name, value) = header
            .strip_suffix(" always;")
            .and_then(|h| h.split_once(' '))
            .expect("add_header NAME VALUE always;");
        headers.insert(
            tonic::codegen::http::HeaderName::from_bytes(name.as_bytes()).expect("a name"),
            value.trim_matches('"').parse().expect("a header value"),
        );
    }
    // The headers are exactly what a gRPC server writes for it (tonic's encoding).
    let message = "too many invite codes were tried from this address: retry in a minute \
                   (an invite link still works)";
    let written = tonic::Status::with_error_details(
        tonic::Code::ResourceExhausted,
        message,
        ErrorDetails::with_error_info(
            "INVITE_RATE_LIMITED",
            DOMAIN,
            HashMap::from([("limit".to_string(), "client".to_string())]),
        ),
    );
    let mut expected = tonic::codegen::http::HeaderMap::new();
    written.add_header(&mut expected).expect("headers");
    assert_eq!(
        headers, expected,
        "nginx.conf's @invite_codes_limited should add {expected:#?}"
    );
    let gateway = tonic::Status::from_header_map(&headers).expect("a gRPC status");
    let server = tonic::Status::from(ApiError::InviteRateLimited(RateLimit::Client));
    assert_eq!(gateway.code(), server.code());
    let info = |status: &tonic::Status| {
        let details = status.get_error_details();
        let info = details.error_info().cloned().expect("an ErrorInfo");
        let mut metadata: Vec<_> = info.metadata.into_iter().collect();
        metadata.sort();
        (info.reason, info.domain, metadata)
    };
    assert_eq!(info(&gateway), info(&server), "{gateway:?}");
}

#[tokio::test]
async fn only_a_seated_player_asks_a_code_and_only_before_the_deal() {
    let server = TestServer::start_with(ring(1, 1), &["--match-store", "memory"]).await;
    let mut client = server.client().await;
    let (state, credential) = hosted(&mut client, 2).await;
    let cases = [
        (Vec::new(), "CREDENTIAL_REQUIRED"),
        (vec![7; 16], "CREDENTIAL_INVALID"),
    ];
    for (wrong, why) in cases {
        let status = client
            .create_invite_code(ask(&state, &wrong))
            .await
            .expect_err("not the seat's credential");
        assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
        assert_eq!(reason(&status), why);
    }
    // The open seat's viewer, which has no credential yet.
    let status = client
        .create_invite_code(pb::CreateInviteCodeRequest {
            viewer: 1,
            ..ask(&state, &[9; 16])
        })
        .await
        .expect_err("an open seat's viewer");
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    // A seat out of range.
    let status = client
        .create_invite_code(pb::CreateInviteCodeRequest {
            viewer: 5,
            ..ask(&state, &credential)
        })
        .await
        .expect_err("no such seat");
    assert_eq!(bad_fields(&status), ["viewer"]);
    // A match whose seats were all claimed in NewGame, and dealt.
    let (dealt, creds) = common::dealt_token(&mut client).await;
    let status = client
        .create_invite_code(ask(&dealt, &creds.of(0)))
        .await
        .expect_err("dealt");
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert_eq!(reason(&status), "WRONG_PHASE");
}

#[tokio::test]
async fn a_code_that_is_not_one_names_the_field_and_a_code_nobody_made_is_not_found() {
    let server = TestServer::start_with(ring(1, 1), &["--match-store", "memory"]).await;
    let mut client = server.client().await;
    for bad in [
        "",
        "K7QM-4XPR-2D9",
        "K7QM-4XPR-2D9U",
        "<script>",
        &"A".repeat(100),
    ] {
        let status = typed(&mut client, bad).await.expect_err("not a code");
        assert_eq!(status.code(), Code::InvalidArgument, "{bad:?}: {status:?}");
        assert_eq!(bad_fields(&status), ["code"], "{bad:?}");
    }
    not_found(typed(&mut client, "0000-0000-0000").await);
    not_found(typed(&mut client, "K7QM 4XPR 2D9F").await);
}

#[tokio::test]
async fn without_a_store_neither_call_is_served() {
    let server = TestServer::start_with(ring(1, 1), &[]).await;
    let mut client = server.client().await;
    let (state, credential) = hosted(&mut client, 2).await;
    let status = client
        .create_invite_code(ask(&state, &credential))
        .await
        .expect_err("no store");
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert_eq!(reason(&status), "STORE_REQUIRED");
    let status = typed(&mut client, "0000-0000-0000")
        .await
        .expect_err("no store");
    assert_eq!(reason(&status), "STORE_REQUIRED");
}
