//! Holds a `Watch` stream open through a server (or a gateway in front of several
//! replicas sharing a match store) for `--seconds`, while another connection plays the
//! watched match a move every `--every` seconds: every move must arrive on the stream,
//! in order, and the stream must stay open through the quiet spells between them on
//! heartbeats alone (a proxy that closes streams idle past its unary timeout fails
//! this). Prints the moves seen and the heartbeats; exits non-zero on any failure.
//!
//! `cargo run --example watch_probe -- --addr http://127.0.0.1:50051 --seconds 12`
//!
//! CI's gateway test (`.ci/gateway-test`) runs it through nginx with a quiet spell of
//! 16 s: past nginx's 10 s read timeout for unary calls, on the replicas' default
//! heartbeat (15 s) alone.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use allfives::proto::v1 as pb;
use allfives::proto::v1::all_fives_service_client::AllFivesServiceClient;
use allfives::proto::v1::watch_response::Kind;
use clap::Parser;

mod common;
use tonic::transport::{Channel, Endpoint};

/// Watch a match through a server or gateway while it is played.
#[derive(Parser, Debug)]
#[command(name = "watch_probe")]
struct Args {
    /// Server (or gateway) address: `http://host:port`.
    #[arg(long, default_value = "http://127.0.0.1:50051")]
    addr: String,
    /// How long to hold the stream.
    #[arg(long, default_value_t = 12)]
    seconds: u64,
    /// Seconds between two moves.
    #[arg(long, default_value_t = 3)]
    every: u64,
}

type Client = AllFivesServiceClient<Channel>;

async fn connect(addr: &str) -> Result<Client, String> {
    let channel = Endpoint::from_shared(addr.to_string())
        .map_err(|e| format!("address {addr}: {e}"))?
        .connect()
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    Ok(AllFivesServiceClient::new(channel))
}

/// One move of the seat on turn (`common::next_move`): the new token and state id.
async fn a_move(
    client: &mut Client,
    token: &[u8],
    creds: &[Vec<u8>],
) -> Result<(Vec<u8>, Vec<u8>), String> {
    let (token, id, _) = common::next_move(client, token, creds).await?;
    Ok((token, id))
}

async fn probe(args: Args) -> Result<String, String> {
    let mut player = connect(&args.addr).await?;
    let mut watcher = connect(&args.addr).await?;
    let new = player
        .new_game(pb::NewGameRequest {
            seats: vec![
                pb::SeatSetup {
                    bot: 0,
                    claim: true,
                    display_name: String::new(),
                    pass: String::new(),
                };
                2
            ],
            ..Default::default()
        })
        .await
        .map_err(|e| format!("NewGame: {e}"))?
        .into_inner();
    let mut creds = vec![Vec::new(); 2];
    for c in &new.credentials {
        creds[c.seat as usize] = c.credential.clone();
    }
    let mut last = new.view.ok_or("no view")?.state_id;
    let mut stream = watcher
        .watch(pb::WatchRequest {
            state: new.state.clone(),
            viewer: Some(0),
            credential: creds[0].clone(),
            last_state_id: last.clone(),
            ..Default::default()
        })
        .await
        .map_err(|e| format!("Watch: {e}"))?
        .into_inner();
    let started = Instant::now();
    let (mut token, mut moves, mut heartbeats) = (new.state, 0, 0);
    let mut next_move = started + Duration::from_secs(args.every);
    let end = started + Duration::from_secs(args.seconds);
    while Instant::now() < end {
        let wait = next_move.min(end).saturating_duration_since(Instant::now());
        match tokio::time::timeout(wait, stream.message()).await {
            Err(_) => {
                if Instant::now() >= end {
                    break;
                }
                let (next, id) = a_move(&mut player, &token, &creds).await?;
                token = next;
                next_move = Instant::now() + Duration::from_secs(args.every);
                // The move must arrive before anything else but heartbeats.
                loop {
                    let message = tokio::time::timeout(Duration::from_secs(5), stream.message())
                        .await
                        .map_err(|_| "a move did not arrive within 5 s")?
                        .map_err(|e| format!("the stream failed: {e}"))?
                        .ok_or("the stream ended")?;
                    match message.kind {
                        Some(Kind::Heartbeat(_)) => heartbeats += 1,
                        // Not asked for; no match here ends.
                        Some(Kind::Presence(_) | Kind::Rematch(_)) => {}
                        Some(Kind::Change(change)) => {
                            let view = change.view.ok_or("a change without a view")?;
                            if view.state_id != id || view.previous_state_id != last {
                                return Err("a change out of order".into());
                            }
                            last = id;
                            moves += 1;
                            break;
                        }
                        None => return Err("a message of no kind".into()),
                    }
                }
            }
            Ok(Err(e)) => {
                return Err(format!(
                    "the stream failed after {:?}: {e}",
                    started.elapsed()
                ));
            }
            Ok(Ok(None)) => return Err(format!("the stream ended after {:?}", started.elapsed())),
            Ok(Ok(Some(message))) => match message.kind {
                Some(Kind::Heartbeat(_)) => heartbeats += 1,
                other => return Err(format!("an unexpected message: {other:?}")),
            },
        }
    }
    if moves == 0 || heartbeats == 0 {
        return Err(format!("{moves} moves and {heartbeats} heartbeats seen"));
    }
    Ok(format!(
        "a Watch stream held {:.1} s: {moves} moves arrived in order, {heartbeats} heartbeats",
        started.elapsed().as_secs_f64()
    ))
}

#[tokio::main]
async fn main() -> ExitCode {
    common::reported("watch_probe", probe(Args::parse()).await)
}
