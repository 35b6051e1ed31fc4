//! `GET /v1/cluster`: what `snarkflow cluster status` shows.

use axum::extract::State;
use axum::Json;
use snarkflow_service::tokens::Scope;

use crate::auth::Caller;
use crate::cluster::ClusterView;
use crate::{ApiError, AppState};

/// The gpu-workers, each lane's backlog and the jobs per state; another tenant's job ids on a
/// device are hidden unless the caller is an admin.
pub(crate) async fn get(State(state): State<AppState>, caller: Caller) -> Result<Json<ClusterView>, ApiError> {
    caller.require(Scope::Read)?;
    Ok(Json(crate::cluster::view(&state, &caller).await?))
}
