//! What the native-witness examples share: timing and sector sizes by name.

use std::time::Instant;

/// This process's CPU seconds so far.
pub(crate) fn cpu_seconds() -> f64 {
    cpu_time::ProcessTime::now().as_duration().as_secs_f64()
}

/// Wall and CPU seconds of one call of `f`, and its result.
pub(crate) fn measure<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let (started, cpu) = (Instant::now(), cpu_seconds());
    let out = f();
    (out, started.elapsed().as_secs_f64(), cpu_seconds() - cpu)
}

/// A published sector size by its name (`2KiB` … `64GiB`), in bytes.
pub(crate) fn sector_size(name: &str) -> anyhow::Result<u64> {
    Ok(match name {
        "2KiB" => 2 << 10,
        "8MiB" => 8 << 20,
        "512MiB" => 512 << 20,
        "32GiB" => 32 << 30,
        "64GiB" => 64 << 30,
        other => anyhow::bail!("unknown sector size {other}"),
    })
}

/// `--threads 1,4,16` (default 1,2).
pub(crate) fn threads(flag: Option<String>) -> anyhow::Result<Vec<usize>> {
    Ok(flag.unwrap_or_else(|| "1,2".into()).split(',').map(str::parse).collect::<Result<_, _>>()?)
}
