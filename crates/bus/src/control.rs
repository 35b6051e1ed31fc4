//! Control requests over core NATS: the gateway asks every worker of a role at once (one
//! request, every listener's reply to the gateway's inbox); the workers answer. Nothing here
//! is durable: a worker that is down simply does not answer.

use std::time::Duration;

use futures::StreamExt;

use crate::{nats_err, Bus, BusError};

impl Bus {
    /// The control requests arriving on `subject` (a worker's side).
    pub async fn control_requests(&self, subject: &str) -> Result<async_nats::Subscriber, BusError> {
        self.client().subscribe(subject.to_owned()).await.map_err(nats_err(format!("subscribing to {subject}")))
    }

    /// Answer a control request (nothing to do when it asked for no reply).
    pub async fn reply(&self, request: &async_nats::Message, payload: Vec<u8>) -> Result<(), BusError> {
        let Some(to) = request.reply.clone() else {
            return Ok(());
        };
        self.client().publish(to, payload.into()).await.map_err(nats_err("answering a control request"))
    }

    /// Send `payload` to every listener of `subject` and collect the replies: until `expect`
    /// have arrived (when the caller knows how many will) or `window` has passed.
    pub async fn gather(
        &self,
        subject: &str,
        payload: Vec<u8>,
        expect: Option<usize>,
        window: Duration,
    ) -> Result<Vec<Vec<u8>>, BusError> {
        let client = self.client();
        let inbox = client.new_inbox();
        let mut replies =
            client.subscribe(inbox.clone()).await.map_err(nats_err(format!("subscribing to replies on {subject}")))?;
        client
            .publish_with_reply(subject.to_owned(), inbox, payload.into())
            .await
            .map_err(nats_err(format!("sending a control request on {subject}")))?;
        let deadline = tokio::time::Instant::now() + window;
        let mut out = Vec::new();
        while expect.is_none_or(|n| out.len() < n) {
            match tokio::time::timeout_at(deadline, replies.next()).await {
                Ok(Some(message)) => out.push(message.payload.to_vec()),
                Ok(None) | Err(_) => break,
            }
        }
        let _ = replies.unsubscribe().await;
        Ok(out)
    }
}
