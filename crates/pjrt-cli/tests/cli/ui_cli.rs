//! How `pjrt` feels: the plugin's log chatter hidden unless -v, span timings under -v, --json on
//! every subcommand, and errors that name what failed and the next step. Both CPU plugins.

use std::process::Output;

use pjrt_formats::npy::NpyArray;

use crate::common::*;

/// Runs `pjrt ARGS` (fresh compile cache, so every run compiles) without any log-level
/// variables inherited from the test's environment, so that what is checked is `pjrt`'s own choice.
fn pjrt_clean_env(args: &[&str]) -> Output {
    pjrt_configured(args, |command| {
        command.env_remove("TF_CPP_MIN_LOG_LEVEL").env_remove("TF_CPP_MAX_VLOG_LEVEL");
    })
}

/// A two-replica doubling program and its input; two CPU devices make both plugins log
/// `cpu_device_count set via create_options` at INFO level.
fn two_replica_run(name: &str) -> (String, String, String) {
    let dir = temp_dir(name);
    let program = dir.join("double.mlir");
    std::fs::write(
        &program,
        "func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {\n  %0 = stablehlo.add %a, %a : tensor<3xf32>\n  return %0 : tensor<3xf32>\n}\n",
    )
    .unwrap();
    let input = dir.join("a.npy");
    NpyArray::from_elements(vec![3], &[1f32, 2., 3.]).unwrap().write(&input).unwrap();
    let s = |p: std::path::PathBuf| p.to_string_lossy().into_owned();
    (s(program), s(input), s(dir.join("out")))
}

fn is_plugin_chatter(stderr: &str) -> bool {
    stderr.contains("I0000") || stderr.contains("absl::InitializeLog") || stderr.contains(".cc:")
}

#[test]
fn plugin_chatter_is_hidden_unless_verbose() {
    let (program, input, out) = two_replica_run("chatter");
    for plugin in PLUGINS {
        let run = ["run", &program, "-i", &input, "--replicas", "2", "-o", &out, "--plugin", plugin];
        let quiet = pjrt_clean_env(&run);
        assert!(quiet.status.success(), "{plugin}: {}", stderr(&quiet));
        assert!(!is_plugin_chatter(&stderr(&quiet)), "{plugin}: chatter by default: {}", stderr(&quiet));
        assert_eq!(stderr(&quiet), "", "{plugin}: nothing on stderr by default (not a terminal: no progress)");

        let verbose = pjrt_clean_env(&[&["-v"][..], &run].concat());
        assert!(verbose.status.success(), "{plugin}: {}", stderr(&verbose));
        let text = stderr(&verbose);
        assert!(text.contains("cpu_device_count set via create_options: 2"), "{plugin}: no plugin log with -v: {text}");
        for span in
            ["load_plugin", "create_client:", "compile format=mlir", "upload bytes=12 device=", "execute_launch"]
        {
            assert!(text.contains(span), "{plugin}: no `{span}` span line with -v: {text}");
        }
        assert!(text.contains("download bytes=12:"), "{plugin}: {text}");

        // `pjrt info` logs nothing by default; its client-creation line is VLOG(1): -vv.
        let info = pjrt_clean_env(&["info", "--plugin", plugin]);
        assert!(info.status.success() && !is_plugin_chatter(&stderr(&info)), "{plugin}: {}", stderr(&info));
        let info = pjrt_clean_env(&["info", "-vv", "--plugin", plugin]);
        assert!(info.status.success(), "{plugin}: {}", stderr(&info));
        assert!(stderr(&info).contains("cpu_client.cc"), "{plugin}: -vv lacks the plugin's VLOG: {}", stderr(&info));
        assert!(stderr(&info).contains("create_client:"), "{plugin}: {}", stderr(&info));
    }
}

#[test]
fn a_log_level_the_user_set_wins() {
    let (program, input, out) = two_replica_run("user-level");
    let out =
        pjrt_configured(&["run", &program, "-i", &input, "--replicas", "2", "-o", &out, "--plugin", "cpu"], |c| {
            c.env("TF_CPP_MIN_LOG_LEVEL", "0");
        });
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("cpu_device_count set via create_options"), "{}", stderr(&out));
}

#[test]
fn every_subcommand_speaks_json() {
    let (program, input, out_dir) = two_replica_run("json");
    let json = |args: &[&str]| -> serde_json::Value {
        let out = pjrt_clean_env(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: not one JSON value ({e})"))
    };
    for plugin in PLUGINS {
        assert!(json(&["info", "--plugin", plugin, "--json"])["devices"].is_array());
        let run = json(&["run", &program, "-i", &input, "-o", &out_dir, "--plugin", plugin, "--json"]);
        assert_eq!(run["outputs"].as_array().map(Vec::len), Some(1));
        let installed = json(&["plugin", "install", plugin, "--json"]);
        assert_eq!(installed["name"], *plugin);
        assert!(std::path::Path::new(installed["path"].as_str().unwrap()).exists());
    }
    assert!(json(&["plugin", "list", "--json"]).as_array().is_some_and(|l| l.len() >= 2));
    let bench = json(&["bench", "--plugin", "cpu", "--json", "h2d", "--bytes", "1024"]);
    assert!(bench.is_object(), "{bench}");

    // conform: `--json` alone prints the report; `--json FILE` writes it and prints text.
    let report = json(&["conform", "cpu-0.106", "--json"]);
    assert!(report["checks"].as_array().is_some_and(|c| c.len() >= 60));
    let dir = temp_dir("json-conform");
    let file = dir.join("new.json");
    let out = pjrt_clean_env(&["conform", "cpu", "--json", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("checks:"), "text on stdout with --json FILE");
    let old = dir.join("old.json");
    std::fs::write(&old, format!("{report}")).unwrap();
    let diff = json(&["conform", "--diff", old.to_str().unwrap(), file.to_str().unwrap(), "--json"]);
    let differences = diff["differences"].as_array().unwrap();
    assert!(differences.iter().any(|d| d["name"] == "aot.compile_and_load" && d["a"] == "unsupported"), "{diff}");
    let diff_file = dir.join("diff.json");
    let out = pjrt_clean_env(&[
        "conform",
        "--diff",
        old.to_str().unwrap(),
        file.to_str().unwrap(),
        "--json",
        diff_file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("checks differ"), "text on stdout with --json FILE");
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&diff_file).unwrap()).unwrap();
    assert_eq!(written["differences"], diff["differences"]);
    // The trap `--json cpu` (a file named like a plugin) is refused with the right spelling.
    assert_fails(&pjrt_clean_env(&["conform", "--json", "cpu"]), "pjrt conform cpu --json");
}

#[test]
fn errors_under_json_are_human_on_stderr() {
    let out = pjrt_clean_env(&["run", "missing.mlir", "--plugin", "cpu", "--json"]);
    assert_fails(&out, "missing.mlir");
    assert!(out.stdout.is_empty(), "nothing on stdout: {}", String::from_utf8_lossy(&out.stdout));
    assert!(stderr(&out).starts_with("error: "), "{}", stderr(&out));
}

#[test]
fn errors_name_the_next_step() {
    let (program, input, out) = two_replica_run("errors");
    // Plugin not found: how to get one.
    assert_fails(&pjrt_clean_env(&["info", "--plugin", "/nonexistent/plugin.so"]), "pjrt plugin install cpu");
    assert_fails(&pjrt_clean_env(&["info", "--plugin", "cpu-0.99"]), "pjrt plugin install cpu");
    assert_fails(&pjrt_clean_env(&["plugin", "install", "gpu-9"]), "--plugin PATH");
    // Missing files: the path, and to check it.
    let missing = pjrt_clean_env(&["run", &program, "-i", "nothere.npy", "--plugin", "cpu"]);
    assert_fails(&missing, "nothere.npy");
    assert_fails(&missing, "hint: check the path");
    // Not an .npy file: what inputs must be.
    let not_npy = pjrt_clean_env(&["run", &program, "-i", &program, "--plugin", "cpu"]);
    assert_fails(&not_npy, "hint: inputs must be NumPy .npy files");
    for plugin in PLUGINS {
        // Input count: what the program takes.
        let two = pjrt_clean_env(&["run", &program, "-i", &input, &input, "-o", &out, "--plugin", plugin]);
        assert_fails(&two, "takes 1 inputs (f32[3])");
        // Input dtype: what the parameter is.
        let dir = temp_dir(&format!("errors-{plugin}"));
        let ints = dir.join("ints.npy");
        NpyArray::from_elements(vec![3], &[1i32; 3]).unwrap().write(&ints).unwrap();
        let wrong = pjrt_clean_env(&["run", &program, "-i", ints.to_str().unwrap(), "-o", &out, "--plugin", plugin]);
        assert_fails(&wrong, "parameter is f32");
        assert_fails(&wrong, "hint: save the input with the parameter's dtype");
        // Input shape: what the parameter is, and that order matters.
        let four = dir.join("four.npy");
        NpyArray::from_elements(vec![4], &[1f32; 4]).unwrap().write(&four).unwrap();
        let shape = pjrt_clean_env(&["run", &program, "-i", four.to_str().unwrap(), "-o", &out, "--plugin", plugin]);
        assert_fails(&shape, "the program's parameter 0 is f32[3]");
        assert_fails(&shape, "hint: --input takes the arrays in parameter order");
    }
}

/// A pipe whose reader is already closed, as stdout for a command: `pjrt ... | head` where `head`
/// has gone away before the first write, so every write fails with EPIPE (no race with a reader).
fn closed_pipe() -> std::process::Stdio {
    use std::os::fd::FromRawFd as _;
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors `pipe` writes; each is owned once below.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened by `pipe` and are owned by nothing else.
    let (reader, writer) =
        unsafe { (std::os::fd::OwnedFd::from_raw_fd(fds[0]), std::os::fd::OwnedFd::from_raw_fd(fds[1])) };
    drop(reader);
    writer.into()
}

#[test]
fn a_reader_that_goes_away_ends_the_command_quietly() {
    let (program, input, out_dir) = two_replica_run("closed-stdout");
    let plugin_runs = PLUGINS.iter().flat_map(|plugin| {
        [
            vec!["run", &program, "-i", &input, "-o", &out_dir, "--plugin", plugin],
            vec!["info", "--plugin", plugin, "--json"],
        ]
    });
    let inspect = "tests/data/formats/tanh_mul.portable-1.0.0.mlirbc";
    for args in [vec!["inspect", inspect], vec!["inspect", inspect, "--json"], vec!["plugin", "list"]]
        .into_iter()
        .chain(plugin_runs)
    {
        let out = pjrt_configured(&args, |command| {
            command.stdout(closed_pipe());
        });
        // Quiet, as ripgrep and other Rust tools end on a broken pipe: status 0, no message.
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {:?}; stderr: {text}", out.status);
        for noise in ["panicked", "Broken pipe", "error"] {
            assert!(!text.contains(noise), "{args:?}: {noise:?} on stderr: {text}");
        }
    }
    // Writing fails for another reason (a full disk): an error, not a panic and not silence.
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = pjrt_configured(&["inspect", inspect], |command| {
        command.stdout(full);
    });
    assert_fails(&out, "writing to standard output failed");
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
}
