#!/usr/bin/env bash
# A/B of two cairn binaries on the single-broker strict workload (acks=all, 8 producers ×
# 1 KiB, 8 partitions): broker CPU-seconds per produced GB, and produce ÷ disk. Each run
# starts a fresh broker from one binary, the two binaries take turns going first in each
# round, and every produce run is followed by a `bench disk` run of the same length, so both
# sides see the same disk states. The load generator is always binary B's `bench produce`.
# The broker's CPU is read from /proc/PID/stat (utime+stime) around the run; the run has no
# warm-up, so every byte it counts was produced while the CPU was counted.
# With --consume it compares reading from page cache instead: each run's broker writes about
# 3 GB (acks=1, 10 s) and then serves it to `bench consume --raw` ($CONSUMERS consumers,
# default 4; the broker's CPU is counted for the read alone), followed by a `bench tcp` run.
# The broker must have written the data itself: after a restart it serves batches it has not
# checked yet without sendfile (durability.md), which is another path.
# With --cluster it compares three brokers of one binary, RF=3: acks=all for 15 s into 8
# partitions, the CPU of the three brokers together per produced GB divided by three (per
# broker), produce ÷ (disk ÷ 3), and the elections during the run (the sum over partitions
# of the leader epoch's rise, read from /metrics before and after: a saturating load must
# cause none).
# Usage: scripts/bench_ab.sh [--consume|--cluster] OLD_BINARY NEW_BINARY [ROUNDS]   (default 4 rounds)
# Ports 32092-32644 (and 33092-35644 with --cluster) on 127.0.0.1 must be free; data goes
# under $WORK.
set -uo pipefail
MODE=produce
if [ "${1:-}" = --consume ]; then MODE=consume; shift; fi
if [ "${1:-}" = --cluster ]; then MODE=cluster; shift; fi
A=${1:?usage: $0 OLD_BINARY NEW_BINARY [ROUNDS]}
B=${2:?usage: $0 OLD_BINARY NEW_BINARY [ROUNDS]}
ROUNDS=${3:-4}
WORK=${WORK:-/tmp/cairn-ab}
OUT=${OUT:-$WORK/out}
BR=127.0.0.1:32092
mkdir -p "$OUT"
tick=$(getconf CLK_TCK)
pid=""
pids=()
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null' EXIT

# shellcheck source=bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"
waitport() {
	for _ in $(seq 1 150); do
		listening "$1" && return 0
		sleep 0.2
	done
	echo "port $1 did not open" >&2
	exit 1
}

# start BINARY LOG: a fresh broker on an empty $WORK/data
start() {
	rm -rf "$WORK/data"
	mkdir -p "$WORK/data"
	"$1" start --node-id 1 --data-dir "$WORK/data" --kafka-addr $BR --rpc-addr 127.0.0.1:32093 \
		--admin-addr 127.0.0.1:32644 >"$2" 2>&1 &
	pid=$!
	waitport 32092
}
stop() {
	kill "$pid"
	wait "$pid" 2>/dev/null
	pid=""
}

# report LABEL ROUND RUN.json BASELINE.json CPU_TICKS: one line, the run against its baseline
report() {
	/usr/bin/python3 - "$@" "$tick" <<'EOF'
import json, sys
label, rnd, run_f, base_f, ticks, tick = sys.argv[1:]
run, base = json.load(open(run_f)), json.load(open(base_f))
cpu, gb = int(ticks) / int(tick), run["bytes"] / 1e9
print(f"{label} round {rnd}: {run['mode']} {run['mb_per_s']:.1f} MB/s, {base['mode']} {base['mb_per_s']:.1f} MB/s, "
      f"ratio {run['mb_per_s'] / base['mb_per_s']:.2f}, broker {cpu:.2f} CPU-s for {gb:.2f} GB = "
      f"{cpu / gb:.2f} CPU-s/GB, errors {run['errors']}")
EOF
}

# produce_one BINARY LABEL ROUND: strict produce, then a disk run in the same folder
produce_one() {
	local o=$OUT/$2-$3 c0 c1
	start "$1" "$o.log"
	"$B" topic create t -p 8 -b $BR >/dev/null
	c0=$(cpu_ticks "$pid")
	"$B" bench produce -b $BR -t t --acks all --duration 12s --warmup 0s --json >"$o.json" 2>/dev/null
	c1=$(cpu_ticks "$pid")
	stop
	"$B" bench disk --dir "$WORK/data" --size 8GiB --duration 12s --json >"$o-disk.json" 2>/dev/null
	rm -rf "$WORK/data"
	report "$2" "$3" "$o.json" "$o-disk.json" $((c1 - c0))
}

# consume_one BINARY LABEL ROUND: write about 3 GB, read it from page cache, then a TCP run
consume_one() {
	local o=$OUT/$2-$3 c0 c1
	start "$1" "$o.log"
	"$B" topic create c -p 4 -b $BR >/dev/null
	"$B" bench produce -b $BR -t c --acks 1 --duration 10s --warmup 0s --json >"$o-fill.json" 2>/dev/null
	sync
	c0=$(cpu_ticks "$pid")
	"$B" bench consume -b $BR -t c --raw --consumers "${CONSUMERS:-4}" --duration 8s --json >"$o.json" 2>/dev/null
	c1=$(cpu_ticks "$pid")
	stop
	rm -rf "$WORK/data"
	"$B" bench tcp --duration 8s --json >"$o-tcp.json" 2>/dev/null
	report "$2" "$3" "$o.json" "$o-tcp.json" $((c1 - c0))
}

# cluster_one BINARY LABEL ROUND: three brokers, RF=3 acks=all, then a disk run
cluster_one() {
	local o=$OUT/$2-$3 c0=0 c1=0 e0 e1 p brs=127.0.0.1:33092,127.0.0.1:34092,127.0.0.1:35092
	local seeds=127.0.0.1:33093,127.0.0.1:34093,127.0.0.1:35093
	rm -rf "$WORK/data"
	pids=()
	for i in 3 4 5; do
		mkdir -p "$WORK/data/d$i"
		"$1" start --node-id $((i - 2)) --data-dir "$WORK/data/d$i" --kafka-addr 127.0.0.1:3${i}092 \
			--rpc-addr 127.0.0.1:3${i}093 --admin-addr 127.0.0.1:3${i}644 --seeds $seeds >"$o-$i.log" 2>&1 &
		pids+=($!)
	done
	for i in 3 4 5; do waitport 3${i}092; done
	"$B" topic create t -p 8 -r 3 -b $brs >/dev/null
	sleep 3 # the partitions' first elections
	e0=$(epochs 33644 34644 35644)
	for p in "${pids[@]}"; do c0=$((c0 + $(cpu_ticks "$p"))); done
	"$B" bench produce -b $brs -t t --acks all --duration 15s --warmup 0s --json >"$o.json" 2>/dev/null
	for p in "${pids[@]}"; do c1=$((c1 + $(cpu_ticks "$p"))); done
	e1=$(epochs 33644 34644 35644)
	kill "${pids[@]}"
	wait "${pids[@]}" 2>/dev/null
	pids=()
	"$B" bench disk --dir "$WORK/data" --size 8GiB --duration 15s --json >"$o-disk.json" 2>/dev/null
	rm -rf "$WORK/data"
	/usr/bin/python3 - "$2" "$3" "$o.json" "$o-disk.json" $((c1 - c0)) "$tick" $((e1 - e0)) <<'EOF2'
import json, sys
label, rnd, run_f, disk_f, ticks, tick, elections = sys.argv[1:]
run, disk = json.load(open(run_f)), json.load(open(disk_f))
cpu, gb = int(ticks) / int(tick) / 3, run["bytes"] / 1e9
print(f"{label} round {rnd}: 3 brokers {run['mb_per_s']:.1f} MB/s, disk {disk['mb_per_s']:.1f} MB/s, "
      f"ratio to disk/3 {run['mb_per_s'] * 3 / disk['mb_per_s']:.2f}, {cpu:.2f} CPU-s per broker for "
      f"{gb:.2f} GB = {cpu / gb:.2f} CPU-s/GB per broker, elections {elections}, errors {run['errors']}")
EOF2
}

for r in $(seq 1 "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then
		"${MODE}_one" "$A" old "$r"
		"${MODE}_one" "$B" new "$r"
	else
		"${MODE}_one" "$B" new "$r"
		"${MODE}_one" "$A" old "$r"
	fi
done | tee "$OUT/summary.txt"
