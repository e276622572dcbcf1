//! The real binary as a child process on a free loopback port, for tests that attack
//! the process itself (its memory, its connections) or that must be run against
//! another build to see an attack succeed without the defences.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The binary under test: `ALLFIVES_ATTACKED_BINARY` if set (another build, say the
/// one before a fix), else the one `cargo test` built.
pub fn binary() -> OsString {
    std::env::var_os("ALLFIVES_ATTACKED_BINARY")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_allfives").into())
}

/// A running server binary, killed when dropped.
pub struct ChildServer {
    pub child: Child,
    pub addr: SocketAddr,
}

impl ChildServer {
    /// Starts [`binary`] with these flags (after `--addr` and `--metrics-addr off`).
    /// Its log is kept in `log` (filter `ALLFIVES_LOG` from the environment, `warn`
    /// if unset), or thrown away at level `error` if `log` is `None`.
    pub fn start(args: &[&str], log: Option<PathBuf>) -> ChildServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut command = Command::new(binary());
        command
            .args(["--addr", &addr.to_string(), "--metrics-addr", "off"])
            .args(args);
        match &log {
            Some(path) => {
                let file = std::fs::File::create(path).expect("the server's log file");
                let again = file.try_clone().expect("the server's log file");
                if std::env::var_os("ALLFIVES_LOG").is_none() {
                    command.env("ALLFIVES_LOG", "warn");
                }
                command.stdout(file).stderr(again);
            }
            None => {
                command
                    .env("ALLFIVES_LOG", "error")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null());
            }
        }
        let child = command.spawn().expect("start the server");
        ChildServer { child, addr }
    }

    /// The server's resident memory now and at its peak, in KiB.
    pub fn rss_kib(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("/proc status");
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        (field("VmRSS:"), field("VmHWM:"))
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
