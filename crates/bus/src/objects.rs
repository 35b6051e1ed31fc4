//! Synthesized partitions in the JetStream object store.

use std::time::Instant;

use async_nats::jetstream::object_store::{GetErrorKind, ObjectMetadata};
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

use crate::{nats_err, Bus, BusError};

/// What storing a partition cost.
#[derive(Debug, Clone)]
pub struct Stored {
    pub bytes: u64,
    pub sha256_hex: String,
    pub seconds: f64,
}

/// A fetched partition and what fetching cost.
#[derive(Debug)]
pub struct Fetched {
    pub data: Vec<u8>,
    pub seconds: f64,
}

impl Bus {
    /// Store a serialized partition under `name` (chunked by the object store).
    pub async fn put_partition(&self, name: &str, data: &[u8]) -> Result<Stored, BusError> {
        let started = Instant::now();
        let sha256_hex = hex::encode(Sha256::digest(data));
        let meta =
            ObjectMetadata { name: name.to_owned(), chunk_size: Some(self.config.chunk_size), ..Default::default() };
        let mut reader = data;
        self.partitions.put(meta, &mut reader).await.map_err(nats_err(format!("storing partition {name}")))?;
        Ok(Stored { bytes: data.len() as u64, sha256_hex, seconds: started.elapsed().as_secs_f64() })
    }

    /// Fetch a partition and check it against the digest its producer announced; a
    /// mismatch is [`BusError::Corrupt`] and nothing downstream sees the bytes.
    pub async fn get_partition(&self, name: &str, expected_sha256_hex: &str) -> Result<Fetched, BusError> {
        let started = Instant::now();
        let mut object = match self.partitions.get(name).await {
            Ok(o) => o,
            Err(e) if e.kind() == GetErrorKind::NotFound => return Err(BusError::NotFound(name.to_owned())),
            Err(e) => return Err(nats_err(format!("fetching partition {name}"))(e)),
        };
        let mut data = Vec::with_capacity(object.info().size);
        object
            .read_to_end(&mut data)
            .await
            .map_err(|e| BusError::Corrupt { object: name.to_owned(), reason: format!("reading failed: {e}") })?;
        let actual = hex::encode(Sha256::digest(&data));
        if actual != expected_sha256_hex {
            return Err(BusError::Corrupt {
                object: name.to_owned(),
                reason: format!("sha256 {actual} differs from the announced {expected_sha256_hex}"),
            });
        }
        Ok(Fetched { data, seconds: started.elapsed().as_secs_f64() })
    }

    /// Remove a partition once it is proved (or its job is over); a missing one is fine.
    pub async fn delete_partition(&self, name: &str) -> Result<(), BusError> {
        match self.partitions.delete(name).await {
            Ok(()) => Ok(()),
            Err(e) if e.to_string().contains("not found") => Ok(()),
            Err(e) => Err(nats_err(format!("deleting partition {name}"))(e)),
        }
    }
}
