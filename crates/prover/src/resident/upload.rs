//! Loading a key: the parameter file's points streamed to the device (or pinned host memory)
//! through two pinned buffers, and the constraint shape uploaded.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::mpsc::sync_channel;
use std::sync::Arc;

use snarkflow_cuda_resident::{self as dev, Csr, PinnedBuffer, RowFold, Section, ShapeDesc};
use snarkflow_synthesis::{ConstraintShape, Fold, FoldedMatrix};

use super::{dev_err, Device, FileSections, Placement};

/// Bytes of each pinned buffer the parameter file passes through (two are in flight).
const UPLOAD_CHUNK: usize = 256 << 20;

/// Stream the five point sections from the file into device memory: one thread reads into
/// one pinned buffer while the device converts the other.
pub(super) fn upload_points(
    device: &Arc<Device>,
    path: &Path,
    sections: &FileSections,
    placement: &Placement,
) -> std::io::Result<dev::Srs> {
    let mut srs = dev::Srs::allocate(device, sections.counts, placement).map_err(dev_err)?;
    let (to_device, filled) = sync_channel::<(Section, usize, PinnedBuffer, usize)>(1);
    let (to_reader, empty) = sync_channel::<PinnedBuffer>(2);
    for _ in 0..2 {
        to_reader.send(PinnedBuffer::new(UPLOAD_CHUNK).map_err(dev_err)?).expect("room for two");
    }
    std::thread::scope(|scope| {
        let reader = scope.spawn(move || -> std::io::Result<()> {
            let mut file = File::open(path)?;
            for (i, section) in Section::ALL.into_iter().enumerate() {
                let size = section.file_point_bytes();
                let per_chunk = UPLOAD_CHUNK / size;
                file.seek(SeekFrom::Start(sections.offsets[i]))?;
                let mut first = 0;
                while first < sections.counts[i] {
                    let n = per_chunk.min(sections.counts[i] - first);
                    let Ok(mut buf) = empty.recv() else { return Ok(()) };
                    file.read_exact(&mut buf.as_mut_slice()[..n * size])?;
                    if to_device.send((section, first, buf, n * size)).is_err() {
                        return Ok(());
                    }
                    first += n;
                }
            }
            Ok(())
        });
        let mut uploaded = Ok(());
        for (section, first, mut buf, bytes) in filled.iter() {
            uploaded = srs.load(section, first, &buf.as_mut_slice()[..bytes]).map_err(dev_err);
            if uploaded.is_err() {
                break;
            }
            let _ = to_reader.send(buf);
        }
        drop(filled);
        drop(to_reader);
        reader.join().expect("parameter reader panicked")?;
        uploaded
    })?;
    srs.loaded();
    Ok(srs)
}

/// The fold the device stores `shape` with: its own, where folding is on
/// ([`fold_shapes`](crate::fold_shapes)).
pub(super) fn device_fold(shape: &ConstraintShape) -> Option<&Fold> {
    shape.fold().filter(|f| f.blocks >= 2 && crate::fold_shapes())
}

/// The shape's matrices and the gather lists of the A and B queries: the variables each
/// query has points for, in the order the parameter file stores them.
pub(super) fn upload_shape(
    device: &Arc<Device>,
    shape: &ConstraintShape,
    placement: &Placement,
) -> Result<dev::Shape, dev::Error> {
    let inputs = shape.num_inputs as u32;
    let set = |d: &snarkflow_synthesis::Density, offset: u32| -> Vec<u32> {
        d.iter().enumerate().filter(|&(_, on)| on).map(|(i, _)| i as u32 + offset).collect()
    };
    let mut a_gather: Vec<u32> = (0..inputs).collect();
    a_gather.extend(set(&shape.a_aux_density, inputs));
    let mut b_gather = set(&shape.b_input_density, 0);
    b_gather.extend(set(&shape.b_aux_density, inputs));
    fn csr(m: &snarkflow_synthesis::SparseMatrix) -> Csr<'_> {
        Csr { row_starts: m.row_starts(), cols: m.cols(), coeffs: m.coeffs() }
    }
    fn folded_csr(m: &FoldedMatrix) -> Csr<'_> {
        Csr { row_starts: &m.row_starts, cols: &m.cols, coeffs: &m.coeffs }
    }
    let fold = device_fold(shape).filter(|_| !placement.shape_on_host);
    let folded: Option<[FoldedMatrix; 3]> = fold.map(|f| [f.fold(&shape.a), f.fold(&shape.b), f.fold(&shape.c)]);
    let matrices = match &folded {
        Some([a, b, c]) => [folded_csr(a), folded_csr(b), folded_csr(c)],
        None => [csr(&shape.a), csr(&shape.b), csr(&shape.c)],
    };
    let desc = ShapeDesc {
        num_inputs: shape.num_inputs,
        num_aux: shape.num_aux,
        rows: shape.num_constraints(),
        fold: fold.map(|f| RowFold {
            head_rows: f.head_rows,
            rows: f.rows,
            blocks: f.blocks,
            input_start: f.input_start,
            inputs: f.inputs,
            aux_start: f.aux_start,
            aux: f.aux,
        }),
        matrices,
        table: shape.coeff_table(),
        a_gather: &a_gather,
        b_gather: &b_gather,
    };
    dev::Shape::upload(device, &desc, placement)
}
