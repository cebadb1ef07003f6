//! How names and strings are written in MLIR text: what the printer writes and the decoder's
//! messages quote.

/// `name`, or `"name"` when it is not a bare identifier.
pub(crate) fn quote_symbol(name: &str) -> String {
    if is_bare(name) {
        name.to_string()
    } else {
        let mut s = String::new();
        string_into(&mut s, name.as_bytes());
        s
    }
}

pub(crate) fn is_bare(name: &str) -> bool {
    let mut b = name.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.'))
}

pub(crate) fn string_into(out: &mut String, s: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push('"');
    for &c in s {
        if c == b'"' || c == b'\\' || !(0x20..0x7f).contains(&c) {
            out.push('\\');
            out.push(HEX[(c >> 4) as usize] as char);
            out.push(HEX[(c & 15) as usize] as char);
        } else {
            out.push(c as char);
        }
    }
    out.push('"');
}
