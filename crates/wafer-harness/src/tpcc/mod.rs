//! TPC-C on the engine (spec 5.11, as 000 sec. 7.4 runs it): the nine tables as trees with
//! the customer-by-last-name and order-by-customer indexes, the five transactions in the
//! spec's mix with keying and think times off, NURand inputs, 1% remote order lines, 15%
//! remote payments, 1% New-Order rollbacks, and several terminals (threads). Transactions are
//! engine transactions ([`wafer::Txn`]): atomic batches with read-your-writes and key locks.
//!
//! ```text
//!  bench (device, engine) --> load (items, warehouses) --> terminals --> samples --> report
//!                                                                  \--> check (3.3.2.1-4)
//! ```
//!
//! `steady` makes Delivery delete what it delivers (order, its lines, its index entry), so
//! the orders tables keep their size as 000's runs keep the dataset size fixed; HISTORY still
//! grows by one small row per Payment.
//!
//! Reduced cardinalities ([`Cardinality::mini`]) keep the schema, the mix and the
//! consistency conditions but shrink items, customers and orders, for tests and quick runs;
//! [`Cardinality::spec`] is the specification's.
pub mod bench;
pub mod check;
pub mod driver;
pub mod keys;
pub mod load;
pub mod random;
pub mod rows;
pub mod txns;

#[cfg(test)]
mod tests;

use std::time::Duration;

/// Districts per warehouse (fixed by the spec).
pub const DISTRICTS: u32 = 10;

/// Table cardinalities per warehouse (spec 1.2.1, 4.3.3.1) or reduced ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Cardinality {
    /// Items, and stock rows per warehouse.
    pub items: u32,
    pub customers_per_district: u32,
    /// Orders loaded per district (customers are a permutation of them).
    pub orders_per_district: u32,
    /// Of which the last ones are undelivered.
    pub new_orders_per_district: u32,
}

impl Cardinality {
    /// The specification's: 100,000 items, 3,000 customers and orders per district, 900 new.
    pub fn spec() -> Cardinality {
        Cardinality {
            items: 100_000,
            customers_per_district: 3000,
            orders_per_district: 3000,
            new_orders_per_district: 900,
        }
    }

    /// 1/100 of the spec's sizes (1,000 items, 30 customers and orders per district, 9 new):
    /// for tests and quick runs.
    pub fn mini() -> Cardinality {
        Cardinality {
            items: 1000,
            customers_per_district: 30,
            orders_per_district: 30,
            new_orders_per_district: 9,
        }
    }

    pub fn parse(text: &str) -> Result<Cardinality, String> {
        match text.trim() {
            "spec" | "full" => Ok(Cardinality::spec()),
            "mini" => Ok(Cardinality::mini()),
            other => Err(format!("cardinality `{other}`: expected spec or mini")),
        }
    }

    pub fn name(&self) -> &'static str {
        if *self == Cardinality::spec() {
            "spec"
        } else if *self == Cardinality::mini() {
            "mini"
        } else {
            "custom"
        }
    }

    /// Row bytes per warehouse as loaded (values and keys; spec row sizes), for sizing the
    /// buffer pool before the load.
    pub fn warehouse_bytes(&self) -> u64 {
        let items = u64::from(self.items);
        let customers = u64::from(self.customers_per_district) * u64::from(DISTRICTS);
        let orders = u64::from(self.orders_per_district) * u64::from(DISTRICTS);
        // stock 306, customer 655 + index 40, history 46, order 24 + index 16, line 54 x 10.
        items * 314 + customers * (655 + 52 + 46 + 24) + orders * (36 + 16 + 10 * 70)
    }
}

/// When the terminals stop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TpccStop {
    Duration(Duration),
    /// After this many transactions (all types) in total.
    Transactions(u64),
}

/// One TPC-C run's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct TpccSpec {
    pub warehouses: u32,
    pub cardinality: Cardinality,
    pub threads: u32,
    pub steady: bool,
    pub stop: TpccStop,
    pub interval: Duration,
    pub seed: u64,
    /// Order lines supplied by another warehouse, percent (spec: 1).
    pub remote_item_percent: u64,
}

impl TpccSpec {
    pub fn validate(&self) -> Result<(), TpccError> {
        let bad = |m: String| Err(TpccError::Invalid(m));
        let c = &self.cardinality;
        if self.warehouses == 0 || self.threads == 0 {
            return bad("warehouses and threads must be at least 1".into());
        }
        if c.items < 20
            || c.customers_per_district == 0
            || c.orders_per_district < c.new_orders_per_district
        {
            return bad(format!("cardinality {c:?} is not a TPC-C population"));
        }
        if c.orders_per_district < c.customers_per_district || self.remote_item_percent > 100 {
            return bad(format!("cardinality {c:?}: every customer needs an order"));
        }
        if self.interval.is_zero() {
            return bad("interval must be above 0".into());
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TpccError {
    #[error(transparent)]
    Engine(#[from] wafer::Error),
    #[error("{table} row: {reason}")]
    Decode { table: &'static str, reason: String },
    #[error("{table}: no row for key {key:02x?}")]
    Missing { table: &'static str, key: Vec<u8> },
    #[error("a transaction was refused its locks {retries} times in a row")]
    Starved { retries: u32 },
    #[error("a terminal thread panicked")]
    Panicked,
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Setup(#[from] crate::runner::SetupError),
    #[error(transparent)]
    Target(#[from] crate::runner::TargetError),
    #[error("process counters: {0}")]
    Process(#[from] crate::metrics::ProcessError),
    #[error("consistency check failed: {0}")]
    Inconsistent(String),
}

// The engine's per-operation errors join the one `Engine` variant, kept whole.
wafer::from_operation_errors!(TpccError, TpccError::Engine);
