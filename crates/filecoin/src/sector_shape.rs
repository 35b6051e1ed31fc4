//! The sector shape (a Merkle tree type) is a type parameter in filecoin-proofs, chosen here at
//! run time from the sector size. Every published shape has `Hasher = TreeRHasher`, which
//! SnapDeals needs, so one dispatch serves every kind.

/// Call `$f::<SectorShape…>(args)` for the shape of sector size `$size` (bytes); an
/// unsupported size is an error of the enclosing `anyhow` function.
macro_rules! with_sector_shape {
    ($size:expr, $f:ident $(::<$($extra:ty),*>)?, $($args:expr),*) => {{
        use filecoin_proofs::constants::*;
        match $size {
            s if s == SECTOR_SIZE_2_KIB => $f::<SectorShape2KiB $($(, $extra)*)?>($($args),*),
            s if s == SECTOR_SIZE_8_MIB => $f::<SectorShape8MiB $($(, $extra)*)?>($($args),*),
            s if s == SECTOR_SIZE_512_MIB => $f::<SectorShape512MiB $($(, $extra)*)?>($($args),*),
            s if s == SECTOR_SIZE_32_GIB => $f::<SectorShape32GiB $($(, $extra)*)?>($($args),*),
            s if s == SECTOR_SIZE_64_GIB => $f::<SectorShape64GiB $($(, $extra)*)?>($($args),*),
            s => anyhow::bail!("unsupported sector size {s}"),
        }
    }};
}
