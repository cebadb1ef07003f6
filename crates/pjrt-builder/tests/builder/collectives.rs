//! Collectives on 4 replicas (all_reduce over all and over pairs with a channel, of two values
//! at once, all_gather,
//! reduce_scatter, all_to_all, collective_permute, replica_id) and an SPMD program with GSPMD
//! shardings on 2 partitions (and a sharding constraint), each run with `execute_sharded` on 4 or 2 CPU devices of both
//! plugins, against numpy (exact: small integers).

use pjrt_builder::{AxisSharding, Collective, DotDimensions, Function, Mesh, ParameterOptions, Sharding};
use pjrt_client::{Buffer, Client, CompileOptions, ElementType, ExecuteOptions, HostArray, Program, UploadOptions};

use crate::harness::{assert_exact, data};
use crate::support;

/// Runs `program` on every device of `client` (compiled with `options`), device `k` getting
/// `arguments[k]`; returns each device's outputs.
fn run_per_device(
    client: &Client,
    program: &Program,
    options: &CompileOptions,
    arguments: &[Vec<HostArray>],
) -> Vec<Vec<HostArray>> {
    let exe = client.compile(program, options).unwrap_or_else(|e| panic!("compile: {e}\n{}", program.text().unwrap()));
    let devices = exe.addressable_devices();
    assert_eq!(devices.len(), arguments.len());
    let buffers: Vec<Vec<Buffer>> = devices
        .iter()
        .zip(arguments)
        .map(|(d, args)| args.iter().map(|a| client.upload_with(a, &UploadOptions::new().device(d)).unwrap()).collect())
        .collect();
    let refs: Vec<Vec<&Buffer>> = buffers.iter().map(|l| l.iter().collect()).collect();
    let outputs = exe.execute_sharded(&refs, &ExecuteOptions::new()).unwrap();
    outputs.iter().map(|outs| outs.iter().map(|b| b.to_host_array().unwrap()).collect()).collect()
}

/// Row `k` of a stacked array (its first dimension).
fn part(array: &HostArray, k: usize) -> HostArray {
    let dims: Vec<i64> = array.dims()[1..].to_vec();
    let values = array.to_vec::<f32>().unwrap();
    let n = dims.iter().product::<i64>() as usize;
    HostArray::from_elements(dims, &values[k * n..(k + 1) * n]).unwrap()
}

#[test]
fn collectives_match_numpy_on_four_replicas() {
    let d = data("collectives");
    let f = Function::new("collectives");
    f.set_num_replicas(4).unwrap();
    let x = f.parameter(ElementType::F32, &[2, 4]).unwrap();
    let all = Collective::groups(&[&[0, 1, 2, 3]]);
    let pairs = Collective::groups(&[&[0, 2], &[1, 3]]).channel(1, 1);
    let sum = x.all_reduce(&all, |_, a, b| a.add(b)).unwrap();
    let max = x.all_reduce(&pairs, |_, a, b| a.maximum(b)).unwrap();
    let gathered = x.all_gather(1, &all).unwrap();
    let scattered = x.reduce_scatter(1, &all, |_, a, b| a.add(b)).unwrap();
    let exchanged = x.all_to_all(1, 0, &all).unwrap();
    let permuted = x.collective_permute(&[(0, 1), (1, 2), (2, 3)], None).unwrap();
    let id = f.replica_id().unwrap();
    let doubled = x.add(&x).unwrap();
    let both = f.all_reduce_many(&[&x, &doubled], &all, |_, a, b| a.add(b)).unwrap();
    let global = Collective::groups(&[&[0, 1, 2, 3]]).channel(2, 1).global_device_ids(true);
    let global_sum = x.all_reduce(&global, |_, a, b| a.add(b)).unwrap();
    assert_eq!(f.required_stablehlo_version(), (1, 5, 0));
    let program = f
        .finish(&[&sum, &max, &gathered, &scattered, &exchanged, &permuted, &id, &both[0], &both[1], &global_sum])
        .unwrap();
    let xs = d.array("xs");
    let arguments: Vec<Vec<HostArray>> = (0..4).map(|k| vec![part(&xs, k)]).collect();
    for plugin in support::PLUGINS {
        let client = support::client(plugin, 4);
        f.check_plugin(client.plugin()).unwrap();
        let outs = run_per_device(&client, &program, &CompileOptions::new().num_replicas(4), &arguments);
        for (k, out) in outs.iter().enumerate() {
            let what = |name: &str| format!("{name} on replica {k}");
            assert_exact(plugin, &what("all_reduce sum"), &out[0], &part(&d.array("sum_all_want"), k));
            assert_exact(plugin, &what("all_reduce max over pairs"), &out[1], &part(&d.array("max_pairs_want"), k));
            assert_exact(plugin, &what("all_gather"), &out[2], &part(&d.array("gather_want"), k));
            assert_exact(plugin, &what("reduce_scatter"), &out[3], &part(&d.array("reduce_scatter_want"), k));
            assert_exact(plugin, &what("all_to_all"), &out[4], &part(&d.array("all_to_all_want"), k));
            assert_exact(plugin, &what("collective_permute"), &out[5], &part(&d.array("permute_want"), k));
            assert_eq!(out[6].to_vec::<u32>().unwrap(), [k as u32], "{plugin}: replica_id on replica {k}");
            let sum_want = part(&d.array("sum_all_want"), k);
            assert_exact(plugin, &what("all_reduce of two values"), &out[7], &sum_want);
            let twice: Vec<f32> = sum_want.to_vec::<f32>().unwrap().iter().map(|v| 2. * v).collect();
            assert_eq!(
                out[8].to_vec::<f32>().unwrap(),
                twice,
                "{plugin}: {}",
                what("all_reduce of two values, second")
            );
            assert_exact(plugin, &what("all_reduce over global device ids"), &out[9], &sum_want);
        }
    }
}

#[test]
fn an_spmd_program_built_in_rust_runs_sharded() {
    let d = data("sharding");
    let f = Function::new("spmd");
    f.set_num_partitions(2).unwrap();
    let rows = Sharding::tiled(&[2, 1]);
    let x = f.parameter_with(ElementType::F32, &[4, 3], ParameterOptions::new().sharding(&rows)).unwrap();
    let w =
        f.parameter_with(ElementType::F32, &[3, 2], ParameterOptions::new().sharding(&Sharding::Replicated)).unwrap();
    let y = x.dot_general(&w, &DotDimensions::matmul(), None).unwrap().with_sharding(&rows).unwrap();
    // Column sums over all rows: the partitioner adds the cross-partition all-reduce.
    let colsum = y.reduce(&f.scalar(0f32).unwrap(), &[0], |_, a, b| a.add(b)).unwrap();
    f.set_output_sharding(0, &rows).unwrap();
    f.set_output_sharding(1, &Sharding::Replicated).unwrap();
    let program = f.finish(&[&y, &colsum]).unwrap();
    let text = program.text().unwrap();
    assert!(text.contains("mhlo.num_partitions = 2 : i32"), "{text}");
    assert!(text.contains("mhlo.sharding = \"{devices=[2,1]<=[2]}\""), "{text}");
    let (xa, wa) = (d.array("x"), d.array("w"));
    let xv = xa.to_vec::<f32>().unwrap();
    let arguments: Vec<Vec<HostArray>> = (0..2)
        .map(|k| vec![HostArray::from_elements(vec![2, 3], &xv[k * 6..(k + 1) * 6]).unwrap(), wa.clone()])
        .collect();
    let y_want = d.values::<f32>("y_want");
    let options = CompileOptions::new().num_partitions(2).use_spmd_partitioning(true);
    for plugin in support::PLUGINS {
        let client = support::client(plugin, 2);
        let outs = run_per_device(&client, &program, &options, &arguments);
        for (k, out) in outs.iter().enumerate() {
            assert_eq!(out[0].dims(), [2, 2], "{plugin}: device {k} holds its rows of y");
            assert_eq!(out[0].to_vec::<f32>().unwrap(), y_want[k * 4..(k + 1) * 4], "{plugin}: y on device {k}");
            assert_exact(plugin, &format!("column sums on device {k}"), &out[1], &d.array("colsum_want"));
        }
        // A parameter sharding whose rank does not match: the plugin refuses it (no abort).
        let g = Function::new("mismatched");
        g.set_num_partitions(2).unwrap();
        let v = g.parameter_with(ElementType::F32, &[4], ParameterOptions::new().sharding(&rows)).unwrap();
        let bad = g.finish(&[&v.negate().unwrap()]).unwrap();
        assert!(client.compile(&bad, &options).is_err(), "{plugin}: a rank-2 sharding on a rank-1 parameter");
    }
    // Annotations are checked.
    let e = y.with_sharding(&Sharding::tiled(&[2])).unwrap_err().to_string();
    assert!(e.contains("need 2 entries"), "{e}");
    assert!(f.set_num_partitions(0).unwrap_err().to_string().contains("must be >= 1"));
    f.set_output_sharding(5, &rows).unwrap();
    let e = f.finish(&[&y, &colsum]).unwrap_err().to_string();
    assert!(e.contains("output 5 has a mhlo.sharding attribute but the function returns 2 outputs"), "{e}");
}

#[test]
fn an_spmd_program_with_shardy_annotations_runs_sharded() {
    let d = data("sharding");
    let f = Function::new("shardy");
    f.set_num_partitions(2).unwrap();
    let mesh = Mesh::new("mesh", &[("x", 2)]).unwrap();
    f.add_mesh(&mesh).unwrap();
    let rows = AxisSharding::new(&mesh, &[&["x"], &[]]).unwrap();
    let whole = AxisSharding::new(&mesh, &[&[], &[]]).unwrap();
    let x = f.parameter_with(ElementType::F32, &[4, 3], ParameterOptions::new().shardy(&rows)).unwrap();
    let w = f.parameter_with(ElementType::F32, &[3, 2], ParameterOptions::new().shardy(&whole)).unwrap();
    let y = x.dot_general(&w, &DotDimensions::matmul(), None).unwrap();
    let colsum = y.reduce(&f.scalar(0f32).unwrap(), &[0], |_, a, b| a.add(b)).unwrap();
    f.set_output_shardy(0, &rows).unwrap();
    f.set_output_shardy(1, &AxisSharding::new(&mesh, &[&[]]).unwrap()).unwrap();
    let program = f.finish(&[&y, &colsum]).unwrap();
    let (xa, wa) = (d.array("x"), d.array("w"));
    let xv = xa.to_vec::<f32>().unwrap();
    let arguments: Vec<Vec<HostArray>> = (0..2)
        .map(|k| vec![HostArray::from_elements(vec![2, 3], &xv[k * 6..(k + 1) * 6]).unwrap(), wa.clone()])
        .collect();
    let y_want = d.values::<f32>("y_want");
    let options = CompileOptions::new().num_partitions(2).use_spmd_partitioning(true).use_shardy_partitioner(true);
    for plugin in support::PLUGINS {
        let client = support::client(plugin, 2);
        let outs = run_per_device(&client, &program, &options, &arguments);
        for (k, out) in outs.iter().enumerate() {
            assert_eq!(out[0].to_vec::<f32>().unwrap(), y_want[k * 4..(k + 1) * 4], "{plugin}: y on device {k}");
            assert_exact(plugin, &format!("column sums on device {k}"), &out[1], &d.array("colsum_want"));
        }
        // A sharding whose rank does not match its value: the plugin refuses it (no abort).
        let g = Function::new("mismatched");
        g.set_num_partitions(2).unwrap();
        g.add_mesh(&mesh).unwrap();
        let v = g.parameter_with(ElementType::F32, &[4], ParameterOptions::new().shardy(&rows)).unwrap();
        let bad = g.finish(&[&v.negate().unwrap()]).unwrap();
        assert!(client.compile(&bad, &options).is_err(), "{plugin}: a rank-2 sharding on a rank-1 parameter");
    }
    assert!(f.add_mesh(&mesh).unwrap_err().to_string().contains("already has a mesh @mesh"));
    assert!(AxisSharding::new(&mesh, &[&["y"]]).is_err());
    assert!(Mesh::new("bad name", &[("x", 2)]).is_err());
}

#[test]
fn replica_numbers_past_the_devices_are_plugin_errors() {
    // The builder checks a collective's own consistency; the replica count is the compile
    // options' and is checked by the plugin: an error naming the problem, never an abort.
    let client_for = |plugin: &str| support::client(plugin, 2);
    let options = CompileOptions::new().num_replicas(2);
    let programs: Vec<(&str, Program)> = vec![
        ("all_reduce over replica 7", {
            let f = Function::new("a");
            let x = f.parameter(ElementType::F32, &[2]).unwrap();
            f.finish(&[&x.all_reduce(&Collective::groups(&[&[0, 7]]), |_, a, b| a.add(b)).unwrap()]).unwrap()
        }),
        ("collective_permute to replica 5", {
            let f = Function::new("b");
            let x = f.parameter(ElementType::F32, &[2]).unwrap();
            f.finish(&[&x.collective_permute(&[(0, 5)], None).unwrap()]).unwrap()
        }),
        ("all_gather leaving replica 1 out", {
            let f = Function::new("c");
            let x = f.parameter(ElementType::F32, &[2]).unwrap();
            f.finish(&[&x.all_gather(0, &Collective::groups(&[&[0]])).unwrap()]).unwrap()
        }),
    ];
    for plugin in support::PLUGINS {
        let client = client_for(plugin);
        for (what, program) in &programs {
            assert!(client.compile(program, &options).is_err(), "{plugin}: {what} compiled");
        }
    }
    // No pairs at all: every replica gets zeros (an empty source_target_pairs attribute).
    let f = Function::new("e");
    let x = f.parameter(ElementType::F32, &[2]).unwrap();
    let nobody = f.finish(&[&x.collective_permute(&[], None).unwrap()]).unwrap();
    for plugin in support::PLUGINS {
        let arguments: Vec<Vec<HostArray>> =
            (0..2).map(|_| vec![HostArray::from_elements(vec![2], &[1f32, 2.]).unwrap()]).collect();
        let outs = run_per_device(&client_for(plugin), &nobody, &options, &arguments);
        assert!(outs.iter().all(|o| o[0].to_vec::<f32>().unwrap() == [0., 0.]), "{plugin}: zeros from nobody");
    }
    // What the builder sees itself.
    let f = Function::new("d");
    let x = f.parameter(ElementType::F32, &[3]).unwrap();
    let e = x.all_reduce(&Collective::groups(&[&[0, 1], &[1, 2]]), |_, a, b| a.add(b)).unwrap_err();
    assert!(e.to_string().contains("each number >= 0 at most once"), "{e}");
    let e = x.reduce_scatter(0, &Collective::groups(&[&[0, 1]]), |_, a, b| a.add(b)).unwrap_err();
    assert!(e.to_string().contains("divisible by the group size 2"), "{e}");
    let e = x.all_to_all(0, 1, &Collective::groups(&[&[0, 1, 2]])).unwrap_err();
    assert!(e.to_string().contains("dimension 1 is out of range"), "{e}");
    let e = x.collective_permute(&[(0, 1), (1, 1)], None).unwrap_err();
    assert!(e.to_string().contains("each source and each target at most once"), "{e}");
    let e = x.all_gather(0, &Collective::groups(&[&[0, 1]]).global_device_ids(true)).unwrap_err();
    assert!(e.to_string().contains("needs a channel handle"), "{e}");
    let e = x.all_gather(0, &Collective::groups(&[&[0, 1]]).channel(0, 1)).unwrap_err();
    assert!(e.to_string().contains("channel handle 0 must be >= 1, type 1 in 1..=3"), "{e}");
}
