//! One bootstrap for both workers: [`serve`] starts the worker's host (its id, status endpoint
//! and metrics), lets the worker build its stage (probe a device, load parameters, connect to
//! NATS: each worker in its own order, saying in readiness what it waits for), then runs the
//! slot loop until shutdown and drains.

use std::future::Future;
use std::sync::Arc;

use anyhow::Context as _;
use snarkflow_bus::Bus;
use snarkflow_service::NatsArgs;
use snarkflow_wire::Stage;
use tokio_util::sync::CancellationToken;

use crate::{TaskHandler, WorkerArgs, WorkerHost};

/// What a worker has while it builds its stage.
pub struct Bootstrap {
    /// The worker's id, readiness and metrics; its status endpoint is already serving.
    pub host: WorkerHost,
    pub shutdown: CancellationToken,
    nats: NatsArgs,
}

impl Bootstrap {
    /// Connect to NATS as this stage's role, passing `waiting` why it is not connected yet
    /// (for readiness) until it is; `None` when shutdown came first.
    pub async fn connect(&self, waiting: impl Fn(&str) + Send + Sync) -> anyhow::Result<Option<Bus>> {
        let config = self.nats.bus_config(crate::args::role(self.host.stage))?;
        tokio::select! {
            _ = self.shutdown.cancelled() => Ok(None),
            bus = Bus::connect_reporting(config, &waiting) => Ok(Some(bus?)),
        }
    }
}

/// A stage ready to take work.
pub struct Ready<H> {
    pub bus: Bus,
    pub handler: Arc<H>,
    /// General slots (the urgent ones come from [`WorkerArgs::urgent_slots`]).
    pub slots: usize,
}

/// Run a worker of `stage`: start its host, build the stage with `make` (`None`: shutdown came
/// first, nothing to drain), then pull and handle tasks until `shutdown`, and drain.
pub async fn serve<H, F, Fut>(
    stage: Stage,
    args: WorkerArgs,
    shutdown: CancellationToken,
    make: F,
) -> anyhow::Result<()>
where
    H: TaskHandler,
    F: FnOnce(Bootstrap) -> Fut,
    Fut: Future<Output = anyhow::Result<Option<Ready<H>>>>,
{
    let status = args.status_addr(stage);
    let host =
        WorkerHost::start(stage, args.id(stage), status, shutdown.clone()).await.with_context(|| match status {
            Some(addr) => format!("serving the status endpoint on {addr} (--status-listen: another address, or `off`)"),
            None => "starting the worker".to_owned(),
        })?;
    let bootstrap = Bootstrap { host: host.clone(), shutdown: shutdown.clone(), nats: args.nats.clone() };
    let Some(Ready { bus, handler, slots }) = make(bootstrap).await? else {
        return Ok(());
    };
    crate::run(host, bus, handler, args.slot_config(stage, slots), shutdown).await?;
    Ok(())
}
