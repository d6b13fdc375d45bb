//! Exclusive key locks for transactions ([`super::Txn`]): a table of (tree, key) -> owner,
//! waited on with a deadline. Locks are logical (they guard keys, not pages): they are held
//! from `Txn::lock` to commit or abort (strict two-phase locking), never by plain `Tree` or
//! `Db::write` callers, who do not look at them.
//!
//! A waiter that reaches its deadline gets [`Error::LockTimeout`] and holds what it held: the
//! caller aborts and retries. Deadlocks end that way too; callers that lock in one global
//! order (as TPC-C's transactions do here) never deadlock.
use crate::{Error, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The most locks one transaction may hold: a bound on the table's growth per owner.
pub const TXN_LOCKS_MAX: usize = 1 << 16;

type LockKey = (String, Vec<u8>);

#[derive(Debug, Default)]
pub(crate) struct LockTable {
    held: Mutex<HashMap<LockKey, u64>>,
    /// Signalled whenever an owner releases its locks.
    released: Condvar,
    next_owner: AtomicU64,
}

impl LockTable {
    /// A fresh owner id (never 0).
    pub(crate) fn new_owner(&self) -> u64 {
        let owner = self.next_owner.fetch_add(1, Ordering::Relaxed) + 1;
        // Owners are told apart by id: one that wrapped around would share another's locks.
        assert_ne!(owner, 0, "lock owner ids wrapped around");
        owner
    }

    /// Takes the lock on (`tree`, `key`) for `owner`, waiting up to `timeout` for its holder to
    /// release it. Ok(true) when newly taken, Ok(false) when `owner` held it already.
    pub(crate) fn lock(
        &self,
        owner: u64,
        tree: &str,
        key: &[u8],
        timeout: Duration,
    ) -> Result<bool> {
        // Ids come from `new_owner`, which never hands out 0.
        debug_assert_ne!(owner, 0, "a lock taken for no owner");
        let deadline = Instant::now() + timeout;
        let wanted: LockKey = (tree.to_string(), key.to_vec());
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match held.get(&wanted) {
                None => {
                    held.insert(wanted, owner);
                    return Ok(true);
                }
                Some(o) if *o == owner => return Ok(false),
                Some(_) => {}
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::LockTimeout {
                    tree: tree.to_string(),
                    waited_ms: timeout.as_millis() as u64,
                });
            }
            held = self
                .released
                .wait_timeout(held, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Releases `keys` held by `owner` and wakes the waiters.
    pub(crate) fn release(&self, owner: u64, keys: &[LockKey]) {
        if keys.is_empty() {
            return;
        }
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        for k in keys {
            let removed = held.remove(k);
            debug_assert_eq!(removed, Some(owner), "released a lock it did not hold");
        }
        drop(held);
        self.released.notify_all();
    }

    #[cfg(test)]
    pub(crate) fn held_count(&self) -> usize {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        // Holders are owners `new_owner` handed out: never 0, never past the last one.
        let last = self.next_owner.load(Ordering::Relaxed);
        debug_assert!(held.values().all(|&o| o != 0 && o <= last), "{held:?}");
        held.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_held_lock_times_out_others_and_is_reentrant_for_its_owner() {
        let t = LockTable::default();
        let (a, b) = (t.new_owner(), t.new_owner());
        assert!(t.lock(a, "t", b"k", Duration::ZERO).unwrap());
        assert!(!t.lock(a, "t", b"k", Duration::ZERO).unwrap());
        let e = t.lock(b, "t", b"k", Duration::from_millis(1)).unwrap_err();
        assert!(matches!(e, Error::LockTimeout { .. }), "{e}");
        // Another key, another tree: free.
        assert!(t.lock(b, "u", b"k", Duration::ZERO).unwrap());
        t.release(a, &[("t".into(), b"k".to_vec())]);
        assert!(t.lock(b, "t", b"k", Duration::ZERO).unwrap());
        assert_eq!(t.held_count(), 2);
    }

    #[test]
    fn a_waiter_gets_the_lock_when_it_is_released() {
        let t = Arc::new(LockTable::default());
        let a = t.new_owner();
        t.lock(a, "t", b"k", Duration::ZERO).unwrap();
        let t2 = t.clone();
        let waiter = std::thread::spawn(move || {
            let b = t2.new_owner();
            t2.lock(b, "t", b"k", Duration::from_secs(60)).map(|_| b)
        });
        std::thread::sleep(Duration::from_millis(5));
        t.release(a, &[("t".into(), b"k".to_vec())]);
        let b = waiter.join().unwrap().unwrap();
        assert_ne!(a, b);
        assert_eq!(t.held_count(), 1);
    }
}
