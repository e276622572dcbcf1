//! The server's life in production: a graceful drain on SIGTERM (the real binary, as
//! Kubernetes stops a pod) and the key rotation runbook of docs/operations.md.

use crate::common;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use allfives::config::Config;
use allfives::proto::v1 as pb;
use allfives::state::KeyRing;
use clap::Parser;
use common::{Client, Creds, TestServer, dealt_token, hot_seat, reason};
use tonic::Code;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

const KEY_OLD: &str = "1:1111111111111111111111111111111111111111111111111111111111111111";
const KEY_NEW: &str = "2:2222222222222222222222222222222222222222222222222222222222222222";

/// A key ring exactly as the server reads it from its configuration.
fn configured_ring(keys: &str) -> KeyRing {
    Config::try_parse_from(["allfives", "--keys", keys])
        .expect("config")
        .key_ring()
        .expect("ring")
}

async fn score(client: &mut Client, state: &[u8]) -> Result<(), tonic::Status> {
    client
        .score(pb::ScoreRequest {
            state: state.to_vec().into(),
            viewer: None,
            ..Default::default()
        })
        .await
        .map(drop)
}

#[tokio::test]
async fn key_rotation_runbook_keeps_old_tokens_working_until_the_old_key_retires() {
    // Before: every replica seals and opens with the old key.
    let before = TestServer::start(configured_ring(KEY_OLD)).await;
    let (old_token, _) = dealt_token(&mut before.client().await).await;
    assert_eq!(old_token[1], 1, "sealed under key 1");

    // Step 1: the new key is added for opening everywhere; the old one still seals.
    let step1 = TestServer::start(configured_ring(&format!("{KEY_OLD},{KEY_NEW}"))).await;
    let mut client = step1.client().await;
    score(&mut client, &old_token)
        .await
        .expect("old token opens");
    assert_eq!(
        dealt_token(&mut client).await.0[1],
        1,
        "the old key still seals"
    );

    // Step 2: the new key becomes the sealing key; old tokens still open.
    let step2 = TestServer::start(configured_ring(&format!("{KEY_NEW},{KEY_OLD}"))).await;
    let mut client = step2.client().await;
    score(&mut client, &old_token)
        .await
        .expect("old token opens");
    let (new_token, _) = dealt_token(&mut client).await;
    assert_eq!(new_token[1], 2, "the new key seals");
    // A step-1 replica (not yet rolled) still opens what a step-2 replica sealed.
    score(&mut step1.client().await, &new_token)
        .await
        .expect("mixed rollout works");

    // Step 3: the old key retires; its tokens get a clear reason, new ones work.
    let step3 = TestServer::start(configured_ring(KEY_NEW)).await;
    let mut client = step3.client().await;
    score(&mut client, &new_token)
        .await
        .expect("new token opens");
    let status = score(&mut client, &old_token)
        .await
        .expect_err("old key retired");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(reason(&status), "TOKEN_UNKNOWN_KEY");
    assert!(pb::ErrorReason::from_str_name(&reason(&status)).is_some());
}

/// The server process, killed if the test fails before it exits.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// A free loopback port (bound then released; the server binds it right after).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

async fn health(channel: tonic::transport::Channel) -> Option<i32> {
    let mut client = HealthClient::new(channel);
    let answer = client
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .ok()?;
    Some(answer.into_inner().status)
}

/// Plays whole games in a loop until a call fails or `stop` is raised; counts the calls
/// that succeeded and returns the status of the failure that ended it, if any.
async fn load(
    mut client: Client,
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU32>,
) -> Option<tonic::Status> {
    while !stop.load(Ordering::SeqCst) {
        // A hot-seat match (a production server picks the seed), played by the
        // holder of every seat's credential.
        let new = match client.new_game(hot_seat(pb::Rules::default(), None)).await {
            Ok(new) => new.into_inner(),
            Err(status) => return Some(status),
        };
        ok.fetch_add(1, Ordering::SeqCst);
        let creds = Creds::from_new_game(&new);
        let mut state = new.state;
        let mut phase = pb::Phase::Dealing;
        while phase != pb::Phase::Over {
            let answer = if phase == pb::Phase::Dealing {
                client
                    .deal(pb::DealRequest {
                        state: state.clone().into(),
                        viewer: None,
                        ..Default::default()
                    })
                    .await
                    .map(|r| {
                        let r = r.into_inner();
                        (r.state, r.view)
                    })
            } else {
                match turn_and_view(&mut client, &state, &creds).await {
                    Err(status) => Err(status),
                    Ok((seat, seen)) if seen.must_draw => client
                        .draw(pb::DrawRequest {
                            state: state.clone().into(),
                            seat,
                            viewer: None,
                            credential: creds.of(seat),
                        })
                        .await
                        .map(|r| {
                            let r = r.into_inner();
                            (r.state, r.view)
                        }),
                    Ok((seat, seen)) => {
                        let m = seen.legal_moves.first().copied().unwrap_or_default();
                        let play = pb::PlayRequest {
                            state: state.clone().into(),
                            seat,
                            tile: m.tile,
                            end: m.end,
                            viewer: None,
                            credential: creds.of(seat),
                        };
                        client.play(play).await.map(|r| {
                            let r = r.into_inner();
                            (r.state, r.view)
                        })
                    }
                }
            };
            match answer {
                Ok((next, view)) => {
                    ok.fetch_add(1, Ordering::SeqCst);
                    state = next;
                    phase = view
                        .and_then(|v| pb::Phase::try_from(v.phase).ok())
                        .unwrap_or(pb::Phase::Over);
                }
                Err(status) => return Some(status),
            }
        }
    }
    None
}

/// The seat on turn and its view, asked with its credential.
async fn turn_and_view(
    client: &mut Client,
    state: &[u8],
    creds: &Creds,
) -> Result<(u32, pb::GameView), tonic::Status> {
    let spectator = client
        .score(pb::ScoreRequest {
            state: state.to_vec().into(),
            viewer: None,
            ..Default::default()
        })
        .await?;
    let seat = spectator
        .into_inner()
        .view
        .and_then(|v| v.turn)
        .unwrap_or(0);
    let seen = client
        .score(pb::ScoreRequest {
            state: state.to_vec().into(),
            viewer: Some(seat),
            credential: creds.of(seat),
            ..Default::default()
        })
        .await?;
    Ok((seat, seen.into_inner().view.unwrap_or_default()))
}

#[tokio::test]
async fn sigterm_drains_health_turns_not_serving_calls_finish_and_the_process_exits() {
    let _load = common::measuring().await;
    sigterm_drains(&["--worker-threads", "2"]).await;
}

/// The same on the current-thread runtime (`--current-thread`).
#[tokio::test]
async fn sigterm_drains_on_the_current_thread_runtime() {
    let _load = common::measuring().await;
    sigterm_drains(&["--current-thread"]).await;
}

/// Starts the binary with `runtime`'s flags under load, sends SIGTERM, and checks the
/// drain: NOT_SERVING, calls served through the delay, accepted calls finished, a clean
/// exit in time.
async fn sigterm_drains(runtime: &[&str]) {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    // Logs go to a file: a pipe nobody reads until the end would fill and stall it.
    let log_path = std::env::temp_dir().join(format!("allfives-drain-{port}.log"));
    let log = std::fs::File::create(&log_path).expect("log file");
    let child = Command::new(env!("CARGO_BIN_EXE_allfives"))
        .args(["--addr", &addr, "--metrics-addr", "off", "--keys", KEY_OLD])
        .args(["--shutdown-delay-ms", "1000", "--drain-seconds", "5"])
        .args(runtime)
        .env("ALLFIVES_LOG", "warn,allfives::server=debug")
        .stdout(Stdio::from(log.try_clone().expect("log file")))
        .stderr(Stdio::from(log))
        .spawn()
        .expect("start the server binary");
    let mut server = KillOnDrop(child);
    let url = format!("http://{addr}");
    let mut channel = None;
    for _ in 0..100 {
        let endpoint = tonic::transport::Channel::from_shared(url.clone()).expect("url");
        if let Ok(c) = endpoint.connect().await {
            channel = Some(c);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let channel = channel.expect("the server came up");
    assert_eq!(
        health(channel.clone()).await,
        Some(ServingStatus::Serving as i32)
    );

    // Load: eight clients playing whole games over one HTTP/2 connection.
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicU32::new(0));
    let mut clients = Vec::new();
    for _ in 0..8 {
        let client = pb::all_fives_service_client::AllFivesServiceClient::new(channel.clone());
        clients.push(tokio::spawn(load(client, stop.clone(), ok.clone())));
    }
    let started = Instant::now();
    while ok.load(Ordering::SeqCst) < 50 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "load is running"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // SIGTERM, as the kubelet sends it.
    let sent = Instant::now();
    let killed = Command::new("kill")
        .args(["-TERM", &server.0.id().to_string()])
        .status();
    assert!(killed.expect("kill").success());

    // Health turns NOT_SERVING while the server still answers during the delay.
    let mut not_serving = false;
    for _ in 0..40 {
        if health(channel.clone()).await == Some(ServingStatus::NotServing as i32) {
            not_serving = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(not_serving, "health reported NOT_SERVING after SIGTERM");
    let during_delay = ok.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        ok.load(Ordering::SeqCst) > during_delay,
        "calls are still served during the delay"
    );

    // The load runs on through the close. Then the server sends GOAWAY: calls it has
    // accepted finish (checked from its log below); calls sent as the connection closes
    // are refused, which the client sees as UNAVAILABLE or CANCELLED ("connection
    // closed"): never processed, safe to retry on another replica.
    for c in clients {
        if let Some(status) = c.await.expect("client task") {
            let refused = matches!(status.code(), Code::Unavailable | Code::Cancelled);
            assert!(refused, "a call failed otherwise: {status:?}");
        }
    }
    stop.store(true, Ordering::SeqCst);

    // The process exits on its own, within the grace period (delay + drain).
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = server.0.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = server.0.kill();
            panic!("the server did not exit within the grace period");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "clean exit: {status:?}");
    assert!(
        sent.elapsed() < Duration::from_secs(6),
        "exited after {:?}",
        sent.elapsed()
    );
    let logs = std::fs::read_to_string(&log_path).expect("logs");
    let _ = std::fs::remove_file(&log_path);
    assert!(logs.contains("call done"), "the server logged its calls");
    assert!(
        !logs.contains("call abandoned"),
        "no accepted call was cut off"
    );
    assert!(
        !logs.contains("drain deadline passed"),
        "in-flight calls all finished"
    );
}
