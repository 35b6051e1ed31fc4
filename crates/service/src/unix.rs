//! Unix sockets that only the users their mode admits can ever connect to.

use std::path::PathBuf;

use anyhow::Context as _;

/// Bind the Unix socket at `path` with file mode `mode`. It is made in a private directory
/// beside `path`, given its mode, then renamed into place: at no moment can anyone connect
/// whom `mode` shuts out.
pub fn bind_socket(path: &std::path::Path, mode: u32) -> anyhow::Result<tokio::net::UnixListener> {
    use std::os::unix::fs::{DirBuilderExt as _, FileTypeExt as _, PermissionsExt as _};
    // a socket file left by a process that is gone would be in the way
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
        std::fs::remove_file(path).with_context(|| format!("removing the stale socket {}", path.display()))?;
    }
    let name = path.file_name().with_context(|| format!("{} names no file", path.display()))?;
    // (kept short: a socket path has ~107 bytes at most)
    let private = path.with_file_name(format!(".{}.{}", name.to_string_lossy(), std::process::id()));
    let _ = std::fs::remove_dir_all(&private);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&private)
        .with_context(|| format!("creating {} to bind the socket in", private.display()))?;
    let staged = private.join("s");
    let bound = (|| {
        let listener = tokio::net::UnixListener::bind(&staged)
            .with_context(|| format!("binding the socket {}", path.display()))?;
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(mode))
            .with_context(|| format!("setting the mode of {} to {mode:o}", path.display()))?;
        std::fs::rename(&staged, path).with_context(|| format!("moving the socket to {}", path.display()))?;
        Ok(listener)
    })();
    let _ = std::fs::remove_dir_all(&private);
    bound
}

/// A Unix socket's file mode, octal (`660`, `0o600`).
pub fn parse_mode(s: &str) -> Result<u32, BadListen> {
    match u32::from_str_radix(s.trim_start_matches("0o"), 8) {
        Ok(mode) if mode <= 0o777 => Ok(mode),
        _ => Err(BadListen::Mode(s.to_owned())),
    }
}

/// A listen address or socket mode a service cannot use.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BadListen {
    #[error("{0:?}: a Unix socket is unix:///absolute/path")]
    RelativeSocket(String),
    #[error("{0:?} is neither host:port (an IP address) nor unix:///path")]
    Neither(String),
    #[error("{0:?} is not an octal file mode such as 660")]
    Mode(String),
}

/// Where a service listens: `host:port`, or `unix:///path/to.sock`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    Tcp(std::net::SocketAddr),
    Unix(PathBuf),
}

impl std::str::FromStr for Listen {
    type Err = BadListen;

    fn from_str(s: &str) -> Result<Self, BadListen> {
        if let Some(path) = s.strip_prefix("unix://") {
            if !path.starts_with('/') {
                return Err(BadListen::RelativeSocket(s.to_owned()));
            }
            return Ok(Listen::Unix(PathBuf::from(path)));
        }
        s.parse().map(Listen::Tcp).map_err(|_| BadListen::Neither(s.to_owned()))
    }
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::Tcp(addr) => write!(f, "{addr}"),
            Listen::Unix(path) => write!(f, "unix://{}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_parse() {
        assert_eq!("127.0.0.1:9820".parse::<Listen>().unwrap(), Listen::Tcp("127.0.0.1:9820".parse().unwrap()));
        assert_eq!(
            "unix:///run/curio/cuzk.sock".parse::<Listen>().unwrap(),
            Listen::Unix("/run/curio/cuzk.sock".into())
        );
        assert!("unix://relative.sock".parse::<Listen>().is_err());
        assert_eq!("localhost:9820".parse::<Listen>(), Err(BadListen::Neither("localhost:9820".into())));
    }

    #[test]
    fn socket_modes_are_octal() {
        assert_eq!(parse_mode("660").unwrap(), 0o660);
        assert_eq!(parse_mode("0o600").unwrap(), 0o600);
        assert!(parse_mode("999").is_err());
        assert!(parse_mode("1777").is_err());
    }

    #[tokio::test]
    async fn the_socket_has_the_mode_asked_for() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cuzk.sock");
        for mode in [0o600, 0o660] {
            let _listener = bind_socket(&path, mode).unwrap();
            let got = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(got, mode, "socket mode {got:o}, asked for {mode:o}");
        }
    }
}
