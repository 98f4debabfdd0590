//! The heap a decoded `ModelProto` (the subset in `proto.rs`) would take, measured by walking
//! the protobuf wire format without allocating: prost bounds each length by the bytes left, but
//! an empty message costs two bytes in the file and a whole struct once decoded (a 20 MB file
//! of empty nodes decodes to gigabytes), so the total is checked against the budget first.

use super::proto::{
    AttributeProto, NodeProto, StringStringEntryProto, TensorProto, ValueInfoProto,
};
use std::mem::size_of;

#[derive(Clone, Copy)]
enum Msg {
    Model,
    Graph,
    Node,
    Attribute,
    Tensor,
    ValueInfo,
    Entry,
}

/// How a declared field decodes.
enum Field {
    /// A repeated message: one struct per occurrence.
    Repeated(Msg, usize),
    /// An optional message, stored inline in its parent.
    Inline(Msg),
    /// A string or bytes: its length, plus a `String` per occurrence when repeated.
    Bytes(usize),
    /// A repeated number of `size` bytes, packed or not.
    Numbers { size: usize, fixed: bool },
    /// A plain number, inline.
    Skip,
}

fn field(msg: Msg, tag: u64) -> Field {
    use Field::*;
    const S: usize = size_of::<String>();
    match (msg, tag) {
        (Msg::Model, 7) => Inline(Msg::Graph),
        (Msg::Graph, 1) => Repeated(Msg::Node, size_of::<NodeProto>()),
        (Msg::Graph, 2) => Bytes(0),
        (Msg::Graph, 5) => Repeated(Msg::Tensor, size_of::<TensorProto>()),
        (Msg::Graph, 11 | 12) => Repeated(Msg::ValueInfo, size_of::<ValueInfoProto>()),
        (Msg::ValueInfo, 1) => Bytes(0),
        (Msg::Node, 1 | 2) => Bytes(S),
        (Msg::Node, 3 | 4 | 7) => Bytes(0),
        (Msg::Node, 5) => Repeated(Msg::Attribute, size_of::<AttributeProto>()),
        (Msg::Attribute, 1) => Bytes(0),
        (Msg::Attribute, 5) => Inline(Msg::Tensor),
        (Msg::Attribute, 8) => Numbers {
            size: 8,
            fixed: false,
        },
        (Msg::Tensor, 1 | 7) => Numbers {
            size: 8,
            fixed: false,
        },
        (Msg::Tensor, 4) => Numbers {
            size: 4,
            fixed: true,
        },
        (Msg::Tensor, 5) => Numbers {
            size: 4,
            fixed: false,
        },
        (Msg::Tensor, 8 | 9) => Bytes(0),
        (Msg::Tensor, 13) => Repeated(Msg::Entry, size_of::<StringStringEntryProto>()),
        (Msg::Entry, 1 | 2) => Bytes(0),
        _ => Skip,
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.at)?;
            self.at += 1;
            v |= ((b & 0x7f) as u64) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    fn take(&mut self, n: u64) -> Option<&[u8]> {
        let end = self.at.checked_add(usize::try_from(n).ok()?)?;
        let s = self.buf.get(self.at..end)?;
        self.at = end;
        Some(s)
    }

    /// Skips a value of `wire` type (groups to their end, at most `depth` deep).
    fn skip(&mut self, wire: u64, depth: usize) -> Option<()> {
        match wire {
            0 => self.varint().map(drop),
            1 => self.take(8).map(drop),
            2 => {
                let n = self.varint()?;
                self.take(n).map(drop)
            }
            3 if depth > 0 => loop {
                let key = self.varint()?;
                if key & 7 == 4 {
                    return Some(());
                }
                self.skip(key & 7, depth - 1)?;
            },
            5 => self.take(4).map(drop),
            _ => None,
        }
    }
}

/// Heap bytes of the decoded message in `buf` (vectors counted at twice their length, as they
/// grow by doubling); `None` when the bytes are no valid protobuf.
fn heap(buf: &[u8], msg: Msg) -> Option<u64> {
    let mut r = Reader { buf, at: 0 };
    let mut total = 0u64;
    let add = |total: &mut u64, n: u64| total.checked_add(n).map(|t| *total = t);
    while r.at < buf.len() {
        let key = r.varint()?;
        let (tag, wire) = (key >> 3, key & 7);
        let f = field(msg, tag);
        match (f, wire) {
            (Field::Repeated(inner, size), 2) => {
                let n = r.varint()?;
                let body = r.take(n)?;
                add(&mut total, 2 * size as u64)?;
                add(&mut total, heap(body, inner)?)?;
            }
            (Field::Inline(inner), 2) => {
                let n = r.varint()?;
                let body = r.take(n)?;
                add(&mut total, heap(body, inner)?)?;
            }
            (Field::Bytes(per), 2) => {
                let n = r.varint()?;
                r.take(n)?;
                add(&mut total, n.checked_add(2 * per as u64)?)?;
            }
            (Field::Numbers { size, fixed }, 2) => {
                let n = r.varint()?;
                let body = r.take(n)?;
                let count = if fixed {
                    body.len() / size
                } else {
                    body.iter().filter(|&&b| b < 0x80).count()
                };
                add(&mut total, 2 * (count * size) as u64)?;
            }
            (Field::Numbers { size, .. }, w) => {
                r.skip(w, 0)?;
                add(&mut total, 2 * size as u64)?;
            }
            (_, w) => r.skip(w, 100)?,
        }
    }
    Some(total)
}

/// Heap bytes of the `ModelProto` decoded from `bytes` (the bytes themselves not counted);
/// `None` when they are no valid protobuf (prost then says what is wrong).
pub(super) fn decoded_heap(bytes: &[u8]) -> Option<u64> {
    heap(bytes, Msg::Model)
}
