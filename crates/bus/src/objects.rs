//! Synthesized partitions in the JetStream object store.

use std::time::{Duration, Instant};

use async_nats::jetstream::object_store::{GetErrorKind, ObjectMetadata};
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

use crate::{nats_err, Bus, BusError};

/// Every object read may take this long, plus a second per [`READ_FLOOR_BYTES_PER_SEC`].
const READ_GRACE: Duration = Duration::from_secs(30);
/// The slowest read rate taken for a working connection (a 16.7 GB raw 32 GiB partition gets
/// about 7 minutes).
const READ_FLOOR_BYTES_PER_SEC: u64 = 50 << 20;

/// Looks at an object that is not there before it is taken to be gone (0.5 s, 1 s, 2 s, 4 s
/// apart: 7.5 s in all).
const NOT_FOUND_LOOKS: u32 = 5;

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
    ///
    /// A put that would not fit under the store's size limit is refused before anything is
    /// written ([`BusError::Full`]): a put the server cuts off half way leaves chunks no name
    /// points at, which only the store's age limit removes.
    pub async fn put_partition(&self, name: &str, data: &[u8]) -> Result<Stored, BusError> {
        let started = Instant::now();
        self.check_object_room(name, data.len() as u64).await?;
        let sha256_hex = hex::encode(Sha256::digest(data));
        let meta =
            ObjectMetadata { name: name.to_owned(), chunk_size: Some(self.config.chunk_size), ..Default::default() };
        let mut reader = data;
        self.partitions.put(meta, &mut reader).await.map_err(nats_err(format!("storing partition {name}")))?;
        Ok(Stored { bytes: data.len() as u64, sha256_hex, seconds: started.elapsed().as_secs_f64() })
    }

    /// Refuse an object of `bytes` the store has no room for.
    async fn check_object_room(&self, name: &str, bytes: u64) -> Result<(), BusError> {
        let stream = format!("OBJ_{}", snarkflow_wire::PARTITIONS_BUCKET);
        let op = format!("storing {name}");
        let info = self
            .js()
            .get_stream(&stream)
            .await
            .map_err(nats_err(op.clone()))?
            .info()
            .await
            .map_err(nats_err(op))?
            .clone();
        let Ok(max) = u64::try_from(info.config.max_bytes) else {
            return Ok(()); // -1: no limit
        };
        let used = info.state.bytes;
        if used.saturating_add(bytes) > max {
            return Err(BusError::Full(format!(
                "the object store is full: {name} ({bytes} bytes) does not fit beside the {used} bytes it holds (limit {max} bytes, --nats-max-object-bytes); space returns as jobs finish"
            )));
        }
        Ok(())
    }

    /// Fetch a partition and check it against the digest its producer announced; a
    /// mismatch is [`BusError::Corrupt`] and nothing downstream sees the bytes.
    ///
    /// Neither verdict is given on one look. In a cluster, an object written a moment ago can
    /// be missing on the replica that answers (reads go to any replica), so "not found" is
    /// only believed after it persists for a few seconds; and an object being replaced (a
    /// redelivered synthesis storing the same partition again drops the old chunks) can read
    /// short, so a digest mismatch is only believed when a second read agrees.
    pub async fn get_partition(&self, name: &str, expected_sha256_hex: &str) -> Result<Fetched, BusError> {
        let started = Instant::now();
        let mut missing_for = 0;
        let mut mismatches = 0;
        loop {
            match self.read_object(name).await? {
                None if missing_for + 1 < NOT_FOUND_LOOKS => {
                    tokio::time::sleep(Duration::from_millis(500) * (1 << missing_for)).await;
                    missing_for += 1;
                }
                None => return Err(BusError::NotFound(name.to_owned())),
                Some(data) => {
                    let actual = hex::encode(Sha256::digest(&data));
                    if actual == expected_sha256_hex {
                        return Ok(Fetched { data, seconds: started.elapsed().as_secs_f64() });
                    }
                    mismatches += 1;
                    if mismatches >= 2 {
                        return Err(BusError::Corrupt {
                            object: name.to_owned(),
                            reason: format!("sha256 {actual} differs from the announced {expected_sha256_hex}"),
                        });
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }

    /// One read of an object; `None` when it is not there.
    async fn read_object(&self, name: &str) -> Result<Option<Vec<u8>>, BusError> {
        let mut object = match self.partitions.get(name).await {
            Ok(o) => o,
            Err(e) if e.kind() == GetErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(nats_err(format!("fetching partition {name}"))(e)),
        };
        let size = object.info().size;
        // A read that breaks off is the connection's fault, not the object's: retryable. The
        // client creates its chunk consumer lazily inside the read and unwraps that (a request
        // timing out while a cluster elects a leader panics), so the read runs in a task of its
        // own where a panic is an error like any other, and it is bounded in time.
        let limit = READ_GRACE + Duration::from_secs(size as u64 / READ_FLOOR_BYTES_PER_SEC);
        let mut read = tokio::spawn(async move {
            let mut data = Vec::with_capacity(size);
            object.read_to_end(&mut data).await.map(|_| data)
        });
        match tokio::time::timeout(limit, &mut read).await {
            Ok(Ok(Ok(data))) => Ok(Some(data)),
            Ok(Ok(Err(e))) => Err(nats_err(format!("reading partition {name}"))(e)),
            Ok(Err(join)) => Err(nats_err(format!("reading partition {name}"))(std::io::Error::other(format!(
                "the NATS client failed mid-read: {join}"
            )))),
            Err(_) => {
                read.abort();
                Err(nats_err(format!("reading partition {name}"))(std::io::Error::other(format!(
                    "no progress within {} s",
                    limit.as_secs()
                ))))
            }
        }
    }

    /// Names of the objects in the store (partitions and job inputs), for checks that nothing
    /// is left behind.
    pub async fn object_names(&self) -> Result<Vec<String>, BusError> {
        Ok(self.objects().await?.into_iter().map(|(name, _)| name).collect())
    }

    /// The objects in the store with when each was last written (ms since the epoch).
    pub async fn objects(&self) -> Result<Vec<(String, u64)>, BusError> {
        use futures::StreamExt as _;
        let mut list = self.partitions.list().await.map_err(nats_err("listing objects"))?;
        let mut objects = Vec::new();
        while let Some(info) = list.next().await {
            let info = info.map_err(nats_err("listing objects"))?;
            let modified_ms = info.modified.map(|t| (t.unix_timestamp_nanos() / 1_000_000).max(0) as u64).unwrap_or(0);
            objects.push((info.name, modified_ms));
        }
        Ok(objects)
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
