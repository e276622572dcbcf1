//! Real Redis servers for the match store's tests: `redis-server` (Debian's
//! `redis-server` package, 7.0, or Homebrew's `redis`: `bash test.sh` finds or installs
//! it and names it in `REDIS_SERVER` and `REDIS_CLI`, else the PATH's) started on free
//! loopback ports in a temporary folder, alone or as a three-master Redis Cluster,
//! killed when dropped. A machine without `redis-server` fails these tests with what to
//! install: they are never skipped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The program named by the environment variable `var` (set by `test.sh`), else `name`
/// on the PATH.
fn program(var: &str, name: &str) -> Command {
    Command::new(std::env::var_os(var).unwrap_or_else(|| name.into()))
}

fn redis_cli() -> Command {
    program("REDIS_CLI", "redis-cli")
}

/// Running `redis-server` processes, and their folder.
pub struct Redis {
    children: Vec<Child>,
    ports: Vec<u16>,
    /// Each node's own arguments, to start it again as it was.
    args: Vec<Vec<String>>,
    dir: PathBuf,
}

impl Redis {
    /// One standalone server.
    pub fn standalone() -> Redis {
        let mut redis = Redis::empty("standalone");
        redis.spawn(&[]);
        redis
    }

    /// One standalone server that writes every command to its append-only file before
    /// answering it (`appendfsync always`): what it answered survives a `kill -9`.
    pub fn durable() -> Redis {
        let mut redis = Redis::empty("durable");
        redis.spawn(&DURABLE);
        redis
    }

    /// Three masters, every slot covered (`redis-cli --cluster create`).
    pub fn cluster() -> Redis {
        Redis::cluster_with(&[])
    }

    /// Three durable masters ([`Redis::durable`]'s settings).
    pub fn durable_cluster() -> Redis {
        Redis::cluster_with(&DURABLE)
    }

    fn cluster_with(extra: &[&str]) -> Redis {
        let mut redis = Redis::empty("cluster");
        for _ in 0..3 {
            let args = [
                &["--cluster-enabled", "yes", "--cluster-node-timeout", "5000"][..],
                extra,
            ]
            .concat();
            redis.spawn(&args);
        }
        let nodes: Vec<String> = redis
            .ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        let status = redis_cli()
            .args(["--cluster", "create"])
            .args(&nodes)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdout(Stdio::null())
            .status()
            .expect("redis-cli (bash test.sh installs it)");
        assert!(status.success(), "redis-cli --cluster create: {status}");
        // Every node must know the whole cluster (one that does not yet answers a
        // command for a slot it has not heard of CLUSTERDOWN): each says
        // cluster_state:ok with three nodes known.
        // Waited for as an event, not a time; a node that exits meanwhile fails the test.
        while !redis.ports.iter().all(|&port| {
            let info = redis.cli(port, &["cluster", "info"]);
            info.contains("cluster_state:ok") && info.contains("cluster_known_nodes:3")
        }) {
            for (n, child) in redis.children.iter_mut().enumerate() {
                if let Ok(Some(status)) = child.try_wait() {
                    panic!("cluster node {n} exited before the cluster was ok: {status}");
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        redis
    }

    /// Two replicas sharing these servers (standalone, or a cluster) as their match
    /// store, judging turn clocks by `clocks` (a test's: `ServerClock::manual`), taking
    /// the tests' seeds, with `extra` arguments after.
    pub async fn clocked_replicas(
        &self,
        clocks: [&allfives::server_clock::ServerClock; 2],
        extra: &[&str],
    ) -> (super::TestServer, super::TestServer) {
        let urls = self.urls();
        let kind = match self.ports.len() {
            1 => "redis",
            _ => "redis-cluster",
        };
        let mut args = vec![
            "--allow-client-seeds",
            "--match-store",
            kind,
            "--match-store-url",
            &urls,
        ];
        args.extend_from_slice(extra);
        let start = |clock: &allfives::server_clock::ServerClock| {
            super::TestServer::start_clocked(super::ring(1, 1), clock.clone(), &args)
        };
        let one = start(clocks[0]).await;
        let two = start(clocks[1]).await;
        (one, two)
    }

    /// The URLs the server's `--match-store-url` takes, comma-separated.
    pub fn urls(&self) -> String {
        self.ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// What `redis-cli -p PORT ARGS` prints.
    pub fn cli(&self, port: u16, args: &[&str]) -> String {
        let out = redis_cli()
            .args(["-p", &port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli (bash test.sh installs it)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The node (its index) whose slots hold `key`, in a cluster.
    pub fn node_of(&self, key: &str) -> usize {
        let slot: u16 = self
            .cli(self.ports[0], &["cluster", "keyslot", key])
            .trim()
            .parse()
            .expect("a slot");
        let nodes = self.cli(self.ports[0], &["cluster", "nodes"]);
        for line in nodes.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let Some(port) = fields
                .get(1)
                .and_then(|a| a.split('@').next())
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| p.parse::<u16>().ok())
            else {
                continue;
            };
            let holds = fields.iter().skip(8).any(|range| {
                let (lo, hi) = range.split_once('-').unwrap_or((range, range));
                matches!((lo.parse::<u16>(), hi.parse::<u16>()), (Ok(lo), Ok(hi)) if lo <= slot && slot <= hi)
            });
            if holds && let Some(n) = self.ports.iter().position(|&p| p == port) {
                return n;
            }
        }
        panic!("no node holds slot {slot}:\n{nodes}");
    }

    /// The first server's port.
    pub fn port(&self) -> u16 {
        self.ports[0]
    }

    /// Stops every server (a store that went away).
    pub fn stop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills node `n` with SIGKILL (`kill -9`): no chance to write anything more.
    pub fn kill(&mut self, n: usize) {
        let _ = self.children[n].kill();
        let _ = self.children[n].wait();
    }

    /// Starts node `n` again, on its port, from its folder (its append-only file, its
    /// cluster configuration), and waits until it answers.
    pub fn restart(&mut self, n: usize) {
        let port = self.ports[n];
        let args = self.args[n].clone();
        self.children[n] = self.start(port, &args);
    }

    fn empty(kind: &str) -> Redis {
        let dir = std::env::temp_dir().join(format!(
            "allfives-redis-{kind}-{}-{:?}",
            std::process::id(),
            Instant::now()
        ));
        std::fs::create_dir_all(&dir).expect("a folder for redis");
        Redis {
            children: Vec::new(),
            ports: Vec::new(),
            args: Vec::new(),
            dir,
        }
    }

    fn spawn(&mut self, extra: &[&str]) {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let args: Vec<String> = extra.iter().map(|a| a.to_string()).collect();
        let child = self.start(port, &args);
        self.children.push(child);
        self.ports.push(port);
        self.args.push(args);
    }

    fn start(&self, port: u16, extra: &[String]) -> Child {
        let dir = self.dir.join(port.to_string());
        std::fs::create_dir_all(&dir).expect("a node's folder");
        let child = program("REDIS_SERVER", "redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "redis-server could not start ({e}): the match store's tests need \
                     it (`bash test.sh` installs it; or apt-get install redis-server)"
                )
            });
        let mut child = child;
        // Ready once it answers; a server that exits instead (a port taken, a bad
        // argument) fails the test at once. Waited for as an event, not a time.
        while self.cli(port, &["ping"]).trim() != "PONG" {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("redis-server on {port} exited before answering: {status}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        child
    }
}

/// A node that answers a write only once it is in its append-only file on disk.
const DURABLE: [&str; 4] = ["--appendonly", "yes", "--appendfsync", "always"];

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
