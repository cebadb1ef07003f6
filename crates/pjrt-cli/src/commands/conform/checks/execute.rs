//! `execute.*` and the basic `executable.*` queries: metadata, parameter shapes, fingerprint;
//! execution on one device, async, replicated on two, portable on a chosen one; serialize and
//! load; delete.

use std::time::Duration;

use pjrt_client::{Buffer, Client, CompileOptions, ExecuteOptions, HostSource, Program, UploadOptions};

use super::{f32s, ADD};
use crate::commands::conform::report::{expect, Problem, Report};

pub(crate) fn execute_checks(r: &mut Report, client: &Client) {
    let Ok(exe) = Program::mlir_text(ADD).and_then(|p| client.compile(&p, &CompileOptions::new())) else {
        r.check("execute.compile", || Err(Problem::Fail("cannot compile the add program".into())));
        return;
    };
    let x = || client.upload(&[1f32, 2., 3., 4.], &[4]);
    r.check("executable.metadata", || {
        expect(exe.num_outputs() == 1 && exe.num_replicas() == 1 && exe.num_partitions() == 1, "counts")?;
        Ok(exe.output_shapes()[0].to_string())
    });
    r.check("executable.parameter_shapes", || {
        let p = exe.parameter_shapes().ok_or(Problem::Unsupported("no optimized program".into()))?;
        expect(p.len() == 2, "two parameters")?;
        Ok(p[0].to_string())
    });
    r.check("executable.fingerprint", || Ok(exe.fingerprint()?));
    r.check("execute.single_device", || {
        let a = x()?;
        expect(f32s(&exe.execute(&[&a, &a], &ExecuteOptions::new())?[0])? == [2., 4., 6., 8.], "wrong sum")?;
        Ok(String::new())
    });
    r.check("execute.argument_mismatch_is_refused", || {
        let i = client.upload(&[1i32; 4], &[4])?;
        let a = x()?;
        expect(exe.execute(&[&a, &i], &ExecuteOptions::new()).is_err(), "an s32 argument was accepted for f32")?;
        Ok(String::new())
    });
    r.check("execute.async", || {
        let a = x()?;
        let out = exe.execute_async(&[&a, &a], &ExecuteOptions::new())?.wait()?;
        expect(f32s(&out[0])? == [2., 4., 6., 8.], "wrong sum")?;
        Ok(String::new())
    });
    r.check("execute.replicated_2_devices", || {
        let devices = client.addressable_devices();
        if devices.len() < 2 {
            return Err(Problem::Unsupported("only one device".into()));
        }
        let exe = client.compile(&Program::mlir_text(ADD)?, &CompileOptions::new().num_replicas(2))?;
        let lists: Vec<Vec<Buffer>> = exe
            .addressable_devices()
            .iter()
            .map(|d| {
                client
                    .upload_with(HostSource::slice(&[1f32, 2., 3., 4.], &[4]), &UploadOptions::new().device(d))
                    .map(|b| vec![b])
            })
            .collect::<Result<_, _>>()?;
        let refs: Vec<Vec<&Buffer>> = lists.iter().map(|l| vec![&l[0], &l[0]]).collect();
        let mut run = exe.execute_sharded_async(&refs, &ExecuteOptions::new())?;
        for outs in &run.wait_timeout(Duration::from_secs(60))? {
            expect(f32s(&outs[0])? == [2., 4., 6., 8.], "wrong sum on a replica")?;
        }
        Ok(String::new())
    });
    r.check("execute.portable_on_chosen_device", || {
        let exe =
            client.compile(&Program::mlir_text(ADD)?, &CompileOptions::new().compile_portable_executable(true))?;
        let device = *client.addressable_devices().last().ok_or(Problem::Fail("no devices".into()))?;
        let a =
            client.upload_with(HostSource::slice(&[1f32, 2., 3., 4.], &[4]), &UploadOptions::new().device(&device))?;
        let out = exe.execute(&[&a, &a], &ExecuteOptions::new().device(&device))?;
        expect(out[0].device()? == device, "ran on another device")?;
        Ok(String::new())
    });
    r.check("executable.serialize_and_load", || {
        let bytes = exe.serialize()?;
        let again = client.deserialize_and_load(&bytes)?;
        let a = x()?;
        expect(f32s(&again.execute(&[&a, &a], &ExecuteOptions::new())?[0])? == [2., 4., 6., 8.], "wrong sum")?;
        Ok(format!("{} bytes", bytes.len()))
    });
    r.check("executable.delete", || {
        let e = client.compile(&Program::mlir_text(ADD)?, &CompileOptions::new())?;
        e.delete()?;
        Ok(format!("is_deleted: {}", e.is_deleted()?))
    });
}
