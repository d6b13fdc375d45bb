//! TPC-C consistency conditions 1-4 (spec 3.3.2.1-3.3.2.4), checked on a quiet database
//! (after a run, or after a crash and recovery):
//! 1. W_YTD = sum(D_YTD) of the warehouse's districts.
//! 2. D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) of the district.
//! 3. max(NO_O_ID) - min(NO_O_ID) + 1 = the district's NEW-ORDER rows.
//! 4. sum(O_OL_CNT) = the district's ORDER-LINE rows.
//!
//! With Delivery deleting what it delivers (`steady`), a district whose orders were all
//! delivered has no max(O_ID); condition 2 then compares with NEW-ORDER only (which is empty
//! too, so nothing), and says so in `skipped`.
use super::keys;
use super::rows::{self, Row};
use super::{TpccError, DISTRICTS};
use wafer::{Db, Direction, Tree};

/// What the check found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConsistencyReport {
    pub warehouses: u32,
    pub districts: u32,
    /// Conditions evaluated, per condition (1..=4).
    pub evaluated: [u64; 4],
    /// Districts whose condition 2 had no order to compare with (steady runs only).
    pub skipped: u64,
    pub violations: Vec<String>,
}

impl ConsistencyReport {
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }
}

fn row_at<R: Row>(tree: &Tree, key: &[u8]) -> Result<R, TpccError> {
    match tree.get(key)? {
        Some(v) => R::decode(&v),
        None => Err(TpccError::Missing { table: R::TABLE, key: key.to_vec() }),
    }
}

/// The last u32 of the first or last key with `prefix`.
fn edge(db: &Db, tree: &str, prefix: &[u8], dir: Direction) -> Result<Option<u32>, TpccError> {
    let txn = db.begin();
    let found = txn.scan_prefix(tree, prefix, dir, 1)?;
    Ok(found.first().and_then(|(k, _)| keys::last_u32(k)))
}

fn count(tree: &Tree, prefix: &[u8]) -> Result<u64, TpccError> {
    let mut n = 0;
    for entry in tree.prefix(prefix) {
        entry?;
        n += 1;
    }
    Ok(n)
}

/// Checks conditions 1-4 on warehouses 1..=`warehouses`.
pub fn check(db: &Db, warehouses: u32, steady: bool) -> Result<ConsistencyReport, TpccError> {
    let mut r = ConsistencyReport { warehouses, ..ConsistencyReport::default() };
    let (wt, dt) = (db.tree(keys::WAREHOUSE)?, db.tree(keys::DISTRICT)?);
    for w in 1..=warehouses {
        let wh: rows::Warehouse = row_at(&wt, &keys::warehouse(w))?;
        let mut d_ytd = 0i64;
        for d in 1..=DISTRICTS {
            let district: rows::District = row_at(&dt, &keys::district(w, d))?;
            d_ytd += district.ytd_cents;
            check_district(db, w, d, &district, steady, &mut r)?;
            r.districts += 1;
        }
        r.evaluated[0] += 1;
        if wh.ytd_cents != d_ytd {
            r.violations.push(format!(
                "3.3.2.1 warehouse {w}: W_YTD {} != sum(D_YTD) {d_ytd}",
                wh.ytd_cents
            ));
        }
    }
    Ok(r)
}

fn check_district(
    db: &Db,
    w: u32,
    d: u32,
    district: &rows::District,
    steady: bool,
    r: &mut ConsistencyReport,
) -> Result<(), TpccError> {
    let prefix = keys::district(w, d);
    let want = district.next_o_id - 1;
    let max_o = edge(db, keys::ORDER, &prefix, Direction::Descending)?;
    let max_no = edge(db, keys::NEW_ORDER, &prefix, Direction::Descending)?;
    let min_no = edge(db, keys::NEW_ORDER, &prefix, Direction::Ascending)?;
    r.evaluated[1] += 1;
    match (max_o, max_no) {
        (None, None) if steady => r.skipped += 1,
        // Steady size: with no undelivered order left, Delivery has deleted the newest orders;
        // only the loaded ones it never delivers remain, all below D_NEXT_O_ID.
        (Some(o), None) if steady && o < want => r.skipped += 1,
        (Some(o), None) if o == want => {}
        (Some(o), Some(no)) if o == want && no == want => {}
        _ => r.violations.push(format!(
            "3.3.2.2 district ({w},{d}): D_NEXT_O_ID - 1 = {want}, max(O_ID) = {max_o:?}, max(NO_O_ID) = {max_no:?}"
        )),
    }
    let new_orders = count(&db.tree(keys::NEW_ORDER)?, &prefix)?;
    r.evaluated[2] += 1;
    let span = match (min_no, max_no) {
        (Some(lo), Some(hi)) => u64::from(hi - lo) + 1,
        _ => 0,
    };
    if span != new_orders {
        r.violations.push(format!(
            "3.3.2.3 district ({w},{d}): max - min + 1 of NO_O_ID = {span}, NEW-ORDER rows = {new_orders}"
        ));
    }
    let mut ol_cnt = 0u64;
    for entry in db.tree(keys::ORDER)?.prefix(&prefix) {
        let (_, v) = entry?;
        ol_cnt += u64::from(rows::Order::decode(&v)?.ol_cnt);
    }
    let lines = count(&db.tree(keys::ORDER_LINE)?, &prefix)?;
    r.evaluated[3] += 1;
    if ol_cnt != lines {
        r.violations.push(format!(
            "3.3.2.4 district ({w},{d}): sum(O_OL_CNT) = {ol_cnt}, ORDER-LINE rows = {lines}"
        ));
    }
    Ok(())
}
