//! Fanning a job out into one synthesis task per partition, in a way that survives the
//! gateway stopping half way: the record is written first with `enqueued: false`, every task
//! carries its message id (JetStream drops a repeat within the duplicate window), and only
//! then is the record marked enqueued. A record still not enqueued is finished by whoever
//! sees it next: an idempotent retry of the submit, or the ledger pass.

use snarkflow_bus::{Bus, BusError, Ledger};
use snarkflow_wire::{self as wire, JobRecord, SynthTask, SCHEMA_VERSION};

/// Publish every partition's synthesis task of `record`, then mark it enqueued.
pub(crate) async fn publish_tasks(bus: &Bus, ledger: &Ledger, record: &JobRecord) -> Result<(), BusError> {
    let partitions = record.partitions.len() as u32;
    for partition in 0..partitions {
        let task = SynthTask {
            schema: SCHEMA_VERSION,
            job_id: record.id.clone(),
            circuit: record.circuit.clone(),
            priority: record.priority,
            seed: record.seed,
            partition,
            partitions,
            input: record.input.clone(),
        };
        let msg_id = wire::partition_msg_id(wire::Stage::Synthesis, &record.id, partition);
        bus.publish(wire::synth_subject(record.priority), wire::encode(&task), Some(&msg_id)).await?;
    }
    ledger
        .update(&record.id, |r| {
            let change = !r.enqueued;
            r.enqueued = true;
            change
        })
        .await?;
    Ok(())
}
