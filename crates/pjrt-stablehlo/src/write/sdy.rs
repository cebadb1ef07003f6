//! Shardy (`sdy`) attributes, from the MLIR text the reader keeps them as back to Shardy's
//! bytecode encoding (shardy/dialect/sdy/ir/bytecode.td; the inverse of `crate::decode`'s).

use super::container::{svarint, varint, varint_flag, Buf, Entry, SDY};
use super::encode::Encoder;
use super::error::WriteError;

type R<T> = Result<T, WriteError>;

/// A cursor over attribute text.
struct Text<'t> {
    s: &'t str,
    what: &'t str,
}

impl<'t> Text<'t> {
    fn bad(&self) -> WriteError {
        WriteError::Unrepresentable {
            what: format!("the Shardy attribute {} (unexpected text at {:?})", self.what, self.s),
        }
    }

    fn eat(&mut self, p: &str) -> bool {
        match self.s.strip_prefix(p) {
            Some(r) => {
                self.s = r;
                true
            }
            None => false,
        }
    }

    fn expect(&mut self, p: &str) -> R<()> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(self.bad())
        }
    }

    fn int(&mut self) -> R<i64> {
        let n = self.s.bytes().enumerate().take_while(|&(i, b)| b.is_ascii_digit() || (i == 0 && b == b'-')).count();
        let v = self.s[..n].parse().map_err(|_| self.bad())?;
        self.s = &self.s[n..];
        Ok(v)
    }

    /// A quoted string, `\XX` escapes undone.
    fn quoted(&mut self) -> R<Vec<u8>> {
        self.expect("\"")?;
        let mut out = Vec::new();
        let bytes = self.s.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'"' => {
                    self.s = &self.s[i + 1..];
                    return Ok(out);
                }
                b'\\' => {
                    let hex = self.s.get(i + 1..i + 3).ok_or_else(|| self.bad())?;
                    out.push(u8::from_str_radix(hex, 16).map_err(|_| self.bad())?);
                    i += 3;
                }
                b => {
                    out.push(b);
                    i += 1;
                }
            }
        }
        Err(self.bad())
    }

    /// `@name` or `@"name"`.
    fn symbol(&mut self) -> R<Vec<u8>> {
        self.expect("@")?;
        if self.s.starts_with('"') {
            return self.quoted();
        }
        let n = self.s.bytes().take_while(|b| b.is_ascii_alphanumeric() || b"_$.-".contains(b)).count();
        let name = self.s.as_bytes()[..n].to_vec();
        self.s = &self.s[n..];
        Ok(name)
    }

    /// Items separated by `, ` up to `close`.
    fn list(&mut self, close: &str, mut item: impl FnMut(&mut Self) -> R<u64>) -> R<Vec<u64>> {
        let mut out = Vec::new();
        if self.eat(close) {
            return Ok(out);
        }
        loop {
            out.push(item(self)?);
            if self.eat(close) {
                return Ok(out);
            }
            self.expect(", ")?;
        }
    }
}

fn refs(b: &mut Buf, items: &[u64]) {
    varint(b, items.len() as u64);
    items.iter().for_each(|&r| b.attr(r));
}

impl Encoder {
    fn sdy_entry(&mut self, b: Buf) -> u64 {
        self.tables.uses_sdy = true;
        self.tables.attrs.add(Entry { dialect: SDY, custom: true, bytes: b })
    }

    /// A Shardy attribute from its mnemonic and the text after it.
    pub(crate) fn sdy_text(&mut self, mnemonic: &str, body: &str) -> R<u64> {
        let what = format!("#sdy.{mnemonic}{body}");
        let mut t = Text { s: body, what: &what };
        let r = match mnemonic {
            "mesh" => self.sdy_mesh(&mut t)?,
            "sharding" => self.sdy_sharding(&mut t)?,
            "sharding_per_value" => {
                t.expect("<[")?;
                let items = t.list("]>", |t| self.sdy_sharding(t))?;
                let mut b = Buf::default();
                varint(&mut b, 7);
                refs(&mut b, &items);
                self.sdy_entry(b)
            }
            "manual_axes" => {
                t.expect("{")?;
                let items = t.list("}", |t| {
                    let name = t.quoted()?;
                    Ok(self.builtin_string(&name))
                })?;
                let mut b = Buf::default();
                varint(&mut b, 0);
                refs(&mut b, &items);
                self.sdy_entry(b)
            }
            "op_sharding_rule" => return self.sdy_attr(mnemonic, body),
            _ => {
                return Err(WriteError::Unrepresentable {
                    what: format!("the Shardy attribute #sdy.{mnemonic} (not one this writer encodes)"),
                })
            }
        };
        if !t.s.is_empty() {
            return Err(t.bad());
        }
        Ok(r)
    }

    fn sdy_mesh(&mut self, t: &mut Text<'_>) -> R<u64> {
        t.expect("<[")?;
        let axes = t.list("]", |t| {
            let name = t.quoted()?;
            t.expect("=")?;
            let size = t.int()?;
            let mut b = Buf::default();
            varint(&mut b, 1);
            b.str(self.tables.string(&name));
            svarint(&mut b, size);
            Ok(self.sdy_entry(b))
        })?;
        let mut ids = Vec::new();
        if t.eat(", device_ids=[") {
            let mut v = Vec::new();
            t.list("]", |t| {
                v.push(t.int()?);
                Ok(0)
            })?;
            ids = v;
        }
        t.expect(">")?;
        let mut b = Buf::default();
        varint(&mut b, 2);
        refs(&mut b, &axes);
        varint(&mut b, ids.len() as u64);
        ids.iter().for_each(|&i| svarint(&mut b, i));
        Ok(self.sdy_entry(b))
    }

    fn sdy_axis_ref(&mut self, t: &mut Text<'_>) -> R<u64> {
        let name = t.quoted()?;
        let sub = if t.eat(":(") {
            let pre = t.int()?;
            t.expect(")")?;
            let size = t.int()?;
            let mut b = Buf::default();
            varint(&mut b, 3);
            svarint(&mut b, pre);
            svarint(&mut b, size);
            Some(self.sdy_entry(b))
        } else {
            None
        };
        let mut b = Buf::default();
        varint(&mut b, 4);
        b.str(self.tables.string(&name));
        match sub {
            Some(s) => b.attr_flag(s, true),
            None => varint(&mut b, 0),
        }
        Ok(self.sdy_entry(b))
    }

    fn sdy_axes(&mut self, t: &mut Text<'_>) -> R<Vec<u64>> {
        t.expect("{")?;
        t.list("}", |t| self.sdy_axis_ref(t))
    }

    /// A sharding's body: `<@mesh, [{"x"}, {}], replicated={...}, unreduced={...}>`.
    fn sdy_sharding(&mut self, t: &mut Text<'_>) -> R<u64> {
        t.expect("<")?;
        let mesh = if t.s.starts_with('@') {
            let name = t.symbol()?;
            let s = self.builtin_string(&name);
            self.builtin_symbol(s)
        } else {
            t.expect("mesh")?;
            self.sdy_mesh(t)?
        };
        t.expect(", [")?;
        let dims = t.list("]", |t| {
            t.expect("{")?;
            let mut axes = Vec::new();
            let mut closed = true;
            if !t.eat("}") {
                loop {
                    if t.eat("?") {
                        closed = false;
                        t.expect("}")?;
                        break;
                    }
                    axes.push(self.sdy_axis_ref(t)?);
                    if t.eat("}") {
                        break;
                    }
                    t.expect(", ")?;
                }
            }
            let priority = if t.eat("p") { Some(t.int()?) } else { None };
            let mut b = Buf::default();
            varint(&mut b, 5);
            refs(&mut b, &axes);
            b.push(u8::from(closed));
            match priority {
                Some(p) => varint_flag(&mut b, p as u64, true),
                None => varint(&mut b, 0),
            }
            Ok(self.sdy_entry(b))
        })?;
        let replicated = if t.eat(", replicated=") { self.sdy_axes(t)? } else { Vec::new() };
        let (unreduced, op) = if t.eat(", unreduced=") {
            let op = if t.eat("max") {
                1
            } else if t.eat("min") {
                2
            } else {
                0
            };
            (self.sdy_axes(t)?, op)
        } else {
            (Vec::new(), 0)
        };
        t.expect(">")?;
        // The oldest encoding that holds it: Shardy added unreduced axes, then their reduction.
        let code = if op != 0 {
            17
        } else if !unreduced.is_empty() {
            15
        } else {
            6
        };
        let mut b = Buf::default();
        varint(&mut b, code);
        b.attr(mesh);
        refs(&mut b, &dims);
        refs(&mut b, &replicated);
        if code != 6 {
            refs(&mut b, &unreduced);
        }
        if code == 17 {
            svarint(&mut b, op);
        }
        Ok(self.sdy_entry(b))
    }
}
