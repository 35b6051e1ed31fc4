//! The JetStream object store: synthesized partitions and the job inputs too large for a
//! message (a C1, a vanilla proof), each stored once under its name and checked by digest on
//! the way out.

use std::time::{Duration, Instant};

use async_nats::jetstream::object_store::{InfoErrorKind, ObjectMetadata};
use base64::Engine as _;
use sha2::{Digest, Sha256};

use crate::{nats_err, Bus, BusError};

/// Longest the stream may take to answer for one chunk (512 KiB) of an object.
const CHUNK_TIMEOUT: Duration = Duration::from_secs(10);

/// Looks at an object that is not there before it is taken to be gone (0.5 s, 1 s, 2 s, 4 s
/// apart: 7.5 s in all).
const NOT_FOUND_LOOKS: u32 = 5;
/// Most bytes reserved before an object's chunks arrive (the buffer grows past it as they do).
const PREALLOCATE_MAX: usize = 64 << 20;

/// The digest an object is stored under and checked against when read: its SHA-256, in hex.
pub fn object_digest(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// What storing an object cost.
#[derive(Debug, Clone)]
pub struct Stored {
    pub bytes: u64,
    pub sha256_hex: String,
    pub seconds: f64,
}

/// The chunks of one upload that no object owns ([`Bus::stray_chunks`]).
#[derive(Debug, Clone)]
pub struct StrayChunks {
    /// Their subject in the object store's stream (`$O.<bucket>.C.<upload id>`).
    pub subject: String,
    /// When the newest of them was written (ms since the epoch).
    pub written_ms: u64,
}

/// A fetched object and what fetching cost.
#[derive(Debug)]
pub struct Fetched {
    pub data: Vec<u8>,
    pub seconds: f64,
}

impl Bus {
    /// Store `data` (a serialized partition or a job input) under `name` (chunked by the
    /// object store).
    ///
    /// A put that would not fit under the store's size limit is refused before anything is
    /// written ([`BusError::Full`]). A put cut off half way (a broker that stops, a connection
    /// lost) leaves chunks no object owns: [`Bus::stray_chunks`] finds them and the gateway's
    /// ledger pass deletes them once they are older than any upload takes.
    pub async fn put_object(&self, name: &str, data: &[u8]) -> Result<Stored, BusError> {
        let started = Instant::now();
        self.check_object_room(name, data.len() as u64).await?;
        let sha256_hex = object_digest(data);
        let meta =
            ObjectMetadata { name: name.to_owned(), chunk_size: Some(self.config.chunk_size), ..Default::default() };
        let mut reader = data;
        self.partitions.put(meta, &mut reader).await.map_err(nats_err(format!("storing partition {name}")))?;
        Ok(Stored { bytes: data.len() as u64, sha256_hex, seconds: started.elapsed().as_secs_f64() })
    }

    /// Bytes the object store holds now, and its limit (`None`: as large as the server allows).
    pub async fn object_store_usage(&self) -> Result<(u64, Option<u64>), BusError> {
        self.object_store_usage_for("measuring the object store").await
    }

    async fn object_store_usage_for(&self, op: &str) -> Result<(u64, Option<u64>), BusError> {
        let stream = format!("OBJ_{}", snarkflow_wire::PARTITIONS_BUCKET);
        let mut stream = self.js().get_stream(&stream).await.map_err(nats_err(op.to_owned()))?;
        let info = stream.info().await.map_err(nats_err(op.to_owned()))?;
        Ok((info.state.bytes, u64::try_from(info.config.max_bytes).ok().filter(|b| *b > 0)))
    }

    /// Refuse an object of `bytes` the store has no room for.
    async fn check_object_room(&self, name: &str, bytes: u64) -> Result<(), BusError> {
        let (used, limit) = self.object_store_usage_for(&format!("storing {name}")).await?;
        let Some(max) = limit else {
            return Ok(());
        };
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
    pub async fn get_object(&self, name: &str, expected_sha256_hex: &str) -> Result<Fetched, BusError> {
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
                    let actual = object_digest(&data);
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
    ///
    /// Chunk by chunk with the stream's message-get API: each chunk is one request answered by
    /// the stream's leader. The client's own object reader delivers chunks through a push
    /// consumer, whose deliveries a cluster can drop while a node restarts (routes learn of
    /// the reader's subscription after the consumer starts sending), leaving a read that never
    /// progresses; a request that goes unanswered here is simply a retryable error.
    async fn read_object(&self, name: &str) -> Result<Option<Vec<u8>>, BusError> {
        let info = match self.partitions.info(name).await {
            Ok(info) if !info.deleted => info,
            Ok(_) => return Ok(None),
            Err(e) if e.kind() == InfoErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(nats_err(format!("fetching partition {name}"))(e)),
        };
        let subject = format!("$O.{}.C.{}", snarkflow_wire::PARTITIONS_BUCKET, info.nuid);
        let api = format!("$JS.API.STREAM.MSG.GET.OBJ_{}", snarkflow_wire::PARTITIONS_BUCKET);
        let op = || format!("reading partition {name}");
        // the size is what the object's writer recorded (another role may forge it): reserve no
        // more than a bounded start, and refuse a read that outgrows it
        let mut data = Vec::with_capacity(info.size.min(PREALLOCATE_MAX));
        let mut next_seq = 1u64;
        for chunk in 0..info.chunks {
            let request = serde_json::json!({ "seq": next_seq, "next_by_subj": subject });
            let request = serde_json::to_vec(&request).expect("JSON serializes");
            let reply = tokio::time::timeout(CHUNK_TIMEOUT, self.client().request(api.clone(), request.into()))
                .await
                .map_err(|_| {
                    nats_err(op())(std::io::Error::other(format!(
                        "chunk {chunk} of {} unanswered within {} s",
                        info.chunks,
                        CHUNK_TIMEOUT.as_secs()
                    )))
                })?
                .map_err(nats_err(op()))?;
            let reply: serde_json::Value = serde_json::from_slice(&reply.payload)
                .map_err(|e| nats_err(op())(std::io::Error::other(format!("unreadable message-get reply: {e}"))))?;
            if let Some(error) = reply.get("error") {
                if error.get("code").and_then(|c| c.as_u64()) == Some(404) {
                    // the object was deleted (or replaced) while being read
                    return Ok(None);
                }
                return Err(nats_err(op())(std::io::Error::other(format!("chunk {chunk}: {error}"))));
            }
            let message = &reply["message"];
            let seq = message["seq"]
                .as_u64()
                .ok_or_else(|| nats_err(op())(std::io::Error::other("a chunk without its sequence")))?;
            if let Some(b64) = message.get("data").and_then(|d| d.as_str()) {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|e| nats_err(op())(std::io::Error::other(format!("chunk {chunk} is not base64: {e}"))))?;
                if data.len() + bytes.len() > info.size {
                    return Err(nats_err(op())(std::io::Error::other(format!(
                        "the object holds more than the {} bytes its record says",
                        info.size
                    ))));
                }
                data.extend_from_slice(&bytes);
            }
            next_seq = seq + 1;
        }
        if data.len() != info.size {
            return Err(nats_err(op())(std::io::Error::other(format!(
                "read {} bytes of the {} the object holds",
                data.len(),
                info.size
            ))));
        }
        Ok(Some(data))
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

    /// Chunks no object owns: what an upload that failed half way left. async-nats writes an
    /// object's chunks under a fresh id, then the metadata that names that id, and leaves the
    /// chunks when a later step fails; so an upload in progress also owns none yet, and only
    /// chunks older than any upload takes are stray for certain.
    pub async fn stray_chunks(&self) -> Result<Vec<StrayChunks>, BusError> {
        use futures::StreamExt as _;
        const OP: &str = "listing the object store's chunks";
        // owners first: an upload that completes between the two listings is then one whose
        // chunks are young, never one whose chunks are listed without their owner
        let mut owned = std::collections::HashSet::new();
        let mut list = self.partitions.list().await.map_err(nats_err(OP))?;
        while let Some(info) = list.next().await {
            owned.insert(info.map_err(nats_err(OP))?.nuid);
        }
        let bucket = snarkflow_wire::PARTITIONS_BUCKET;
        let stream = self.js().get_stream(format!("OBJ_{bucket}")).await.map_err(nats_err(OP))?;
        let prefix = format!("$O.{bucket}.C.");
        let mut subjects = stream.info_with_subjects(format!("{prefix}>")).await.map_err(nats_err(OP))?;
        let mut stray = Vec::new();
        while let Some(entry) = subjects.next().await {
            let (subject, _count) = entry.map_err(nats_err(OP))?;
            if subject.strip_prefix(&prefix).is_none_or(|nuid| owned.contains(nuid)) {
                continue;
            }
            // purged since the listing (by another sweeper, or this one's last pass): not stray
            let newest = match stream.get_last_raw_message_by_subject(&subject).await {
                Ok(newest) => newest,
                Err(e) if e.kind() == async_nats::jetstream::stream::LastRawMessageErrorKind::NoMessageFound => {
                    continue
                }
                Err(e) => return Err(nats_err(OP)(e)),
            };
            let written_ms = (newest.time.unix_timestamp_nanos() / 1_000_000).max(0) as u64;
            stray.push(StrayChunks { subject, written_ms });
        }
        Ok(stray)
    }

    /// Delete stray chunks.
    pub async fn delete_chunks(&self, chunks: &StrayChunks) -> Result<(), BusError> {
        let op = || format!("deleting the chunks {}", chunks.subject);
        let stream =
            self.js().get_stream(format!("OBJ_{}", snarkflow_wire::PARTITIONS_BUCKET)).await.map_err(nats_err(op()))?;
        stream.purge().filter(&chunks.subject).await.map_err(nats_err(op()))?;
        Ok(())
    }

    /// Remove an object once its work is done (or its job is over); a missing one is fine.
    pub async fn delete_object(&self, name: &str) -> Result<(), BusError> {
        match self.partitions.delete(name).await {
            Ok(()) => Ok(()),
            Err(e) if e.to_string().contains("not found") => Ok(()),
            Err(e) => Err(nats_err(format!("deleting partition {name}"))(e)),
        }
    }
}
