//! Tree names and keys of the nine TPC-C tables and their two secondary indexes. Keys are
//! big-endian integers (and fixed-width names), so byte order is the tables' primary-key
//! order and a prefix names a warehouse, district or customer.

pub const WAREHOUSE: &str = "tpcc.warehouse";
pub const DISTRICT: &str = "tpcc.district";
pub const CUSTOMER: &str = "tpcc.customer";
/// Customers by (w, d, last, first, c): Payment and Order-Status by last name (spec 2.5.2.2).
pub const CUSTOMER_BY_NAME: &str = "tpcc.customer_name";
pub const HISTORY: &str = "tpcc.history";
pub const NEW_ORDER: &str = "tpcc.new_order";
pub const ORDER: &str = "tpcc.order";
/// Orders by (w, d, c, o): a customer's latest order for Order-Status (spec 2.6.2.2).
pub const ORDER_BY_CUSTOMER: &str = "tpcc.order_customer";
pub const ORDER_LINE: &str = "tpcc.order_line";
pub const ITEM: &str = "tpcc.item";
pub const STOCK: &str = "tpcc.stock";

/// Every tree, in the order the load creates them.
pub const ALL_TREES: [&str; 11] = [
    ITEM,
    WAREHOUSE,
    DISTRICT,
    CUSTOMER,
    CUSTOMER_BY_NAME,
    HISTORY,
    NEW_ORDER,
    ORDER,
    ORDER_BY_CUSTOMER,
    ORDER_LINE,
    STOCK,
];

/// Names in the index are padded to this width so (last, first) sort as the spec sorts them.
pub const NAME_KEY_BYTES: usize = 16;

fn join(parts: &[u32]) -> Vec<u8> {
    parts.iter().flat_map(|p| p.to_be_bytes()).collect()
}

pub fn warehouse(w: u32) -> Vec<u8> {
    join(&[w])
}
pub fn district(w: u32, d: u32) -> Vec<u8> {
    join(&[w, d])
}
pub fn customer(w: u32, d: u32, c: u32) -> Vec<u8> {
    join(&[w, d, c])
}
pub fn item(i: u32) -> Vec<u8> {
    join(&[i])
}
pub fn stock(w: u32, i: u32) -> Vec<u8> {
    join(&[w, i])
}
/// Orders, new orders: (w, d, o). Order lines: (w, d, o, ol).
pub fn order(w: u32, d: u32, o: u32) -> Vec<u8> {
    join(&[w, d, o])
}
pub fn order_line(w: u32, d: u32, o: u32, ol: u32) -> Vec<u8> {
    join(&[w, d, o, ol])
}
pub fn order_by_customer(w: u32, d: u32, c: u32, o: u32) -> Vec<u8> {
    join(&[w, d, c, o])
}
/// History has no primary key in the spec: (w, d, terminal, sequence) makes rows unique.
pub fn history(w: u32, d: u32, terminal: u32, seq: u64) -> Vec<u8> {
    let mut k = join(&[w, d, terminal]);
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

fn padded(name: &[u8]) -> [u8; NAME_KEY_BYTES] {
    let mut out = [0u8; NAME_KEY_BYTES];
    let n = name.len().min(NAME_KEY_BYTES);
    out[..n].copy_from_slice(&name[..n]);
    out
}

/// The prefix of every customer of (w, d) called `last`.
pub fn customer_name_prefix(w: u32, d: u32, last: &[u8]) -> Vec<u8> {
    let mut k = join(&[w, d]);
    k.extend_from_slice(&padded(last));
    k
}
pub fn customer_by_name(w: u32, d: u32, last: &[u8], first: &[u8], c: u32) -> Vec<u8> {
    let mut k = customer_name_prefix(w, d, last);
    k.extend_from_slice(&padded(first));
    k.extend_from_slice(&c.to_be_bytes());
    k
}

/// The trailing big-endian u32 of a key (the customer of an index entry, the order of a
/// new-order or order key, the line of an order-line key).
pub fn last_u32(key: &[u8]) -> Option<u32> {
    let tail: [u8; 4] = key.get(key.len().checked_sub(4)?..)?.try_into().ok()?;
    Some(u32::from_be_bytes(tail))
}

/// The big-endian u32 at position `index` (counting u32s from the key's start).
pub fn u32_at(key: &[u8], index: usize) -> Option<u32> {
    let bytes: [u8; 4] = key.get(index * 4..index * 4 + 4)?.try_into().ok()?;
    Some(u32::from_be_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_as_their_numbers_and_names() {
        assert!(order(1, 2, 9) < order(1, 2, 10));
        assert!(order(1, 2, 300) < order(1, 3, 1));
        assert!(
            customer_by_name(1, 1, b"ABLE", b"Z", 9) < customer_by_name(1, 1, b"ABLEX", b"A", 1)
        );
        assert!(customer_by_name(1, 1, b"AB", b"A", 9) < customer_by_name(1, 1, b"AB", b"B", 1));
        assert!(
            customer_by_name(1, 1, b"AB", b"A", 1).starts_with(&customer_name_prefix(1, 1, b"AB"))
        );
        assert_eq!(last_u32(&order_line(1, 2, 3, 4)), Some(4));
        assert_eq!(u32_at(&order_line(1, 2, 3, 4), 2), Some(3));
        assert_eq!(last_u32(b"ab"), None);
    }
}
