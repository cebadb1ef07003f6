//! `pjrt conform` compiles fixtures kept inside the crate (so `cargo package` has them); they
//! must stay byte-for-byte the workspace's copies in tests/data/formats/.

use std::path::Path;

#[test]
fn conform_fixtures_match_the_workspace_copies() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ours = crate_dir.join("src/commands/conform/fixtures");
    let workspace = crate_dir.join("../../tests/data/formats");
    for name in ["tanh_mul.mlirbc", "tanh_mul.portable-1.0.0.mlirbc", "tanh_mul.hlo.pb"] {
        let copy = std::fs::read(ours.join(name)).unwrap();
        let original = std::fs::read(workspace.join(name)).unwrap();
        assert!(
            copy == original,
            "src/commands/conform/fixtures/{name} differs from tests/data/formats/{name}: copy the workspace file over it"
        );
    }
}
