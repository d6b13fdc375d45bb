//! Key ranges as the B+tree takes them (`btree::Bounds`): from a Rust range, or every key with
//! a prefix.
use crate::btree::Bounds;
use std::ops::{Bound, RangeBounds};

fn owned_bound<K: AsRef<[u8]>>(b: Bound<&K>) -> Bound<Vec<u8>> {
    let owned = match b {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    };
    // The hand-over: the iterator gets the caller's bound, its kind and bytes, unchanged.
    debug_assert!(match (b, &owned) {
        (Bound::Included(k), Bound::Included(o)) | (Bound::Excluded(k), Bound::Excluded(o)) => {
            k.as_ref() == o.as_slice()
        }
        (Bound::Unbounded, Bound::Unbounded) => true,
        _ => false,
    });
    owned
}

pub(super) fn bounds_of<K: AsRef<[u8]>, R: RangeBounds<K>>(range: R) -> Bounds {
    let bounds =
        Bounds { lo: owned_bound(range.start_bound()), hi: owned_bound(range.end_bound()) };
    // Each end stays the end it was: an unbounded start is not taken for an unbounded end.
    debug_assert_eq!(
        matches!(bounds.lo, Bound::Unbounded),
        matches!(range.start_bound(), Bound::Unbounded)
    );
    bounds
}

/// The keys starting with `prefix`.
pub(super) fn prefix_bounds(prefix: &[u8]) -> Bounds {
    let hi = match prefix_end(prefix) {
        Some(end) => Bound::Excluded(end),
        None => Bound::Unbounded,
    };
    // Iterators narrow from both ends and stop where they meet: the range must not be inverted.
    debug_assert!(match &hi {
        Bound::Excluded(end) => end.as_slice() > prefix,
        _ => true,
    });
    Bounds { lo: Bound::Included(prefix.to_vec()), hi }
}

/// The smallest key greater than every key starting with `prefix` (None: no such key).
pub(super) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            // Above every key with the prefix, and not one of them itself.
            debug_assert!(end.as_slice() > prefix && !end.starts_with(prefix));
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_end_carries_over_0xff() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(&[1, 0xff]), Some(vec![2]));
        assert_eq!(prefix_end(&[0xff, 0xff]), None);
        assert_eq!(prefix_end(b""), None);
    }
}
