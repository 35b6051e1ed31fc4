//! Listing and the ledger pass at scale: N job records in a real nats-server's ledger, read
//! the way the gateway did before its index (every record, for each listing and each pass)
//! and through the index (read once, then kept current by a watch).
//!
//! `cargo run --release -p snarkflow-gateway --example ledger_scale -- 100000`

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use snarkflow_bus::{Bus, BusConfig};
use snarkflow_gateway::{maintain_index, LedgerIndex};
use snarkflow_testkit::NatsServer;
use snarkflow_wire::{JobRecord, JobState, PartitionRecord, Priority, SCHEMA_VERSION};

fn record(n: usize) -> JobRecord {
    let states = [JobState::Done, JobState::Done, JobState::Done, JobState::Failed, JobState::Queued];
    let state = states[n % states.len()];
    let mut partitions = vec![PartitionRecord::default(); 10];
    if state == JobState::Done {
        for p in &mut partitions {
            p.synthesized = true;
            p.proof_hex = Some("ab".repeat(192));
        }
    }
    JobRecord {
        schema: SCHEMA_VERSION,
        id: format!("00000000-0000-4000-8000-{n:012}"),
        circuit: snarkflow_circuits::circuit("porep-c2-32GiB"),
        priority: Priority::Normal,
        seed: n as u64,
        state,
        error: None,
        trace_id: None,
        idempotency_key: None,
        created_at_ms: snarkflow_bus::now_ms() - 1_000_000 + n as u64,
        updated_at_ms: snarkflow_bus::now_ms(),
        finished_at_ms: None,
        partitions,
        assemble_s: None,
        input: None,
        tenant: Some(format!("tenant-{}", n % 7)),
        deadline_at_ms: None,
        enqueued: true,
        request_sha256: None,
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let count: usize = std::env::args().nth(1).map(|n| n.parse()).transpose()?.unwrap_or(100_000);
    let nats = NatsServer::start();
    let bus = Bus::connect(BusConfig::new(nats.url())).await?;
    let ledger = bus.ledger().clone();

    let started = Instant::now();
    futures::stream::iter(0..count)
        .map(|n| {
            let ledger = ledger.clone();
            async move { ledger.create(&record(n)).await }
        })
        .buffer_unordered(256)
        .for_each(|r| async move { r.expect("creating a record") })
        .await;
    println!(
        "wrote {count} records (10-partition 32 GiB PoRep jobs, 3/5 done with proofs) in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // before the index: every listing and every ledger pass read every record
    let started = Instant::now();
    let all = ledger.list_where(|_| true, usize::MAX).await?;
    let full_read = started.elapsed();
    let started = Instant::now();
    let page = ledger.list_where(|r| r.state == JobState::Queued, 100).await?;
    println!(
        "full read: {} records in {:.2} s; one page of 100 queued jobs (GET /v1/jobs?state=queued) {:.2} s",
        all.len(),
        full_read.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    drop((all, page));

    // the index: one read at start, then changes
    let index = LedgerIndex::default();
    let stop = tokio_util::sync::CancellationToken::new();
    let started = Instant::now();
    tokio::spawn(maintain_index(ledger.clone(), index.clone(), stop.clone()));
    while !index.ready() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    println!("index built (once, at gateway start) in {:.2} s", started.elapsed().as_secs_f64());
    let started = Instant::now();
    let ids = index.newest(|j| j.state == JobState::Queued, 100).expect("ready");
    let pick = started.elapsed();
    let started = Instant::now();
    let reads = ids.iter().map(|id| ledger.get(id));
    let records = futures::future::try_join_all(reads).await?;
    println!(
        "page of 100 queued jobs from the index: pick {:.3} ms + read 100 records {:.1} ms",
        pick.as_secs_f64() * 1e3,
        started.elapsed().as_secs_f64() * 1e3
    );
    let started = Instant::now();
    let jobs = index.snapshot().expect("ready");
    println!(
        "ledger pass input from the index: {} summaries in {:.1} ms",
        jobs.len(),
        started.elapsed().as_secs_f64() * 1e3
    );
    drop((records, jobs));

    // how soon a change shows
    let id = record(4).id;
    let started = Instant::now();
    ledger
        .update(&id, |r| {
            r.state = JobState::Cancelled;
            true
        })
        .await?;
    while index.newest(|j| j.id == id && j.state == JobState::Cancelled, 1).expect("ready").is_empty() {
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    println!("a change reached the index {:.1} ms after the write", started.elapsed().as_secs_f64() * 1e3);
    stop.cancel();
    Ok(())
}
