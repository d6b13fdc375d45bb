//! What the MQSSD costs say about Wafer's B-tree (001 sec. 5 does this for an LSM).
//!
//! A point lookup that misses the buffer pool reads one page at a random place: t(k) + alpha(k).
//! Write-back differs by layout. In place, every evicted page goes back to its own home, a run
//! of one page: s(k) + beta(k) each, and with the doublewrite buffer the batch is first written
//! sequentially (one setup plus beta per page). Out of place, a write-back batch is appended as
//! one run: one setup per run plus beta per page, and DB GC copies ride in the same runs but read
//! their victims first.
use super::Costs;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteLayout {
    InPlace { doublewrite: bool },
    OutOfPlace,
}

/// Device pages per operation of a workload (averages over a run).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct OpMix {
    /// Pages read per operation (buffer-pool misses, each a random page).
    pub read_pages: f64,
    /// Dirty pages written back per operation (user data, eviction and checkpoint).
    pub user_write_pages: f64,
    /// DB GC copies per operation (out of place only); each is also read once.
    pub gc_copy_pages: f64,
    /// Pages per write-back run: the eviction batch (out of place, doublewrite).
    pub batch_pages: f64,
}

/// Device microseconds one operation costs, all k threads sharing the device.
pub fn cost_per_op_us(costs: &Costs, layout: WriteLayout, mix: &OpMix) -> f64 {
    let lookup_us = mix.read_pages * (costs.t_us + costs.alpha_us);
    let batch_pages = mix.batch_pages.max(1.0);
    let sequential_page_us = costs.beta_us + costs.s_us / batch_pages;
    let write_us = match layout {
        WriteLayout::InPlace { doublewrite } => {
            let home_us = mix.user_write_pages * (costs.s_us + costs.beta_us);
            let dwb_us = if doublewrite { mix.user_write_pages * sequential_page_us } else { 0.0 };
            home_us + dwb_us
        }
        WriteLayout::OutOfPlace => {
            let appended_pages = mix.user_write_pages + mix.gc_copy_pages;
            // GC reads its victims' live pages in segment order: mostly sequential.
            let gc_read_us = mix.gc_copy_pages * (costs.alpha_us + costs.t_us / batch_pages);
            appended_pages * sequential_page_us + gc_read_us
        }
    };
    lookup_us + write_us
}

/// Operations per second the device sustains for `mix` (infinite when nothing touches it).
pub fn ops_per_s(costs: &Costs, layout: WriteLayout, mix: &OpMix) -> f64 {
    1e6 / cost_per_op_us(costs, layout, mix)
}

#[cfg(test)]
mod tests {
    use super::*;

    const COSTS: Costs = Costs { s_us: 50.0, beta_us: 3.0, t_us: 20.0, alpha_us: 2.0 };

    #[test]
    fn lookup_miss_is_setup_plus_transfer() {
        let mix = OpMix { read_pages: 1.0, ..OpMix::default() };
        let cost = cost_per_op_us(&COSTS, WriteLayout::OutOfPlace, &mix);
        assert!((cost - 22.0).abs() < 1e-9);
    }

    #[test]
    fn out_of_place_batches_amortise_the_setup() {
        let mix = OpMix { user_write_pages: 1.0, batch_pages: 64.0, ..OpMix::default() };
        let oop = cost_per_op_us(&COSTS, WriteLayout::OutOfPlace, &mix);
        let inplace = cost_per_op_us(&COSTS, WriteLayout::InPlace { doublewrite: false }, &mix);
        let dwb = cost_per_op_us(&COSTS, WriteLayout::InPlace { doublewrite: true }, &mix);
        assert!((oop - (3.0 + 50.0 / 64.0)).abs() < 1e-9);
        assert!((inplace - 53.0).abs() < 1e-9);
        assert!(dwb > inplace && inplace > oop);
    }
}
