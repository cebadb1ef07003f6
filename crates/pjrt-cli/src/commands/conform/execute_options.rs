//! Execute options on every execute path: single-device and portable (`execute_on`), sharded, non-blocking forms (issue 13, item 2).

use pjrt_client::Client;

use super::Report;

/// Adds this group's checks to `r`.
pub(super) fn checks(r: &mut Report, client: &Client) {
    let _ = (r, client);
}
