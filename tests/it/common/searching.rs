//! Clients whose calls search, shared by the search queue's tests (`tests/it/
//! search_queue.rs`) and its benchmark (`benches/search_queue.rs`): a player against
//! three HARD bots, whose moves make the server's bots search, and the HARD Suggest a
//! flood asks.

use allfives::proto::v1 as pb;

use super::{CLAIMED, Client, Creds, bot};

/// A 4-player match for seat 0 (claimed) against three HARD bots: its token, the view
/// for seat 0 and seat 0's credential.
pub async fn new_bot_match(client: &mut Client) -> (Vec<u8>, pb::GameView, Vec<u8>) {
    let hard = bot(pb::BotLevel::Hard);
    let new = client
        .new_game(pb::NewGameRequest {
            rules: Some(pb::Rules {
                players: 4,
                ..Default::default()
            }),
            seed: None,
            viewer: Some(0),
            seats: vec![CLAIMED, hard.clone(), hard.clone(), hard.clone()],
        })
        .await
        .expect("NewGame")
        .into_inner();
    let credential = Creds::from_new_game(&new).of(0);
    (new.state, new.view.expect("view"), credential)
}

/// Seat 0's next move in its match: Deal, Draw or Play (a legal move picked by
/// `pick`), after which the bots on turn move in the same call. The new token and view.
pub async fn move_once(
    client: &mut Client,
    state: &[u8],
    view: &pb::GameView,
    credential: &[u8],
    pick: usize,
) -> Result<(Vec<u8>, pb::GameView), tonic::Status> {
    let (state, view) = if view.phase == pb::Phase::Dealing as i32 {
        let r = client
            .deal(pb::DealRequest {
                state: state.to_vec().into(),
                viewer: Some(0),
                credential: credential.to_vec(),
            })
            .await?
            .into_inner();
        (r.state, r.view)
    } else if view.must_draw {
        let r = client
            .draw(pb::DrawRequest {
                state: state.to_vec().into(),
                seat: 0,
                viewer: Some(0),
                credential: credential.to_vec(),
            })
            .await?
            .into_inner();
        (r.state, r.view)
    } else {
        let m = view.legal_moves[pick % view.legal_moves.len()];
        let r = client
            .play(pb::PlayRequest {
                state: state.to_vec().into(),
                seat: 0,
                tile: m.tile,
                end: m.end,
                viewer: Some(0),
                credential: credential.to_vec(),
            })
            .await?
            .into_inner();
        (r.state, r.view)
    };
    Ok((state, view.unwrap_or_default()))
}

/// A HARD Suggest of `worlds`, for the lead of two-player match `seed`: what a flood
/// asks.
pub async fn flood_request(client: &mut Client, seed: u64, worlds: u32) -> pb::SuggestRequest {
    let new = client
        .new_game(super::hot_seat(
            pb::Rules {
                players: 2,
                ..Default::default()
            },
            Some(seed),
        ))
        .await
        .expect("NewGame")
        .into_inner();
    let creds = Creds::from_new_game(&new);
    let (state, view) = super::deal(client, new.state).await;
    let seat = view.turn.expect("a seat leads");
    pb::SuggestRequest {
        state: state.into(),
        seat,
        level: pb::BotLevel::Hard as i32,
        worlds,
        seed: Some(1),
        credential: creds.of(seat),
    }
}
