//! `topology.*` and `aot.*`: the client's topology, its descriptions, attributes and
//! serialization, one created by name, and a program compiled against it and loaded.

use pjrt_client::{Client, CompileOptions, Error, ExecuteOptions, Program, Topology};

use super::{f32s, ADD};
use crate::commands::conform::report::{expect, Outcome, Problem, Report};

pub(crate) fn topology_checks(r: &mut Report, client: &Client) {
    let topology = client.topology();
    let with = |f: &dyn Fn(&Topology) -> Outcome| match &topology {
        Ok(t) => f(t),
        Err(e) => Err(Problem::from(Error::InvalidArgument(e.to_string()))),
    };
    r.check("topology.client_topology", || with(&|t| Ok(t.platform_name()?)));
    r.check("topology.platform_version", || with(&|t| Ok(t.platform_version()?)));
    r.check("topology.device_descriptions", || with(&|t| Ok(t.device_count()?.to_string())));
    r.check("topology.attributes", || with(&|t| Ok(t.attributes()?.len().to_string())));
    r.check("topology.fingerprint", || with(&|t| Ok(t.fingerprint()?.to_string())));
    r.check("topology.serialize", || with(&|t| Ok(format!("{} bytes", t.serialize()?.len()))));
    r.check("topology.deserialize", || {
        with(&|t| Ok(Topology::deserialize(client.plugin(), &t.serialize()?)?.device_count()?.to_string()))
    });
    r.check("topology.memory_space_kind_ids", || with(&|t| Ok(format!("{:?}", t.memory_space_kind_ids()?))));
    r.check("topology.create_by_name", || {
        Ok(Topology::create(client.plugin(), client.platform_name(), &[])?.platform_name()?)
    });
    r.check("aot.compile_and_load", || {
        with(&|t| {
            let options = CompileOptions::new();
            let exe = t.compile(&Program::mlir_text(ADD)?, &options, Some(client))?;
            let loaded = client.load(&exe, &options)?;
            let a = client.upload(&[1f32, 2., 3., 4.], &[4])?;
            expect(f32s(&loaded.execute(&[&a, &a], &ExecuteOptions::new())?[0])? == [2., 4., 6., 8.], "wrong sum")?;
            Ok(String::new())
        })
    });
}
