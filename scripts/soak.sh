#!/bin/sh
# The long safety check, at full size in release. The same tests run at a reduced size
# in `cargo test --workspace`. Each part prints its seed and its totals; any lost acknowledged
# write, half-applied batch or Db::check violation fails with the seed to rerun it.
#
#   scripts/soak.sh            # full size: 1000 SIGKILL cycles per write mode, 5000 power-cut
#                              # seeds per mode, 20x a 256 MiB device at 90% fill out of place
#   KILLS=50 SEEDS=200 X=3 MIB=16 scripts/soak.sh     # smaller
#
# About 15 minutes on a 2-core VM (kill cycles wait on fsync; they run beside the rest).
set -eu
KILLS=${KILLS:-1000}
SEEDS=${SEEDS:-5000}
X=${X:-20}
MIB=${MIB:-256}
ZONE_KIB=${ZONE_KIB:-1024}
cd "$(dirname "$0")/.."
cargo test --release -p wafer --locked --test soak --test crash --no-run

run() { cargo test --release -p wafer --locked "$@" -- --nocapture 2>&1; }

(WAFER_SOAK_KILLS=$KILLS run --test soak soak_sigkill_cycles_in_place; echo "exit $?") \
    > /tmp/wafer-soak-kill-in-place.log &
(WAFER_SOAK_KILLS=$KILLS run --test soak soak_sigkill_cycles_out_of_place; echo "exit $?") \
    > /tmp/wafer-soak-kill-oop.log &
WAFER_CRASH_SEEDS=$SEEDS run --test crash power_cuts
WAFER_SOAK_DEVICE_MIB=$MIB WAFER_SOAK_ZONE_KIB=$ZONE_KIB WAFER_SOAK_CAPACITY_X=$X \
    run --test soak soak_out_of_place_overwrites_at_90_percent_fill
wait
cat /tmp/wafer-soak-kill-in-place.log /tmp/wafer-soak-kill-oop.log
if ! grep -q '^exit 0$' /tmp/wafer-soak-kill-in-place.log ||
    ! grep -q '^exit 0$' /tmp/wafer-soak-kill-oop.log; then
    echo "soak: FAILED" >&2
    exit 1
fi
echo "soak: all parts passed"
