//! The order MLIR's bytecode writer numbers attributes and types in (its IRNumbering): each
//! entry in the order first reached from the IR (an entry before the entries it refers to),
//! the most referenced first, then grouped by dialect; so that written tables are MLIR's.

use super::container::{group_by_dialect_per_byte, Order, Ref, Table};

/// Counts references from `top` (the IR's references to attributes and types, in the order
/// MLIR's writer numbers the IR) and orders both tables as MLIR does.
pub(crate) fn order(attrs: &Table, types: &Table, top: &[Ref]) -> Order {
    let mut state = State {
        attrs,
        types,
        attr_seen: vec![None; attrs.entries.len()],
        type_seen: vec![None; types.entries.len()],
        attr_order: Vec::new(),
        type_order: Vec::new(),
    };
    for r in top {
        state.number(r);
    }
    // Whatever the IR does not reach (none, as written) keeps its place after the rest.
    for i in 0..attrs.entries.len() {
        if state.attr_seen[i].is_none() {
            state.attr_seen[i] = Some(state.attr_order.len());
            state.attr_order.push((i, 0));
        }
    }
    for i in 0..types.entries.len() {
        if state.type_seen[i].is_none() {
            state.type_seen[i] = Some(state.type_order.len());
            state.type_order.push((i, 0));
        }
    }
    let (attrs_in_order, attr_number) = finish(state.attr_order, |i| attrs.entries[i].dialect);
    let (types_in_order, type_number) = finish(state.type_order, |i| types.entries[i].dialect);
    Order { attrs: attrs_in_order, attr_number, types: types_in_order, type_number }
}

/// Most referenced first (a stable sort: ties in the order first reached), then grouped by
/// dialect; each entry's number.
fn finish(mut order: Vec<(usize, u64)>, dialect: impl Fn(usize) -> usize) -> (Vec<usize>, Vec<u64>) {
    order.sort_by_key(|o| std::cmp::Reverse(o.1));
    group_by_dialect_per_byte(&mut order, |&(i, _)| dialect(i));
    let entries: Vec<usize> = order.into_iter().map(|(i, _)| i).collect();
    let mut number = vec![0u64; entries.len()];
    for (n, &i) in entries.iter().enumerate() {
        number[i] = n as u64;
    }
    (entries, number)
}

struct State<'t> {
    attrs: &'t Table,
    types: &'t Table,
    /// Each entry's place in the order first reached.
    attr_seen: Vec<Option<usize>>,
    type_seen: Vec<Option<usize>>,
    /// Entries in the order first reached, with their reference counts (the first reach not
    /// counted, as MLIR counts).
    attr_order: Vec<(usize, u64)>,
    type_order: Vec<(usize, u64)>,
}

impl State<'_> {
    /// MLIR's `number`: a reference to an entry already reached counts; a new entry takes the
    /// next place, then what it refers to is numbered (in the order it writes them).
    fn number(&mut self, r: &Ref) {
        let (i, is_attr) = match r {
            Ref::Attr(i) | Ref::AttrFlag(i, _) => (*i as usize, true),
            Ref::Type(i) | Ref::TypeFlag(i, _) => (*i as usize, false),
            Ref::Str(_) | Ref::Section(..) => return,
        };
        let (seen, order, table) = if is_attr {
            (&mut self.attr_seen, &mut self.attr_order, self.attrs)
        } else {
            (&mut self.type_seen, &mut self.type_order, self.types)
        };
        let Some(slot) = seen.get_mut(i) else { return };
        if let Some(at) = *slot {
            order[at].1 += 1;
            return;
        }
        *slot = Some(order.len());
        order.push((i, 0));
        for child in table.entries[i].bytes.refs() {
            self.number(child);
        }
    }
}
