//! The plan each card class gets, and the estimates behind it.

use super::*;

const GIB: u64 = 1 << 30;

/// A 32 GiB PoRep partition, as measured (docs/benchmarks.md, 2026-12-03).
pub(super) fn porep_32gib() -> KeyDims {
    KeyDims {
        counts: [(1 << 27) - 1, 130_169_893, 129_753_640, 33_112_282, 33_112_282],
        rows: 130_278_869,
        // 722,388,891 in all; A and B are 5.2 GiB on the host with their row starts
        nnz: [300_000_000, 137_000_000, 285_388_891],
        table_len: 64,
        witness_len: 130_169_913,
        folded: None,
        dense_witness: false,
    }
}

/// The same partition with its 18 challenges stored once (about an 18th of A and B: the
/// partition's head and its input rows are a few thousand rows).
fn porep_32gib_folded() -> KeyDims {
    KeyDims { folded: Some(FoldDims { rows: 7_240_000, nnz: [16_700_000, 7_620_000, 15_860_000] }), ..porep_32gib() }
}

#[test]
fn folded_matrices_stay_on_the_device_and_free_what_the_shape_took() {
    let (whole, folded) = (porep_32gib(), porep_32gib_folded());
    assert!(folded.matrix_bytes() < 400_000_000, "{}", folded.matrix_bytes());
    for free in [135, 79, 47, 23, 15] {
        let (w, f) = (plan(free).unwrap(), choose(&folded, free * GIB, 0, PlanRequest::Auto).unwrap());
        eprintln!("{free} GiB: {} | {}", w.summary(), f.summary());
        assert!(!f.shape_on_host && f.shape_folded && f.summary().contains("folded shape"), "{}", f.summary());
        assert!(!w.shape_folded && !w.summary().contains("folded"));
        let rank = |k: PlanKind| PlanKind::ALL.iter().position(|&x| x == k);
        assert!(rank(f.kind) <= rank(w.kind), "never a slower plan: {} against {}", f.summary(), w.summary());
    }
    // the streamed plan no longer streams the matrices
    let forced = |dims: &KeyDims| choose(dims, 135 * GIB, 0, PlanRequest::Only(PlanKind::Streamed)).unwrap();
    let (w, f) = (forced(&whole), forced(&folded));
    assert_eq!(w.pcie_bytes_max - f.pcie_bytes_max, whole.matrix_bytes());
    assert!(f.device_bytes < w.device_bytes, "{} against {}", f.summary(), w.summary());
    // a fold that saves little (a large head, few blocks) is streamed whole like no fold
    let barely = KeyDims {
        folded: Some(FoldDims { rows: whole.rows / 2, nnz: [whole.nnz[0] / 2, whole.nnz[1] / 2, whole.nnz[2] / 2] }),
        ..whole
    };
    let p = choose(&barely, 23 * GIB, 0, PlanRequest::Auto).unwrap();
    assert!(p.shape_on_host && !p.shape_folded, "{}", p.summary());
    assert_eq!(p.host_bytes, plan(23).unwrap().host_bytes, "the whole matrices pinned, as without a fold");
}

fn plan(free_gib: u64) -> Result<MemoryPlan, NoPlan> {
    choose(&porep_32gib(), free_gib * GIB, 0, PlanRequest::Auto)
}

#[test]
fn a_32gib_porep_key_is_44_gib_of_points() {
    let d = porep_32gib();
    assert_eq!(d.key_bytes() / 1_000_000_000, 47, "the parameter file's points: 47.4 GB");
    // A and B of the 8.9 GB shape (C is not needed on the device)
    assert!((5_000_000_000..6_000_000_000).contains(&d.matrix_bytes()), "{}", d.matrix_bytes());
    let one_pass = d.one_pass_bytes() as f64 / GIB as f64;
    assert!((12.5..14.5).contains(&one_pass), "the one-pass workspace measured ~13.6 GiB: {one_pass}");
}

#[test]
fn each_card_class_gets_the_plan_its_memory_holds() {
    // an H200 (135 GiB free): everything on the device, one-pass H
    let p = plan(135).unwrap();
    assert_eq!((p.kind, p.one_pass_h, p.witness_buffers), (PlanKind::Resident, true, 2));
    assert!(p.host_bytes == 0 && p.pcie_bytes_max == porep_32gib().witness_bytes());
    // an 80 GB card (~79 GiB free): the key fits without the one-pass workspace and with
    // one witness buffer (measured 1.10× the whole H200's seconds per partition)
    let p = plan(79).unwrap();
    assert_eq!((p.kind, p.one_pass_h, p.witness_buffers), (PlanKind::Resident, false, 1), "{}", p.summary());
    // a 48 GB card (47.2 GiB free once a CUDA context is made, measured): H and the
    // matrices stay, L/A/B on the host
    let p = plan(47).unwrap();
    assert_eq!(p.kind, PlanKind::PartlyResident, "{}", p.summary());
    // a 24 GB card (~23 GiB free once a CUDA context is made): all on the host, one witness
    // buffer
    let p = plan(23).unwrap();
    assert_eq!((p.kind, p.witness_buffers), (PlanKind::Streamed, 1), "{}", p.summary());
    assert!(p.shape_on_host && p.host_sections.iter().all(|&h| h));
    assert!(p.device_bytes < 23 * GIB, "{}", p.summary());
    // the same card as a gpu-worker saw it (2026-12-05): 22.5 GiB free beside its own context
    // and the device probe's; the streamed plan needed 22.9 then, with two index lists per
    // query's 0/1 split
    let p = choose(&porep_32gib(), 45 * GIB / 2, 0, PlanRequest::Auto).unwrap();
    assert_eq!(p.kind, PlanKind::Streamed, "{}", p.summary());
    // a 32 GB card (RTX 5090, ~31 GiB free): streamed too, with two witness buffers (the next
    // partition's expands while one proves)
    let p = plan(31).unwrap();
    assert_eq!((p.kind, p.witness_buffers), (PlanKind::Streamed, 2), "{}", p.summary());
    // host memory for the streamed plan stays far below cuzk's and supraseal's
    assert!(p.host_bytes < 60 * GIB, "{}", p.summary());
}

#[test]
fn a_16gb_card_fits_the_lean_plan() {
    // a 16 GB card: 15.2 GiB free beside one CUDA context (the bench's simulated card), about
    // 14.5 as a gpu-worker sees it (its probe's context and supraseal's, measured on 24 GB)
    for free in [152 * GIB / 10, 145 * GIB / 10] {
        let p = choose(&porep_32gib(), free, 0, PlanRequest::Auto).unwrap();
        assert!(p.needs(0) <= free, "{}", p.summary());
        assert_eq!((p.kind, p.witness_buffers), (PlanKind::Lean, 1), "{}", p.summary());
        assert!(p.shape_on_host && p.host_sections.iter().all(|&h| h));
    }
    let d = porep_32gib();
    let p = choose(&d, 15 * GIB, 0, PlanRequest::Only(PlanKind::Lean)).unwrap();
    // c is made in the witness's buffer: it holds the domain, not only the witness
    assert_eq!(p.witness_capacity, 1 << 27);
    // three 4 GiB vectors, the gather lists and the larger phase's workspace
    let gib = p.device_bytes as f64 / GIB as f64;
    assert!((13.0..14.0).contains(&gib), "{}", p.summary());
    assert_eq!((p.h_batch, p.shape_chunk), (1 << 24, SHAPE_CHUNK / 2));
    // the 24 GB card keeps the streamed plan: the lean one gives up the overlap of its phases
    assert_eq!(plan(23).unwrap().kind, PlanKind::Streamed);
    // the same bytes cross PCIe as in the streamed plan
    assert_eq!(p.pcie_bytes_max, plan(23).unwrap().pcie_bytes_max);
    assert!(p.host_bytes < 50 * GIB && p.host_bytes == plan(23).unwrap().host_bytes, "{}", d.key_bytes());
}

#[test]
fn a_card_too_small_for_every_plan_is_told_what_it_would_need() {
    let err = plan(12).unwrap_err();
    let smallest = PlanKind::Lean;
    assert_eq!(err.smallest, smallest);
    assert!(err.needed_gib > 12.0 && err.free_gib == 12.0, "{err}");
    let text = err.to_string();
    assert!(text.contains(smallest.name()) && text.contains("GiB are free"), "{text}");
    // the lean plan, the smallest, still needs more than a 12 GB card has
    let lean = choose(&porep_32gib(), 12 * GIB, 0, PlanRequest::Only(PlanKind::Lean)).unwrap();
    assert!(lean.why.contains("although it needs") && lean.needs(0) > 12 * GIB, "{}", lean.why);
}

#[test]
fn a_forced_plan_is_taken_and_says_so() {
    let p = choose(&porep_32gib(), 135 * GIB, 0, PlanRequest::Only(PlanKind::Streamed)).unwrap();
    assert_eq!(p.kind, PlanKind::Streamed);
    assert_eq!(p.why, "chosen with --memory-plan");
    let p = choose(&porep_32gib(), 20 * GIB, 0, PlanRequest::Only(PlanKind::Resident)).unwrap();
    assert_eq!(p.kind, PlanKind::Resident);
    assert!(p.why.contains("although it needs"), "{}", p.why);
}

#[test]
fn prove_buffers_are_shared_and_sized_by_the_largest_circuit() {
    let big = plan(135).unwrap();
    let small = KeyDims {
        counts: [(1 << 22) - 1, 3_000_000, 3_000_000, 800_000, 800_000],
        rows: 3_500_000,
        nnz: [9_000_000, 6_000_000, 4_000_000],
        table_len: 16,
        witness_len: 3_000_020,
        folded: None,
        dense_witness: false,
    };
    let alone = choose(&small, 135 * GIB, 0, PlanRequest::Auto).unwrap();
    // loaded after the 32 GiB key: the free memory no longer holds that key's points, shape
    // and witnesses; the prove buffers (freed by the loader) must still fit the big key's
    let free_after = 135 * GIB - (big.device_bytes - big.prove_bytes);
    let p = choose(&small, free_after, big.prove_bytes, PlanRequest::Auto).unwrap();
    assert_eq!(p.kind, PlanKind::Resident, "{}", p.summary());
    let own = alone.device_bytes - alone.prove_bytes;
    assert_eq!(p.needs(big.prove_bytes), own + big.prove_bytes + margin(own + big.prove_bytes));
    assert!(p.needs(big.prove_bytes) > alone.needs(0));
    // room for the small key alone is not room for it beside the big one
    let err = choose(&small, alone.needs(0), big.prove_bytes, PlanRequest::Auto);
    assert!(err.is_err() || err.unwrap().kind != PlanKind::Resident);
}

#[test]
fn requests_parse_from_their_names() {
    assert_eq!(PlanRequest::parse("auto"), Ok(PlanRequest::Auto));
    for k in PlanKind::ALL {
        assert_eq!(PlanRequest::parse(k.name()), Ok(PlanRequest::Only(k)));
    }
    let err = PlanRequest::parse("resident-ish").unwrap_err().to_string();
    assert!(err.contains("partly-resident"), "{err}");
}

#[test]
fn the_front_of_h_takes_the_room_a_streamed_plan_leaves() {
    let folded = porep_32gib_folded();
    // a 24 GB and a 32 GB card: the streamed plan, then as much of H on the device as fits
    let mut fronts = Vec::new();
    for free in [23 * GIB, 31 * GIB] {
        let p = choose(&folded, free, 0, PlanRequest::Auto).unwrap();
        assert_eq!(p.kind, PlanKind::Streamed, "{}", p.summary());
        let f = p.clone().with_h_front(&folded, 0);
        let bytes = f.h_front * 96;
        eprintln!("{} GiB: {}", free / GIB, f.summary());
        assert!(f.h_front >= FRONT_UNIT && f.h_front.is_multiple_of(FRONT_UNIT), "{}", f.summary());
        assert_eq!(f.pcie_bytes_max, p.pcie_bytes_max - bytes);
        assert_eq!(f.device_bytes, p.device_bytes + bytes);
        // it still fits, with the slack beside it, and a unit more would not have
        assert!(f.needs(0) + FRONT_SLACK <= free, "{}", f.summary());
        let more = MemoryPlan { device_bytes: f.device_bytes + FRONT_UNIT * 96, ..f.clone() };
        assert!(more.needs(0) + FRONT_SLACK > free, "{}", f.summary());
        assert!(f.summary().contains("of H kept on the device"), "{}", f.summary());
        fronts.push(f.h_front);
    }
    // a 32 GB card keeps ~4 GiB more of H than a 24 GB one (~8 GiB more room, of which its
    // second witness buffer takes 4)
    assert!(fronts[1] - fronts[0] > 3 * GIB / 96, "{fronts:?}");
    // H on the device already: nothing to keep
    let resident = choose(&folded, 135 * GIB, 0, PlanRequest::Auto).unwrap();
    assert_eq!(resident.clone().with_h_front(&folded, 0), resident);
    // room for all of H: all of it, not a whole number of units short of it
    let forced = choose(&folded, 135 * GIB, 0, PlanRequest::Only(PlanKind::Streamed)).unwrap();
    assert_eq!(forced.with_h_front(&folded, 0).h_front, folded.counts[0]);
    // less room than a unit: none
    let p = choose(&folded, 23 * GIB, 0, PlanRequest::Auto).unwrap();
    // (a unit's points, and the plan's margin on them)
    let tight = MemoryPlan { free_bytes: p.needs(0) + FRONT_SLACK + FRONT_UNIT * 96, ..p.clone() };
    let roomy = MemoryPlan { free_bytes: p.needs(0) + FRONT_SLACK + FRONT_UNIT * 98, ..p.clone() };
    assert_eq!(roomy.with_h_front(&folded, 0).h_front, FRONT_UNIT);
    assert_eq!(tight.with_h_front(&folded, 0).h_front, 0);
    // given back: the plan without it
    let kept = p.clone().with_h_front(&folded, 0);
    assert_eq!(kept.clone().with_front_kept(0), p);
    assert_eq!(kept.clone().with_front_kept(kept.h_front), kept);
    // prove buffers another key promised are not room
    let promised = p.clone().with_h_front(&folded, p.prove_bytes + 2 * GIB);
    assert!(promised.h_front < p.with_h_front(&folded, 0).h_front);
}

#[test]
fn more_room_is_worth_taking_back_only_for_a_better_plan() {
    let d = porep_32gib_folded();
    let at = |gib: u64| choose(&d, gib * GIB, 0, PlanRequest::Auto);
    // a 24 GB card's streamed plan against the lean one, and no plan at all
    assert!(is_better(&at(23), &at(15)));
    assert!(is_better(&at(15), &at(10)));
    assert!(!is_better(&at(10), &at(15)));
    // the same plan with a little more room: nothing to gain
    assert!(!is_better(&at(24), &at(23)), "{} | {}", at(24).unwrap().summary(), at(23).unwrap().summary());
    // two witness buffers before one, the one-pass H before the batched one, resident first
    assert!(is_better(&at(31), &at(23)), "{} | {}", at(31).unwrap().summary(), at(23).unwrap().summary());
    assert!(is_better(&at(135), &at(79)), "{} | {}", at(135).unwrap().summary(), at(79).unwrap().summary());
    assert!(is_better(&at(79), &at(47)));
    assert!(!is_better(&at(47), &at(79)) && !is_better(&at(79), &at(79)));
}

#[test]
fn a_dense_witness_is_planned_resident_or_not_at_all() {
    // a 32 GiB WindowPoSt partition's sizes are about a PoRep partition's; its witness is 99 %
    // values neither 0 nor 1
    let dense = KeyDims { dense_witness: true, ..porep_32gib_folded() };
    let sparse = porep_32gib_folded();
    let h200 = choose(&dense, 135 * GIB, 0, PlanRequest::Auto).unwrap();
    assert_eq!(h200.kind, PlanKind::Resident, "{}", h200.summary());
    eprintln!("dense, 135 GiB free: {} (needs {:.1} GiB)", h200.summary(), h200.needs(0) as f64 / GIB as f64);
    let bits = choose(&sparse, 135 * GIB, 0, PlanRequest::Auto).unwrap();
    assert!(h200.prove_bytes > bits.prove_bytes + 10 * GIB, "{} | {}", h200.summary(), bits.summary());
    // where the points cannot all be on the device there is no plan (the prover falls back),
    // where a PoRep-like witness streams
    for free in [47, 23, 15] {
        let err = choose(&dense, free * GIB, 0, PlanRequest::Auto).unwrap_err();
        assert_eq!(err.smallest, PlanKind::Resident, "{err}");
        assert!(choose(&sparse, free * GIB, 0, PlanRequest::Auto).is_ok());
    }
    // and a plan with points on the host is refused even when forced
    let forced = choose(&dense, 135 * GIB, 0, PlanRequest::Only(PlanKind::Streamed)).unwrap_err();
    assert!(forced.to_string().contains("resident"), "{forced}");
}

#[test]
fn a_12gb_card_fits_the_compact_plan_with_a_folded_shape() {
    let folded = porep_32gib_folded();
    // a 12 GB card: 11.2 GiB free beside one CUDA context (a simulated card), about 10.5 as a
    // gpu-worker sees it (as measured on 24 GB cards)
    for free in [112 * GIB / 10, 105 * GIB / 10] {
        let p = choose(&folded, free, 0, PlanRequest::Auto).unwrap();
        assert_eq!(p.kind, PlanKind::Compact, "{}", p.summary());
        assert!(p.needs(0) <= free && !p.shape_on_host && p.shape_folded, "{}", p.summary());
        assert!(p.host_sections.iter().all(|&h| h) && p.witness_capacity == 0);
    }
    let p = choose(&folded, 112 * GIB / 10, 0, PlanRequest::Auto).unwrap();
    // two 4 GiB vectors, the folded A, B and C, the gather lists, the compact witnesses and the
    // H batch's MSM
    let gib = p.device_bytes as f64 / GIB as f64;
    assert!((9.5..10.2).contains(&gib), "{}", p.summary());
    assert_eq!((p.h_batch, p.witness_buffers), (1 << 23, 2));
    assert!(folded.matrix_bytes_with_c() > folded.matrix_bytes() && folded.matrix_bytes_with_c() < 600_000_000);
    // the same bytes cross PCIe as in the lean plan; a 16 GB card keeps the lean plan, which
    // makes h with six NTTs
    let lean = choose(&folded, 152 * GIB / 10, 0, PlanRequest::Auto).unwrap();
    assert_eq!(lean.kind, PlanKind::Lean, "{}", lean.summary());
    assert_eq!(p.pcie_bytes_max, lean.pcie_bytes_max);
    // one prove at a time
    assert!(second_lane_bytes(&p, folded.witness_len, 0, 0).unwrap_err().contains("compact plan"));
    // below it nothing fits, and the error names the compact plan's needs
    let err = choose(&folded, 9 * GIB, 0, PlanRequest::Auto).unwrap_err();
    assert_eq!(err.smallest, PlanKind::Compact);
    assert!(err.needed_gib > 9.0 && err.needed_gib < 11.0, "{err}");
    // a shape that is not folded keeps its whole matrices, C too: at 32 GiB more than the lean
    // plan needs, so a 16 GB card does not get it
    let whole = choose(&porep_32gib(), 16 * GIB, 0, PlanRequest::Only(PlanKind::Compact)).unwrap();
    assert!(!whole.shape_folded && !whole.shape_on_host && whole.why.contains("although it needs"), "{}", whole.why);
    assert!(whole.needs(0) > plan(16).unwrap().needs(0));
}
