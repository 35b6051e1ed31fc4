//! `snarkflow waterfall` and `snarkflow traces collect`.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context as _};
use snarkflow_traces::{jaeger, otlp, receiver, waterfall, Span};

use crate::client::Client;

/// Where the spans come from.
#[derive(Debug, clap::Args)]
pub(crate) struct WaterfallArgs {
    /// One job: its trace is fetched from Jaeger (or filtered out of --otlp-file).
    #[arg(long)]
    job: Option<String>,
    /// A time window of many jobs, ending now (e.g. 90s, 15m, 2h); fetched from Jaeger.
    #[arg(long)]
    since: Option<String>,
    /// Read spans from an OTLP/JSON file (e.g. written by `snarkflow traces collect`).
    #[arg(long)]
    otlp_file: Option<PathBuf>,
    /// Jaeger base URL (query API).
    #[arg(long, env = "SNARKFLOW_JAEGER_URL", default_value = "http://127.0.0.1:16686")]
    jaeger: String,
    /// Most traces fetched for --since.
    #[arg(long, default_value_t = 200)]
    limit: usize,
    /// Timeline width in columns.
    #[arg(long, default_value_t = 100)]
    width: usize,
    /// Also write the waterfall as an SVG picture.
    #[arg(long)]
    svg: Option<PathBuf>,
}

/// Parse `90s`, `15m`, `2h`.
pub(crate) fn parse_duration(s: &str) -> anyhow::Result<Duration> {
    let (n, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = n.parse().with_context(|| format!("bad duration {s:?} (use e.g. 90s, 15m, 2h)"))?;
    Ok(Duration::from_secs(match unit {
        "s" | "" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => bail!("bad duration unit in {s:?} (s, m or h)"),
    }))
}

async fn jaeger_get(url: &str) -> anyhow::Result<Vec<Span>> {
    let resp = reqwest::get(url).await.with_context(|| format!("reaching Jaeger at {url}"))?;
    if !resp.status().is_success() {
        bail!("Jaeger answered {} for {url}", resp.status());
    }
    jaeger::parse(&resp.text().await?)
}

async fn load(args: &WaterfallArgs, gateway: &Client) -> anyhow::Result<Vec<Span>> {
    if let Some(path) = &args.otlp_file {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let mut spans = otlp::parse_json(&text)?;
        if let Some(job) = &args.job {
            let traces: std::collections::HashSet<String> = spans
                .iter()
                .filter(|s| s.attr_text("job_id").as_deref() == Some(job.as_str()))
                .map(|s| s.trace_id.clone())
                .collect();
            spans.retain(|s| traces.contains(&s.trace_id));
        }
        return Ok(spans);
    }
    let base = args.jaeger.trim_end_matches('/');
    if let Some(job) = &args.job {
        let view = gateway.status(job).await?;
        let trace = view["trace_id"].as_str().context("the job has no trace id")?;
        return jaeger_get(&format!("{base}/api/traces/{trace}")).await;
    }
    if let Some(since) = &args.since {
        let end = SystemTime::now().duration_since(UNIX_EPOCH)?.as_micros() as u64;
        let start = end.saturating_sub(parse_duration(since)?.as_micros() as u64);
        // every job's proving happens in the gpu-worker, so its traces cover every job
        return jaeger_get(&format!(
            "{base}/api/traces?service=gpu-worker&start={start}&end={end}&limit={}",
            args.limit
        ))
        .await;
    }
    bail!("say which spans: --job ID, --since DURATION or --otlp-file FILE")
}

pub(crate) async fn waterfall(args: WaterfallArgs, gateway: &Client) -> anyhow::Result<()> {
    let spans = load(&args, gateway).await?;
    let report = waterfall::analyze(&spans);
    if report.rows.is_empty() {
        bail!("no partition spans (synthesize / queue.wait / prove) among {} spans", spans.len());
    }
    print!("{}", waterfall::render_text(&report, args.width.max(10)));
    if let Some(path) = &args.svg {
        std::fs::write(path, waterfall::render_svg(&report)).with_context(|| format!("writing {}", path.display()))?;
        println!("svg written to {}", path.display());
    }
    Ok(())
}

/// Run an OTLP/HTTP receiver until Ctrl-C, appending spans to `out` as OTLP/JSON lines.
pub(crate) async fn collect(listen: std::net::SocketAddr, out: PathBuf) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(listen).await.with_context(|| format!("binding {listen}"))?;
    println!(
        "receiving OTLP/HTTP traces on http://{} (POST /v1/traces), writing {}; Ctrl-C stops",
        listener.local_addr()?,
        out.display()
    );
    receiver::serve(listener, receiver::Collected::default(), Some(out), async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("15m").unwrap(), Duration::from_secs(900));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("3d").is_err());
    }
}
