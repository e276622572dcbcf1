//! The `allfives` server binary: configuration, logging, key rings, runtime, then
//! [`allfives::server::run`] until SIGTERM or ctrl-c, with the metrics endpoint
//! ([`allfives::metrics::serve_metrics`]) beside it until the gRPC server has drained.

use std::process::ExitCode;
use std::sync::Arc;

use allfives::config::Config;
use allfives::metrics::{self, Metrics};
use allfives::server;
use clap::Parser;

/// Exit code for configuration errors (as clap uses for bad flags).
const EXIT_CONFIG: u8 = 2;

fn main() -> ExitCode {
    let config = Config::parse();
    server::init_tracing(&config);
    if let Err(error) = config.check_clocks() {
        tracing::error!(%error, "bad clock configuration");
        return ExitCode::from(EXIT_CONFIG);
    }

    if config.print_result_jwks {
        return match config.result_keys() {
            Ok(keys) if keys.is_ephemeral() => {
                tracing::error!(
                    "--print-result-jwks needs --result-keys or --result-keys-file: a random \
                     key's set would verify nothing"
                );
                ExitCode::from(EXIT_CONFIG)
            }
            Ok(keys) => {
                println!("{}", keys.jwks_json());
                ExitCode::SUCCESS
            }
            Err(error) => {
                tracing::error!(%error, "bad result key configuration");
                ExitCode::from(EXIT_CONFIG)
            }
        };
    }

    let ring = match config.key_ring() {
        Ok(ring) => Arc::new(ring),
        Err(error) => {
            tracing::error!(%error, "bad key configuration");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    let results = match config.result_keys() {
        Ok(keys) => Arc::new(keys),
        Err(error) => {
            tracing::error!(%error, "bad result key configuration");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    // Checked here to stop at start with the configuration's exit status; the server
    // reads them again as it starts (as a server started from the library does).
    let pass_key_ids = match config.passes_beside(&results) {
        Ok(passes) => passes.map(|p| p.key_ids().map(str::to_owned).collect::<Vec<_>>()),
        Err(error) => {
            tracing::error!(%error, "bad pass key configuration");
            return ExitCode::from(EXIT_CONFIG);
        }
    };

    // Sized on purpose: the CPUs this process may use (cgroup quota included), unless
    // told otherwise.
    let workers = match (config.current_thread, config.worker_threads) {
        (true, _) => 1,
        (false, Some(n)) => usize::from(n),
        (false, None) => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    // Multi-thread by default, with the workers above; current-thread on request
    // (`--current-thread`: docs/PERFORMANCE.md, "Runtimes").
    let mut builder = if config.current_thread {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(workers);
        builder
    };
    let runtime = match builder.thread_name("allfives-worker").enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(%error, "cannot start the tokio runtime");
            return ExitCode::FAILURE;
        }
    };

    runtime.block_on(async {
        let listener = match tokio::net::TcpListener::bind(config.addr).await {
            Ok(listener) => listener,
            Err(error) => {
                tracing::error!(%error, addr = %config.addr, "cannot listen");
                return ExitCode::FAILURE;
            }
        };
        let addr = listener.local_addr().map_or(config.addr, |a| a);
        let metrics_listener = match config.metrics_addr {
            None => None,
            Some(metrics_addr) => match tokio::net::TcpListener::bind(metrics_addr).await {
                Ok(listener) => Some(listener),
                Err(error) => {
                    tracing::error!(%error, addr = %metrics_addr, "cannot listen for metrics");
                    return ExitCode::FAILURE;
                }
            },
        };
        let metrics_addr = metrics_listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
            .map(|a| a.to_string());
        tracing::info!(
            %addr,
            metrics_addr = metrics_addr.as_deref().unwrap_or("off"),
            active_key_id = ring.active_id(),
            key_ids = ?ring.ids().collect::<Vec<_>>(),
            ephemeral_key = ring.is_ephemeral(),
            result_key_ids = ?results.ids().collect::<Vec<_>>(),
            result_kid = results.signing_kid(),
            ephemeral_result_key = results.is_ephemeral(),
            pass_key_ids = ?pass_key_ids,
            workers,
            current_thread = config.current_thread,
            max_connections = config.max_connections,
            version = env!("CARGO_PKG_VERSION"),
            "serving"
        );
        let metrics = Arc::new(Metrics::new());
        // The metrics endpoint outlives the gRPC server's drain, so the last scrapes
        // see the calls it finished; it stops when the server returns.
        let (grpc_done, grpc_stopped) = tokio::sync::oneshot::channel::<()>();
        let metrics_task = metrics_listener.map(|listener| {
            let stopped = async {
                let _ = grpc_stopped.await;
            };
            tokio::spawn(metrics::serve_metrics(
                listener,
                Arc::clone(&metrics),
                stopped,
            ))
        });
        let result = server::run(
            listener,
            &config,
            ring,
            results,
            metrics,
            server::shutdown_signal(),
        )
        .await;
        drop(grpc_done);
        if let Some(task) = metrics_task {
            let _ = task.await;
        }
        match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                tracing::error!(%error, "server failed");
                ExitCode::FAILURE
            }
        }
    })
}
