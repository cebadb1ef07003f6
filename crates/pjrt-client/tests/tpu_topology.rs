//! The TpuTopology queries against the TPU plugin (`libtpu` 0.0.52, `pjrt plugin install tpu`;
//! CI installs it) on five topologies made without a TPU (`TPU_SKIP_MDS_QUERY=1`), each checked
//! against the numbers libtpu gave on 2026-12-07 and cross-checked with what the topology's own
//! device descriptions say (coordinates, core on chip, process index).
//!
//! A test binary of its own, with one test: the variable is set before the plugin makes any
//! topology, and no other test reads the environment meanwhile.

use std::collections::BTreeSet;

use pjrt_client::{Client, ClientOptions, Error, Plugin, Topology, Value};

/// What one topology answers.
struct Expected {
    name: &'static str,
    processes: usize,
    chips_per_process: usize,
    cores_per_chip: usize,
    /// Logical devices of the default type per chip (v5p: 2 cores make one device, megacore).
    devices_per_chip: usize,
    chip_bounds: [i32; 3],
    process_bounds: [i32; 3],
    chips_per_process_bounds: [i32; 3],
    /// The logical devices process 0 drives.
    devices_on_process_0: &'static [i32],
}

const TOPOLOGIES: &[Expected] = &[
    Expected {
        name: "v5e:1x1",
        processes: 1,
        chips_per_process: 1,
        cores_per_chip: 1,
        devices_per_chip: 1,
        chip_bounds: [1, 1, 1],
        process_bounds: [1, 1, 1],
        chips_per_process_bounds: [1, 1, 1],
        devices_on_process_0: &[0],
    },
    Expected {
        name: "v5e:2x2",
        processes: 1,
        chips_per_process: 4,
        cores_per_chip: 1,
        devices_per_chip: 1,
        chip_bounds: [2, 2, 1],
        process_bounds: [1, 1, 1],
        chips_per_process_bounds: [2, 2, 1],
        devices_on_process_0: &[0, 1, 2, 3],
    },
    Expected {
        name: "v4:2x2x2",
        processes: 2,
        chips_per_process: 4,
        cores_per_chip: 2,
        devices_per_chip: 2,
        chip_bounds: [2, 2, 2],
        process_bounds: [1, 1, 2],
        chips_per_process_bounds: [2, 2, 1],
        devices_on_process_0: &[0, 1, 2, 3, 4, 5, 6, 7],
    },
    Expected {
        name: "v5p:4x4x4",
        processes: 16,
        chips_per_process: 4,
        cores_per_chip: 2,
        devices_per_chip: 1,
        chip_bounds: [4, 4, 4],
        process_bounds: [2, 2, 4],
        chips_per_process_bounds: [2, 2, 1],
        devices_on_process_0: &[0, 1, 4, 5],
    },
    Expected {
        name: "v6e:8x8",
        processes: 16,
        chips_per_process: 4,
        cores_per_chip: 1,
        devices_per_chip: 1,
        chip_bounds: [8, 8, 1],
        process_bounds: [4, 4, 1],
        chips_per_process_bounds: [2, 2, 1],
        devices_on_process_0: &[0, 1, 8, 9],
    },
];

fn tpu_plugin() -> Plugin {
    // Before libtpu loads or makes any topology; this binary's only test. The second variable
    // lets libtpu load while another process has it loaded (the CLI tests, in parallel):
    // otherwise it fails on `/tmp/libtpu_lockfile`, the lock of a TPU there is none of here.
    std::env::set_var("TPU_SKIP_MDS_QUERY", "1");
    std::env::set_var("ALLOW_MULTIPLE_LIBTPU_LOAD", "1");
    let known = pjrt_plugins::known_plugin("tpu").expect("tpu is a known plugin");
    let path = pjrt_plugins::install_verified(known, |line| eprintln!("{line}"))
        .expect("libtpu installs (pjrt plugin install tpu: 137 MB from PyPI once)");
    Plugin::load(path).expect("libtpu loads")
}

fn ints(attrs: &[(String, Value)], name: &str) -> Vec<i32> {
    match attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v) {
        Some(Value::Int64(v)) => vec![*v as i32],
        Some(Value::Int64List(v)) => v.iter().map(|x| *x as i32).collect(),
        other => panic!("attribute {name}: {other:?} in {attrs:?}"),
    }
}

fn product(dims: &[i32]) -> usize {
    dims.iter().map(|d| *d as usize).product()
}

fn check_topology(plugin: &Plugin, e: &Expected) {
    let name = e.name;
    let t = Topology::create(plugin, name, &[]).unwrap_or_else(|err| panic!("{name}: {err}"));

    // The counts, as libtpu gives them, and how they fit together.
    let chips = e.processes * e.chips_per_process;
    let devices = chips * e.devices_per_chip;
    assert_eq!(t.process_count().unwrap(), e.processes, "{name}");
    assert_eq!(t.chips_per_process().unwrap(), e.chips_per_process, "{name}");
    assert_eq!(t.chip_count().unwrap(), chips, "{name}");
    assert_eq!(t.core_count_of_default_type_per_chip().unwrap(), e.cores_per_chip, "{name}");
    assert_eq!(t.core_count_of_default_type().unwrap(), chips * e.cores_per_chip, "{name}");
    assert_eq!(t.core_count_of_default_type_per_process().unwrap(), e.chips_per_process * e.cores_per_chip, "{name}");
    assert_eq!(t.logical_device_count_of_default_type_per_chip().unwrap(), e.devices_per_chip, "{name}");
    assert_eq!(t.logical_device_count_of_default_type().unwrap(), devices, "{name}");
    let per_process = e.chips_per_process * e.devices_per_chip;
    assert_eq!(t.logical_device_count_of_default_type_per_process().unwrap(), per_process, "{name}");

    // Bounds: their products are the counts.
    let chip_bounds = t.chip_bounds().unwrap();
    let process_bounds = t.process_bounds().unwrap();
    assert_eq!(chip_bounds, e.chip_bounds, "{name}");
    assert_eq!(process_bounds, e.process_bounds, "{name}");
    assert_eq!(t.chips_per_process_bounds().unwrap(), e.chips_per_process_bounds, "{name}");
    assert_eq!(product(&chip_bounds), chips, "{name}");
    assert_eq!(product(&process_bounds), e.processes, "{name}");
    assert_eq!(product(&e.chips_per_process_bounds), e.chips_per_process, "{name}");

    // Processes: ids 0..n, distinct coordinates inside the process bounds.
    let process_ids = t.process_ids().unwrap();
    assert_eq!(process_ids, (0..e.processes as i32).collect::<Vec<_>>(), "{name}");
    let mut process_coords = BTreeSet::new();
    for &p in &process_ids {
        let coord = t.process_coord_from_id(p).unwrap();
        assert_eq!(coord.len(), 3, "{name}");
        assert!(coord.iter().zip(&process_bounds).all(|(c, b)| c < b), "{name}: process {p} at {coord:?}");
        assert!(process_coords.insert(coord), "{name}: two processes at one coordinate");
    }
    let on_process: Vec<Vec<i32>> =
        process_ids.iter().map(|&p| t.logical_device_of_default_type_ids_on_process(p).unwrap()).collect();
    assert_eq!(on_process[0], e.devices_on_process_0, "{name}");
    let mut all: Vec<i32> = on_process.iter().flatten().copied().collect();
    all.sort();
    assert_eq!(all, (0..devices as i32).collect::<Vec<_>>(), "{name}: each device on exactly one process");

    // Every device description agrees with the queries.
    let descriptions = t.device_descriptions().unwrap();
    assert_eq!(descriptions.len(), devices, "{name}");
    let mut chips_seen = BTreeSet::new();
    for d in &descriptions {
        let id = d.id().unwrap();
        let process = d.process_index().unwrap();
        let attrs = d.attributes().unwrap();
        let coords = ints(&attrs, "coords");
        let core = ints(&attrs, "core_on_chip")[0];
        let what = format!("{name}: {}", d.to_string().unwrap());
        assert!(coords.iter().zip(&chip_bounds).all(|(c, b)| c < b), "{what}");
        assert_eq!(
            t.chip_coord_and_core_index_for_logical_device_of_default_type(id).unwrap(),
            (coords.clone(), core),
            "{what}"
        );
        assert_eq!(
            t.logical_device_of_default_type_id_from_chip_coord_and_core_index(&coords, core).unwrap(),
            id,
            "{what}"
        );
        let (p, index) = t.process_id_and_index_on_process_for_logical_device_of_default_type(id).unwrap();
        assert_eq!(p, process, "{what}");
        assert_eq!(on_process[p as usize].get(index as usize), Some(&id), "{what}: index {index} on process {p}");
        let chip = t.chip_id_from_coord(&coords).unwrap();
        assert!((chip as usize) < chips, "{what}: chip {chip}");
        let (chip_process, chip_index) = t.process_id_and_index_on_process_for_chip(chip).unwrap();
        assert_eq!(chip_process, process, "{what}: chip {chip}");
        assert!((chip_index as usize) < e.chips_per_process, "{what}");
        chips_seen.insert(chip);
    }
    assert_eq!(chips_seen.len(), chips, "{name}: every chip holds a device");

    // Out of range: the plugin's error, never a value.
    assert!(t.chip_id_from_coord(&chip_bounds).is_err(), "{name}: a coordinate on the bound");
    assert!(t.chip_coord_and_core_index_for_logical_device_of_default_type(devices as i32).is_err(), "{name}");

    // Subslices: one chip of the topology, which says it is a subslice.
    assert!(!t.is_subslice_topology().unwrap(), "{name}");
    let one = t.subslice(&[1, 1, 1], &[1, 1, 1]).unwrap();
    assert!(one.is_subslice_topology().unwrap(), "{name}");
    assert_eq!((one.chip_count().unwrap(), one.process_count().unwrap()), (1, 1), "{name}");
    assert_eq!(one.chip_bounds().unwrap(), [1, 1, 1], "{name}");
    assert_eq!(one.platform_name().unwrap(), "tpu", "{name}");
}

#[test]
fn tpu_topology_queries_agree_with_libtpu_and_the_device_descriptions() {
    let plugin = tpu_plugin();
    let ext = plugin.tpu_topology_extension().expect("libtpu has the TpuTopology extension");
    assert_eq!(ext.struct_size(), 280, "libtpu 0.0.52's node; 27 of its 32 members are declared");
    assert_eq!(ext.members().len(), 27);
    for e in TOPOLOGIES {
        check_topology(&plugin, e);
    }

    // The members beyond the 22 queries XLA's wrapper answers.
    let t = Topology::create(&plugin, "v6e:8x8", &[]).unwrap();
    assert!(ext.is_enhanced_barrier_enabled(&t).unwrap());
    assert!(!ext.has_limited_ici_connectivity(&t).unwrap());
    let v4 = Topology::create(&plugin, "v4:2x2x2", &[]).unwrap();
    match ext.is_reachable_over_limited_ici(&v4, 0, 1) {
        Err(Error::Pjrt { message, .. }) => assert!(message.contains("must be 2d"), "{message}"),
        other => panic!("a 3-d topology has no limited ICI routing: {other:?}"),
    }

    // A topology of another plugin is refused before any call; a plugin without the extension
    // says so.
    let cpu = Plugin::load(pjrt_plugins::install_verified(pjrt_plugins::default_plugin(), |_| ()).unwrap()).unwrap();
    let client = Client::new(&cpu, &ClientOptions::new()).unwrap();
    let cpu_topology = client.topology().unwrap();
    assert!(ext.process_count(&cpu_topology).is_err());
    match cpu_topology.process_count() {
        Err(Error::Unsupported { function, .. }) => {
            assert!(function.contains("PJRT_TpuTopology_Extension"), "{function}")
        }
        other => panic!("the CPU plugin has no TpuTopology extension: {other:?}"),
    }
}
