//! Clients whose calls search, shared by the search queue's tests (`tests/it/
//! search_queue.rs`) and its benchmark (`benches/search_queue.rs`, which includes this
//! file): a player against three HARD bots, whose moves make the server's bots search,
//! and the HARD Suggest a flood asks. Standalone (the crate and tonic only), so that
//! the benchmark can include it.

use allfives::proto::v1 as pb;
use allfives::proto::v1::all_fives_service_client::AllFivesServiceClient;
use tonic::transport::Channel;

pub type Client = AllFivesServiceClient<Channel>;

/// Seat `seat`'s credential in NewGame's answer (empty if it has none).
fn credential(answer: &pb::NewGameResponse, seat: u32) -> Vec<u8> {
    answer
        .credentials
        .iter()
        .find(|c| c.seat == seat)
        .map(|c| c.credential.clone())
        .unwrap_or_default()
}

/// A 4-player match for seat 0 (claimed) against three HARD bots: its token, the view
/// for seat 0 and seat 0's credential.
pub async fn new_bot_match(client: &mut Client) -> (Vec<u8>, pb::GameView, Vec<u8>) {
    let hard = pb::SeatSetup {
        bot: pb::BotLevel::Hard as i32,
        claim: false,
        display_name: String::new(),
    };
    let new = client
        .new_game(pb::NewGameRequest {
            rules: Some(pb::Rules {
                players: 4,
                ..Default::default()
            }),
            seed: None,
            viewer: Some(0),
            seats: vec![
                pb::SeatSetup {
                    bot: 0,
                    claim: true,
                    display_name: String::new(),
                },
                hard.clone(),
                hard.clone(),
                hard,
            ],
        })
        .await
        .expect("NewGame")
        .into_inner();
    let credential = credential(&new, 0);
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
        .new_game(pb::NewGameRequest {
            rules: Some(pb::Rules {
                players: 2,
                ..Default::default()
            }),
            seed: Some(seed),
            viewer: None,
            seats: vec![
                pb::SeatSetup {
                    bot: 0,
                    claim: true,
                    display_name: String::new(),
                };
                2
            ],
        })
        .await
        .expect("NewGame")
        .into_inner();
    let dealt = client
        .deal(pb::DealRequest {
            state: new.state.clone().into(),
            ..Default::default()
        })
        .await
        .expect("Deal")
        .into_inner();
    let view = dealt.view.expect("view");
    let seat = view.turn.expect("a seat leads");
    pb::SuggestRequest {
        state: dealt.state.into(),
        seat,
        level: pb::BotLevel::Hard as i32,
        worlds,
        seed: Some(1),
        credential: credential(&new, seat),
    }
}
