//! The use-list orders MLIR's bytecode writer records (bytecode 3 on): for each value used
//! more than once whose uses are not in the order reading rebuilds (each new use first), the
//! order they are in. StableHLO's serializer's module holds the uses as its passes left them:
//! built in order (so rebuilt as read), then each op the target version needs an older
//! version of rebuilt, its new uses first, and the uses of its results moved over in turn.
//! This models that, so that an artifact written is the file StableHLO's serializer writes.

use super::container::{varint, varint_flag, Buf, FastMap};
use crate::ir::{Module, Op, Region};

/// A use: its op's number (pre-order, the root 0) and the operand's index.
type Use = u64;

/// Each op's (by address) and block's (by address) values' use-list orders, where any needs
/// one: per result or argument, the uses' indexes in the list from the highest use first.
#[derive(Default)]
pub(crate) struct UseLists {
    ops: FastMap<usize, Vec<Option<Vec<u64>>>>,
    blocks: FastMap<usize, Vec<Option<Vec<u64>>>>,
}

/// A value's uses, as this models them.
struct Used {
    /// Whether the op that defines it is rebuilt (false for block arguments).
    rebuilt: bool,
    /// Its uses in the order they were first built (pre-order), with whether each user is
    /// rebuilt.
    uses: Vec<(Use, bool)>,
}

/// The walk that numbers the ops (pre-order, as MLIR's writer numbers them) and records each
/// value's uses.
struct Walk<F: Fn(&Op) -> bool> {
    rebuilt: F,
    next_op: u64,
    values: Vec<Used>,
    /// The value of each visible IR id.
    visible: FastMap<u32, usize>,
    undo: Vec<(u32, Option<usize>)>,
    /// Each op's and block's values, by address.
    op_values: Vec<(usize, Vec<usize>)>,
    block_values: Vec<(usize, Vec<usize>)>,
}

impl<F: Fn(&Op) -> bool> Walk<F> {
    fn define(&mut self, id: u32, rebuilt: bool) -> usize {
        let v = self.values.len();
        self.values.push(Used { rebuilt, uses: Vec::new() });
        let before = self.visible.insert(id, v);
        self.undo.push((id, before));
        v
    }

    fn op(&mut self, op: &Op) {
        let number = self.next_op;
        self.next_op += 1;
        let rebuilt = (self.rebuilt)(op);
        for (i, id) in op.operands.iter().enumerate() {
            if let Some(&v) = self.visible.get(id) {
                self.values[v].uses.push(((number << 32) | i as u64, rebuilt));
            }
        }
        for r in &op.regions {
            self.region(r);
        }
    }

    fn region(&mut self, region: &Region) {
        let mark = self.undo.len();
        for block in &region.blocks {
            let args = block.args.iter().map(|a| self.define(a.id, false)).collect();
            self.block_values.push((block as *const crate::ir::Block as usize, args));
            for op in &block.ops {
                let rebuilt = (self.rebuilt)(op);
                let results = op.results.iter().map(|r| self.define(r.id, rebuilt)).collect();
                self.op_values.push((op as *const Op as usize, results));
            }
        }
        for op in region.blocks.iter().flat_map(|b| &b.ops) {
            self.op(op);
        }
        while self.undo.len() > mark {
            if let Some((id, before)) = self.undo.pop() {
                match before {
                    Some(v) => self.visible.insert(id, v),
                    None => self.visible.remove(&id),
                };
            }
        }
    }
}

/// The order of `value`'s uses, or `None` where it is the order reading rebuilds.
fn order(value: &Used) -> Option<Vec<u64>> {
    if value.uses.len() < 2 {
        return None;
    }
    let pre_order = |rebuilt: bool| value.uses.iter().filter(move |u| u.1 == rebuilt).map(|u| u.0);
    // Rebuilt users' new uses are pushed to the front as they are rebuilt (pre-order). The
    // others stay: as built (newest first) for a value whose op is kept; moved one by one to
    // the front of the rebuilt op's new value (so oldest first), behind its new uses.
    let list: Vec<Use> = if value.rebuilt {
        let mut l: Vec<Use> = pre_order(true).collect::<Vec<_>>().into_iter().rev().collect();
        l.extend(pre_order(false));
        l
    } else {
        let mut l: Vec<Use> = pre_order(true).collect::<Vec<_>>().into_iter().rev().collect();
        l.extend(pre_order(false).collect::<Vec<_>>().into_iter().rev());
        l
    };
    if list.windows(2).all(|w| w[0] > w[1]) {
        return None;
    }
    let mut indexed: Vec<(u64, Use)> = list.iter().enumerate().map(|(i, &u)| (i as u64, u)).collect();
    indexed.sort_by_key(|&(_, u)| std::cmp::Reverse(u));
    Some(indexed.into_iter().map(|(i, _)| i).collect())
}

/// The use-list orders of `module` written for a target whose older op versions `rebuilt`
/// says which ops need.
pub(crate) fn use_lists(module: &Module, rebuilt: impl Fn(&Op) -> bool) -> UseLists {
    let mut w = Walk {
        rebuilt,
        next_op: 0,
        values: Vec::new(),
        visible: FastMap::default(),
        undo: Vec::new(),
        op_values: Vec::new(),
        block_values: Vec::new(),
    };
    for root in &module.ops {
        let rebuilt = (w.rebuilt)(root);
        let results = root.results.iter().map(|r| w.define(r.id, rebuilt)).collect();
        w.op_values.push((root as *const Op as usize, results));
        w.op(root);
    }
    let mut out = UseLists::default();
    let orders = |vs: &[usize], values: &[Used]| -> Option<Vec<Option<Vec<u64>>>> {
        let o: Vec<Option<Vec<u64>>> = vs.iter().map(|&v| order(&values[v])).collect();
        o.iter().any(Option::is_some).then_some(o)
    };
    for (at, vs) in &w.op_values {
        if let Some(o) = orders(vs, &w.values) {
            out.ops.insert(*at, o);
        }
    }
    for (at, vs) in &w.block_values {
        if let Some(o) = orders(vs, &w.values) {
            out.blocks.insert(*at, o);
        }
    }
    out
}

impl UseLists {
    /// Writes the orders of `op`'s results; whether there were any.
    pub(crate) fn write_op(&self, out: &mut Buf, op: &Op) -> bool {
        self.ops.get(&(op as *const Op as usize)).is_some_and(|o| write(out, o))
    }

    /// Writes the orders of `block`'s arguments; whether there were any.
    pub(crate) fn write_block(&self, out: &mut Buf, block: &crate::ir::Block) -> bool {
        self.blocks.get(&(block as *const crate::ir::Block as usize)).is_some_and(|o| write(out, o))
    }
}

/// MLIR's encoding of a range's use-list orders.
fn write(out: &mut Buf, orders: &[Option<Vec<u64>>]) -> bool {
    let some: Vec<(usize, &Vec<u64>)> =
        orders.iter().enumerate().filter_map(|(i, o)| o.as_ref().map(|o| (i, o))).collect();
    if some.is_empty() {
        return false;
    }
    if orders.len() != 1 {
        varint(out, some.len() as u64);
    }
    for (i, order) in some {
        let shuffled = order.iter().enumerate().filter(|&(k, &v)| k as u64 != v).count();
        let pairs = shuffled < order.len() / 2;
        if orders.len() != 1 {
            varint(out, i as u64);
        }
        if pairs {
            varint_flag(out, shuffled as u64 * 2, true);
            for (k, &v) in order.iter().enumerate() {
                if k as u64 != v {
                    varint(out, v);
                    varint(out, k as u64);
                }
            }
        } else {
            varint_flag(out, order.len() as u64, false);
            for &v in order {
                varint(out, v);
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn used(rebuilt: bool, users: &[(u64, bool)]) -> Used {
        Used { rebuilt, uses: users.iter().map(|&(op, r)| (op << 32, r)).collect() }
    }

    /// StableHLO's `dot` artifact at 0.12.0: an argument used by three dot_generals (rebuilt
    /// as dot_general_v1) and a slice, then one used by two dot_generals, a transpose and a
    /// slice: the orders it records.
    #[test]
    fn rebuilt_users_come_first_newest_first() {
        let a = used(false, &[(3, true), (4, true), (6, true), (7, false)]);
        assert_eq!(order(&a), Some(vec![3, 0, 1, 2]));
        let b = used(false, &[(3, true), (4, true), (5, false), (8, false)]);
        assert_eq!(order(&b), Some(vec![2, 3, 0, 1]));
        // Nothing rebuilt: the order reading rebuilds, nothing recorded.
        assert_eq!(order(&used(false, &[(1, false), (2, false), (3, false)])), None);
        assert_eq!(order(&used(false, &[(1, true)])), None);
    }

    #[test]
    fn orders_are_written_as_mlir_writes_them() {
        let mut out = Buf::default();
        assert!(!write(&mut out, &[None]));
        // One value: no count, no index; more than half moved: every index.
        assert!(write(&mut out, &[Some(vec![3, 0, 1, 2])]));
        assert_eq!(out[..], [0x11, 0x07, 0x01, 0x03, 0x05]);
        // Two results, the second's order recorded, fewer than half moved: as (from, to) pairs.
        let mut out = Buf::default();
        assert!(write(&mut out, &[None, Some(vec![0, 1, 2, 3, 5, 4])]));
        assert_eq!(out[..], [0x03, 0x03, 0x13, 0x0b, 0x09, 0x09, 0x0b]);
    }
}
