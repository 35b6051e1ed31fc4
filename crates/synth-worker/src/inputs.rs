//! Job inputs (C1 outputs, vanilla proofs), fetched once per job and kept for its partitions.

use std::sync::{Arc, Mutex};

use snarkflow_circuits::JobInput;
use snarkflow_runtime::{Failure, TaskContext};
use snarkflow_wire::{InputRef, SynthTask};
use tracing::Instrument;

/// Job inputs most recently used, by job id: a job's partitions (10 for a 32 GiB PoRep) mostly
/// land on the same workers, and a 32 GiB C1 output is ~51 MB to fetch and parse.
#[derive(Default)]
pub(crate) struct InputCache {
    recent: Mutex<Vec<(String, Arc<JobInput>)>>,
}

const INPUT_CACHE_ENTRIES: usize = 4;

impl InputCache {
    fn get(&self, job_id: &str) -> Option<Arc<JobInput>> {
        self.recent.lock().expect("input cache lock").iter().find(|(id, _)| id == job_id).map(|(_, i)| i.clone())
    }

    fn put(&self, job_id: &str, input: Arc<JobInput>) {
        let mut recent = self.recent.lock().expect("input cache lock");
        recent.retain(|(id, _)| id != job_id);
        recent.insert(0, (job_id.to_owned(), input));
        recent.truncate(INPUT_CACHE_ENTRIES);
    }

    /// The input `input_ref` names, from the cache or fetched (digest-checked) and parsed.
    pub(crate) async fn input(
        &self,
        task: &SynthTask,
        input_ref: &InputRef,
        cx: &TaskContext,
    ) -> Result<Arc<JobInput>, Failure> {
        if let Some(input) = self.get(&task.job_id) {
            return Ok(input);
        }
        let fetched = snarkflow_runtime::fetch_object(&cx.bus, &input_ref.object, &input_ref.sha256_hex)
            .instrument(snarkflow_runtime::partition_span!("input.fetch", task, cx.host.id, bytes = input_ref.bytes))
            .await
            .map_err(|e| match e {
                Failure::Permanent(reason) => Failure::Permanent(format!("job input: {reason}")),
                transient => transient,
            })?;
        let kind = task.circuit.kind();
        let input = tokio::task::spawn_blocking(move || JobInput::from_bytes(kind, &fetched.data))
            .await
            .map_err(|e| Failure::Permanent(format!("parsing the job input panicked: {e}")))?
            .map_err(|e| Failure::Permanent(e.to_string()))?;
        let input = Arc::new(input);
        self.put(&task.job_id, input.clone());
        Ok(input)
    }
}
