//! `snarkflow admin`: the gateway's API tokens, managed in its tokens file.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use snarkflow_service::tokens::{default_tokens_file, parse_priority, Scope, TokenFile};

#[derive(Debug, Subcommand)]
pub(crate) enum AdminCommand {
    /// API tokens: create (printed once), list, revoke. The gateway notices changes to the
    /// file within a second.
    Token {
        /// The gateway's tokens file (default: `.state/tokens/tokens.json` here if it exists —
        /// the one `just up`'s and compose's gateways read — else `~/.config/snarkflow/tokens.json`).
        #[arg(long, global = true, env = "SNARKFLOW_TOKENS_FILE")]
        tokens_file: Option<PathBuf>,
        #[command(subcommand)]
        command: TokenCommand,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum TokenCommand {
    /// Create a token; the token itself is the last line of output and is not stored.
    Create {
        /// The tenant whose jobs the token submits and sees.
        #[arg(long)]
        tenant: String,
        /// Comma-separated: submit, read, cancel, admin (admin: everything, every tenant).
        #[arg(long, default_value = "submit,read,cancel")]
        scopes: String,
        /// The most urgent priority the token may submit at (low, normal, high, critical).
        #[arg(long, default_value = "normal")]
        max_priority: String,
    },
    /// List tokens (ids, tenants, scopes; never the tokens).
    List,
    /// Revoke a token by its id (the 8 hex digits after `sfk_`).
    Revoke { id: String },
}

/// The tokens file to manage: the one named (flag or `SNARKFLOW_TOKENS_FILE`), else the local
/// stack's `.state/tokens/tokens.json` under `dir` when there is one (the file `just up` and
/// compose-setup.sh give their gateways, so a token made here is one they accept), else the
/// user's default.
fn tokens_file_for(named: Option<PathBuf>, dir: &std::path::Path) -> PathBuf {
    if let Some(path) = named {
        return path;
    }
    let local = dir.join(".state").join("tokens").join("tokens.json");
    if local.exists() {
        return local;
    }
    default_tokens_file()
}

fn scope_names(scopes: &[Scope]) -> String {
    scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(",")
}

pub(crate) fn run(command: AdminCommand) -> anyhow::Result<ExitCode> {
    let AdminCommand::Token { tokens_file, command } = command;
    let path = tokens_file_for(tokens_file, std::path::Path::new("."));
    match command {
        TokenCommand::Create { tenant, scopes, max_priority } => {
            let scopes = Scope::parse_list(&scopes)?;
            let max_priority = parse_priority(&max_priority)?;
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0);
            let (token, record) = TokenFile::update(&path, |file| file.create(&tenant, scopes, max_priority, now_ms))?;
            println!(
                "created token {} for tenant {} (scopes {}, priority up to {}) in {}; it is shown once:",
                record.id,
                record.tenant,
                scope_names(&record.scopes),
                record.max_priority.as_str(),
                path.display()
            );
            println!("{token}");
        }
        TokenCommand::List => {
            let file = TokenFile::load(&path)?;
            println!("{:<10} {:<20} {:<24} {:<10} created", "id", "tenant", "scopes", "priority");
            for t in &file.tokens {
                println!(
                    "{:<10} {:<20} {:<24} {:<10} {}",
                    t.id,
                    t.tenant,
                    scope_names(&t.scopes),
                    t.max_priority.as_str(),
                    t.created_at_ms
                );
            }
        }
        TokenCommand::Revoke { id } => {
            let id = id.trim_start_matches("sfk_").split('_').next().unwrap_or_default().to_owned();
            TokenFile::update(&path, |file| {
                anyhow::ensure!(file.revoke(&id), "no token with id {id:?} in {}", path.display());
                Ok(())
            })?;
            println!("revoked token {id}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_stacks_tokens_file_is_the_default_where_it_exists() {
        let dir = tempfile::tempdir().unwrap();
        let named = PathBuf::from("/somewhere/tokens.json");
        assert_eq!(tokens_file_for(Some(named.clone()), dir.path()), named, "a named file always wins");
        let local = dir.path().join(".state/tokens/tokens.json");
        assert_ne!(tokens_file_for(None, dir.path()), local, "no local stack here");
        std::fs::create_dir_all(dir.path().join(".state/tokens")).unwrap();
        std::fs::write(&local, "{}").unwrap();
        // the file `just up`'s gateway reads (SNARKFLOW_TOKENS_FILE in the Justfile)
        assert_eq!(tokens_file_for(None, dir.path()), local);
        let justfile = include_str!("../../../Justfile");
        assert!(
            justfile.contains(r#"SNARKFLOW_TOKENS_FILE="{{state}}/tokens/tokens.json""#),
            "the Justfile's tokens file moved"
        );
    }
}
