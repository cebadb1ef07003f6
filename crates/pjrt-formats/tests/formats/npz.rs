//! `.npz` archives written by numpy (`tools/gen_npz_testdata.py`): stored members are mapped,
//! deflated ones inflated, both hold the same values; our writer's archives read back the same;
//! malformed archives are refused.

use std::path::PathBuf;

use pjrt_client::num_complex::Complex;
use pjrt_formats::npy::NpyArray;
use pjrt_formats::npz::{self, Npz, NpzArray};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/npz").join(name)
}

#[test]
fn numpy_archives_stored_and_deflated_hold_the_same_arrays() {
    let stored = Npz::open(&data("mixed_stored.npz")).unwrap();
    let deflated = Npz::open(&data("mixed.npz")).unwrap();
    assert_eq!(stored.names().collect::<Vec<_>>(), deflated.names().collect::<Vec<_>>());
    assert_eq!(stored.len(), 11);
    for name in stored.names() {
        assert!(matches!(stored.get(name), Some(NpzArray::Mapped(_))), "{name}");
        assert!(matches!(deflated.get(name), Some(NpzArray::Loaded(_))), "{name}");
        assert_eq!(stored.get(name).unwrap().to_array(), deflated.get(name).unwrap().to_array(), "{name}");
    }
    let get = |name: &str| deflated.get(name).unwrap().to_array();
    assert_eq!(get("i8").to_vec::<i8>().unwrap(), [-3, -2, -1, 0, 1, 2]);
    assert_eq!(get("i32").dims, [2, 3]);
    assert_eq!(get("i64").to_vec::<i64>().unwrap(), [-1, 0, 1]);
    assert_eq!(get("f64").to_vec::<f64>().unwrap(), [1e-300, 3.0]);
    assert_eq!(get("c64").to_vec::<Complex<f32>>().unwrap(), [Complex::new(1., 2.), Complex::new(0., -3.)]);
    // Fortran order and big-endian are converted to C order, little-endian.
    assert_eq!(get("fortran").to_vec::<f32>().unwrap(), [0., 1., 2., 3., 4., 5.]);
    assert_eq!(get("big_endian").to_vec::<i32>().unwrap(), [0, 1, 2]);
}

#[test]
fn our_archives_read_back_stored_and_deflated() {
    let dir = std::env::temp_dir().join(format!("pjrt-npz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let numpy = Npz::open(&data("mlp_weights.npz")).unwrap();
    let arrays: Vec<(String, NpyArray)> =
        numpy.names().map(|n| (n.to_string(), numpy.get(n).unwrap().to_array())).collect();
    let refs: Vec<(&str, &NpyArray)> = arrays.iter().map(|(n, a)| (n.as_str(), a)).collect();
    for compress in [false, true] {
        let path = dir.join(format!("w-{compress}.npz"));
        npz::write(&path, &refs, compress).unwrap();
        let back = Npz::open(&path).unwrap();
        assert_eq!(back.names().collect::<Vec<_>>(), ["b1", "b2", "w1", "w2"]);
        for (name, array) in &arrays {
            assert_eq!(&back.get(name).unwrap().to_array(), array, "{name} compress={compress}");
            assert_eq!(matches!(back.get(name), Some(NpzArray::Mapped(_))), !compress);
        }
    }
    // Refused: a duplicate name, a name with a slash.
    let x = &arrays[0].1;
    assert!(npz::write(&dir.join("dup.npz"), &[("a", x), ("a", x)], false).is_err());
    assert!(npz::write(&dir.join("slash.npz"), &[("a/b", x)], false).is_err());
    assert!(!dir.join("dup.npz").exists());
    // Not a zip; a zip whose member is not .npy; a truncated archive.
    std::fs::write(dir.join("text.npz"), b"not a zip at all").unwrap();
    assert!(Npz::open(&dir.join("text.npz")).unwrap_err().to_string().contains("not a readable .npz"));
    let bytes = std::fs::read(data("mlp_weights.npz")).unwrap();
    std::fs::write(dir.join("cut.npz"), &bytes[..bytes.len() / 2]).unwrap();
    assert!(Npz::open(&dir.join("cut.npz")).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
