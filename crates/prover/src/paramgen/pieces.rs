//! How parameter generation writes a section: a piece at a time, the next piece's points made
//! while the last one is written, with the time each part took; and where the device's points
//! land (pooled pinned buffers).

use std::io::Write;

use bellperson::SynthesisError;
use blstrs::Scalar as Fr;

/// How long each step of parameter generation took, logged as it ends (each section's time
/// includes writing it).
pub(super) struct Steps(std::time::Instant);

impl Steps {
    pub(super) fn start() -> Steps {
        Steps(std::time::Instant::now())
    }

    pub(super) fn done(&mut self, step: &str) {
        tracing::info!(step, seconds = self.0.elapsed().as_secs_f64(), "parameter generation step done");
        self.0 = std::time::Instant::now();
    }

    /// A section's step, with how long its scalars, its points and its writing took in all
    /// (points and writing overlap: the larger of the two is what bounds the section).
    pub(super) fn section(&mut self, step: &str, spent: Spent) {
        tracing::info!(
            step,
            seconds = self.0.elapsed().as_secs_f64(),
            scalars_s = spent.scalars.as_secs_f64(),
            points_s = spent.points.as_secs_f64(),
            write_s = spent.write.as_secs_f64(),
            "parameter generation step done"
        );
        self.0 = std::time::Instant::now();
    }
}

/// A piece's points, as the file stores them: made on the CPU, or by the device into a
/// pinned buffer that goes back to its pool once written.
pub(super) enum Piece {
    Bytes(Vec<u8>),
    #[cfg(feature = "cuda-resident")]
    Pinned {
        buffer: Option<snarkflow_cuda_resident::PinnedBuffer>,
        len: usize,
        pool: std::sync::Arc<PinnedPool>,
    },
}

impl AsRef<[u8]> for Piece {
    fn as_ref(&self) -> &[u8] {
        match self {
            Piece::Bytes(bytes) => bytes,
            #[cfg(feature = "cuda-resident")]
            Piece::Pinned { buffer, len, .. } => &buffer.as_ref().expect("held until dropped").as_slice()[..*len],
        }
    }
}

#[cfg(feature = "cuda-resident")]
impl Drop for Piece {
    fn drop(&mut self) {
        if let Piece::Pinned { buffer, pool, .. } = self {
            pool.give_back(buffer.take());
        }
    }
}

/// Pinned host buffers of one piece's points each (768 MB for 4 M points of G2): one is
/// written to the file while the device fills the next, so two are made in all.
#[cfg(feature = "cuda-resident")]
#[derive(Default)]
pub(super) struct PinnedPool(std::sync::Mutex<Vec<snarkflow_cuda_resident::PinnedBuffer>>);

#[cfg(feature = "cuda-resident")]
impl PinnedPool {
    pub(super) fn take(&self, len: usize) -> Result<snarkflow_cuda_resident::PinnedBuffer, SynthesisError> {
        let mut free = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = free.iter().position(|b| b.len() >= len) {
            return Ok(free.swap_remove(i));
        }
        drop(free);
        snarkflow_cuda_resident::PinnedBuffer::new(len.max(super::GPU_PIECE * 192))
            .map_err(|e| SynthesisError::IoError(std::io::Error::other(e.to_string())))
    }

    fn give_back(&self, buffer: Option<snarkflow_cuda_resident::PinnedBuffer>) {
        if let Some(b) = buffer {
            self.0.lock().unwrap_or_else(|e| e.into_inner()).push(b);
        }
    }
}

/// Time a section spent on each of its parts, summed over its pieces.
#[derive(Default)]
pub(super) struct Spent {
    scalars: std::time::Duration,
    points: std::time::Duration,
    write: std::time::Duration,
}

/// One section of `count` points made from `scalars` scalars (fewer when `points` drops the
/// zero ones): its length, then its points, a piece at a time; piece i + 1 is made
/// while piece i is written.
pub(super) fn write_counted<W: Write + Send, B: AsRef<[u8]> + Send>(
    out: &mut W,
    piece: usize,
    count: usize,
    scalars: usize,
    scalars_of: impl Fn(std::ops::Range<usize>) -> Vec<Fr> + Sync,
    points: impl Fn(&[Fr]) -> Result<B, SynthesisError> + Sync,
) -> Result<Spent, SynthesisError> {
    use std::time::{Duration, Instant};
    let count = u32::try_from(count).map_err(|_| SynthesisError::PolynomialDegreeTooLarge)?;
    out.write_all(&count.to_be_bytes())?;
    let pieces = scalars.div_ceil(piece);
    let make = |p: usize| -> (Result<B, SynthesisError>, Duration, Duration) {
        let started = Instant::now();
        let ks = scalars_of(p * piece..((p + 1) * piece).min(scalars));
        let scalars_done = Instant::now();
        let made = points(&ks);
        (made, scalars_done - started, scalars_done.elapsed())
    };
    let mut spent = Spent::default();
    let mut pending: Option<B> = None;
    for p in 0..=pieces {
        let (written, next) = rayon::join(
            || {
                let started = Instant::now();
                let written = pending.take().map_or(Ok(()), |bytes| out.write_all(bytes.as_ref()));
                (written, started.elapsed())
            },
            || (p < pieces).then(|| make(p)),
        );
        spent.write += written.1;
        written.0?;
        pending = match next {
            Some((made, scalars_took, points_took)) => {
                spent.scalars += scalars_took;
                spent.points += points_took;
                Some(made?)
            }
            None => None,
        };
    }
    Ok(spent)
}
