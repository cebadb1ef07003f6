//! Layouts: device layouts on upload, host layouts on download, views with a layout (issue 13, item 1).

use pjrt_client::Client;

use super::Report;

/// Adds this group's checks to `r`.
pub(super) fn checks(r: &mut Report, client: &Client) {
    let _ = (r, client);
}
