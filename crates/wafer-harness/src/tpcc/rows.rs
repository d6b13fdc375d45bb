//! Row formats of the TPC-C tables: a version byte, then the fields in a fixed order,
//! little-endian integers and u16-length-prefixed strings. Money is in cents (i64), tax and
//! discount in basis points of 1/10000. Text fields the transactions never read (addresses,
//! phone, dist info) are stored as one blob of the spec's width, so rows take their spec
//! sizes (spec 1.3) and the flash figures see realistic pages.
use super::TpccError;

const ROW_VERSION: u8 = 1;

#[derive(Debug, Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn new() -> Writer {
        Writer(vec![ROW_VERSION])
    }
    fn u32(&mut self, v: u32) -> &mut Writer {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Writer {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn i64(&mut self, v: i64) -> &mut Writer {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(&mut self, v: &[u8]) -> &mut Writer {
        let len = u16::try_from(v.len()).unwrap_or(u16::MAX);
        self.0.extend_from_slice(&len.to_le_bytes());
        self.0.extend_from_slice(&v[..len as usize]);
        self
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    table: &'static str,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], table: &'static str) -> Result<Reader<'a>, TpccError> {
        match buf.split_first() {
            Some((&ROW_VERSION, rest)) => Ok(Reader { buf: rest, table }),
            _ => Err(TpccError::Decode { table, reason: "unknown row version".into() }),
        }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], TpccError> {
        if self.buf.len() < n {
            return Err(TpccError::Decode { table: self.table, reason: "row too short".into() });
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], TpccError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    fn u32(&mut self) -> Result<u32, TpccError> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64, TpccError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn i64(&mut self) -> Result<i64, TpccError> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    fn bytes(&mut self) -> Result<Vec<u8>, TpccError> {
        let len = u16::from_le_bytes(self.array()?) as usize;
        Ok(self.take(len)?.to_vec())
    }
}

/// Encoding and decoding of one table's rows.
pub trait Row: Sized {
    const TABLE: &'static str;
    fn encode(&self) -> Vec<u8>;
    fn decode(buf: &[u8]) -> Result<Self, TpccError>;
}

#[derive(Debug, Clone, PartialEq)]
pub struct Warehouse {
    pub tax_bp: u32,
    pub ytd_cents: i64,
    /// Name, street 1 and 2, city, state, zip.
    pub text: Vec<u8>,
}

impl Row for Warehouse {
    const TABLE: &'static str = "warehouse";
    fn encode(&self) -> Vec<u8> {
        Writer::new().u32(self.tax_bp).i64(self.ytd_cents).bytes(&self.text).0.clone()
    }
    fn decode(buf: &[u8]) -> Result<Self, TpccError> {
        let mut r = Reader::new(buf, Self::TABLE)?;
        Ok(Warehouse { tax_bp: r.u32()?, ytd_cents: r.i64()?, text: r.bytes()? })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct District {
    pub tax_bp: u32,
    pub ytd_cents: i64,
    pub next_o_id: u32,
    pub text: Vec<u8>,
}

impl Row for District {
    const TABLE: &'static str = "district";
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u32(self.tax_bp).i64(self.ytd_cents).u32(self.next_o_id).bytes(&self.text);
        w.0
    }
    fn decode(buf: &[u8]) -> Result<Self, TpccError> {
        let mut r = Reader::new(buf, Self::TABLE)?;
        Ok(District {
            tax_bp: r.u32()?,
            ytd_cents: r.i64()?,
            next_o_id: r.u32()?,
            text: r.bytes()?,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Customer {
    pub first: Vec<u8>,
    pub last: Vec<u8>,
    /// `GC` or `BC`.
    pub credit: [u8; 2],
    pub credit_lim_cents: i64,
    pub discount_bp: u32,
    pub balance_cents: i64,
    pub ytd_payment_cents: i64,
    pub payment_cnt: u32,
    pub delivery_cnt: u32,
    pub since: u64,
    /// Middle, street 1 and 2, city, state, zip, phone.
    pub text: Vec<u8>,
    pub data: Vec<u8>,
}

impl Row for Customer {
    const TABLE: &'static str = "customer";
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.bytes(&self.first).bytes(&self.last).bytes(&self.credit);
        w.i64(self.credit_lim_cents).u32(self.discount_bp).i64(self.balance_cents);
        w.i64(self.ytd_payment_cents).u32(self.payment_cnt).u32(self.delivery_cnt);
        w.u64(self.since).bytes(&self.text).bytes(&self.data);
        w.0
    }
    fn decode(buf: &[u8]) -> Result<Self, TpccError> {
        let mut r = Reader::new(buf, Self::TABLE)?;
        let first = r.bytes()?;
        let last = r.bytes()?;
        let credit: [u8; 2] = r.bytes()?.as_slice().try_into().map_err(|_| TpccError::Decode {
            table: Self::TABLE,
            reason: "credit is not 2 bytes".into(),
        })?;
        Ok(Customer {
            first,
            last,
            credit,
            credit_lim_cents: r.i64()?,
            discount_bp: r.u32()?,
            balance_cents: r.i64()?,
            ytd_payment_cents: r.i64()?,
            payment_cnt: r.u32()?,
            delivery_cnt: r.u32()?,
            since: r.u64()?,
            text: r.bytes()?,
            data: r.bytes()?,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct History {
    pub c_id: u32,
    pub c_d: u32,
    pub c_w: u32,
    pub date: u64,
    pub amount_cents: i64,
    pub data: Vec<u8>,
}

impl Row for History {
    const TABLE: &'static str = "history";
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u32(self.c_id).u32(self.c_d).u32(self.c_w).u64(self.date).i64(self.amount_cents);
        w.bytes(&self.data);
        w.0
    }
    fn decode(buf: &[u8]) -> Result<Self, TpccError> {
        let mut r = Reader::new(buf, Self::TABLE)?;
        Ok(History {
            c_id: r.u32()?,
            c_d: r.u32()?,
            c_w: r.u32()?,
            date: r.u64()?,
            amount_cents: r.i64()?,
            data: r.bytes()?,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Order {
    pub c_id: u32,
    pub entry_d: u64,
    /// 0: not delivered yet (the spec's null).
    pub carrier_id: u32,
    pub ol_cnt: u32,
    pub all_local: u32,
}

impl Row for Order {
    const TABLE: &'static str = "order";
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u32(self.c_id).u64(self.entry_d).u32(self.carrier_id).u32(self.ol_cnt);
        w.u32(self.all_local);
        w.0
    }
    fn decode(buf: &[u8]) -> Result<Self, TpccError> {
        let mut r = Reader::new(buf, Self::TABLE)?;
        Ok(Order {
            c_id: r.u32()?,
            entry_d: r.u64()?,
            carrier_id: r.u32()?,
            ol_cnt: r.u32()?,
            all_local: r.u32()?,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct OrderLine {
    pub i_id: u32,
    pub supply_w: u32,
    /// 0: not delivered yet.
    pub delivery_d: u64,
    pub quantity: u32,
    pub amount_cents: i64,
    pub dist_info: Vec<u8>,
}

impl Row for OrderLine {
    const TABLE: &'static str = "order_line";
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u32(self.i_id).u32(self.supply_w).u64(self.delivery_d).u32(self.quantity);
        w.i64(self.amount_cents).bytes(&self.dist_info);
        w.0
    }
    fn decode(buf: &[u8]) -> Result<Self, TpccError> {
        let mut r = Reader::new(buf, Self::TABLE)?;
        Ok(OrderLine {
            i_id: r.u32()?,
            supply_w: r.u32()?,
            delivery_d: r.u64()?,
            quantity: r.u32()?,
            amount_cents: r.i64()?,
            dist_info: r.bytes()?,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub im_id: u32,
    pub price_cents: i64,
    pub name: Vec<u8>,
    pub data: Vec<u8>,
}

impl Row for Item {
    const TABLE: &'static str = "item";
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u32(self.im_id).i64(self.price_cents).bytes(&self.name).bytes(&self.data);
        w.0
    }
    fn decode(buf: &[u8]) -> Result<Self, TpccError> {
        let mut r = Reader::new(buf, Self::TABLE)?;
        Ok(Item { im_id: r.u32()?, price_cents: r.i64()?, name: r.bytes()?, data: r.bytes()? })
    }
}

/// Width of each of the ten S_DIST_xx fields.
pub const DIST_INFO_BYTES: usize = 24;

#[derive(Debug, Clone, PartialEq)]
pub struct Stock {
    pub quantity: u32,
    pub ytd: u64,
    pub order_cnt: u32,
    pub remote_cnt: u32,
    /// S_DIST_01..S_DIST_10, [`DIST_INFO_BYTES`] each.
    pub dists: Vec<u8>,
    pub data: Vec<u8>,
}

impl Stock {
    /// S_DIST_xx of district `d` (1..=10).
    pub fn dist_info(&self, d: u32) -> &[u8] {
        let start = (d.saturating_sub(1) as usize) * DIST_INFO_BYTES;
        self.dists.get(start..start + DIST_INFO_BYTES).unwrap_or(&[])
    }
}

impl Row for Stock {
    const TABLE: &'static str = "stock";
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u32(self.quantity).u64(self.ytd).u32(self.order_cnt).u32(self.remote_cnt);
        w.bytes(&self.dists).bytes(&self.data);
        w.0
    }
    fn decode(buf: &[u8]) -> Result<Self, TpccError> {
        let mut r = Reader::new(buf, Self::TABLE)?;
        Ok(Stock {
            quantity: r.u32()?,
            ytd: r.u64()?,
            order_cnt: r.u32()?,
            remote_cnt: r.u32()?,
            dists: r.bytes()?,
            data: r.bytes()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_and_short_rows_are_errors() {
        let c = Customer {
            first: b"Ann".to_vec(),
            last: b"BARBAR".to_vec(),
            credit: *b"BC",
            credit_lim_cents: 5_000_000,
            discount_bp: 1234,
            balance_cents: -1000,
            ytd_payment_cents: 1000,
            payment_cnt: 1,
            delivery_cnt: 0,
            since: 7,
            text: vec![b'x'; 89],
            data: vec![b'd'; 400],
        };
        let enc = c.encode();
        assert_eq!(Customer::decode(&enc).unwrap(), c);
        for cut in [0, 1, 10, enc.len() - 1] {
            assert!(Customer::decode(&enc[..cut]).is_err(), "{cut}");
        }
        let s = Stock {
            quantity: 9,
            ytd: 1,
            order_cnt: 2,
            remote_cnt: 3,
            dists: vec![b'a'; 240],
            data: vec![],
        };
        assert_eq!(Stock::decode(&s.encode()).unwrap(), s);
        assert_eq!(s.dist_info(10).len(), DIST_INFO_BYTES);
        assert!(Order::decode(&[2, 0, 0]).is_err());
    }
}
