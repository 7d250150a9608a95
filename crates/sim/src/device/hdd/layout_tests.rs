//! Layout tests: LBN → (cylinder, surface, physical sector) for DiskSim's mapping and sparing
//! schemes, with expected places computed by hand from the drives' `.model` files (DiskSim
//! 4.0's `valid/`), and the timing of transfers over slipped sectors and zone boundaries.
//! Each case copies only the few values it needs from its `.model` file.

// The test that reads DiskSim's files prints a line when it skips for want of them.
#![allow(clippy::print_stderr)]

use elevator_core::ComponentSpec;
use proptest::prelude::*;

use super::layout::{
    Geometry, LayoutSpec, Location, Mapping, Sparing, Target, ZoneSpec, boundary_units,
};
use super::*;

/// An `hdd` from `key=value,...` on top of the default preset.
fn build(keys: &str) -> Result<Hdd, ParamError> {
    let spec = ComponentSpec::parse("device", &format!("hdd:{keys}")).unwrap();
    let params = Params::resolve(&spec, KEYS, PRESETS[0].values)?;
    Hdd::from_params(&params)
}

fn place(device: &Hdd, lbn: u64) -> (u32, u32, u32) {
    let at = device.mechanics.geometry.locate(lbn);
    (at.track.cylinder, at.track.surface, at.physical_sector)
}

/// The Cheetah 9LP's first two zones (cheetah9LP.model: 12 surfaces, sparing scheme 9,
/// mapping 0; zone 0 cylinders 0-846, 254 sectors per track, skews 97/133, 1270 spares,
/// first slips 168317, 223330, 365935; zone 1 cylinders 848-1643, 245 sectors, skews 97/133,
/// 980 spares, first slip 17579).
const CHEETAH: &str = "rpm=10045,cylinders=1644,surfaces=12,zones=0-846@254/848-1643@245,\
    zone_skews=97:133/97:133,zone_spares=1270/980,sparing=per-zone,\
    slips=0:168317+223330+365935/1:17579";

#[test]
fn cheetah_per_zone_sparing_places_slips_and_zone_starts() {
    // Proves per-zone sparing (scheme 9): a slipped sector is skipped, spares sit at the end
    // of the zone (so the next zone starts past them), each zone restarts its skew pattern at
    // its own offset, and cylinder 847 between the zones holds nothing.
    let device = build(CHEETAH).unwrap();
    // One cylinder's advance: (11 track skews + 1 cylinder skew) mod 254 = 1200 mod 254 = 184.
    // LBN 168316 is slot 168316 (no slip at or before it): track 662 = cylinder 55, surface
    // 2, slot 168; angle (55·184 + 2·97 + 168) mod 254 = 10482 mod 254 = 68.
    assert_eq!(place(&device, 168_316), (55, 2, 68));
    // LBN 168317 passes the slip at slot 168317: slot 168318, physical 70 (69 is the slip).
    assert_eq!(place(&device, 168_317), (55, 2, 70));
    // A run stops before the slip.
    assert_eq!(device.mechanics.geometry.locate(168_316).run_sectors, 1);
    // Zone 0 holds 847 cylinders · 12 · 254 − 1270 spares = 2,580,386 LBNs; zone 1 starts at
    // cylinder 848, surface 0, angle 0 (offset 0).
    assert_eq!(place(&device, 2_580_385).0, 846);
    assert_eq!(place(&device, 2_580_386), (848, 0, 0));
    // Its next track is one track skew on; its next cylinder (11·97 + 133) mod 245 = 220.
    assert_eq!(place(&device, 2_580_386 + 245), (848, 1, 97));
    assert_eq!(place(&device, 2_580_386 + 12 * 245), (849, 0, 220));
    // The whole layout: 2,580,386 + 796 cylinders · 12 · 245 − 980.
    assert_eq!(device.capacity_sectors(), 2_580_386 + 796 * 12 * 245 - 980);
}

/// The HP C2247A's first two zones (hp_c2247a_validate.model: 13 surfaces, sparing scheme 1,
/// mapping 0; zone 0 cylinders 0-558, 96 sectors, offset 0, empty front 1632, skews 14/32,
/// 325 spare tracks, first slips 468, 526; zone 1 cylinders 559-760, 92 sectors, offset 14,
/// skews 13/30, 130 spare tracks).
const HP: &str = "rpm=5400,cylinders=761,surfaces=13,zones=0-558@96/559-760@92,\
    zone_skews=14:32/13:30,zone_offsets=0:1632/14:0,zone_spares=325/130,sparing=tracks,\
    slips=0:468+526,seek=table,seek_table=1:1/760:1";

#[test]
fn hp_track_sparing_empty_front_and_offset() {
    // Proves track sparing (scheme 1): slips are whole tracks, the empty front pushes the
    // first LBN in, spare tracks end the zone, and "Offset of first block" rotates a zone.
    let device = build(HP).unwrap();
    // Cylinder advance (12·14 + 32) mod 96 = 8. LBN 0 is sector 1632 = track 17 = cylinder
    // 1, surface 4: angle 8 + 4·14 = 64.
    assert_eq!(place(&device, 0), (1, 4, 64));
    // LBN 43295 is sector 44927: track 467, slot 95 (no slip up to it) = cylinder 35,
    // surface 12: (35·8 + 12·14 + 95) mod 96 = 543 mod 96 = 63.
    assert_eq!(place(&device, 43_295), (35, 12, 63));
    // LBN 43296 starts listed track 468, which is slipped: track 469 = cylinder 36, surface
    // 1: (36·8 + 14) mod 96 = 14.
    assert_eq!(place(&device, 43_296), (36, 1, 14));
    // Zone 0: 559·13·96 − 1632 − 325·96 = 664,800 LBNs. Its last is sector 666,431: listed
    // track 6941 slot 95, two slips before it: track 6943 = cylinder 534, surface 1,
    // (534·8 + 14 + 95) mod 96 = 61.
    assert_eq!(place(&device, 664_799), (534, 1, 61));
    // Zone 1 starts at cylinder 559, surface 0, at its offset of 14 sectors.
    assert_eq!(place(&device, 664_800), (559, 0, 14));
    // Zone 1 holds 202·13·92 − 130·92 LBNs.
    assert_eq!(device.capacity_sectors(), 664_800 + 202 * 13 * 92 - 130 * 92);
}

#[test]
fn ibm_at_end_sparing_slips_rotate_later_cylinders() {
    // Proves at-end sparing (scheme 7): a slip pushes later LBNs on by a sector and rotates
    // every later cylinder of the zone by one sector (DiskSim counts slips before a cylinder
    // in its skew), and the zone loses one LBN per slip.
    // ibm18es.model: 5 surfaces; zone 0 cylinders 0-256, 390 sectors, empty front 1950,
    // skews 58/101, 0 spares, slips 199078, 346029, 384777.
    let device = build(
        "rpm=7200,cylinders=257,surfaces=5,zones=0-256@390,zone_skews=58:101,\
         zone_offsets=0:1950,sparing=at-end,slips=0:199078+346029+384777",
    )
    .unwrap();
    // Cylinder advance (4·58 + 101) mod 390 = 333. LBN 197128 is sector 199078, the slip:
    // it moves to 199079 = track 510 (cylinder 102, surface 0), slot 179; no slip before
    // cylinder 102's first sector 198900: (102·333 + 179) mod 390 = 215.
    assert_eq!(place(&device, 197_128), (102, 0, 215));
    // LBN 198899 is sector 198899 + 1950 + 1 = 200850, cylinder 103's first; one slip lies
    // before it, so (103·333 + 1) mod 390 = 370.
    assert_eq!(place(&device, 198_899), (103, 0, 370));
    assert_eq!(device.capacity_sectors(), 257 * 5 * 390 - 1950 - 3);
}

#[test]
fn atlas_serpentine_mapping_reverses_odd_cylinders() {
    // Proves the serpentine mappings: with scheme 1 odd cylinders of a zone run from the last
    // surface down (skews still count head switches in LBN order); with scheme 2 oddness is
    // the absolute cylinder number, so a zone starting on an odd cylinder starts reversed.
    // atlas10k.model: 6 surfaces, sparing 9; zone 0 cylinders 0-432, 334 sectors, skews
    // 63/113, 89 spares; zone 1 cylinders 433-848, the same, 84 spares.
    let keys = "rpm=10025,cylinders=849,surfaces=6,zones=0-432@334/433-848@334,\
                zone_skews=63:113/63:113,zone_spares=89/84,sparing=per-zone";
    let device = build(&format!("{keys},mapping=serpentine")).unwrap();
    assert_eq!(place(&device, 0), (0, 0, 0));
    assert_eq!(place(&device, 334), (0, 1, 63));
    // Cylinder advance (5·63 + 113) mod 334 = 94. LBN 2004 starts cylinder 1 on surface 5.
    assert_eq!(place(&device, 2004), (1, 5, 94));
    assert_eq!(place(&device, 2004 + 334), (1, 4, 94 + 63));
    // Zone 1 starts at LBN 433·6·334 − 89 = 867,643 on its first cylinder: surface 0.
    assert_eq!(place(&device, 867_643), (433, 0, 0));
    let global = build(&format!("{keys},mapping=serpentine-global")).unwrap();
    assert_eq!(place(&global, 867_643), (433, 5, 0));
    assert_eq!(place(&global, 2004), (1, 5, 94));
}

#[test]
fn block_count_caps_the_disk_and_is_refused_past_the_layout() {
    // Proves `block_count` exposes exactly that many LBNs and is refused, naming the key,
    // when the layout holds fewer.
    let device = build(&format!("{HP},block_count=1000")).unwrap();
    assert_eq!(device.capacity_sectors(), 1000);
    let error = build(&format!("{HP},block_count=99999999")).unwrap_err().to_string();
    assert!(error.contains("block_count") && error.contains("holds only"), "{error}");
}

#[test]
fn impossible_layouts_are_refused_naming_the_key() {
    // Proves bad layout values are refused with the key and what is accepted.
    let refusal = |keys: &str| build(keys).unwrap_err().to_string();
    let base = "cylinders=100,surfaces=2,zones=0-49@100/50-99@90";
    let cases = [
        (format!("{base},zone_skews=1:2"), "zone_skews"),
        (format!("{base},zone_offsets=0:0/0:0/0:0"), "zone_offsets"),
        ("cylinders=100,zones=0-60@100/50-99@90".to_owned(), "zones"),
        ("cylinders=100,zones=0-49@100/50@90".to_owned(), "zones"),
        ("cylinders=100,zones=0-149@100".to_owned(), "zones"),
        (format!("{base},sparing=per-zone,zone_spares=5/5,slips=0:10000"), "slips"),
        (format!("{base},sparing=per-zone,zone_spares=5/5,slips=0:9+8"), "slips"),
        (format!("{base},sparing=per-zone,zone_spares=1/1,slips=0:3+4"), "slips"),
        (format!("{base},sparing=per-zone,zone_spares=5/5,slips=2:3"), "slips"),
        (format!("{base},slips=0:3"), "slips"),
        (format!("{base},sparing=per-cylinder"), "sparing"),
        (format!("{base},sparing=per-zone,zone_spares=5/5,defects=0:10>11"), "defects"),
        (format!("{base},zone_spares=5/5"), "zone_spares"),
        (
            "seek=hpl,hpl=300/3.81/0.33/7.75/0.0059/-1,seek_first_ten=1/2/3".to_owned(),
            "seek_first_ten",
        ),
        ("seek_first_ten=1/2/3/4/5/6/7/8/9/10".to_owned(), "seek_first_ten"),
    ];
    for (keys, key) in cases {
        let error = refusal(&keys);
        assert!(error.contains(key), "{keys}: {error}");
    }
}

#[test]
fn defects_are_remapped_into_the_zone_spares() {
    // Proves a defective sector's LBN moves to its replacement while its neighbours keep
    // their places, and runs stop at the defect.
    // 1 zone, 2 surfaces, 10 cylinders of 10 sectors = 200 sectors, 5 spares: LBNs 0..195.
    let device = build(
        "cylinders=10,surfaces=2,zones=0-9@10,zone_skews=0:0,sparing=per-zone,\
         zone_spares=5,defects=0:13>197,seek=table,seek_table=1:1",
    )
    .unwrap();
    let geometry = &device.mechanics.geometry;
    assert_eq!(device.capacity_sectors(), 195);
    assert_eq!(place(&device, 12), (0, 1, 2));
    // Sector 197 is track 19 = cylinder 9, surface 1, slot 7.
    assert_eq!(place(&device, 13), (9, 1, 7));
    assert_eq!(geometry.locate(13).run_sectors, 1);
    assert_eq!(place(&device, 14), (0, 1, 4));
    assert_eq!(geometry.locate(10).run_sectors, 3);
}

/// The time of a transfer from its first sector passing under the head to its end, with the
/// head already on the first sector's track.
fn transfer_ns(device: &Hdd, lbn: u64, sector_count: u64) -> u64 {
    let mechanics = &device.mechanics;
    let target = mechanics.target(lbn);
    let access =
        mechanics.access(target.location.track, Instant::ZERO, target, sector_count, false);
    access.end.as_nanos() - access.transfer_start.as_nanos()
}

#[test]
fn a_transfer_over_a_slip_waits_for_the_slipped_sector() {
    // Proves a sequential transfer passes over a slipped sector at the cost of its rotation:
    // two LBNs around the Cheetah's slip take three sectors' time, two others take two.
    let device = build(CHEETAH).unwrap();
    let sector_ns = 60e9 / 10045.0 / 254.0;
    let over_slip = transfer_ns(&device, 168_316, 2) as f64;
    assert!((over_slip - 3.0 * sector_ns).abs() < 2.0, "{over_slip} vs {}", 3.0 * sector_ns);
    let plain = transfer_ns(&device, 168_314, 2) as f64;
    assert!((plain - 2.0 * sector_ns).abs() < 2.0, "{plain} vs {}", 2.0 * sector_ns);
}

#[test]
fn a_transfer_across_a_zone_boundary_seeks_and_waits_for_the_offset() {
    // Proves a transfer from the HP's last zone-0 LBN (cylinder 534, physical sector 61 of
    // 96) to zone 1's first (cylinder 559, sector 14 of 92, its offset) costs: the sector,
    // the 1 ms seek of the test's flat seek table, the rotation to sector 14 of the new
    // track, and that sector.
    let device = build(HP).unwrap();
    let revolution_ns: f64 = 60e9 / 5400.0;
    // The first sector ends at angle 62/96; the seek turns the platter 1 ms further.
    let angle_after_seek = (62.0 / 96.0 + 1e6 / revolution_ns).fract();
    let wait = (14.0 / 92.0 - angle_after_seek).rem_euclid(1.0);
    let expected = revolution_ns / 96.0 + 1e6 + wait * revolution_ns + revolution_ns / 92.0;
    let measured = transfer_ns(&device, 664_799, 2) as f64;
    assert!((measured - expected).abs() < 3.0, "{measured} vs {expected}");
}

#[test]
fn hplplus10_takes_the_first_ten_then_the_equation() {
    // Proves seek_first_ten (DiskSim's hplplus10, the HP C2247A's values): distances 1..10
    // take the listed times, longer ones the HPL pieces.
    let device = build(
        "cylinders=2051,seek=hpl,hpl=300/3.81/0.33/7.75/0.0059/-1,\
         seek_first_ten=2.89/3.68/3.81/3.98/4.27/4.65/4.52/4.65/4.82/4.99",
    )
    .unwrap();
    let ms = |d| device.seek_time(d).as_nanos() as f64 / 1e6;
    assert_eq!(ms(1), 2.89);
    assert_eq!(ms(7), 4.52);
    assert_eq!(ms(10), 4.99);
    assert!((ms(11) - (3.81 + 0.33 * 11f64.sqrt())).abs() < 1e-6);
    assert!((ms(300) - (7.75 + 0.0059 * 300.0)).abs() < 1e-6);
    assert_eq!(ms(0), 0.0);
}

#[test]
fn seek_tables_interpolate_as_disksim_extracted() {
    // Proves the table follows DiskSim's extracted seek: listed distances exact, linear
    // between points (falling where the table falls), the last slope extended past the end.
    let curve = SeekCurve::parse_table("1:1.245/2:1.157/10:1.531/12:1.515").unwrap();
    assert_eq!(curve.seek_ms(2), 1.157);
    assert!((curve.seek_ms(6) - (1.157 + (1.531 - 1.157) * 4.0 / 8.0)).abs() < 1e-12);
    assert!((curve.seek_ms(11) - 1.523).abs() < 1e-12);
    assert!((curve.seek_ms(14) - (1.515 - 0.008 * 2.0)).abs() < 1e-12);
    assert_eq!(curve.seek_ns(0), 0);
}

/// A random small layout (possibly refused), for the property test.
fn layout_strategy() -> impl Strategy<Value = (Vec<ZoneSpec>, LayoutSpec, u32)> {
    let zone = (1u32..4, 3u32..20, 0u32..30, 0u32..30, 0u32..20, 0u64..25, 0u64..6, 0u64..1000);
    (prop::collection::vec(zone, 1..4), 1u32..4, 0usize..7, 0usize..3, 0u32..3, 1u32..3).prop_map(
        |(zones, surfaces, sparing, mapping, gap, range_cylinders)| {
            let sparing = [
                Sparing::None,
                Sparing::Tracks,
                Sparing::PerTrack,
                Sparing::AtEnd,
                Sparing::PerRange,
                Sparing::PerZone,
                Sparing::PerZoneSlipToEnd,
            ][sparing];
            let mapping =
                [Mapping::Conventional, Mapping::Serpentine, Mapping::SerpentineGlobal][mapping];
            let mut first = 0;
            let mut specs = Vec::new();
            for (count, spt, track, cylinder, offset, front, spares, seed) in zones {
                let tracks = u64::from(count * surfaces);
                let units =
                    if sparing == Sparing::Tracks { tracks } else { tracks * u64::from(spt) };
                let spares = match sparing {
                    Sparing::None | Sparing::AtEnd => 0,
                    Sparing::Tracks => spares.min(tracks.saturating_sub(2)),
                    Sparing::PerTrack => spares.min(u64::from(spt) - 1),
                    _ => spares,
                };
                let slip_room = match sparing {
                    Sparing::None => 0,
                    Sparing::AtEnd | Sparing::PerZoneSlipToEnd => 3,
                    _ => spares,
                };
                // Slips spread by the seed over the zone, ascending and distinct.
                let mut slips: Vec<u64> =
                    (0..slip_room).map(|i| (seed * (i + 7) + i * 13) % units.max(1)).collect();
                slips.sort_unstable();
                slips.dedup();
                // Half the zones with spare space get a defect remapped to their last
                // location (refused, and skipped, when that is not a spare).
                let defects = match sparing {
                    Sparing::Tracks
                    | Sparing::PerTrack
                    | Sparing::PerRange
                    | Sparing::PerZone
                    | Sparing::PerZoneSlipToEnd
                        if seed % 2 == 0 && units > 1 =>
                    {
                        vec![(seed % (units - 1), units - 1)]
                    }
                    _ => Vec::new(),
                };
                let front = if sparing == Sparing::Tracks { front % u64::from(spt) } else { front };
                specs.push(ZoneSpec {
                    first_cylinder: first,
                    cylinder_count: count,
                    sectors_per_track: spt,
                    track_skew_sectors: track,
                    cylinder_skew_sectors: cylinder,
                    first_block_offset_sectors: offset,
                    front_empty_sectors: front,
                    spares,
                    slips,
                    defects,
                });
                first += count + gap;
            }
            let layout = LayoutSpec {
                cylinders: first,
                mapping,
                sparing,
                block_count: None,
                range_cylinders,
            };
            (specs, layout, surfaces)
        },
    )
}

proptest! {
    #[test]
    fn locate_is_injective_and_keeps_lbn_order_on_a_track(
        (zones, layout, surfaces) in layout_strategy()
    ) {
        // Proves that for random layouts with spares, slips and defects, no two LBNs share a
        // sector, LBNs on one track ascend (remapped ones aside), and a run's next LBN is the
        // next physical sector of the same track.
        let Ok(geometry) = Geometry::new(&zones, &layout, surfaces, 7200) else {
            return Ok(());
        };
        let no_defects = zones.iter().all(|zone| zone.defects.is_empty());
        let mut seen = std::collections::BTreeMap::new();
        let mut previous: Option<Location> = None;
        for lbn in 0..geometry.capacity_sectors() {
            let at = geometry.locate(lbn);
            prop_assert!(at.sector_in_track < at.sectors_per_track);
            prop_assert!(at.physical_sector < at.sectors_per_track);
            prop_assert!(at.run_sectors >= 1);
            let key = (at.track.cylinder, at.track.surface, at.physical_sector);
            prop_assert!(seen.insert(key, lbn).is_none(), "{key:?} twice");
            if let Some(before) = previous {
                // A remapped LBN sits wherever its replacement is, so order holds on a track
                // only without defects.
                if before.track == at.track && no_defects {
                    prop_assert!(before.sector_in_track < at.sector_in_track);
                }
                if before.run_sectors > 1 {
                    prop_assert_eq!(before.track, at.track);
                    prop_assert_eq!(at.sector_in_track, before.sector_in_track + 1);
                    prop_assert_eq!(
                        at.physical_sector,
                        (before.physical_sector + 1) % at.sectors_per_track
                    );
                    prop_assert_eq!(at.run_sectors, before.run_sectors - 1);
                }
            }
            previous = Some(at);
        }
    }
}

/// DiskSim's parameter files (`shared/disksim` beside the repository), or `None` outside CI
/// when they are absent.
fn disksim_dir() -> Option<std::path::PathBuf> {
    crate::device::disksim::shared_dir_for_tests(std::path::Path::new(env!("CARGO_MANIFEST_DIR")))
}

/// The layout keys of a DiskSim drive as the reader maps them (`disksim::load`), without its
/// Block count, and that Block count.
fn model_keys(parv: &std::path::Path) -> (String, u64) {
    let mapped = crate::device::disksim::load(parv)
        .unwrap_or_else(|error| panic!("{}: {error}", parv.display()));
    let mut block_count = 0;
    let mut keys = Vec::new();
    for (key, value) in &mapped.values {
        match *key {
            "block_count" => block_count = value.parse().unwrap(),
            // The layout is under test: a flat seek, no other mechanics.
            "seek" | "seek_table" | "hpl" | "seek_first_ten" => {}
            _ if value.is_empty() => {}
            _ => keys.push(format!("{key}={value}")),
        }
    }
    keys.push("seek=table,seek_table=1:1".to_owned());
    (keys.join(","), block_count)
}

#[test]
fn disksim_layouts_hold_their_block_counts() {
    // Proves each of DiskSim's four validated layouts, read whole by the DiskSim reader, is
    // accepted and holds at least its Block count (DiskSim itself uses the layout's total);
    // the HP C2247A's track-sparing layout holds exactly its 2,054,864, a check of the
    // spare, empty-front and slip arithmetic against the drive's own figure.
    let Some(dir) = disksim_dir() else { return };
    for file in ["cheetah9LP.parv", "ibm18es.parv", "atlas10k.parv", "hp_c2247a.parv"] {
        let (keys, block_count) = model_keys(&dir.join(file));
        let whole = build(&keys).unwrap_or_else(|error| panic!("{file}: {error}"));
        assert!(whole.capacity_sectors() >= block_count, "{file}: {}", whole.capacity_sectors());
        if file.starts_with("hp_") {
            assert_eq!(whole.capacity_sectors(), block_count);
        }
        let exposed = build(&format!("{keys},block_count={block_count}")).unwrap();
        assert_eq!(exposed.capacity_sectors(), block_count);
        let last = exposed.mechanics.geometry.locate(block_count - 1);
        assert!(last.track.cylinder < exposed.mechanics.geometry.cylinders());
    }
}

#[test]
fn sustained_rate_discounts_slipped_sectors() {
    // Proves the sustained rate counts slipped sectors as passing without data: with
    // per-zone sparing, 100 slips among zone 0's LBNs scale the rate by LBNs / (LBNs + 100),
    // while spares (at the zone's end) do not change it.
    let keys = "cylinders=1000,surfaces=4,zones=0-999@500,zone_skews=50:80,bus_rate=10000";
    let plain = build(keys).unwrap();
    let spared = build(&format!("{keys},sparing=per-zone,zone_spares=400")).unwrap();
    assert_eq!(spared.sustained_read_bytes_per_s(), plain.sustained_read_bytes_per_s());
    let slips: Vec<String> = (0..100).map(|i| (i * 1000 + 7).to_string()).collect();
    let slipped =
        build(&format!("{keys},sparing=per-zone,zone_spares=400,slips=0:{}", slips.join("+")))
            .unwrap();
    let lbns = 1000.0 * 4.0 * 500.0 - 400.0;
    let expected = plain.sustained_read_bytes_per_s() * lbns / (lbns + 100.0);
    assert!((slipped.sustained_read_bytes_per_s() - expected).abs() < 1e-6 * expected);
}

#[test]
fn per_track_and_per_range_sparing_keep_spares_in_their_regions() {
    // Proves per-track sparing (scheme 3): each track holds spt − spares LBNs, a slip uses a
    // spare of its own track, and every slip before a track rotates it by a sector; and
    // per-range sparing (scheme 8): each range of `sparing_range` cylinders ends in spares.
    // 2 cylinders × 2 surfaces × 10 sectors, 2 spares per track (8 LBNs a track), skews 3/5,
    // a slip at sector 13 (track 1, slot 3).
    let device = build(
        "cylinders=2,surfaces=2,zones=0-1@10,zone_skews=3:5,sparing=per-track,zone_spares=2,\
         slips=0:13,seek=table,seek_table=1:1",
    )
    .unwrap();
    assert_eq!(device.capacity_sectors(), 40 - 2 * 4);
    // LBN 8 starts track 1 (cylinder 0, surface 1) at slot 0: one track skew, 3.
    assert_eq!(place(&device, 8), (0, 1, 3));
    // LBN 10 is slot 2; the slip at slot 3 ends its run; LBN 11 moves to slot 4: 3 + 4.
    assert_eq!(place(&device, 10), (0, 1, 5));
    assert_eq!(device.mechanics.geometry.locate(10).run_sectors, 1);
    assert_eq!(place(&device, 11), (0, 1, 7));
    // LBN 16 starts track 2 = cylinder 1, surface 0: advance (1·3 + 5) = 8, plus one slip
    // before the track: 9.
    assert_eq!(place(&device, 16), (1, 0, 9));
    // 4 cylinders × 1 surface × 10 sectors in ranges of 2 cylinders with 3 spares each: 17
    // LBNs a range; a slip at sector 5.
    let ranged = build(
        "cylinders=4,surfaces=1,zones=0-3@10,zone_skews=0:0,sparing=per-range,\
         sparing_range=2,zone_spares=3,slips=0:5,seek=table,seek_table=1:1",
    )
    .unwrap();
    assert_eq!(ranged.capacity_sectors(), 40 - 3 * 2);
    assert_eq!(place(&ranged, 4), (0, 0, 4));
    assert_eq!(place(&ranged, 5), (0, 0, 6));
    assert_eq!(place(&ranged, 16), (1, 0, 7));
    assert_eq!(place(&ranged, 17), (2, 0, 0));
}

// Proves that `Mechanics::target`, which derives an LBN on the last target's run from that
// target instead of locating it, finds exactly what the layout places: walked LBN by LBN
// and in strides over the runs, slips, defects, spare tracks, skews (physical sectors that
// wrap past the track's end), serpentine surfaces and zone boundaries of each layout, and
// after jumps back and forth.
#[test]
fn targets_derived_from_the_last_one_are_the_located_ones() {
    let layouts = [
        CHEETAH.to_string(),
        HP.to_string(),
        "rpm=10025,cylinders=849,surfaces=6,zones=0-432@334/433-848@334,\
         zone_skews=63:113/63:113,zone_spares=89/84,sparing=per-zone,mapping=serpentine"
            .to_string(),
        "cylinders=10,surfaces=2,zones=0-9@10,zone_skews=3:7,sparing=per-zone,\
         zone_spares=5,defects=0:13>197,seek=table,seek_table=1:1"
            .to_string(),
        "cylinders=2,surfaces=2,zones=0-1@10,zone_skews=3:5,sparing=per-track,zone_spares=2,\
         slips=0:13,seek=table,seek_table=1:1"
            .to_string(),
        "cylinders=4,surfaces=1,zones=0-3@10,zone_skews=4:0,sparing=per-range,\
         sparing_range=2,zone_spares=3,slips=0:5,seek=table,seek_table=1:1"
            .to_string(),
    ];
    for keys in &layouts {
        let device = build(keys).unwrap();
        let mechanics = &device.mechanics;
        let geometry = &mechanics.geometry;
        let capacity = device.capacity_sectors();
        let check = |lbn: u64| {
            let location = geometry.locate(lbn);
            let angle_units =
                boundary_units(u64::from(location.physical_sector), location.sectors_per_track);
            assert_eq!(
                mechanics.target(lbn),
                Target { lbn, location, angle_units },
                "{keys}: LBN {lbn}"
            );
        };
        // Every LBN in order near the start, around the slips and defects of the small
        // layouts, and around the Cheetah's first slip and zone boundary.
        let stretches =
            [0..capacity.min(3000), 168_000..168_700, 2_579_900..2_581_000, 867_400..868_000];
        for stretch in stretches {
            for lbn in stretch.start.min(capacity)..stretch.end.min(capacity) {
                check(lbn);
            }
        }
        // Strides that land inside, at the end of and past the current run, and jumps back.
        let mut lbn = 0;
        let mut step = 1;
        while lbn < capacity {
            check(lbn);
            check(lbn / 2);
            check(lbn);
            step = step * 7 % 601 + 1;
            lbn += step;
        }
    }
}
