//! The Python literals of `.npy` headers (strings, integers, `True`/`False`/`None`, tuples and
//! lists), parsed by a small recursive-descent [`Parser`].

use super::NpyError;

/// Deepest nesting of tuples/lists accepted in a header (guards the recursion).
const MAX_NESTING: usize = 32;

/// A Python literal, as far as `.npy` headers use them.
#[derive(Debug)]
pub(super) enum Value {
    Str(String),
    Bool(bool),
    None,
    /// An integer: `negative` and its magnitude (`None` if above `u64::MAX`).
    Int {
        negative: bool,
        magnitude: Option<u64>,
    },
    Tuple(Vec<Value>),
    /// A list (its items are checked for syntax only).
    List,
}

pub(super) fn describe(v: &Value) -> &'static str {
    match v {
        Value::Str(_) => "a string",
        Value::Bool(_) => "a bool",
        Value::None => "None",
        Value::Int { .. } => "an integer",
        Value::Tuple(_) => "a tuple",
        Value::List => "a list",
    }
}

/// A recursive-descent parser for the subset of Python literals found in
/// `.npy` headers: strings, integers, True/False/None, tuples and lists.
pub(super) struct Parser<'a> {
    pub(super) s: &'a [u8],
    pub(super) pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    pub(super) fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    pub(super) fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r' | b'\x0c') = self.peek() {
            self.pos += 1;
        }
    }

    pub(super) fn error_at(&self, pos: usize, msg: &str) -> NpyError {
        let start = pos.min(self.s.len());
        let end = (start + 20).min(self.s.len());
        let near = String::from_utf8_lossy(&self.s[start..end]);
        if start >= self.s.len() {
            NpyError::BadHeader(format!("{msg} (at the end of the header)"))
        } else {
            NpyError::BadHeader(format!("{msg} (at byte {start}, near {near:?})"))
        }
    }

    pub(super) fn expect(&mut self, c: u8, msg: &str) -> Result<(), NpyError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.error_at(self.pos, msg))
        }
    }

    pub(super) fn value(&mut self, depth: usize) -> Result<Value, NpyError> {
        if depth > MAX_NESTING {
            return Err(self.error_at(self.pos, "values are nested too deeply"));
        }
        match self.peek() {
            Some(b'\'' | b'"') => self.string(),
            Some(b'u' | b'U') if matches!(self.s.get(self.pos + 1), Some(b'\'' | b'"')) => {
                self.pos += 1;
                self.string()
            }
            Some(b'(') => {
                self.pos += 1;
                let (items, trailing_comma) = self.sequence(b')', depth)?;
                if items.len() == 1 && !trailing_comma {
                    // `(x)` is just a parenthesised `x`, as in Python.
                    Ok(items.into_iter().next().unwrap_or(Value::None))
                } else {
                    Ok(Value::Tuple(items))
                }
            }
            Some(b'[') => {
                self.pos += 1;
                self.sequence(b']', depth)?;
                Ok(Value::List)
            }
            Some(b'0'..=b'9' | b'-' | b'+') => self.integer(),
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let start = self.pos;
                while let Some(c) = self.peek() {
                    if c.is_ascii_alphanumeric() || c == b'_' {
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
                match &self.s[start..self.pos] {
                    b"True" => Ok(Value::Bool(true)),
                    b"False" => Ok(Value::Bool(false)),
                    b"None" => Ok(Value::None),
                    _ => Err(self.error_at(start, "unexpected name; only True, False and None are allowed")),
                }
            }
            _ => Err(self.error_at(self.pos, "expected a value")),
        }
    }

    /// Parses comma-separated values up to `close` (the opening bracket has
    /// been consumed). Returns the items and whether a trailing comma was seen.
    fn sequence(&mut self, close: u8, depth: usize) -> Result<(Vec<Value>, bool), NpyError> {
        let mut items = Vec::new();
        let mut trailing_comma = false;
        loop {
            self.skip_ws();
            if self.eat(close) {
                return Ok((items, trailing_comma));
            }
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            if self.eat(b',') {
                trailing_comma = true;
                continue;
            }
            trailing_comma = false;
            self.skip_ws();
            let msg = if close == b')' { "expected ',' or ')' in a tuple" } else { "expected ',' or ']' in a list" };
            self.expect(close, msg)?;
            return Ok((items, trailing_comma));
        }
    }

    fn string(&mut self) -> Result<Value, NpyError> {
        let start = self.pos;
        let quote = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return Err(self.error_at(self.pos, "expected a string")),
        };
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None | Some(b'\n') => return Err(self.error_at(start, "unterminated string")),
                Some(c) if c == quote => {
                    self.pos += 1;
                    break;
                }
                Some(b'\\') => {
                    match self.s.get(self.pos + 1) {
                        Some(&c @ (b'\\' | b'\'' | b'"')) => out.push(c),
                        _ => return Err(self.error_at(self.pos, "unsupported escape sequence in a string")),
                    }
                    self.pos += 2;
                }
                Some(c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
        // `out` is a run of whole UTF-8 characters from a `str` (quotes and
        // escapes are ASCII), so this is lossless.
        Ok(Value::Str(String::from_utf8_lossy(&out).into_owned()))
    }

    fn integer(&mut self) -> Result<Value, NpyError> {
        let start = self.pos;
        let mut negative = false;
        while let Some(c @ (b'-' | b'+')) = self.peek() {
            if c == b'-' {
                negative = !negative;
            }
            self.pos += 1;
            self.skip_ws();
        }
        let digits_start = self.pos;
        let mut magnitude: Option<u64> = Some(0);
        while let Some(c) = self.peek() {
            if c.is_ascii_digit() {
                magnitude = magnitude.and_then(|m| m.checked_mul(10)).and_then(|m| m.checked_add(u64::from(c - b'0')));
                self.pos += 1;
            } else if c == b'_' && self.pos > digits_start {
                self.pos += 1;
            } else {
                break;
            }
        }
        if self.pos == digits_start {
            return Err(self.error_at(start, "expected an integer"));
        }
        // Python 2 wrote long integers with an `L` suffix; NumPy still reads them.
        if let Some(b'L' | b'l') = self.peek() {
            self.pos += 1;
        }
        if let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == b'.' || c == b'_' {
                return Err(self.error_at(start, "expected an integer"));
            }
        }
        Ok(Value::Int { negative, magnitude })
    }
}
