//! The five transactions (spec 2.4-2.8), each one engine transaction ([`wafer::Txn`]) except
//! Delivery, which is one per district as spec 2.7.4.2 allows.
//!
//! Locks, always taken in this order so no two transactions deadlock: warehouse < district <
//! customer < stock, stocks by (w, i). A district's key also guards its NEW-ORDER and ORDER
//! ranges: New-Order inserts and Delivery deletes only under it. Order-Status and Stock-Level
//! read committed state without locks (spec 3.4 lets Stock-Level see less than full
//! isolation; Order-Status here may see a customer's newer order, never half of one).
use super::keys;
use super::random::Draw;
use super::rows::{self, Row};
use super::{TpccError, DISTRICTS};
use std::collections::BTreeSet;
use wafer::{Db, Direction, Txn};
use wafer_workloads::dist::Rng;

/// How a transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Committed,
    /// New-Order with an unused item (spec 2.4.2.3): rolled back by design.
    RolledBack,
}

/// A terminal: its home warehouse and the district its Stock-Level asks about.
#[derive(Debug, Clone)]
pub struct Terminal {
    pub id: u32,
    pub w: u32,
    pub stock_level_d: u32,
    pub warehouses: u32,
    /// Delivery deletes what it delivers (order, lines, index entry): the dataset keeps its
    /// size as in 000's runs.
    pub steady: bool,
    pub history_seq: u64,
    /// Remote order lines (spec: 1%) and remote payments (15%) in percent.
    pub remote_item_percent: u64,
}

fn get<R: Row>(txn: &Txn, tree: &'static str, key: &[u8]) -> Result<R, TpccError> {
    match txn.get(tree, key)? {
        Some(v) => R::decode(&v),
        None => Err(TpccError::Missing { table: tree, key: key.to_vec() }),
    }
}

fn get_locked<R: Row>(txn: &mut Txn, tree: &'static str, key: &[u8]) -> Result<R, TpccError> {
    txn.lock(tree, key)?;
    get(txn, tree, key)
}

/// A date: the run's clock in seconds (only order matters to the checks).
fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_secs().max(1))
}

fn other_warehouse(rng: &mut Rng, t: &Terminal) -> u32 {
    if t.warehouses < 2 {
        return t.w;
    }
    let pick = rng.range_inclusive(1, u64::from(t.warehouses) - 1) as u32;
    if pick >= t.w {
        pick + 1
    } else {
        pick
    }
}

struct Line {
    i_id: u32,
    supply_w: u32,
    quantity: u32,
}

/// New-Order (spec 2.4).
pub fn new_order(db: &Db, rng: &mut Rng, draw: &Draw, t: &Terminal) -> Result<Outcome, TpccError> {
    let d = rng.range_inclusive(1, u64::from(DISTRICTS)) as u32;
    let c = draw.customer_id(rng);
    let ol_cnt = rng.range_inclusive(5, 15) as u32;
    let rollback = rng.below(100) == 0;
    let mut lines: Vec<Line> = (0..ol_cnt)
        .map(|_| {
            let remote = rng.below(100) < t.remote_item_percent;
            Line {
                i_id: draw.item_id(rng),
                supply_w: if remote { other_warehouse(rng, t) } else { t.w },
                quantity: rng.range_inclusive(1, 10) as u32,
            }
        })
        .collect();
    if rollback {
        if let Some(last) = lines.last_mut() {
            last.i_id = draw.card.items + 1; // Unused: the transaction rolls back.
        }
    }
    let mut txn = db.begin();
    let mut district: rows::District =
        get_locked(&mut txn, keys::DISTRICT, &keys::district(t.w, d))?;
    let warehouse: rows::Warehouse = get(&txn, keys::WAREHOUSE, &keys::warehouse(t.w))?;
    let customer: rows::Customer = get(&txn, keys::CUSTOMER, &keys::customer(t.w, d, c))?;
    let mut items = Vec::with_capacity(lines.len());
    for line in &lines {
        match txn.get(keys::ITEM, &keys::item(line.i_id))? {
            Some(v) => items.push(rows::Item::decode(&v)?),
            None => {
                txn.abort();
                return Ok(Outcome::RolledBack);
            }
        }
    }
    let o = district.next_o_id;
    district.next_o_id += 1;
    txn.put(keys::DISTRICT, &keys::district(t.w, d), &district.encode())?;
    let all_local = lines.iter().all(|l| l.supply_w == t.w);
    let order =
        rows::Order { c_id: c, entry_d: now(), carrier_id: 0, ol_cnt, all_local: all_local as u32 };
    txn.put(keys::ORDER, &keys::order(t.w, d, o), &order.encode())?;
    txn.put(keys::NEW_ORDER, &keys::order(t.w, d, o), &[])?;
    txn.put(keys::ORDER_BY_CUSTOMER, &keys::order_by_customer(t.w, d, c, o), &[])?;
    // Stocks in (w, i) order: the lock order.
    let stock_keys: BTreeSet<(u32, u32)> = lines.iter().map(|l| (l.supply_w, l.i_id)).collect();
    for (sw, i) in &stock_keys {
        txn.lock(keys::STOCK, &keys::stock(*sw, *i))?;
    }
    let total_cents = write_lines(&mut txn, t, d, o, &lines, &items)?;
    // The total the terminal displays (spec 2.4.2.2), in cents * 10^8.
    let _display_total = total_cents
        * i64::from(10_000 - customer.discount_bp)
        * i64::from(10_000 + warehouse.tax_bp + district.tax_bp);
    txn.commit()?;
    Ok(Outcome::Committed)
}

/// New-Order's stock updates and order lines; returns the lines' total in cents.
fn write_lines(
    txn: &mut Txn,
    t: &Terminal,
    d: u32,
    o: u32,
    lines: &[Line],
    items: &[rows::Item],
) -> Result<i64, TpccError> {
    let mut total_cents = 0i64;
    for (n, (line, item)) in lines.iter().zip(items).enumerate() {
        let skey = keys::stock(line.supply_w, line.i_id);
        let mut stock: rows::Stock = get(txn, keys::STOCK, &skey)?;
        stock.quantity = if stock.quantity >= line.quantity + 10 {
            stock.quantity - line.quantity
        } else {
            stock.quantity + 91 - line.quantity
        };
        stock.ytd += u64::from(line.quantity);
        stock.order_cnt += 1;
        stock.remote_cnt += u32::from(line.supply_w != t.w);
        txn.put(keys::STOCK, &skey, &stock.encode())?;
        let amount = i64::from(line.quantity) * item.price_cents;
        total_cents += amount;
        let ol = rows::OrderLine {
            i_id: line.i_id,
            supply_w: line.supply_w,
            delivery_d: 0,
            quantity: line.quantity,
            amount_cents: amount,
            dist_info: stock.dist_info(d).to_vec(),
        };
        txn.put(keys::ORDER_LINE, &keys::order_line(t.w, d, o, n as u32 + 1), &ol.encode())?;
    }
    Ok(total_cents)
}

/// The customer a Payment or Order-Status names: by id (40%) or by last name (60%, the
/// middle one by first name, spec 2.5.2.2).
fn pick_customer(txn: &Txn, rng: &mut Rng, draw: &Draw, w: u32, d: u32) -> Result<u32, TpccError> {
    if rng.below(100) >= 60 {
        return Ok(draw.customer_id(rng));
    }
    let last = draw.last_name(rng);
    let prefix = keys::customer_name_prefix(w, d, &last);
    let found =
        txn.scan_prefix(keys::CUSTOMER_BY_NAME, &prefix, Direction::Ascending, usize::MAX)?;
    if found.is_empty() {
        return Err(TpccError::Missing { table: keys::CUSTOMER_BY_NAME, key: prefix });
    }
    // Position ceil(n / 2), counting from 1.
    let middle = &found[found.len().div_ceil(2) - 1];
    keys::last_u32(&middle.0)
        .ok_or_else(|| TpccError::Decode { table: "customer_name", reason: "short key".into() })
}

/// Payment (spec 2.5).
pub fn payment(
    db: &Db,
    rng: &mut Rng,
    draw: &Draw,
    t: &mut Terminal,
) -> Result<Outcome, TpccError> {
    let d = rng.range_inclusive(1, u64::from(DISTRICTS)) as u32;
    let (cw, cd) = if rng.below(100) < 85 || t.warehouses < 2 {
        (t.w, d)
    } else {
        (other_warehouse(rng, t), rng.range_inclusive(1, u64::from(DISTRICTS)) as u32)
    };
    let amount = rng.range_inclusive(100, 500_000) as i64;
    let mut txn = db.begin();
    let wkey = keys::warehouse(t.w);
    let mut warehouse: rows::Warehouse = get_locked(&mut txn, keys::WAREHOUSE, &wkey)?;
    warehouse.ytd_cents += amount;
    txn.put(keys::WAREHOUSE, &wkey, &warehouse.encode())?;
    let dkey = keys::district(t.w, d);
    let mut district: rows::District = get_locked(&mut txn, keys::DISTRICT, &dkey)?;
    district.ytd_cents += amount;
    txn.put(keys::DISTRICT, &dkey, &district.encode())?;
    let c = pick_customer(&txn, rng, draw, cw, cd)?;
    let ckey = keys::customer(cw, cd, c);
    let mut customer: rows::Customer = get_locked(&mut txn, keys::CUSTOMER, &ckey)?;
    customer.balance_cents -= amount;
    customer.ytd_payment_cents += amount;
    customer.payment_cnt += 1;
    if &customer.credit == b"BC" {
        let mut data = format!("{c} {cd} {cw} {d} {} {amount} | ", t.w).into_bytes();
        data.extend_from_slice(&customer.data);
        data.truncate(500);
        customer.data = data;
    }
    txn.put(keys::CUSTOMER, &ckey, &customer.encode())?;
    let history = rows::History {
        c_id: c,
        c_d: cd,
        c_w: cw,
        date: now(),
        amount_cents: amount,
        data: b"payment   history".to_vec(),
    };
    t.history_seq += 1;
    txn.put(keys::HISTORY, &keys::history(t.w, d, t.id, t.history_seq), &history.encode())?;
    txn.commit()?;
    Ok(Outcome::Committed)
}

/// Order-Status (spec 2.6): read only.
pub fn order_status(
    db: &Db,
    rng: &mut Rng,
    draw: &Draw,
    t: &Terminal,
) -> Result<Outcome, TpccError> {
    let d = rng.range_inclusive(1, u64::from(DISTRICTS)) as u32;
    let txn = db.begin();
    let c = pick_customer(&txn, rng, draw, t.w, d)?;
    let _customer: rows::Customer = get(&txn, keys::CUSTOMER, &keys::customer(t.w, d, c))?;
    let prefix = keys::customer(t.w, d, c);
    let latest = txn.scan_prefix(keys::ORDER_BY_CUSTOMER, &prefix, Direction::Descending, 1)?;
    // A customer may have none left when Delivery deletes what it delivers.
    if let Some(o) = latest.first().and_then(|(k, _)| keys::last_u32(k)) {
        if let Some(v) = txn.get(keys::ORDER, &keys::order(t.w, d, o))? {
            let order = rows::Order::decode(&v)?;
            let lines = txn.scan_prefix(
                keys::ORDER_LINE,
                &keys::order(t.w, d, o),
                Direction::Ascending,
                15,
            )?;
            for (_, v) in &lines {
                rows::OrderLine::decode(v)?;
            }
            debug_assert!(lines.len() <= order.ol_cnt as usize);
        }
    }
    Ok(Outcome::Committed)
}

/// Delivery (spec 2.7): one transaction per district; Ok(delivered orders).
pub fn delivery(db: &Db, rng: &mut Rng, t: &Terminal) -> Result<u32, TpccError> {
    let carrier = rng.range_inclusive(1, 10) as u32;
    let mut delivered = 0;
    for d in 1..=DISTRICTS {
        delivered += u32::from(deliver_district(db, t, d, carrier)?);
    }
    Ok(delivered)
}

fn deliver_district(db: &Db, t: &Terminal, d: u32, carrier: u32) -> Result<bool, TpccError> {
    let (w, steady) = (t.w, t.steady);
    let mut txn = db.begin();
    txn.lock(keys::DISTRICT, &keys::district(w, d))?;
    let oldest =
        txn.scan_prefix(keys::NEW_ORDER, &keys::district(w, d), Direction::Ascending, 1)?;
    let Some(o) = oldest.first().and_then(|(k, _)| keys::last_u32(k)) else {
        return Ok(false); // Nothing to deliver (spec 2.7.4.2: skipped).
    };
    let okey = keys::order(w, d, o);
    txn.delete(keys::NEW_ORDER, &okey)?;
    let mut order: rows::Order = get(&txn, keys::ORDER, &okey)?;
    let lines = txn.scan_prefix(keys::ORDER_LINE, &okey, Direction::Ascending, 16)?;
    let mut total = 0i64;
    let date = now();
    for (k, v) in &lines {
        let mut line = rows::OrderLine::decode(v)?;
        total += line.amount_cents;
        if steady {
            txn.delete(keys::ORDER_LINE, k)?;
        } else {
            line.delivery_d = date;
            txn.put(keys::ORDER_LINE, k, &line.encode())?;
        }
    }
    if steady {
        txn.delete(keys::ORDER, &okey)?;
        txn.delete(keys::ORDER_BY_CUSTOMER, &keys::order_by_customer(w, d, order.c_id, o))?;
    } else {
        order.carrier_id = carrier;
        txn.put(keys::ORDER, &okey, &order.encode())?;
    }
    let ckey = keys::customer(w, d, order.c_id);
    let mut customer: rows::Customer = get_locked(&mut txn, keys::CUSTOMER, &ckey)?;
    customer.balance_cents += total;
    customer.delivery_cnt += 1;
    txn.put(keys::CUSTOMER, &ckey, &customer.encode())?;
    txn.commit()?;
    Ok(true)
}

/// Stock-Level (spec 2.8): read only. Ok(items below the threshold).
pub fn stock_level(db: &Db, rng: &mut Rng, t: &Terminal) -> Result<u32, TpccError> {
    let threshold = rng.range_inclusive(10, 20) as u32;
    let d = t.stock_level_d;
    let txn = db.begin();
    let district: rows::District = get(&txn, keys::DISTRICT, &keys::district(t.w, d))?;
    let next = district.next_o_id;
    let lo = keys::order(t.w, d, next.saturating_sub(20));
    let hi = keys::order(t.w, d, next);
    let lines = txn.scan(
        keys::ORDER_LINE,
        std::ops::Bound::Included(&lo),
        std::ops::Bound::Excluded(&hi),
        Direction::Ascending,
        20 * 16,
    )?;
    let mut items = BTreeSet::new();
    for (_, v) in &lines {
        items.insert(rows::OrderLine::decode(v)?.i_id);
    }
    let mut low = 0;
    for i in items {
        if let Some(v) = txn.get(keys::STOCK, &keys::stock(t.w, i))? {
            low += u32::from(rows::Stock::decode(&v)?.quantity < threshold);
        }
    }
    Ok(low)
}
