#!/usr/bin/env bash
# The benchmark pass behind docs/benchmarks.md's table: about 14 minutes, on an otherwise
# idle machine. It builds cairn, then measures:
#   single  one broker: 3 rounds of acks=all strict, write caching and acks=1 produce runs
#           (each round in another order, after an uncounted disk run), each run bracketed
#           by `cairn bench disk` runs of the same length in the data folder (the ratio
#           divides by their mean); then consume from page cache with
#           `bench consume --raw`, each run bracketed by `bench tcp` runs; CPU and heap
#           profiles.
#   cluster three brokers, RF=3: 3 rounds of acks=all runs bracketed by disk runs, one acks=1
#           run, latency at offered 20 and 40 MB/s; CPU and heap profiles of each broker.
#   racks   (not in all; about 12 minutes) min.insync.racks 1 against 3, on clusters behind
#           test/benchnet's delaying link proxies: racks r1,r2,r3 without delay, 3 rounds of
#           acks=all throughput (the order alternating) and latency at a fixed rate; then
#           latency only with 0.2 ms in a rack and 2 ms across, with r1-r2 at 0.2 ms and r3
#           2 ms away, and on five brokers r1,r1,r2,r2,r3 (RF=5). The proxies' measured delay
#           goes to racks-proxy-delay.txt.
#   move    (not in all; test/benchmove; 24 minutes at 2 GiB here) four brokers: fill one
#           partition on 1,2,3 with $MOVE_SIZE bytes (default 2GiB), `bench disk` runs
#           before, between and after the moves; move it to
#           1,2,4 under a 20 MB/s acks=all producer on another topic (RF=3 on 1,2,3), then
#           the same load as long without a move; where the broker has $MOVE_RATE_PROPERTY
#           (the learner catch-up bound), the first move runs unbounded (0) and a second,
#           back to 1,2,3, at the property's default (or $MOVE_RATE_BOUND bytes/s).
#   sessions (not in all; test/benchfetch; about 2 minutes) one franz-go consumer of 1,000
#           partitions of one broker, with fetch sessions (KIP-227) and without: idle for 20 s,
#           then tailing 2,000 records/s for 30 s; fetches, bytes and broker CPU per fetch.
#   tls     (not in all; scripts/bench_tls.sh; about 5 minutes; ports 27044-27394) produce
#           over PLAINTEXT, SSL and SASL_SSL listeners of one broker, and 3 brokers plaintext
#           against SSL + rpc mTLS: MB/s, broker CPU per GB and the ratios, in
#           $OUT/tls-summary.txt.
# Usage: scripts/bench.sh [single|cluster|racks|move|sessions|tls|all]   (results, JSON and profiles in $OUT)
# CAIRN_BIN=path measures that binary instead of building this tree.
# Ports 31092-31644 and 41092-43644 on 127.0.0.1 must be free (move picks free ones); data
# goes under $WORK.
set -uo pipefail
cd "$(dirname "$0")/.."
WORK=${WORK:-/tmp/cairn-bench}
OUT=${OUT:-$WORK/out}
B=$WORK/cairn
mkdir -p "$OUT"
if [ -n "${CAIRN_BIN:-}" ]; then
	B=$CAIRN_BIN # a binary built elsewhere, such as the base of a change (see bench_ab.sh)
else
	go build -o "$B" ./cmd/cairn || exit 1
fi

pids=()
stop_all() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	pids=()
}
trap stop_all EXIT
waitport() {
	for _ in $(seq 1 150); do
		listening "$1" && return 0
		sleep 0.2
	done
	echo "port $1 did not open" >&2
	exit 1
}
tick=$(getconf CLK_TCK)
# shellcheck source=bench_lib.sh
. scripts/bench_lib.sh
# produce_counted OUT_NAME PIDS… -- ARGS…: one `bench produce` run (2 s warm-up) with the
# brokers' CPU ticks (utime+stime, summed over PIDS) counted from the warm-up's end to the
# run's, written to OUT_NAME-cpu.txt as "TICKS CLK_TCK", and the load generator's own CPU
# (user and system seconds, warm-up included) to OUT_NAME-gen.txt.
produce_counted() {
	local name=$1 c0f=$OUT/$1-cpu0.txt c1=0 p ps=()
	shift
	while [ "$1" != -- ]; do ps+=("$1"); shift; done
	shift
	rm -f "$c0f"
	(sleep 2; c=0; for p in "${ps[@]}"; do c=$((c + $(cpu_ticks "$p"))); done; echo $c >"$c0f") &
	local sampler=$!
	local TIMEFORMAT='%U %S'
	{ time "$B" bench produce "$@" --json >"$OUT/$name.json" 2>/dev/null; } 2>"$OUT/$name-gen.txt"
	wait "$sampler"
	for p in "${ps[@]}"; do c1=$((c1 + $(cpu_ticks "$p"))); done
	echo "$((c1 - $(cat "$c0f"))) $tick" >"$OUT/$name-cpu.txt"
	rm -f "$c0f"
}
disk() { "$B" bench disk --dir "$1" --size 8GiB --duration "$2" --json >"$OUT/$3.json" 2>/dev/null; }
profile() { curl -s -o "$OUT/$2.pprof" "http://$1/debug/pprof/profile?seconds=$3"; curl -s -o "$OUT/$2-heap.pprof" "http://$1/debug/pprof/heap"; }

single() {
	local d=$WORK/single BR=127.0.0.1:31092 cp
	rm -rf "$d"
	mkdir -p "$d"
	"$B" start --node-id 1 --data-dir "$d" --kafka-addr $BR --rpc-addr 127.0.0.1:31093 \
		--admin-addr 127.0.0.1:31644 >"$OUT/single.log" 2>&1 &
	pids+=($!)
	waitport 31092
	# The three workloads take turns going first, and every round starts with a disk run
	# that is not counted: the disk regains its burst rate while it idles (the topic
	# changes between rounds are enough), and the first run after an idle spell would
	# otherwise be divided by a burst the others never see.
	local orders=("strict wc acks1" "wc acks1 strict" "acks1 strict wc")
	for r in 1 2 3; do
		"$B" topic create "s$r" -p 8 -b $BR >/dev/null
		"$B" topic create "w$r" -p 8 -c write.caching=true -b $BR >/dev/null
		"$B" topic create "a$r" -p 8 -b $BR >/dev/null
		echo "${orders[$((r - 1))]}" >"$OUT/s-order-$r.txt"
		disk "$d" 12s "s-settle-$r"
		disk "$d" 12s "s-disk-$r-0"
		local k=0 m
		for m in ${orders[$((r - 1))]}; do
			k=$((k + 1))
			cp=""
			if [ "$m" = strict ] && [ "$r" = 2 ]; then (sleep 6; profile 127.0.0.1:31644 single-produce 8) & cp=$!; fi
			local acks=all
			[ "$m" = acks1 ] && acks=1
			# Each mode's topic is named by its first letter: s, w, a.
			produce_counted "s-$m-$r" "${pids[0]}" -- -b $BR -t "${m:0:1}$r" --acks $acks --duration 12s
			[ -n "$cp" ] && wait "$cp"
			disk "$d" 12s "s-disk-$r-$k"
		done
		"$B" topic delete "s$r" "w$r" "a$r" -b $BR >/dev/null
		sleep 3
	done
	# Consume from page cache: about 5 GB in 4 partitions, read from the start.
	"$B" topic create c -p 4 -b $BR >/dev/null
	"$B" bench produce -b $BR -t c --acks 1 --duration 20s --warmup 0s --json >"$OUT/c-fill.json" 2>/dev/null
	sync
	sleep 3
	# Loopback TCP swings between runs as much as the disk does: each consume run is
	# bracketed by `bench tcp` runs of the same length, like the produce runs by disk runs.
	for r in 1 2 3; do
		"$B" bench tcp --duration 8s --json >"$OUT/c-tcp-$r-0.json" 2>/dev/null
		for n in 1 2 4; do
			"$B" bench consume -b $BR -t c --raw --consumers $n --duration 8s --json >"$OUT/c-raw$n-$r.json" 2>/dev/null
			"$B" bench tcp --duration 8s --json >"$OUT/c-tcp-$r-$n.json" 2>/dev/null
		done
	done
	(sleep 1; profile 127.0.0.1:31644 consume 5) & cp=$!
	for _ in 1 2 3 4 5 6; do "$B" bench consume -b $BR -t c --raw --consumers 2 --duration 8s >/dev/null 2>&1; done
	wait "$cp"
	stop_all
	rm -rf "$d"
}

cluster() {
	local d=$WORK/cluster BR=127.0.0.1:41092,127.0.0.1:42092,127.0.0.1:43092 cp
	local seeds=127.0.0.1:41093,127.0.0.1:42093,127.0.0.1:43093
	rm -rf "$d"
	mkdir -p "$d"
	for i in 1 2 3; do
		"$B" start --node-id $i --data-dir "$d/d$i" --kafka-addr 127.0.0.1:4${i}092 --rpc-addr 127.0.0.1:4${i}093 \
			--admin-addr 127.0.0.1:4${i}644 --rack rack-$i --seeds $seeds >"$OUT/cluster-$i.log" 2>&1 &
		pids+=($!)
	done
	for i in 1 2 3; do waitport 4${i}092; done
	sleep 3
	for r in 1 2 3; do
		"$B" topic create "r$r" -p 8 -r 3 -b $BR >/dev/null
		sleep 2
		disk "$d" 15s "r-settle-$r" # not counted: see single()
		disk "$d" 15s "r-disk-$r-0"
		cp=""
		if [ "$r" = 2 ]; then
			(sleep 8; for i in 1 2 3; do profile 127.0.0.1:4${i}644 cluster-$i 6 & done; wait
				for i in 1 2 3; do grep VmRSS /proc/"${pids[$((i - 1))]}"/status >"$OUT/cluster-rss-$i.txt"; done) &
			cp=$!
		fi
		epochs 41644 42644 43644 >"$OUT/r-strict-$r-epochs.txt"
		produce_counted "r-strict-$r" "${pids[@]}" -- -b $BR -t "r$r" --duration 15s
		epochs 41644 42644 43644 >>"$OUT/r-strict-$r-epochs.txt"
		[ -n "$cp" ] && wait "$cp"
		disk "$d" 15s "r-disk-$r-1"
		"$B" topic delete "r$r" -b $BR >/dev/null
		sleep 3
	done
	"$B" topic create ra -p 8 -r 3 -b $BR >/dev/null
	sleep 2
	"$B" bench produce -b $BR -t ra --acks 1 --duration 15s --json >"$OUT/r-acks1.json" 2>/dev/null
	"$B" topic create rl -p 8 -r 3 -b $BR >/dev/null
	sleep 2
	"$B" bench produce -b $BR -t rl --rate 20000 --duration 15s --json >"$OUT/r-rate20k.json" 2>/dev/null
	"$B" bench produce -b $BR -t rl --rate 40000 --duration 15s --json >"$OUT/r-rate40k.json" 2>/dev/null
	for i in 1 2 3; do curl -s 127.0.0.1:4${i}644/metrics | grep -E 'leader_epoch|cairn_rpc_' >"$OUT/cluster-metrics-$i.txt"; done
	stop_all
	rm -rf "$d"
}

# racks_layout NAME RACKS RF ROUNDS [benchnet delay flags…] runs ROUNDS throughput rounds
# (racks1 and racks3 alternating which goes first) and one latency run of each at a fixed
# rate, on a benchnet cluster of that layout. Results: racks-NAME-{tput-N,lat}-racksK.json.
racks_layout() {
	local name=$1 racks=$2 rf=$3 rounds=$4 d=$WORK/racks-$1 BR first second
	shift 4
	rm -rf "$d" "$WORK/racks-addrs"
	mkdir -p "$d"
	"$WORK/benchnet" --binary "$B" --racks "$racks" --data-dir "$d" --log-dir "$OUT/racks-$name-logs" \
		--addr-file "$WORK/racks-addrs" "$@" >"$OUT/racks-$name.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 300); do [ -s "$WORK/racks-addrs" ] && break; sleep 0.2; done
	BR=$(sed -n 's/^bootstrap=//p' "$WORK/racks-addrs")
	[ -n "$BR" ] || { echo "benchnet $name did not start; see $OUT/racks-$name.log" >&2; exit 1; }
	for k in 1 3; do
		"$B" topic create "racks$k" -p 8 -r "$rf" -c "min.insync.racks=$k" -b "$BR" >/dev/null || exit 1
	done
	sleep 2
	for r in $(seq 1 "$rounds"); do
		first=1 second=3
		[ $((r % 2)) = 0 ] && first=3 second=1
		for k in $first $second; do
			"$B" bench produce -b "$BR" -t "racks$k" --duration 15s --json >"$OUT/racks-$name-tput-$r-racks$k.json" 2>/dev/null
		done
	done
	for k in 1 3; do
		"$B" bench produce -b "$BR" -t "racks$k" --rate 5000 --duration 15s --json >"$OUT/racks-$name-lat-racks$k.json" 2>/dev/null
	done
	stop_all
	rm -rf "$d"
}

racks() {
	go build -o "$WORK/benchnet" ./test/benchnet || exit 1
	go test -count=1 -run 'TestRelayDelay$' -v ./test/chaos/faults >"$OUT/racks-proxy-delay.txt" 2>&1
	racks_layout flat r1,r2,r3 3 3
	racks_layout delay r1,r2,r3 3 0 --delay-in 200us --delay-cross 2ms
	racks_layout asym r1,r2,r3 3 0 --delay-cross 2ms --delay-pairs r1/r2=200us
	racks_layout five r1,r1,r2,r2,r3 5 0 --delay-in 200us --delay-cross 2ms
}

# move runs test/benchmove, which starts and stops its own brokers and removes their data.
move() {
	go build -o "$WORK/benchmove" ./test/benchmove || exit 1
	"$WORK/benchmove" --binary "$B" --data-dir "$WORK/move" --out "$OUT" --log-dir "$OUT/move-logs" \
		--size "${MOVE_SIZE:-2GiB}" --rate-property "${MOVE_RATE_PROPERTY:-learner.recovery.rate}" ${MOVE_RATE_BOUND:+--rate-bound "$MOVE_RATE_BOUND"} \
		2>"$OUT/move.log" || { tail -20 "$OUT/move.log" >&2; exit 1; }
}

# sessions runs test/benchfetch: one consumer of 1,000 partitions with fetch sessions and
# without, idle and tailing a written topic; the table goes to $OUT/sessions.txt.
sessions() {
	go build -o "$WORK/benchfetch" ./test/benchfetch || exit 1
	"$WORK/benchfetch" --binary "$B" --partitions 1000 --idle 20s --duration 30s --rate 2000 \
		>"$OUT/sessions.json" 2>"$OUT/sessions.txt" || { tail -20 "$OUT/sessions.txt" >&2; exit 1; }
	cat "$OUT/sessions.txt"
	exit 0
}

case ${1:-all} in
single) single ;;
sessions) sessions ;;
cluster) cluster ;;
racks) racks ;;
move) move ;;
tls) CAIRN_BIN=$B WORK=$WORK/tls OUT=$OUT scripts/bench_tls.sh all; exit $? ;;
all) single; cluster ;;
*) echo "usage: $0 [single|cluster|racks|move|sessions|tls|all]" >&2; exit 2 ;;
esac
/usr/bin/python3 scripts/bench_summary.py "$OUT"
