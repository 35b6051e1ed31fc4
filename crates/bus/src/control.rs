//! Control requests over core NATS: the gateway asks every worker of a role at once (one
//! request, every listener's reply to the gateway's inbox); the workers answer. Nothing here
//! is durable: a worker that is down simply does not answer.

use std::time::Duration;

use futures::StreamExt;

use crate::{nats_err, Bus, BusError};

impl Bus {
    /// The control requests arriving on `subject` (a worker's side) that `requester` (a role:
    /// `gateway`) sent: those whose reply subject is that role's inbox. Anything else on the
    /// subject is dropped with a warning — notably a JetStream push consumer's delivery
    /// (reply `$JS.ACK.…`): any role allowed to read a stream can create a push consumer
    /// whose deliver subject is a control subject, and the server does not check that subject
    /// against the creator's permissions, so the payload alone proves nothing about who sent it.
    pub async fn control_requests(
        &self,
        subject: &str,
        requester: &str,
    ) -> Result<impl futures::Stream<Item = async_nats::Message> + Unpin + use<>, BusError> {
        let subscriber =
            self.client().subscribe(subject.to_owned()).await.map_err(nats_err(format!("subscribing to {subject}")))?;
        let prefix = format!("{}.", crate::inbox_prefix(requester));
        let subject = subject.to_owned();
        Ok(subscriber.filter(move |m| {
            let from_requester = m.reply.as_ref().is_some_and(|r| r.as_str().starts_with(&prefix));
            if !from_requester {
                tracing::warn!(
                    subject = %subject,
                    reply = m.reply.as_ref().map_or("", |r| r.as_str()),
                    "dropped a control message that is not a request from {prefix}*"
                );
            }
            std::future::ready(from_requester)
        }))
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
