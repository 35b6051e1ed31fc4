//! The chaos test's services: child processes the driver kills and restarts.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

/// A service run as a child process that the driver kills and restarts; its output (info
/// level, every life of it) goes to `<logs>/<name>.log`, read back for a job that is lost.
pub(super) struct Service {
    pub(super) name: String,
    bin: PathBuf,
    args: Vec<String>,
    log: PathBuf,
    child: Option<Child>,
}

impl Service {
    pub(super) fn new(name: &str, bin: PathBuf, args: Vec<String>, logs: &Path) -> Service {
        let log = logs.join(format!("{name}.log"));
        let mut service = Service { name: name.into(), bin, args, log, child: None };
        service.start();
        service
    }

    pub(super) fn start(&mut self) {
        if self.child.is_none() {
            let log = || std::fs::OpenOptions::new().create(true).append(true).open(&self.log).expect("service log");
            let child = Command::new(&self.bin)
                .args(&self.args)
                .env("RUST_LOG", "info")
                .env("NO_COLOR", "1")
                .stdout(log())
                .stderr(log())
                .spawn()
                .unwrap_or_else(|e| panic!("start {}: {e}", self.bin.display()));
            self.child = Some(child);
        }
    }

    /// If the process ended by itself (a worker stops on a fatal condition and leaves the
    /// restart to its supervisor), start it again as the supervisor would; true if it had.
    pub(super) fn supervise(&mut self) -> bool {
        let exited = self.child.as_mut().is_some_and(|c| c.try_wait().ok().flatten().is_some());
        if exited {
            self.child = None;
            self.start();
        }
        exited
    }

    /// SIGKILL: no drain, no goodbye.
    pub(super) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A service binary: `SNARKFLOW_CHAOS_BIN_DIR/<name>` when set, else the one cargo built.
pub(super) fn service_bin(name: &str, built: &str) -> PathBuf {
    match std::env::var_os("SNARKFLOW_CHAOS_BIN_DIR") {
        Some(dir) => Path::new(&dir).join(name),
        None => PathBuf::from(built),
    }
}

pub(super) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
