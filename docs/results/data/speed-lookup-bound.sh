#!/usr/bin/env bash
# Interleaved: bench speed (random suite, Wafer blobs and RocksDB, one round each) and
# Wafer's YCSB-C in the speed configuration (lookups only: the rate with free updates is 2x).
set -u
W=${W:-target/release/wafer}
D=${D:-/tmp/wafer-lookup-bound}; mkdir -p $D
for r in ${ROUNDS:-1 2 3}; do
  $W bench speed --scale issue --rounds 1 --suites random --engines wafer-oop-blobs,rocksdb \
     --json $D/speed-$r.json --markdown $D/speed-$r.md --quiet > $D/speed-$r.log 2>&1
  for wl in c a; do
  rm -f $D/F $D/F.wal
  $W bench ycsb --device file:$D/F --write-mode out-of-place --records 250000 --value-size 1000 \
    --buffer 42625000B --threads 2 --distribution uniform --duration 15s --workload $wl \
    --engine blob_threshold=512 --engine compression=lz4 --engine packing=true \
    --engine durability=none --engine file_direct=true --engine max_fill_percent=250 \
    --engine file_capacity_bytes=767246336 --engine wal_capacity_bytes=127873024 \
    --engine checkpoint_log_bytes=31968256 --engine zone_bytes=11984896 \
    --json $D/ycsb-$wl-$r.json --quiet > $D/ycsb-$wl-$r.log 2>&1
  done
  rm -f $D/F $D/F.wal
  echo "round $r done $(date +%T)" >> $D/progress
done
