//! The bearer token: whether a request may pass, HTTP and gRPC alike.

use http::HeaderValue;

use crate::options::ServerOptions;

/// Whether a request with this `Authorization` header may pass: any, when the server has no
/// token; else `Bearer TOKEN` with the server's token, the scheme in any case (RFC 9110's
/// auth-scheme is case-insensitive).
pub(crate) fn authorized(options: &ServerOptions, authorization: Option<&HeaderValue>) -> bool {
    let Some(token) = &options.token else { return true };
    authorization
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .is_some_and(|(_, t)| constant_time_eq(t.trim_start_matches(' ').as_bytes(), token.as_bytes()))
}

/// Compares without returning early on the first differing byte (the time says nothing of
/// how much of a guessed token was right).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
