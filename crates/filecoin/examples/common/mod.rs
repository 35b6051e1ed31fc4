//! What the native-witness examples share: timing, sector sizes by name, and what a prover's
//! MSMs see of a witness (`--scalars`). Each example uses part of it.
#![allow(dead_code)]

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

/// The aux values as an MSM sees them: 0, 1, and the distribution of the rest.
pub(crate) fn scalar_report(aux: &[blstrs::Scalar]) {
    use ff::PrimeField;
    use std::collections::HashMap;
    let (mut zeros, mut ones) = (0usize, 0usize);
    let mut others: HashMap<[u8; 32], usize> = HashMap::new();
    for v in aux {
        let repr = v.to_repr();
        let bytes: [u8; 32] = repr.as_ref().try_into().expect("32-byte scalars");
        if bytes.iter().all(|&b| b == 0) {
            zeros += 1;
        } else if bytes[0] == 1 && bytes[1..].iter().all(|&b| b == 0) {
            ones += 1;
        } else {
            *others.entry(bytes).or_default() += 1;
        }
    }
    let rest: usize = others.values().sum();
    println!("aux values {}: zeros {zeros}, ones {ones}, neither {rest} ({} distinct)", aux.len(), others.len());
    let bits = |b: &[u8; 32]| {
        256 - b.iter().rev().flat_map(|x| (0..8).rev().map(move |i| x >> i & 1)).take_while(|&x| x == 0).count()
    };
    let small = others.iter().filter(|(b, _)| bits(b) <= 13).map(|(_, n)| n).sum::<usize>();
    let repeated = others.values().filter(|&&n| n > 1).sum::<usize>();
    println!("of the neither: {small} fit in 13 bits, {repeated} share their value with another");
    let mut top: Vec<_> = others.iter().collect();
    top.sort_by(|a, b| b.1.cmp(a.1));
    let mut covered = 0;
    for (i, (b, n)) in top.iter().take(16).enumerate() {
        covered += **n;
        let hex: String = b.iter().rev().map(|x| format!("{x:02x}")).collect();
        println!("  #{i:<2} {n:>10} × {}-bit value 0x{}", bits(b), hex.trim_start_matches('0'));
    }
    println!("the 16 most frequent values cover {covered} of {rest}");
    let mut histogram = [0usize; 9];
    for n in others.values() {
        histogram[(usize::BITS - n.leading_zeros()).min(8) as usize] += *n;
    }
    println!(
        "values by how often they repeat (count of scalars whose value occurs 1, 2-3, 4-7, ... times): {histogram:?}"
    );
}
