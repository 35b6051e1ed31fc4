//! Test harness for snarkflow's integration tests: [`NatsServer`] starts a real
//! `nats-server` with JetStream on a free loopback port, its own store directory and a fixed
//! storage limit, killed on drop.
//!
//! The binary is `$NATS_SERVER_BIN` if set, else `nats-server` on `PATH` (Debian:
//! `apt-get install nats-server`).
//!
//! Also: [`NatsServer::start_with_config`] (users, permissions, TLS from a test's own
//! configuration), [`NatsCluster`] (several nodes routed together), [`params_dir`] (the Groth16
//! test parameters shared by every test run on the machine), and [`pki`] (a throwaway CA and
//! certificates for TLS tests).

pub mod pki;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running nats-server with JetStream, owned by one test.
pub struct NatsServer {
    child: Option<Child>,
    port: u16,
    /// The JetStream store (`nats.conf` names it), removed when the server is dropped.
    _store: tempfile::TempDir,
    /// The configuration directory with `nats.conf` (JetStream's store and limit; users,
    /// permissions, TLS where a test gives them).
    config: tempfile::TempDir,
}

/// The JetStream storage a test server reserves limits from (nats-server accepts more than
/// the disk holds; only what is written takes space).
pub const TEST_MAX_FILE_STORE: u64 = 1 << 40;

fn binary() -> PathBuf {
    std::env::var_os("NATS_SERVER_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("nats-server"))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free loopback port")
}

impl NatsServer {
    /// Start a server; panics with install instructions when the binary is missing.
    ///
    /// Its JetStream storage is set to [`TEST_MAX_FILE_STORE`] rather than the server's
    /// default of 75% of the free disk: the services reserve their stream limits (~7 GiB by
    /// default) from it, and on a machine whose disk the build has nearly filled the default
    /// refuses them although the tests write a few megabytes.
    pub fn start() -> NatsServer {
        NatsServer::start_with_max_store(TEST_MAX_FILE_STORE)
    }

    /// Start a server whose JetStream storage is `max_file_store` bytes (the limit the
    /// server reserves stream limits from; without one it takes 75% of the free disk).
    pub fn start_with_max_store(max_file_store: u64) -> NatsServer {
        let store = tempfile::tempdir().expect("temporary store directory");
        let config = tempfile::tempdir().expect("temporary config directory");
        let text = format!(
            "jetstream {{\n  store_dir: {:?}\n  max_file_store: {max_file_store}\n}}\n",
            store.path().display().to_string()
        );
        std::fs::write(config.path().join("nats.conf"), text).expect("writing the nats-server configuration");
        let mut server = NatsServer { child: None, port: free_port(), _store: store, config };
        server.spawn();
        server
    }

    /// Start a server from configuration files (`(name, text)`; one named `nats.conf`, which
    /// may include the others). The harness adds the JetStream block with its own store
    /// directory, so the configuration must not have one; address and port are the harness's.
    pub fn start_with_config(files: &[(&str, String)]) -> NatsServer {
        let store = tempfile::tempdir().expect("temporary store directory");
        let config = tempfile::tempdir().expect("temporary config directory");
        for (name, text) in files {
            let text = if *name == "nats.conf" {
                let store = store.path().display().to_string();
                format!("jetstream {{\n  store_dir: {store:?}\n  max_file_store: {TEST_MAX_FILE_STORE}\n}}\n{text}")
            } else {
                text.clone()
            };
            std::fs::write(config.path().join(name), text).expect("writing the nats-server configuration");
        }
        assert!(config.path().join("nats.conf").exists(), "start_with_config needs a nats.conf");
        let mut server = NatsServer { child: None, port: free_port(), _store: store, config };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let mut command = Command::new(binary());
        let config = self.config.path().join("nats.conf");
        command.arg("-c").arg(config).args(["-a", "127.0.0.1", "-p", &self.port.to_string()]);
        let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap_or_else(|e| {
            panic!(
                "cannot start {:?} ({e}); install it with `apt-get install nats-server` or set NATS_SERVER_BIN",
                binary()
            )
        });
        self.child = Some(child);
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let deadline = Instant::now() + Duration::from_secs(15);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(Instant::now() < deadline, "nats-server did not listen on {addr} within 15 s");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Stop the server (its store survives).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stop and start again on the same port and store: a broker restart.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }
}

/// A JetStream cluster of nats-servers on loopback, each with its own store; nodes can be
/// killed and restarted one at a time.
pub struct NatsCluster {
    pub nodes: Vec<NatsServer>,
}

impl NatsCluster {
    /// Start `size` nodes (3 for a cluster that survives the loss of one).
    pub fn start(size: usize) -> NatsCluster {
        let routes: Vec<u16> = (0..size).map(|_| free_port()).collect();
        let route_list =
            routes.iter().map(|p| format!("\"nats-route://127.0.0.1:{p}\"")).collect::<Vec<_>>().join(", ");
        let nodes = routes
            .iter()
            .enumerate()
            .map(|(i, port)| {
                let conf = format!(
                    "server_name: node-{i}\ncluster {{\n  name: snarkflow-test\n  listen: 127.0.0.1:{port}\n  routes: [{route_list}]\n}}\n"
                );
                NatsServer::start_with_config(&[("nats.conf", conf)])
            })
            .collect();
        NatsCluster { nodes }
    }

    /// Every node's URL, comma-separated (what the services' `--nats-url` takes).
    pub fn url(&self) -> String {
        self.nodes.iter().map(NatsServer::url).collect::<Vec<_>>().join(",")
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The directory of Groth16 test parameters shared by every test run on this machine:
/// `$SNARKFLOW_TEST_PARAMS_DIR` if set, else `~/.cache/snarkflow/test-params`, so the random
/// Filecoin test parameters (1.1 GB for 2 KiB PoRep) are generated once per machine.
pub fn params_dir() -> PathBuf {
    let dir = std::env::var_os("SNARKFLOW_TEST_PARAMS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| dirs::cache_dir().unwrap_or_else(std::env::temp_dir).join("snarkflow").join("test-params"));
    std::fs::create_dir_all(&dir).expect("test params dir");
    // every parameter file here is random (made for tests), including ones an older snarkflow
    // wrote before it marked them: mark them, or new ones would be refused beside them
    for entry in std::fs::read_dir(&dir).expect("test params dir").flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("v28-") && name.ends_with(".params") && !path.with_extension("random").exists() {
            let _ = std::fs::write(path.with_extension("random"), b"random test parameters\n");
        }
    }
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_listens_and_restarts_on_the_same_port() {
        let mut server = NatsServer::start();
        let addr: SocketAddr = server.url().trim_start_matches("nats://").parse().unwrap();
        assert!(TcpStream::connect(addr).is_ok());
        server.stop();
        assert!(TcpStream::connect(addr).is_err());
        server.restart();
        assert!(TcpStream::connect(addr).is_ok());
    }
}
