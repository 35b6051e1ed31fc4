//! Reading a durable consumer's messages, shared by the event loop and the dead-letter loop.

use std::time::Duration;

use futures::StreamExt as _;
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// The next message of a durable consumer's stream; `None` on shutdown; an error once the
/// stream has ended (the caller starts over). Errors on the way (a missed heartbeat while NATS
/// moves a leader) are logged and waited out.
pub(crate) async fn next_message(
    messages: &mut async_nats::jetstream::consumer::pull::Stream,
    shutdown: &CancellationToken,
    what: &str,
) -> anyhow::Result<Option<snarkflow_bus::Message>> {
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(None),
            next = messages.next() => match next {
                Some(Ok(msg)) => return Ok(Some(msg)),
                Some(Err(e)) => {
                    warn!(error = %e, "{what} stream error; continuing");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                None => anyhow::bail!("the {what} stream ended"),
            },
        }
    }
}
