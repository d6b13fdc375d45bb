//! The initial population (spec 4.3.3.1): items, then per warehouse its stock, districts,
//! customers (with the name index), one history row per customer, orders (customers in a
//! random permutation) with 5..=15 lines each, and the last `new_orders_per_district` orders
//! undelivered (in NEW-ORDER, no carrier, lines without delivery date).
//!
//! Rows go in as batches of [`LOAD_BATCH_ROWS`] through `Db::write` without waiting for
//! durability; the loader checkpoints at the end, so a loaded database survives a crash.
use super::keys;
use super::random::{astring, data_field, last_name, nstring, Draw};
use super::rows::{self, Row};
use super::{Cardinality, TpccError, DISTRICTS};
use wafer::{Db, Durability, WriteBatch};
use wafer_workloads::dist::Rng;

const LOAD_BATCH_ROWS: usize = 128;
/// D_YTD at load: $30,000.00 in cents (W_YTD is the sum over the districts).
const DISTRICT_YTD_CENTS: i64 = 3_000_000;
/// C_CREDIT_LIM: $50,000.00 in cents.
const CREDIT_LIM_CENTS: i64 = 5_000_000;

/// Writes rows in batches.
struct Loader<'a> {
    db: &'a Db,
    batch: WriteBatch,
}

impl Loader<'_> {
    fn put(&mut self, tree: &str, key: &[u8], row: &impl Row) -> Result<(), TpccError> {
        self.put_raw(tree, key, &row.encode())
    }
    fn put_raw(&mut self, tree: &str, key: &[u8], value: &[u8]) -> Result<(), TpccError> {
        self.batch.put(tree, key, value);
        if self.batch.len() >= LOAD_BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<(), TpccError> {
        if !self.batch.is_empty() {
            self.db.write_with(&self.batch, Durability::None)?;
            self.batch = WriteBatch::new();
        }
        Ok(())
    }
}

/// Creates every tree and loads items (once) and warehouses `ws` (a thread's share).
pub fn load_items(db: &Db, card: &Cardinality, seed: u64) -> Result<(), TpccError> {
    for tree in keys::ALL_TREES {
        db.tree(tree)?;
    }
    let mut rng = Rng::new(seed ^ 0x17E5);
    let mut l = Loader { db, batch: WriteBatch::new() };
    for i in 1..=card.items {
        let item = rows::Item {
            im_id: rng.range_inclusive(1, 10_000) as u32,
            price_cents: rng.range_inclusive(100, 10_000) as i64,
            name: astring(&mut rng, 14, 24),
            data: data_field(&mut rng),
        };
        l.put(keys::ITEM, &keys::item(i), &item)?;
    }
    l.flush()
}

fn address(rng: &mut Rng) -> Vec<u8> {
    // Name 6..10 (warehouse/district), street 1 and 2, city, state, zip (spec 4.3.3.1).
    let mut t = astring(rng, 6, 10);
    t.extend(astring(rng, 10, 20));
    t.extend(astring(rng, 10, 20));
    t.extend(astring(rng, 10, 20));
    t.extend(astring(rng, 2, 2));
    t.extend(nstring(rng, 4));
    t.extend_from_slice(b"11111");
    t
}

/// Loads warehouse `w` whole.
pub fn load_warehouse(db: &Db, draw: &Draw, w: u32, seed: u64) -> Result<(), TpccError> {
    let card = &draw.card;
    let mut rng = Rng::for_thread(seed, u64::from(w));
    let mut l = Loader { db, batch: WriteBatch::new() };
    let ytd = DISTRICT_YTD_CENTS * i64::from(DISTRICTS);
    let wh =
        rows::Warehouse { tax_bp: rng.below(2001) as u32, ytd_cents: ytd, text: address(&mut rng) };
    l.put(keys::WAREHOUSE, &keys::warehouse(w), &wh)?;
    for i in 1..=card.items {
        let stock = rows::Stock {
            quantity: rng.range_inclusive(10, 100) as u32,
            ytd: 0,
            order_cnt: 0,
            remote_cnt: 0,
            dists: astring(&mut rng, 240, 240),
            data: data_field(&mut rng),
        };
        l.put(keys::STOCK, &keys::stock(w, i), &stock)?;
    }
    for d in 1..=DISTRICTS {
        let district = rows::District {
            tax_bp: rng.below(2001) as u32,
            ytd_cents: DISTRICT_YTD_CENTS,
            next_o_id: card.orders_per_district + 1,
            text: address(&mut rng),
        };
        l.put(keys::DISTRICT, &keys::district(w, d), &district)?;
        load_customers(&mut l, &mut rng, draw, w, d)?;
        load_orders(&mut l, &mut rng, card, w, d)?;
    }
    l.flush()
}

fn load_customers(
    l: &mut Loader<'_>,
    rng: &mut Rng,
    draw: &Draw,
    w: u32,
    d: u32,
) -> Result<(), TpccError> {
    for c in 1..=draw.card.customers_per_district {
        // The first 1000 customers take every name once; the rest NURand names.
        let last = if c <= 1000 { last_name(c - 1) } else { draw.last_name(rng) };
        let mut text = astring(rng, 2, 2);
        text.extend(address(rng));
        text.extend(nstring(rng, 16));
        let customer = rows::Customer {
            first: astring(rng, 8, 16),
            last,
            credit: if rng.below(10) == 0 { *b"BC" } else { *b"GC" },
            credit_lim_cents: CREDIT_LIM_CENTS,
            discount_bp: rng.below(5001) as u32,
            balance_cents: -10_00,
            ytd_payment_cents: 10_00,
            payment_cnt: 1,
            delivery_cnt: 0,
            since: 0,
            text,
            data: astring(rng, 300, 500),
        };
        let key = keys::customer_by_name(w, d, &customer.last, &customer.first, c);
        l.put_raw(keys::CUSTOMER_BY_NAME, &key, &[])?;
        l.put(keys::CUSTOMER, &keys::customer(w, d, c), &customer)?;
        let history = rows::History {
            c_id: c,
            c_d: d,
            c_w: w,
            date: 0,
            amount_cents: 10_00,
            data: astring(rng, 12, 24),
        };
        // Terminal 0 is the loader; run terminals count from 1.
        l.put(keys::HISTORY, &keys::history(w, d, 0, u64::from(c)), &history)?;
    }
    Ok(())
}

fn load_orders(
    l: &mut Loader<'_>,
    rng: &mut Rng,
    card: &Cardinality,
    w: u32,
    d: u32,
) -> Result<(), TpccError> {
    // O_C_ID: a random permutation of the customers (spec 4.3.3.1).
    let mut customers: Vec<u32> = (1..=card.customers_per_district).collect();
    for i in (1..customers.len()).rev() {
        customers.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let first_new = card.orders_per_district - card.new_orders_per_district + 1;
    for o in 1..=card.orders_per_district {
        let c_id = customers[(o as usize - 1) % customers.len()];
        let delivered = o < first_new;
        let ol_cnt = rng.range_inclusive(5, 15) as u32;
        let order = rows::Order {
            c_id,
            entry_d: 0,
            carrier_id: if delivered { rng.range_inclusive(1, 10) as u32 } else { 0 },
            ol_cnt,
            all_local: 1,
        };
        l.put(keys::ORDER, &keys::order(w, d, o), &order)?;
        l.put_raw(keys::ORDER_BY_CUSTOMER, &keys::order_by_customer(w, d, c_id, o), &[])?;
        if !delivered {
            l.put_raw(keys::NEW_ORDER, &keys::order(w, d, o), &[])?;
        }
        for ol in 1..=ol_cnt {
            let line = rows::OrderLine {
                i_id: rng.range_inclusive(1, u64::from(card.items)) as u32,
                supply_w: w,
                delivery_d: if delivered { 1 } else { 0 },
                quantity: 5,
                amount_cents: if delivered { 0 } else { rng.range_inclusive(1, 999_999) as i64 },
                dist_info: astring(rng, 24, 24),
            };
            l.put(keys::ORDER_LINE, &keys::order_line(w, d, o, ol), &line)?;
        }
    }
    Ok(())
}
