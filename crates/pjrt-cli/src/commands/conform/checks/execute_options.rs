//! Execute options on every execute path: single-device and portable (`ExecuteOptions::device`), sharded, non-blocking forms (issue 13, item 2),
//! and Rust user data in an execute context (item 8c).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pjrt_client::{
    Buffer, Client, CompileOptions, Device, Error, ExecuteContext, ExecuteOptions, HostSource, LoadedExecutable,
    Program, UploadOptions,
};

use super::{f32s, ADD};
use crate::commands::conform::report::{expect, Outcome, Problem, Report};

/// `a + a`, whose parameter the program lets the plugin reuse for the result (donation).
const DONATING: &str = r#"module @donating {
  func.func public @main(%a: tensor<4xf32> {tf.aliasing_output = 0 : i32}) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %a : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}"#;

fn compile(client: &Client, source: &str, options: &CompileOptions) -> Result<LoadedExecutable, Problem> {
    Ok(client.compile(&Program::mlir_text(source)?, options)?)
}

fn portable(client: &Client, source: &str) -> Result<LoadedExecutable, Problem> {
    compile(client, source, &CompileOptions::new().compile_portable_executable(true))
}

fn upload(client: &Client, device: &Device<'_>, values: [f32; 4]) -> Result<Buffer, Problem> {
    Ok(client.upload_with(HostSource::slice(&values, &[4]), &UploadOptions::new().device(device))?)
}

/// The last addressable device: not the default one where the client has several.
fn chosen_device(client: &Client) -> Result<Device<'_>, Problem> {
    client.addressable_devices().last().copied().ok_or(Problem::Fail("no addressable devices".into()))
}

/// A two-replica executable of `source` and one argument per device, or Unsupported.
fn two_replicas(client: &Client, source: &str) -> Result<(LoadedExecutable, Vec<Buffer>), Problem> {
    if client.addressable_devices().len() < 2 {
        return Err(Problem::Unsupported("only one addressable device".into()));
    }
    let exe = compile(client, source, &CompileOptions::new().num_replicas(2))?;
    let inputs = exe
        .addressable_devices()
        .iter()
        .enumerate()
        .map(|(k, d)| upload(client, d, [k as f32, 1., 1., 1.]))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((exe, inputs))
}

/// Adds this group's checks to `r`.
pub(crate) fn checks(r: &mut Report, client: &Client) {
    r.check("execute_options.chosen_device_with_launch_id", || {
        let exe = portable(client, ADD)?;
        let device = chosen_device(client)?;
        let a = upload(client, &device, [1., 2., 3., 4.])?;
        let out = exe.execute(&[&a, &a], &ExecuteOptions::new().launch_id(17).device(&device))?;
        expect(f32s(&out[0])? == [2., 4., 6., 8.], "wrong sum")?;
        expect(out[0].device()? == device, "ran on another device")?;
        Ok("launch id 17 on the chosen device".into())
    });
    r.check("execute_options.call_location_and_task_incarnations", || {
        let exe = portable(client, ADD)?;
        let device = chosen_device(client)?;
        let a = upload(client, &device, [1., 2., 3., 4.])?;
        let options = ExecuteOptions::new().call_location("pjrt conform").task_incarnations([(0, 1)]);
        let out = exe.execute(&[&a, &a], &options.clone().device(&device))?;
        expect(f32s(&out[0])? == [2., 4., 6., 8.], "wrong sum")?;
        Ok("accepted".into())
    });
    r.check("execute_options.chosen_device_with_non_donatable_input", || {
        let exe = portable(client, DONATING)?;
        let device = chosen_device(client)?;
        let x = upload(client, &device, [1., 2., 3., 4.])?;
        let out = exe.execute(&[&x], &ExecuteOptions::new().non_donatable_inputs([0]).device(&device))?;
        expect(f32s(&out[0])? == [2., 4., 6., 8.], "wrong sum")?;
        expect(!x.is_deleted()?, "the input listed as non-donatable was donated")?;
        // Without the option the plugin may donate it: proof that the option was read.
        exe.execute(&[&x], &ExecuteOptions::new().device(&device))?;
        Ok(format!("kept; donated without the option: {}", x.is_deleted()?))
    });
    r.check("execute_options.chosen_device_with_context", || {
        let exe = portable(client, ADD)?;
        let device = chosen_device(client)?;
        let context = ExecuteContext::new(client.plugin())?;
        let a = upload(client, &device, [1., 2., 3., 4.])?;
        let out = exe.execute(&[&a, &a], &ExecuteOptions::new().context(&context).device(&device))?;
        expect(f32s(&out[0])? == [2., 4., 6., 8.], "wrong sum")?;
        Ok(String::new())
    });
    r.check("execute_options.async_on_each_device", || {
        let exe = portable(client, ADD)?;
        let devices = client.addressable_devices();
        let inputs = devices.iter().map(|d| upload(client, d, [1., 2., 3., 4.])).collect::<Result<Vec<_>, _>>()?;
        // Every launch in flight before the first is awaited.
        let pending = devices
            .iter()
            .zip(&inputs)
            .map(|(d, x)| exe.execute_async(&[x, x], &ExecuteOptions::new().device(d)))
            .collect::<Result<Vec<_>, _>>()?;
        for (execution, device) in pending.into_iter().zip(&devices) {
            let out = execution.wait()?;
            expect(f32s(&out[0])? == [2., 4., 6., 8.], "wrong sum")?;
            expect(out[0].device()? == *device, "ran on another device")?;
        }
        Ok(format!("{} launches in flight", devices.len()))
    });
    r.check("execute_options.async_on_chosen_device_with_options", || {
        let exe = portable(client, DONATING)?;
        let device = chosen_device(client)?;
        let context = ExecuteContext::new(client.plugin())?;
        let x = upload(client, &device, [1., 2., 3., 4.])?;
        let options = ExecuteOptions::new().launch_id(4).non_donatable_inputs([0]).context(&context);
        let pending = exe.execute_async(&[&x], &options.clone().device(&device))?;
        drop((options, context)); // the launch keeps what it was given
        expect(f32s(&pending.wait()?[0])? == [2., 4., 6., 8.], "wrong sum")?;
        expect(!x.is_deleted()?, "the input listed as non-donatable was donated")?;
        Ok(String::new())
    });
    r.check("execute_options.execute_async_with_options", || {
        let exe = compile(client, DONATING, &CompileOptions::new())?;
        let device = exe.addressable_devices()[0];
        let x = upload(client, &device, [1., 2., 3., 4.])?;
        let keep = ExecuteOptions::new().launch_id(8).non_donatable_inputs([0]);
        let pending = (0..3).map(|_| exe.execute_async(&[&x], &keep)).collect::<Result<Vec<_>, _>>()?;
        for execution in pending {
            expect(f32s(&execution.wait()?[0])? == [2., 4., 6., 8.], "wrong sum")?;
        }
        expect(!x.is_deleted()?, "the input listed as non-donatable was donated")?;
        Ok("3 launches in flight".into())
    });
    r.check("execute_options.sharded_async_per_device", || {
        let (exe, inputs) = two_replicas(client, ADD)?;
        let arguments: Vec<[&Buffer; 2]> = inputs.iter().map(|x| [x, x]).collect();
        let pending = exe.execute_sharded_async(&arguments, &ExecuteOptions::new().launch_id(2))?.into_per_device();
        expect(pending.len() == 2, "not one pending execution per device")?;
        // Taken in reverse order: each holds its own device's outputs.
        for (k, execution) in pending.into_iter().enumerate().rev() {
            expect(f32s(&execution.wait()?[0])? == [2. * k as f32, 2., 2., 2.], "wrong sum on a replica")?;
        }
        Ok(String::new())
    });
    r.check("execute_options.sharded_with_launch_id_and_non_donatable", || {
        let (exe, inputs) = two_replicas(client, DONATING)?;
        let context = ExecuteContext::new(client.plugin())?;
        let arguments: Vec<[&Buffer; 1]> = inputs.iter().map(|x| [x]).collect();
        let options = ExecuteOptions::new().launch_id(23).non_donatable_inputs([0]).context(&context);
        let outputs = exe.execute_sharded(&arguments, &options)?;
        for (k, outputs) in outputs.iter().enumerate() {
            expect(f32s(&outputs[0])? == [2. * k as f32, 2., 2., 2.], "wrong sum on a replica")?;
        }
        for x in &inputs {
            expect(!x.is_deleted()?, "an input listed as non-donatable was donated")?;
        }
        Ok(String::new())
    });
    r.check("execute_options.non_donatable_index_checked", || {
        let exe = portable(client, DONATING)?;
        let device = chosen_device(client)?;
        let x = upload(client, &device, [1., 2., 3., 4.])?;
        let result = exe.execute(&[&x], &ExecuteOptions::new().non_donatable_inputs([1]).device(&device));
        expect(matches!(result, Err(Error::InvalidArgument(_))), "input 1 of a one-argument program was accepted")?;
        Ok("refused before the plugin".into())
    });
    r.check("execute_options.user_data_added_and_dropped_once", || user_data(client));
}

/// Moves a value into a context, runs with it, and checks it is dropped once the context is gone.
fn user_data(client: &Client) -> Outcome {
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    // Type names are process-wide in the plugin: one per check run.
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let plugin = client.plugin();
    let ffi = plugin.ffi_extension().ok_or(Problem::Unsupported("no FFI extension".into()))?;
    let name = format!("pjrt_conform::Counted{}", RUNS.fetch_add(1, Ordering::SeqCst));
    let data_type = ffi.register_user_data_type::<Counted>(&name)?;
    let drops = Arc::new(AtomicUsize::new(0));
    {
        let context = ExecuteContext::new(plugin)?;
        ffi.add_owned_user_data(&context, data_type, Counted(drops.clone()))?;
        let exe = compile(client, ADD, &CompileOptions::new())?;
        let device = exe.addressable_devices()[0];
        let a = upload(client, &device, [1., 2., 3., 4.])?;
        let out = exe.execute(&[&a, &a], &ExecuteOptions::new().context(&context))?;
        expect(f32s(&out[0])? == [2., 4., 6., 8.], "wrong sum")?;
        pjrt_client::flush_released();
        expect(drops.load(Ordering::SeqCst) == 0, "dropped while the context lives")?;
    }
    // The execution holds the context until its completion callback has run (on a plugin
    // thread, possibly just after the wait returned), then releases it on the release thread.
    let deadline = Instant::now() + Duration::from_secs(30);
    while drops.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
        pjrt_client::flush_released();
        std::thread::sleep(Duration::from_millis(1));
    }
    pjrt_client::flush_released();
    let n = drops.load(Ordering::SeqCst);
    expect(n == 1, format!("dropped {n} times after the context was destroyed"))?;
    Ok(format!("type id {}", data_type.id()))
}
