//! Where a key's parts live on a device ([`Placement`]: the memory plan as the device code
//! takes it), and the parameter file's point sections ([`Section`]).

use crate::ffi;

/// The point queries of a parameter file, in file order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    H,
    L,
    A,
    BG1,
    BG2,
}

impl Section {
    pub const ALL: [Section; 5] = [Section::H, Section::L, Section::A, Section::BG1, Section::BG2];

    /// Bytes of one uncompressed point in a bellperson parameter file.
    pub fn file_point_bytes(self) -> usize {
        match self {
            Section::H | Section::L | Section::A | Section::BG1 => 96,
            Section::BG2 => 192,
        }
    }
}

/// Where a key's parts live: each parameter section and the constraint matrices on the device,
/// or in page-locked host memory the device reads over PCIe. Sections on the host cost only
/// the points a partition needs (those whose scalar is not 0, read by the kernels in place),
/// except H, whose every point is needed: it is copied over in batches during the prove, as
/// are the matrices, in chunks of rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Placement {
    /// `host_sections[s]`: section `Section::ALL[s]` in host memory.
    pub host_sections: [bool; 5],
    pub shape_on_host: bool,
    /// H points per batch when H is on the host (0: as many as the per-proof buffers hold).
    pub h_batch: usize,
    /// Non-zeros per chunk when the matrices are on the host (0: the device code's default).
    pub shape_chunk: usize,
    /// A prove's phases one after another, sharing device memory, c made in the witness's
    /// buffer (the lean plan, for ~16 GB cards): its witnesses need a buffer as large as the
    /// domain, and each is used up by its prove.
    pub lean: bool,
    /// The lean plan's phases in two domain vectors (the compact plan, for ~12 GB cards): its
    /// witnesses stay compact on the device
    /// ([`DeviceWitness::new_compact`](crate::DeviceWitness::new_compact)), and the shape keeps
    /// the C matrix.
    pub compact: bool,
}

impl Placement {
    /// Everything on the device.
    pub const RESIDENT: Placement = Placement {
        host_sections: [false; 5],
        shape_on_host: false,
        h_batch: 0,
        shape_chunk: 0,
        lean: false,
        compact: false,
    };

    pub fn on_host(&self, section: Section) -> bool {
        self.host_sections[section as usize]
    }

    pub(crate) fn raw(&self) -> ffi::RawPlacement {
        let host_sections = self.host_sections.iter().enumerate().fold(0u32, |m, (i, &on)| m | (u32::from(on) << i));
        ffi::RawPlacement {
            host_sections,
            shape_on_host: u32::from(self.shape_on_host),
            h_batch: self.h_batch,
            shape_chunk: self.shape_chunk,
            lean: u32::from(self.lean),
            compact: u32::from(self.compact),
        }
    }
}
