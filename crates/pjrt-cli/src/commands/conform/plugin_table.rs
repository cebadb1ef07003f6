//! A plugin from a table (`Plugin::from_raw_api`-style constructors) and the seed's graceful fallbacks (issue 13, items 3 and 4).

use pjrt_client::Client;

use super::Report;

/// Adds this group's checks to `r`.
pub(super) fn checks(r: &mut Report, client: &Client) {
    let _ = (r, client);
}
