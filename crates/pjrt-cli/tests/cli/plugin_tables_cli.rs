//! `docs/plugins.md` holds one table per plugin made by `pjrt conform NAME --markdown` on this
//! project's CI machine (x86-64, no GPU, no TPU). This test makes each table again and fails when
//! one differs, so the page follows the plugins; `PJRT_BLESS_DOCS=1` rewrites the page instead.

use std::process::Command;

use crate::common::{pjrt_env, root, stderr};

/// Each plugin of the page and the environment it runs in here.
fn plugins() -> Vec<(&'static str, Vec<(&'static str, String)>)> {
    let intel = pjrt_plugins::known_plugin("intel").and_then(pjrt_plugins::cached_path).expect("a plugin cache");
    let intel_dirs = std::env::join_paths(pjrt_plugins::runtime_library_dirs(&intel)).unwrap();
    vec![
        ("cpu", vec![]),
        ("cpu-0.106", vec![]),
        ("cuda12", vec![]),
        ("cuda13", vec![]),
        ("cuda12-0.12.0.1", vec![]),
        ("cuda13-0.12.0.1", vec![]),
        ("tpu", vec![("TPU_SKIP_MDS_QUERY", "1".into()), ("ALLOW_MULTIPLE_LIBTPU_LOAD", "1".into())]),
        ("rocm7", vec![]),
        ("rocm10", vec![]),
        (
            "intel",
            vec![
                ("LD_LIBRARY_PATH", intel_dirs.to_string_lossy().into_owned()),
                ("LD_PRELOAD", "libpython3.11.so.1.0".into()),
            ],
        ),
    ]
}

#[test]
fn docs_plugins_md_has_each_plugins_table_as_pjrt_conform_makes_it() {
    let path = root().join("docs/plugins.md");
    let mut doc = std::fs::read_to_string(&path).unwrap();
    let mut stale = Vec::new();
    for (name, env) in plugins() {
        let install = Command::new(env!("CARGO_BIN_EXE_pjrt")).args(["plugin", "install", name]).output().unwrap();
        assert!(install.status.success(), "`pjrt plugin install {name}`: {}", stderr(&install));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let out = pjrt_env(&["conform", name, "--markdown"], &env);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let table = String::from_utf8(out.stdout).unwrap();
        let begin = format!("<!-- pjrt conform {name} --markdown -->\n");
        let start =
            doc.find(&begin).unwrap_or_else(|| panic!("docs/plugins.md has no `{}`", begin.trim())) + begin.len();
        let end = start + doc[start..].find("<!-- end -->").expect("each table ends with <!-- end -->");
        if doc[start..end].trim() != table.trim() {
            stale.push(name);
            doc.replace_range(start..end, &format!("{}\n", table.trim()));
        }
    }
    if std::env::var_os("PJRT_BLESS_DOCS").is_some() {
        std::fs::write(&path, doc).unwrap();
    } else {
        assert!(stale.is_empty(), "docs/plugins.md is stale for {stale:?}: run PJRT_BLESS_DOCS=1 cargo test -p pjrt-cli --test cli plugin_tables");
    }
}
