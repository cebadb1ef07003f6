//! `transfer_manager.*`: creating one, transferring data and literals into it, errors and
//! metadata.

use pjrt_client::{Client, ElementType, Error, ErrorCode, Placement, ShapeSpec, Value};

use super::{f32s, WAIT};
use crate::commands::conform::report::{expect, Problem, Report};

pub(crate) fn transfer_manager_checks(r: &mut Report, client: &Client) {
    let shapes = [
        ShapeSpec::new(ElementType::F32, &[4]),
        ShapeSpec::new(ElementType::S32, &[2]),
        ShapeSpec::new(ElementType::U8, &[3]),
    ];
    r.check("transfer_manager.create", || {
        let m = client.create_buffers_for_async_host_to_device(&shapes, Placement::Default)?;
        expect(m.buffer_count()? == 3 && m.buffer_size(0)? == 16, "count or size")?;
        Ok(m.device()?.to_string()?)
    });
    r.check("transfer_manager.transfer_data", || {
        let m = client.create_buffers_for_async_host_to_device(&shapes[..1], Placement::Default)?;
        let data: Vec<u8> = [1f32, 2., 3., 4.].iter().flat_map(|v| v.to_ne_bytes()).collect();
        m.transfer_data(0, &data[..8], 0, false)?;
        m.transfer_data(0, &data[8..], 8, true)?;
        expect(f32s(&m.retrieve_buffer(0)?)? == [1., 2., 3., 4.], "values")?;
        Ok(String::new())
    });
    r.check("transfer_manager.transfer_literal", || {
        let m = client.create_buffers_for_async_host_to_device(&shapes[1..2], Placement::Default)?;
        let data: Vec<u8> = [7i32, 8].iter().flat_map(|v| v.to_ne_bytes()).collect();
        m.transfer_literal(0, &data)?;
        expect(m.retrieve_buffer(0)?.to_vec::<i32>()? == [7, 8], "values")?;
        Ok(String::new())
    });
    r.check("transfer_manager.set_buffer_error", || {
        let m = client.create_buffers_for_async_host_to_device(&shapes[2..], Placement::Default)?;
        m.set_buffer_error(0, ErrorCode::Unavailable, "conform")?;
        let b = m.retrieve_buffer(0)?;
        match b.ready_event()?.wait_timeout(WAIT) {
            Err(Error::Pjrt { code: ErrorCode::Unavailable, .. }) => Ok(String::new()),
            other => Err(Problem::Fail(format!("the ready event gave {other:?}"))),
        }
    });
    r.check("transfer_manager.add_metadata", || {
        let m = client.create_buffers_for_async_host_to_device(&shapes[..1], Placement::Default)?;
        m.add_metadata(&[("origin".to_owned(), Value::String("pjrt conform".into()))])?;
        m.set_buffer_error(0, ErrorCode::Cancelled, "not needed")?;
        Ok(String::new())
    });
}
