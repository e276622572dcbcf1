//! What the load generators share (`examples/loadgen.rs`, `examples/botload.rs`,
//! `examples/rpc_load.rs`): a server they start on a free loopback port and wait for
//! until it reports SERVING, a process's CPU time from `/proc`, latency quantiles, the
//! runtime `main` starts, an echo request sized like a game call's, and one move of a
//! hot-seat match (`watch_load`, `watch_probe`), and how a probe reports and exits
//! ([`reported`]: `watch_load`, `watch_probe`, `invite_probe`). Each example uses a
//! part.
#![allow(dead_code)]

use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// An example's exit: its report printed on stdout (success), or why it failed on
/// stderr after its `name` (failure).
pub fn reported(name: &str, result: Result<String, String>) -> ExitCode {
    match result {
        Ok(report) => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("{name}: {why}");
            ExitCode::FAILURE
        }
    }
}

/// Runs an example's `run` on a multi-thread runtime of `workers` threads; an error
/// it answers is printed after the example's `name`.
pub fn block_on(
    name: &str,
    workers: usize,
    run: impl Future<Output = Result<ExitCode, String>>,
) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("{name}: cannot start a runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("{name}: {error}");
            ExitCode::FAILURE
        }
    }
}

/// A process this run started; stopped (SIGKILL) and reaped when dropped.
pub struct ServerProcess {
    pub child: Child,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port free at the time of asking.
pub fn free_loopback_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

/// Spawns the server `command` (which has it listen on `addr`, a loopback address),
/// its stdin and stdout closed, and waits for it to answer SERVING (20 s at most);
/// answers it, its URL and the time from spawning it to that answer.
pub async fn start(
    mut command: Command,
    addr: &str,
) -> Result<(ServerProcess, String, Duration), String> {
    let spawned = Instant::now();
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| {
            format!(
                "cannot start {}: {e}",
                command.get_program().to_string_lossy()
            )
        })?;
    let url = format!("http://{addr}");
    let (server, to_serving) = serving(child, &url, spawned).await?;
    Ok((server, url, to_serving))
}

/// Waits for the server just spawned as `child` to answer SERVING at `url` (20 s at
/// most); answers it and the time from `spawned` to that answer.
async fn serving(
    child: Child,
    url: &str,
    spawned: Instant,
) -> Result<(ServerProcess, Duration), String> {
    let mut server = ServerProcess { child };
    let endpoint = Endpoint::from_shared(url.to_owned()).map_err(|e| e.to_string())?;
    let give_up = spawned + Duration::from_secs(20);
    loop {
        if let Ok(Some(status)) = server.child.try_wait() {
            return Err(format!("the server exited at start: {status}"));
        }
        if let Ok(channel) = endpoint.connect().await {
            let answer = HealthClient::new(channel)
                .check(HealthCheckRequest {
                    service: String::new(),
                })
                .await;
            if answer.is_ok_and(|r| r.get_ref().status == ServingStatus::Serving as i32) {
                return Ok((server, spawned.elapsed()));
            }
        }
        if Instant::now() > give_up {
            return Err("the server did not report SERVING within 20 s".to_owned());
        }
        tokio::time::sleep(Duration::from_micros(500)).await;
    }
}

/// One HTTP/2 connection to `url`, opened now.
pub async fn connect(url: &str) -> Result<Channel, String> {
    Endpoint::from_shared(url.to_owned())
        .map_err(|e| e.to_string())?
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true)
        .connect()
        .await
        .map_err(|e| format!("cannot connect to {url}: {e}"))
}

/// A process's CPU time so far (user + system, all threads, dead ones included).
pub fn process_cpu_secs(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // After the name: state is field 3 of the line, utime 14 and stime 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / clock_ticks())
}

fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// The `q` quantile of sorted nanoseconds, in microseconds (NaN for none).
pub fn quantile_us(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i] as f64 / 1000.0
}

/// The load average's first three figures, as `/proc/loadavg` has them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// An echo request of `request_bytes` encoded bytes asking for an answer of
/// `response_bytes` encoded bytes (payload padding; field headers and length prefixes
/// take a few bytes).
#[cfg(feature = "bench-echo")]
pub fn echo_request(
    request_bytes: usize,
    response_bytes: usize,
) -> allfives::proto::bench::EchoRequest {
    // Field headers and length prefixes take a few bytes; pad to the same total.
    let mut request = allfives::proto::bench::EchoRequest::default();
    let mut response = allfives::proto::bench::EchoResponse {
        payload: Vec::new(),
    };
    while prost::Message::encoded_len(&response) < response_bytes {
        response.payload.push(0);
    }
    request.response_bytes = response.payload.len() as u32;
    while prost::Message::encoded_len(&request) < request_bytes {
        request.payload.push(0);
    }
    request
}

/// One move of a hot-seat match from `token` (`creds`: every seat's credential): the
/// seat on turn's first legal move, or a draw, or the next hand's deal. Answers the new
/// token, its state id, and when the move's request was sent (after the Score calls
/// that chose it); `Err("over")` once the match is over. (`examples/watch_load.rs`,
/// `examples/watch_probe.rs`.)
pub async fn next_move(
    client: &mut allfives::proto::v1::all_fives_service_client::AllFivesServiceClient<Channel>,
    token: &[u8],
    creds: &[Vec<u8>],
) -> Result<(Vec<u8>, Vec<u8>, Instant), String> {
    use allfives::proto::v1 as pb;
    let status = |e: tonic::Status| e.to_string();
    let score = |viewer: Option<u32>| pb::ScoreRequest {
        state: token.to_vec().into(),
        viewer,
        credential: viewer.map_or_else(Vec::new, |v| creds[v as usize].clone()),
        include_hand_events: false,
    };
    let public = client.score(score(None)).await.map_err(status)?;
    let public = public.into_inner().view.ok_or("no view")?;
    if public.winner_side.is_some() {
        return Err("over".into());
    }
    let mut sent = Instant::now();
    let (token, view) = match public.turn {
        None => {
            let req = pb::DealRequest {
                state: token.to_vec().into(),
                ..Default::default()
            };
            let a = client.deal(req).await.map_err(status)?.into_inner();
            (a.state, a.view)
        }
        Some(seat) => {
            let view = client.score(score(Some(seat))).await;
            let view = view.map_err(status)?.into_inner().view.ok_or("no view")?;
            let credential = creds[seat as usize].clone();
            sent = Instant::now();
            match view.legal_moves.first() {
                Some(legal) => {
                    let req = pb::PlayRequest {
                        state: token.to_vec().into(),
                        seat,
                        tile: legal.tile,
                        end: legal.end,
                        viewer: None,
                        credential,
                    };
                    let a = client.play(req).await.map_err(status)?.into_inner();
                    (a.state, a.view)
                }
                None => {
                    let req = pb::DrawRequest {
                        state: token.to_vec().into(),
                        seat,
                        viewer: None,
                        credential,
                    };
                    let a = client.draw(req).await.map_err(status)?.into_inner();
                    (a.state, a.view)
                }
            }
        }
    };
    Ok((token, view.ok_or("no view")?.state_id, sent))
}
