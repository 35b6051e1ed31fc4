//! Whether the witness buffers get transparent huge pages.
//!
//! A native witness is written into a buffer of 32 bytes per variable (4.2 GB for a 32 GiB
//! PoRep partition), fresh from the kernel each time: with 4 KiB pages the first touch of every
//! page faults, and that was about half of the native generator's time (32 GiB PoRep on the
//! dev VM, 2 threads: 5.28 s wall / 8.97 core-s with 4 KiB pages, 2.26 s / 5.74 core-s with huge
//! pages; docs/benchmarks.md). glibc's malloc asks for huge pages when
//! `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` is in the environment at start and the kernel's
//! transparent huge pages are `madvise` or `always`; with `always` every large mapping gets
//! them anyway. The worker reports which case it is in (readiness detail, a start-up log).

/// What the worker found: whether huge pages back its large buffers, and why in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HugePages {
    pub(crate) on: bool,
    pub(crate) why: String,
}

/// The kernel's mode file.
const THP_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";

/// This process's case: its `GLIBC_TUNABLES` and the kernel's transparent huge page mode.
pub(crate) fn detect() -> HugePages {
    let tunables = std::env::var("GLIBC_TUNABLES").unwrap_or_default();
    assess(&tunables, std::fs::read_to_string(THP_ENABLED).ok().as_deref())
}

/// The case for `tunables` (a `GLIBC_TUNABLES` value) and `thp_enabled` (the kernel's mode
/// file, `always [madvise] never`; `None` where it cannot be read).
pub(crate) fn assess(tunables: &str, thp_enabled: Option<&str>) -> HugePages {
    let asked = tunables.split(':').find_map(|t| t.strip_prefix("glibc.malloc.hugetlb=")).unwrap_or("0");
    let mode =
        thp_enabled.and_then(|s| s.split_whitespace().find(|w| w.starts_with('['))).map(|w| w.trim_matches(['[', ']']));
    let hint = "set GLIBC_TUNABLES=glibc.malloc.hugetlb=1 in this worker's environment";
    let (on, why) = match (mode, asked) {
        (_, "2") => (
            true,
            "hugetlb pages requested (GLIBC_TUNABLES=glibc.malloc.hugetlb=2; they must be reserved, else 4 KiB pages)"
                .to_owned(),
        ),
        (Some("always"), _) => (true, "transparent huge pages: the kernel's mode is always".to_owned()),
        (Some("madvise"), "1") => {
            (true, "transparent huge pages: madvise, asked for by GLIBC_TUNABLES=glibc.malloc.hugetlb=1".to_owned())
        }
        (Some("madvise"), _) => (
            false,
            format!("4 KiB pages: the kernel gives huge pages on request (madvise) and malloc does not ask; {hint}"),
        ),
        (Some(mode), _) => (false, format!("4 KiB pages: the kernel's transparent huge pages are {mode}")),
        (None, _) => (false, format!("unknown: {THP_ENABLED} cannot be read")),
    };
    HugePages { on, why }
}

#[cfg(test)]
mod tests {
    use super::assess;

    #[test]
    fn madvise_needs_the_malloc_tunable() {
        let off = assess("", Some("always [madvise] never\n"));
        assert!(!off.on);
        assert!(off.why.contains("GLIBC_TUNABLES=glibc.malloc.hugetlb=1"), "{}", off.why);
        let on = assess("glibc.malloc.check=0:glibc.malloc.hugetlb=1", Some("always [madvise] never\n"));
        assert!(on.on, "{}", on.why);
    }

    #[test]
    fn always_needs_nothing_and_never_cannot_be_helped() {
        assert!(assess("", Some("[always] madvise never")).on);
        let never = assess("glibc.malloc.hugetlb=1", Some("always madvise [never]"));
        assert!(!never.on);
        assert!(never.why.contains("never"), "{}", never.why);
        assert!(!assess("", None).on);
        assert!(assess("glibc.malloc.hugetlb=2", Some("always madvise [never]")).on);
    }
}
