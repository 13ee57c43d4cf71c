#!/usr/bin/env bash
# Many idle partitions (docs/benchmarks.md, "Idle replicas"): three brokers, PARTITIONS
# partitions with RF=3 in topics of at most 10,000 (the per-topic limit), so every broker
# holds every partition. It reports how long creating them took until the cluster was
# healthy (every partition led, every ISR full), then, after 30 s to settle, each broker's
# CPU over 60 s as a share of one core, its RSS and its open descriptors; then it restarts
# broker 2 (SIGTERM, then a start on the same folder) and reports how long until its port
# opened and until the cluster was healthy again, and each broker's CPU over 60 s after;
# then it stops all three and starts them together (a whole cluster's reboot) and reports
# how long until every port opened and until the cluster was healthy.
# Usage: scripts/bench_idle.sh [PARTITIONS]   (default 50000; about 15 minutes at 50,000)
# CAIRN_BIN=path measures that binary instead of building this tree. Ports 44092-46644 on
# 127.0.0.1 must be free; data goes under $WORK. Results also go to $OUT/idle-summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
N=${1:-50000}
WORK=${WORK:-/tmp/cairn-idle}
OUT=${OUT:-$WORK/out}
B=${CAIRN_BIN:-$WORK/cairn}
mkdir -p "$OUT"
if [ -z "${CAIRN_BIN:-}" ]; then go build -o "$B" ./cmd/cairn || exit 1; fi
BR=127.0.0.1:44092,127.0.0.1:45092,127.0.0.1:46092
SEEDS=127.0.0.1:44093,127.0.0.1:45093,127.0.0.1:46093
tick=$(getconf CLK_TCK)
. scripts/bench_lib.sh
pids=(0 0 0 0)
# cleanup stops the brokers, with SIGKILL after 30 s (a graceful stop hands leaderships
# over first, which takes long with tens of thousands of them)
cleanup() {
	local p alive
	for p in "${pids[@]}"; do [ "$p" != 0 ] && kill "$p" 2>/dev/null; done
	for _ in $(seq 1 100); do
		alive=0
		for p in "${pids[@]}"; do [ "$p" != 0 ] && kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && break
		sleep 0.3
	done
	for p in "${pids[@]}"; do [ "$p" != 0 ] && kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
}
trap cleanup EXIT
if listening 44092; then
	echo "port 44092 is in use: is an earlier run's broker still stopping?" >&2
	exit 1
fi
say() { echo "$*" | tee -a "$OUT/idle-summary.txt"; }
start() { # start I: broker I (1-3) on its folder
	local i=$1
	mkdir -p "$WORK/data/d$i"
	"$B" start --node-id "$i" --data-dir "$WORK/data/d$i" --kafka-addr 127.0.0.1:4$((i + 3))092 \
		--rpc-addr 127.0.0.1:4$((i + 3))093 --admin-addr 127.0.0.1:4$((i + 3))644 --seeds $SEEDS \
		>>"$OUT/idle-$i.log" 2>&1 &
	pids[i]=$!
}
waitport() {
	until listening "$1"; do sleep 0.1; done
}
healthy() { # healthy TIMEOUT_S: waits until `cairn cluster health` passes; 1 if it never did
	local end=$((SECONDS + $1))
	until "$B" cluster health --admin-url http://127.0.0.1:44644 >/dev/null 2>&1; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.5
	done
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
measure() { # measure LABEL: each broker's CPU over 60 s, its RSS and open descriptors
	local c0=() i
	for i in 1 2 3; do c0[i]=$(cpu_ticks "${pids[i]}"); done
	sleep 60
	for i in 1 2 3; do
		local c=$(($(cpu_ticks "${pids[i]}") - c0[i]))
		say "$1: broker $i: $(awk -v c="$c" -v t="$tick" 'BEGIN { printf "%.1f", 100 * c / t / 60 }')% of a core, RSS $(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/${pids[i]}/status") MB, $(ls "/proc/${pids[i]}/fd" | wc -l) descriptors"
	done
}

rm -rf "$WORK/data" "$OUT/idle-summary.txt" "$OUT"/idle-?.log
say "$N partitions, RF=3, 3 brokers ($(nproc) cores), $(date -u +%FT%TZ)"
for i in 1 2 3; do start $i; done
for i in 1 2 3; do waitport 4$((i + 3))092; done
t0=$(now)
left=$N k=0
while [ "$left" -gt 0 ]; do
	k=$((k + 1))
	p=$((left < 10000 ? left : 10000))
	"$B" topic create "idle-$k" -p "$p" -r 3 -b $BR --timeout 600s >/dev/null || { say "creating idle-$k failed"; exit 1; }
	left=$((left - p))
done
say "created in $(since "$t0") s"
healthy 3600 || { say "not healthy an hour after creation"; exit 1; }
say "healthy $(since "$t0") s after the first create"
sleep 30
measure "idle"

t0=$(now)
kill -TERM "${pids[2]}"
wait "${pids[2]}"
say "broker 2 stopped in $(since "$t0") s"
t0=$(now)
start 2
waitport 45092
say "broker 2 restarted: port open after $(since "$t0") s"
healthy 3600 || { say "not healthy an hour after the restart"; exit 1; }
say "broker 2 restarted: cluster healthy after $(since "$t0") s"
sleep 30
measure "idle after the restart"

t0=$(now)
for i in 1 2 3; do kill -TERM "${pids[i]}"; done
for i in 1 2 3; do wait "${pids[i]}"; done
say "all three stopped in $(since "$t0") s"
t0=$(now)
for i in 1 2 3; do start $i; done
for i in 1 2 3; do waitport 4$((i + 3))092; done
say "all three restarted: ports open after $(since "$t0") s"
healthy 3600 || { say "not healthy an hour after the cold start"; exit 1; }
say "all three restarted: cluster healthy after $(since "$t0") s"
