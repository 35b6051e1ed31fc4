//! The `cuzk.v1.ProvingEngine` service: each RPC in a few lines over [`crate::jobs`] and
//! [`super::status`].

use std::time::{Duration, Instant};

use snarkflow_wire::{JobRecord, JobState, ParamsCommand, ParamsReply};
use tonic::{Request, Response, Status};
use tracing::{info_span, Instrument};

use super::pb::{self, await_proof_response::Status as ProofStatus, proving_engine_server::ProvingEngine};
use super::request;
use super::status::{self, CountsCache};
use crate::auth::Caller;
use crate::jobs::{self, Submitted};
use crate::{ApiError, AppState};

pub(super) struct Engine {
    state: AppState,
    enable_control: bool,
    started: Instant,
    counts: CountsCache,
}

impl Engine {
    pub(super) fn new(state: AppState, args: &super::GrpcArgs) -> Engine {
        Engine { state, enable_control: args.enable_control, started: Instant::now(), counts: CountsCache::default() }
    }

    /// Who makes the call, as the door found it (`door.rs`): the token in its `authorization`
    /// metadata, else the listener's tenant.
    fn caller<T>(&self, req: &Request<T>) -> Result<Caller, ApiError> {
        req.extensions().get::<Caller>().cloned().ok_or_else(|| {
            ApiError::Internal(anyhow::anyhow!("a gRPC call reached the service without passing the door"))
        })
    }

    /// The caller of a control RPC: only when control is enabled, and a token's caller needs
    /// the admin scope (the listener's own tenant stands for the operator who enabled it).
    fn control_caller<T>(&self, req: &Request<T>) -> Result<Caller, ApiError> {
        if !self.enable_control {
            return Err(ApiError::Forbidden(
                "PreloadSRS and EvictSRS are off on this gateway (start it with --grpc-enable-control)".into(),
            ));
        }
        let caller = self.caller(req)?;
        if req.metadata().get("authorization").is_some() {
            caller.require(snarkflow_service::tokens::Scope::Admin)?;
        }
        Ok(caller)
    }

    /// Validate and submit, as `POST /v1/jobs` does with the equivalent JSON body.
    async fn submit(&self, caller: &Caller, req: pb::SubmitProofRequest) -> Result<Submitted, ApiError> {
        let span = info_span!(
            parent: None,
            "grpc.submit",
            otel.kind = "server",
            rpc.system = "grpc",
            rpc.service = "cuzk.v1.ProvingEngine",
            request_id = %req.request_id,
            tenant = %caller.tenant(),
            job_id = tracing::field::Empty,
            job.kind = tracing::field::Empty,
            partitions = tracing::field::Empty,
            worker = "gateway",
            host = %snarkflow_telemetry::host_name(),
        );
        let result = async {
            let job = self
                .state
                .validations
                .run(request::critical(&req), move || {
                    let (registered_proof, sector_number) = (req.registered_proof, req.sector_number);
                    let job = crate::validate(request::job_request(req)?)?;
                    request::check_porep_job(registered_proof, sector_number, &job)?;
                    Ok(job)
                })
                .await
                // refused for its content: billed to the tenant's rate, as over HTTP
                .inspect_err(|e| {
                    if e.parts().0.is_client_error() {
                        self.state.quotas.bill_rejected(caller.tenant());
                    }
                });
            jobs::submit(&self.state, caller, job?).await
        }
        .instrument(span)
        .await;
        if let Err(e) = &result {
            self.state.metrics.rejected(e.parts().1);
        }
        result
    }

    /// Wait for the job (at most `timeout`) and answer as cuzk does.
    async fn await_job(
        &self,
        caller: &Caller,
        id: &str,
        timeout: Option<Duration>,
    ) -> Result<pb::AwaitProofResponse, ApiError> {
        let record = jobs::wait(&self.state, caller, id, timeout).await?;
        let mut response = timings(&record);
        response.job_id = record.id.clone();
        match record.state {
            JobState::Done => {
                response.status = ProofStatus::Completed as i32;
                response.proof = jobs::proof_bytes(&record)?;
            }
            JobState::Failed => {
                response.status = ProofStatus::Failed as i32;
                response.error_message = match (&record.error, caller.is_admin()) {
                    (Some(e), true) => e.clone(),
                    (Some(e), false) => crate::jobs::view::client_error(e, &record),
                    (None, _) => "the job failed".into(),
                };
            }
            JobState::Cancelled => {
                response.status = ProofStatus::Cancelled as i32;
                response.error_message = "the job was cancelled".into();
            }
            JobState::Queued | JobState::Synthesizing | JobState::Proving => {
                response.status = ProofStatus::Timeout as i32;
                response.error_message = format!("the job is still {}; it keeps running", record.state.as_str());
            }
        }
        Ok(response)
    }
}

/// The timings cuzk reports, from what the workers measured (the same numbers their spans
/// carry): the longest any partition waited for a GPU, synthesis and GPU time summed over
/// partitions, and the job's whole life. Parameters stay loaded, so no load is charged.
fn timings(record: &JobRecord) -> pb::AwaitProofResponse {
    let ms = |s: f64| (s * 1000.0).round() as u64;
    let queue_wait =
        record.partitions.iter().filter_map(|p| p.prove.as_ref()).map(|p| p.queue_wait_s).fold(0.0, f64::max);
    let synthesis: f64 = record
        .partitions
        .iter()
        .filter_map(|p| p.synth.as_ref())
        .map(|s| s.synthesize_s + s.serialize_s + s.store_s)
        .sum();
    let gpu: f64 = record.partitions.iter().filter_map(|p| p.prove.as_ref()).map(|p| p.prove_s).sum();
    let end = record.finished_at_ms.unwrap_or_else(snarkflow_bus::now_ms);
    pb::AwaitProofResponse {
        queue_wait_ms: ms(queue_wait),
        srs_load_ms: 0,
        synthesis_ms: ms(synthesis),
        gpu_compute_ms: ms(gpu),
        total_ms: end.saturating_sub(record.created_at_ms),
        ..Default::default()
    }
}

type Answer<T> = Result<Response<T>, Status>;

#[tonic::async_trait]
impl ProvingEngine for Engine {
    async fn submit_proof(&self, req: Request<pb::SubmitProofRequest>) -> Answer<pb::SubmitProofResponse> {
        let caller = self.caller(&req)?;
        let submitted = self.submit(&caller, req.into_inner()).await?;
        Ok(Response::new(pb::SubmitProofResponse {
            job_id: submitted.id,
            queue_position: 0,
            assigned_gpu: String::new(),
        }))
    }

    async fn await_proof(&self, req: Request<pb::AwaitProofRequest>) -> Answer<pb::AwaitProofResponse> {
        let caller = self.caller(&req)?;
        let req = req.into_inner();
        let timeout = (req.timeout_ms > 0).then(|| Duration::from_millis(req.timeout_ms));
        Ok(Response::new(self.await_job(&caller, &req.job_id, timeout).await?))
    }

    /// Submit and wait; a client that goes away leaves the job running (cancel stops it).
    async fn prove(&self, req: Request<pb::ProveRequest>) -> Answer<pb::ProveResponse> {
        let caller = self.caller(&req)?;
        let submit = req.into_inner().submit.ok_or_else(|| ApiError::Invalid("submit is required".into()))?;
        let submitted = self.submit(&caller, submit).await?;
        let result = self.await_job(&caller, &submitted.id, None).await?;
        Ok(Response::new(pb::ProveResponse { result: Some(result) }))
    }

    async fn cancel_proof(&self, req: Request<pb::CancelProofRequest>) -> Answer<pb::CancelProofResponse> {
        let caller = self.caller(&req)?;
        let (_, was) = jobs::cancel(&self.state, &caller, &req.into_inner().job_id).await?;
        Ok(Response::new(pb::CancelProofResponse {
            was_running: matches!(was, JobState::Synthesizing | JobState::Proving),
        }))
    }

    /// The cluster's devices and queues; the job on a device is named only to its own tenant.
    async fn get_status(&self, req: Request<pb::GetStatusRequest>) -> Answer<pb::GetStatusResponse> {
        let caller = self.caller(&req)?;
        let (workers, counts) = tokio::join!(crate::cluster::gpu_workers(&self.state), self.counts.get(&self.state));
        let workers = crate::cluster::hide_others_jobs(&self.state, &caller, workers?).await;
        Ok(Response::new(status::status_response(&workers, &counts?, self.started.elapsed())))
    }

    async fn get_metrics(&self, req: Request<pb::GetMetricsRequest>) -> Answer<pb::GetMetricsResponse> {
        self.caller(&req)?;
        let prometheus_text = snarkflow_telemetry::render_metrics(&self.state.metrics.registry);
        Ok(Response::new(pb::GetMetricsResponse { prometheus_text }))
    }

    async fn preload_srs(&self, req: Request<pb::PreloadSrsRequest>) -> Answer<pb::PreloadSrsResponse> {
        self.control_caller(&req)?;
        let circuit_id = status::served_circuit_id(&self.state, &req.into_inner().circuit_id)?;
        let replies = status::params_command(&self.state, ParamsCommand::Preload { circuit_id }).await?;
        let (mut already, mut load_ms) = (true, 0);
        for reply in replies {
            if let ParamsReply::Preloaded { already_loaded, load_ms: ms, .. } = reply {
                already &= already_loaded;
                load_ms = load_ms.max(ms);
            }
        }
        Ok(Response::new(pb::PreloadSrsResponse { already_loaded: already, load_time_ms: load_ms }))
    }

    async fn evict_srs(&self, req: Request<pb::EvictSrsRequest>) -> Answer<pb::EvictSrsResponse> {
        self.control_caller(&req)?;
        let circuit_id = status::served_circuit_id(&self.state, &req.into_inner().circuit_id)?;
        let replies = status::params_command(&self.state, ParamsCommand::Evict { circuit_id }).await?;
        let (mut was, mut freed) = (false, 0);
        for reply in replies {
            if let ParamsReply::Evicted { was_loaded, freed_bytes, .. } = reply {
                was |= was_loaded;
                freed += freed_bytes;
            }
        }
        Ok(Response::new(pb::EvictSrsResponse { was_loaded: was, freed_bytes: freed }))
    }
}
