//! Copies of a buffer to another client, possibly of another plugin, through the host.

use crate::buffer::checks::check_element_type;
use crate::buffer::download::DownloadOptions;
use crate::buffer::host_layout::HostLayout;
use crate::buffer::{Buffer, Placement, DOWNLOAD_INSTEAD};
use crate::call::release::refuse_in_callback;
use crate::client::Client;
use crate::error::Result;

impl Buffer {
    /// Copies the buffer to another client (possibly of another plugin) through the host: a
    /// dense host copy, then an upload to `placement` of `client`. The element type must be
    /// known to the target plugin.
    pub fn copy_to_client(&self, client: &Client, placement: Placement<'_>) -> Result<Buffer> {
        refuse_in_callback("Buffer::copy_to_client", DOWNLOAD_INSTEAD)?;
        let element_type = self.element_type()?;
        let dims = self.dimensions()?.to_vec();
        check_element_type(client.api(), element_type)?;
        let bytes = self.to_bytes(DownloadOptions::new())?;
        client.upload_bytes(&bytes, element_type, &dims, &HostLayout::default(), placement)
    }
}
