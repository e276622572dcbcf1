//! Types invite codes through a server (or a gateway in front of replicas with a match
//! store) as a guesser would: up to `--calls` wrong codes, one after the other without
//! pause, from the local address `--from` (any 127.x.y.z on loopback, so that a gateway
//! sees several clients on one machine), stopping at the first call refused
//! `RESOURCE_EXHAUSTED`. Prints one line: the calls answered `INVITE_NOT_FOUND`, then
//! the refusal's reason, `limit` and message, or `refused none`. Any other answer is a
//! failure (exit status 1).
//!
//! `cargo run --example invite_probe -- --addr http://127.0.0.1:8080 --calls 100`
//!
//! CI's gateway test (`.ci/gateway-test`) floods nginx with it from one address until
//! the gateway's `limit_req` refuses (RESOURCE_EXHAUSTED INVITE_RATE_LIMITED,
//! `limit` client), then shows a call from another address answered by a replica.

use std::net::IpAddr;
use std::process::ExitCode;

use allfives::proto::v1 as pb;
use allfives::proto::v1::all_fives_service_client::AllFivesServiceClient;
use clap::Parser;

mod common;
use tonic::transport::Endpoint;
use tonic_types::StatusExt;

/// Type wrong invite codes through a server or gateway until refused.
#[derive(Parser, Debug)]
#[command(name = "invite_probe")]
struct Args {
    /// Server (or gateway) address: `http://host:port`.
    #[arg(long, default_value = "http://127.0.0.1:50051")]
    addr: String,
    /// The local address to connect from (the client the gateway sees).
    #[arg(long)]
    from: Option<IpAddr>,
    /// The most calls to make.
    #[arg(long, default_value_t = 1)]
    calls: u32,
}

async fn probe(args: Args) -> Result<String, String> {
    let addr = &args.addr;
    let channel = Endpoint::from_shared(addr.clone())
        .map_err(|e| format!("address {addr}: {e}"))?
        .local_address(args.from)
        .connect()
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    let mut client = AllFivesServiceClient::new(channel);
    let mut answered = 0;
    for guess in 0..args.calls {
        // Twelve digits: a code of the alphabet, almost surely nobody's.
        let code = format!("{guess:012}");
        let status = match client
            .open_invite_code(pb::OpenInviteCodeRequest { code })
            .await
        {
            Ok(_) => return Err(format!("call {}: a wrong code opened a match", guess + 1)),
            Err(status) => status,
        };
        let details = status.get_error_details();
        let info = details.error_info();
        let reason = info.map_or("", |i| i.reason.as_str());
        match (status.code(), reason) {
            (tonic::Code::NotFound, "INVITE_NOT_FOUND") => answered += 1,
            (tonic::Code::ResourceExhausted, _) => {
                let limit = info
                    .and_then(|i| i.metadata.get("limit"))
                    .map_or("none", String::as_str);
                return Ok(format!(
                    "answered {answered}, then refused RESOURCE_EXHAUSTED {reason} \
                     limit={limit}: {}",
                    status.message()
                ));
            }
            _ => return Err(format!("call {}: {status:?}", guess + 1)),
        }
    }
    Ok(format!("answered {answered}, refused none"))
}

#[tokio::main]
async fn main() -> ExitCode {
    common::reported("invite_probe", probe(Args::parse()).await)
}
