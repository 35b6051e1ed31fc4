//! systemd's readiness protocol (`Type=notify`): a datagram to the socket in `$NOTIFY_SOCKET`
//! saying `READY=1` once the service would answer `/readyz` with 200, `STOPPING=1` when it
//! starts to drain. Without `$NOTIFY_SOCKET` (not started by systemd) nothing is sent.

use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

static READY_SENT: AtomicBool = AtomicBool::new(false);

/// Send `state` (`READY=1`, `STOPPING=1`, `STATUS=…`) to systemd, if it is listening.
pub fn notify(state: &str) {
    if let Some(socket) = std::env::var_os("NOTIFY_SOCKET") {
        if let Err(e) = notify_to(Path::new(&socket), state) {
            tracing::warn!(error = %e, "telling systemd {state:?} failed");
        }
    }
}

/// `READY=1`, the first time only: readiness may come and go (a NATS outage), but systemd
/// needs to hear it once.
pub fn notify_ready() {
    if !READY_SENT.swap(true, Ordering::SeqCst) {
        notify("READY=1");
    }
}

/// Send `state` to the datagram socket at `socket` (a path, or `@name` for an abstract one).
pub fn notify_to(socket: &Path, state: &str) -> std::io::Result<()> {
    let sock = UnixDatagram::unbound()?;
    let name = socket.as_os_str().as_encoded_bytes();
    if let Some(abstract_name) = name.strip_prefix(b"@") {
        #[cfg(target_os = "linux")]
        {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(abstract_name)?;
            sock.send_to_addr(state.as_bytes(), &addr)?;
            return Ok(());
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = abstract_name;
            return Err(std::io::Error::other("abstract sockets are Linux only"));
        }
    }
    sock.send_to(state.as_bytes(), socket)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_reaches_the_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let listener = UnixDatagram::bind(&path).unwrap();
        notify_to(&path, "READY=1").unwrap();
        let mut buf = [0u8; 64];
        let n = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");

        let name = format!("@snarkflow-test-{}", std::process::id());
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(&name.as_bytes()[1..]).unwrap();
        let listener = UnixDatagram::bind_addr(&addr).unwrap();
        notify_to(Path::new(&name), "STOPPING=1").unwrap();
        let n = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"STOPPING=1");
    }
}
