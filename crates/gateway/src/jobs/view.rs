//! What `GET /v1/jobs/{id}` returns: the ledger record summarized for clients.

use serde::Serialize;
use snarkflow_wire::{JobRecord, PartitionRecord, ProveStats, SynthStats};
use utoipa::ToSchema;

#[derive(Debug, Serialize, ToSchema)]
pub struct PartitionCounts {
    pub total: u32,
    pub synthesized: u32,
    pub proved: u32,
}

/// Seconds per stage, summed over partitions (`total_s` is wall clock, submit to finish).
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct Timings {
    pub synthesize_s: f64,
    pub serialize_s: f64,
    pub store_s: f64,
    pub queue_wait_s: f64,
    pub fetch_s: f64,
    pub deserialize_s: f64,
    pub rebuild_s: f64,
    pub prove_s: f64,
    pub verify_s: f64,
    pub assemble_s: f64,
    pub total_s: Option<f64>,
}

/// Bytes per hop, summed over partitions.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct Bytes {
    /// Serialized partitions written by synth-workers to the object store.
    pub synth_to_prove: u64,
    /// Bytes gpu-workers fetched (more than `synth_to_prove` after redeliveries).
    pub fetched_by_prover: u64,
    /// Proof bytes returned to the gateway.
    pub proofs: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PartitionView {
    pub index: usize,
    pub synthesized: bool,
    pub proved: bool,
    pub synth: Option<SynthStats>,
    pub prove: Option<ProveStats>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct JobView {
    pub id: String,
    #[schema(value_type = String)]
    pub kind: String,
    pub circuit_id: String,
    #[schema(value_type = String)]
    pub state: &'static str,
    #[schema(value_type = String)]
    pub priority: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub seed: u64,
    pub partitions: PartitionCounts,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub timings: Timings,
    pub bytes: Bytes,
    pub trace_id: Option<String>,
    pub created_at_ms: u64,
    pub finished_at_ms: Option<u64>,
    pub partition_details: Vec<PartitionView>,
}

fn sum(parts: &[PartitionRecord], f: impl Fn(&PartitionRecord) -> Option<f64>) -> f64 {
    parts.iter().filter_map(f).sum()
}

/// What a caller who is not an admin may read of a job's error: the worker ids (which carry
/// host names) become "worker 1", "worker 2", …, and file paths `<path>`. Operators read the
/// full text in the ledger, the logs and the spans.
pub(crate) fn client_error(error: &str, r: &JobRecord) -> String {
    let mut workers: Vec<&str> = Vec::new();
    for p in &r.partitions {
        for w in [p.synth.as_ref().map(|s| s.worker.as_str()), p.prove.as_ref().map(|s| s.worker.as_str())]
            .into_iter()
            .flatten()
        {
            if !w.is_empty() && !workers.contains(&w) {
                workers.push(w);
            }
        }
    }
    let mut text = error.to_owned();
    let mut by_length: Vec<(usize, &str)> = workers.into_iter().enumerate().collect();
    // a worker id inside another is replaced after it
    by_length.sort_by_key(|(_, w)| std::cmp::Reverse(w.len()));
    for (k, w) in by_length {
        text = text.replace(w, &format!("worker {}", k + 1));
    }
    for w in worker_ids_in(&text) {
        text = text.replace(&w, "a worker");
    }
    redact_paths(&text)
}

/// Worker ids of the default form `<role>-<host>-<pid>` in `text` (from reasons naming a worker
/// that left no stats in the record).
fn worker_ids_in(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | ':' | '"' | '\''))
        .filter(|word| {
            let Some((role, rest)) = word.split_once('-') else { return false };
            let pid = rest.rsplit_once('-').map(|(_, pid)| pid);
            matches!(role, "synth" | "gpu" | "gpu-worker" | "synth-worker")
                && pid.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(str::to_owned)
        .collect()
}

/// Absolute paths (a `/` starting a word, followed by at least one more `/`) as `<path>`.
fn redact_paths(text: &str) -> String {
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '~' | '+');
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let starts_word = i == 0 || !(chars[i - 1].is_ascii_alphanumeric() || matches!(chars[i - 1], '.' | '_' | '-'));
        if chars[i] == '/' && starts_word {
            let end = (i..chars.len()).find(|&j| !is_path_char(chars[j])).unwrap_or(chars.len());
            if chars[i + 1..end].contains(&'/') {
                // keep a sentence's full stop
                let end = if end > i + 1 && chars[end - 1] == '.' { end - 1 } else { end };
                out.push_str("<path>");
                i = end;
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

impl JobView {
    /// The record as `caller` may read it: an admin sees everything, a tenant its job without
    /// the names of the machines and files it ran on.
    pub fn for_caller(r: &JobRecord, admin: bool) -> JobView {
        let mut view = JobView::from(r);
        if !admin {
            view.error = view.error.map(|e| client_error(&e, r));
            let mut names: Vec<String> = Vec::new();
            let mut label = |w: &mut String| {
                let k = names.iter().position(|n| n == w).unwrap_or_else(|| {
                    names.push(w.clone());
                    names.len() - 1
                });
                *w = format!("worker {}", k + 1);
            };
            for p in &mut view.partition_details {
                if let Some(s) = p.synth.as_mut() {
                    label(&mut s.worker);
                }
                if let Some(s) = p.prove.as_mut() {
                    label(&mut s.worker);
                }
            }
        }
        view
    }
}

impl From<&JobRecord> for JobView {
    fn from(r: &JobRecord) -> Self {
        let p = &r.partitions;
        let timings = Timings {
            synthesize_s: sum(p, |x| x.synth.as_ref().map(|s| s.synthesize_s)),
            serialize_s: sum(p, |x| x.synth.as_ref().map(|s| s.serialize_s)),
            store_s: sum(p, |x| x.synth.as_ref().map(|s| s.store_s)),
            queue_wait_s: sum(p, |x| x.prove.as_ref().map(|s| s.queue_wait_s)),
            fetch_s: sum(p, |x| x.prove.as_ref().map(|s| s.fetch_s)),
            deserialize_s: sum(p, |x| x.prove.as_ref().map(|s| s.deserialize_s)),
            rebuild_s: sum(p, |x| x.prove.as_ref().map(|s| s.rebuild_s)),
            prove_s: sum(p, |x| x.prove.as_ref().map(|s| s.prove_s)),
            verify_s: sum(p, |x| x.prove.as_ref().map(|s| s.verify_s)),
            assemble_s: r.assemble_s.unwrap_or(0.0),
            total_s: r.finished_at_ms.map(|f| f.saturating_sub(r.created_at_ms) as f64 / 1000.0),
        };
        let bytes = Bytes {
            synth_to_prove: p.iter().filter_map(|x| x.synth.as_ref().map(|s| s.bytes)).sum(),
            fetched_by_prover: p.iter().filter_map(|x| x.prove.as_ref().map(|s| s.bytes_fetched)).sum(),
            proofs: p.iter().filter_map(|x| x.proof_hex.as_ref().map(|h| h.len() as u64 / 2)).sum(),
        };
        JobView {
            id: r.id.clone(),
            kind: r.kind().to_string(),
            circuit_id: r.circuit.circuit_id(),
            state: r.state.as_str(),
            priority: r.priority.as_str(),
            tenant: r.tenant.clone(),
            seed: r.seed,
            partitions: PartitionCounts {
                total: p.len() as u32,
                synthesized: r.synthesized_count(),
                proved: r.proved_count(),
            },
            error: r.error.clone(),
            timings,
            bytes,
            trace_id: r.trace_id.clone(),
            created_at_ms: r.created_at_ms,
            finished_at_ms: r.finished_at_ms,
            partition_details: p
                .iter()
                .enumerate()
                .map(|(index, x)| PartitionView {
                    index,
                    synthesized: x.synthesized,
                    proved: x.proof_hex.is_some(),
                    synth: x.synth.clone(),
                    prove: x.prove.clone(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_hidden_and_ratios_and_words_kept() {
        assert_eq!(
            redact_paths("reading /var/lib/snarkflow/params/x.params: no such file. partition 3/10 and/or 1/2"),
            "reading <path>: no such file. partition 3/10 and/or 1/2"
        );
        assert_eq!(redact_paths("missing /tmp/x/y."), "missing <path>.");
        assert_eq!(redact_paths("at nats://10.0.0.5:4222/x"), "at nats:<path>:4222/x");
        assert_eq!(redact_paths("root / only"), "root / only");
    }

    #[test]
    fn worker_ids_become_numbers_in_the_error_and_the_stats() {
        let mut r = crate::events::apply::tests::record(2);
        r.state = snarkflow_wire::JobState::Failed;
        r.partitions[0].prove = Some(ProveStats { worker: "gpu-node7.dc2-4242".into(), ..ProveStats::default() });
        r.error = Some(
            "partition 1 failed during proving: device lost on gpu-node7.dc2-4242 (was on gpu-node9-77), \
             parameters at /srv/params/p.params"
                .into(),
        );
        let view = JobView::for_caller(&r, false);
        let error = view.error.unwrap();
        assert_eq!(
            error,
            "partition 1 failed during proving: device lost on worker 1 (was on a worker), parameters at <path>"
        );
        assert_eq!(view.partition_details[0].prove.as_ref().unwrap().worker, "worker 1");
        let admin = JobView::for_caller(&r, true);
        assert!(admin.error.unwrap().contains("gpu-node7.dc2-4242"), "admins see the names");
    }
}
