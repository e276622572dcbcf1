//! The match store (`--match-store memory`), against the real server: a move from an
//! older token is refused ABORTED STATE_STALE with the latest state's id, the same move
//! made again from the same token is answered again, and a second claim of one seat
//! from one token is refused; without a store the same fork is taken (what the store
//! adds). docs/security.md, "The match store".

use crate::common;

use allfives::proto::v1 as pb;
use common::{Client, Creds, TestServer, reason, ring};
use tonic::Code;
use tonic_types::StatusExt;

/// A dealt two-player hot-seat match: its token, the seat on turn's view and every
/// seat's credential.
async fn dealt(client: &mut Client) -> (Vec<u8>, pb::GameView, Creds) {
    let (token, creds) = common::dealt_token(client).await;
    let public = common::view_for(client, &token, 0, &creds).await;
    let turn = public.turn.expect("a seat on turn");
    let view = common::view_for(client, &token, turn, &creds).await;
    (token, view, creds)
}

/// The Play of the `n`th legal move of the seat on turn in `view`, from `token`.
fn play(token: &[u8], view: &pb::GameView, creds: &Creds, n: usize) -> pb::PlayRequest {
    let seat = view.turn.expect("a seat on turn");
    let legal = view.legal_moves.get(n).expect("that many legal moves");
    pb::PlayRequest {
        state: token.to_vec().into(),
        seat,
        tile: legal.tile,
        end: legal.end,
        viewer: Some(seat),
        credential: creds.of(seat),
    }
}

/// The `latest_state_id` a STATE_STALE refusal names.
fn latest(status: &tonic::Status) -> String {
    status
        .get_error_details()
        .error_info()
        .and_then(|info| info.metadata.get("latest_state_id").cloned())
        .unwrap_or_default()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A dealt match whose seat on turn has two legal moves (the lead: every tile).
async fn with_a_choice(client: &mut Client) -> (Vec<u8>, pb::GameView, Creds) {
    loop {
        let (token, view, creds) = dealt(client).await;
        if view.legal_moves.len() >= 2 {
            return (token, view, creds);
        }
    }
}

#[tokio::test]
async fn a_move_from_an_older_token_is_refused_and_a_retry_is_answered_again() {
    let server = TestServer::start_with(ring(1, 1), &["--match-store", "memory"]).await;
    let mut client = server.client().await;
    let (dealt_token, view, creds) = with_a_choice(&mut client).await;
    let first = client
        .play(play(&dealt_token, &view, &creds, 0))
        .await
        .expect("the first move")
        .into_inner();
    let head = first.view.expect("view").state_id;
    // The same move from the same token again (a retry after a lost answer): the same
    // state, answered again.
    let again = client
        .play(play(&dealt_token, &view, &creds, 0))
        .await
        .expect("the same move again")
        .into_inner();
    assert_eq!(again.view.expect("view").state_id, head);
    // Another move from the same token: a take-back, refused with the latest's id.
    let fork = client
        .play(play(&dealt_token, &view, &creds, 1))
        .await
        .expect_err("a fork");
    assert_eq!(fork.code(), Code::Aborted, "{fork:?}");
    assert_eq!(reason(&fork), "STATE_STALE");
    assert_eq!(latest(&fork), hex(&head));
    // The match goes on from its latest token.
    let turn = first_turn(&mut client, &first.state, &creds).await;
    let next_view = common::view_for(&mut client, &first.state, turn, &creds).await;
    let moved_on = match next_view.must_draw {
        true => None,
        false => Some(play(&first.state, &next_view, &creds, 0)),
    };
    if let Some(request) = moved_on {
        client.play(request).await.expect("the next move");
        // And the first move, made again now, is stale: the match moved on.
        let old = client
            .play(play(&dealt_token, &view, &creds, 0))
            .await
            .expect_err("a stale retry");
        assert_eq!(reason(&old), "STATE_STALE");
    }
}

/// The seat on turn in `token`.
async fn first_turn(client: &mut Client, token: &[u8], creds: &Creds) -> u32 {
    common::view_for(client, token, 0, creds)
        .await
        .turn
        .expect("a seat on turn")
}

#[tokio::test]
async fn a_second_claim_of_a_seat_from_one_token_is_refused() {
    let server = TestServer::start_with(ring(1, 1), &["--match-store", "memory"]).await;
    let mut client = server.client().await;
    let new = client
        .new_game(pb::NewGameRequest {
            rules: Some(pb::Rules {
                players: 2,
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .expect("NewGame")
        .into_inner();
    let claim = || pb::ClaimSeatRequest {
        state: new.state.clone(),
        seat: 1,
    };
    client.claim_seat(claim()).await.expect("the first claim");
    let second = client
        .claim_seat(claim())
        .await
        .expect_err("a second claim");
    assert_eq!(second.code(), Code::Aborted, "{second:?}");
    assert_eq!(reason(&second), "STATE_STALE");
}

#[tokio::test]
async fn without_a_store_the_fork_is_taken() {
    let server = TestServer::start(ring(1, 1)).await;
    let mut client = server.client().await;
    let (token, view, creds) = with_a_choice(&mut client).await;
    client
        .play(play(&token, &view, &creds, 0))
        .await
        .expect("the first move");
    let fork = client
        .play(play(&token, &view, &creds, 1))
        .await
        .expect("stateless: another branch")
        .into_inner();
    assert!(fork.view.is_some());
}
