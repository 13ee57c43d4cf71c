#!/usr/bin/env bash
# What TLS and SASL cost a producer, against plaintext, measured in one pass on one machine
# (docs/benchmarks.md, "TLS and SASL"; about 5 minutes). The workload is the baseline
# table's: acks=all, 8 idempotent producers × 1 KiB records, 8 partitions, no warm-up so
# that every byte counted was produced while the CPU was counted.
#   single  one broker serving three listeners at once, PLAINTEXT, SSL and SASL_SSL
#           (SCRAM-SHA-512): $ROUNDS rounds (default 3) of one run on each, which goes first
#           rotating every round, each on a fresh topic; the same broker process serves all
#           three, so the ratios compare only the listener.
#   cluster three brokers, RF=3: plaintext, against an SSL listener for the clients and
#           mutual TLS between the brokers (rpc.tls.*). There is no mixed mode, so each
#           run gets a fresh cluster of its kind: $CLUSTER_ROUNDS rounds (default 2), in the
#           order A B, B A, A B…
# For every run: MB/s, each broker's CPU-seconds (utime+stime from /proc around the run)
# per produced GB, and the load generator's CPU-seconds per second of run (how many of the
# two cores it took). The figures go to $OUT/tls-summary.txt; the JSON of each run, the
# CPU counts, the broker logs and CPU profiles (8 s from 6 s in: round 2 of single, round 1
# of cluster, every kind of run) stay in $OUT.
# Usage: scripts/bench_tls.sh [single|cluster|all]   (or scripts/bench.sh tls)
# CAIRN_BIN=path measures that binary instead of building this tree; DURATION (default
# 20s) is the length of each run. Ports 27044-27096 and 27144-27394 on 127.0.0.1 must be
# free (below the kernel's ephemeral range, so that no outgoing connection takes one
# meanwhile); data and certificates go under $WORK.
set -uo pipefail
cd "$(dirname "$0")/.."
WORK=${WORK:-/tmp/cairn-bench-tls}
OUT=${OUT:-$WORK/out}
DURATION=${DURATION:-20s}
ROUNDS=${ROUNDS:-3}
CLUSTER_ROUNDS=${CLUSTER_ROUNDS:-2}
B=$WORK/cairn
TLS=$WORK/tls
mkdir -p "$OUT" "$TLS"
if [ -n "${CAIRN_BIN:-}" ]; then
	B=$CAIRN_BIN
else
	go build -o "$B" ./cmd/cairn || exit 1
fi
tick=$(getconf CLK_TCK)
# SCRAM user of the SASL_SSL runs; the password reaches the client through the environment.
SASL_USER=bench
export CAIRN_SASL_PASSWORD=bench-secret-$$

pids=()
stop_all() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	pids=()
}
trap stop_all EXIT
profile() { curl -s -o "$OUT/$2.pprof" "http://$1/debug/pprof/profile?seconds=$3"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
ready() { # ready ADMIN_ADDR: the broker answers /v1/status/ready
	for _ in $(seq 1 300); do
		curl -sf "http://$1/v1/status/ready" >/dev/null && return 0
		sleep 0.2
	done
	echo "broker at $1 did not become ready" >&2
	exit 1
}

# One CA for the listeners and the inter-broker transport alike (a real cluster would give
# the transport a CA of its own: operations.md); EC P-256 keys, as operations.md makes them.
certs() {
	[ -s "$TLS/broker.pem" ] && return 0
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
		-subj "/CN=cairn-bench-ca" -keyout "$TLS/ca-key.pem" -out "$TLS/ca.pem" 2>/dev/null || exit 1
	printf 'extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$TLS/ext.cnf"
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=broker" \
		-keyout "$TLS/broker-key.pem" -out "$TLS/broker.csr" 2>/dev/null || exit 1
	openssl x509 -req -in "$TLS/broker.csr" -CA "$TLS/ca.pem" -CAkey "$TLS/ca-key.pem" -CAcreateserial \
		-days 30 -extfile "$TLS/ext.cnf" -out "$TLS/broker.pem" 2>/dev/null || exit 1
}

# produce NAME BROKERS TOPIC CLIENT_FLAGS...: one run; NAME.json is bench's report,
# NAME.cpu the brokers' CPU ticks ("id ticks" per line) and the load generator's
# CPU-seconds ("gen user sys").
produce() {
	local name=$1 br=$2 topic=$3 i c0=() c1=() TIMEFORMAT='gen %U %S'
	shift 3
	for i in "${!pids[@]}"; do c0[i]=$(cpu_ticks "${pids[$i]}"); done
	{ time "$B" bench produce -b "$br" -t "$topic" --acks all --duration "$DURATION" --warmup 0s --json "$@" \
		>"$OUT/$name.json" 2>"$OUT/$name.err"; } 2>"$OUT/$name.cpu"
	for i in "${!pids[@]}"; do c1[i]=$(cpu_ticks "${pids[$i]}"); done
	for i in "${!pids[@]}"; do echo "broker$((i + 1)) $((c1[i] - c0[i]))" >>"$OUT/$name.cpu"; done
}

# busy PORT...: fail at once, naming it, if a port is taken (a broker would fail to bind).
busy() {
	local p
	for p in "$@"; do
		if (echo >/dev/tcp/127.0.0.1/"$p") 2>/dev/null; then
			echo "port $p on 127.0.0.1 is in use; stop what listens there" >&2
			exit 1
		fi
	done
}

single() {
	local d=$WORK/single PL=127.0.0.1:27092 SSL=127.0.0.1:27094 SASL=127.0.0.1:27096 r m cp
	local orders=("plain ssl sasl" "ssl sasl plain" "sasl plain ssl")
	rm -rf "$d"
	mkdir -p "$d"
	certs
	busy 27092 27093 27094 27096 27044
	"$B" start --node-id 1 --data-dir "$d" --rpc-addr 127.0.0.1:27093 --admin-addr 127.0.0.1:27044 \
		--listeners "PLAINTEXT://$PL,SSL://$SSL,SASL_SSL://$SASL" \
		--ssl-certificate-location "$TLS/broker.pem" --ssl-key-location "$TLS/broker-key.pem" \
		>"$OUT/tls-single.log" 2>&1 &
	pids+=($!)
	ready 127.0.0.1:27044
	printf '%s\n' "$CAIRN_SASL_PASSWORD" |
		"$B" security user create "$SASL_USER" --mechanism SCRAM-SHA-512 --password-stdin -b $PL >/dev/null || exit 1
	for r in $(seq 1 "$ROUNDS"); do
		echo "${orders[$(((r - 1) % 3))]}" >"$OUT/tls-s-order-$r.txt"
		for m in ${orders[$(((r - 1) % 3))]}; do
			"$B" topic create "$m$r" -p 8 -b $PL >/dev/null || exit 1
			cp=""
			if [ "$r" = 2 ]; then (sleep 6; profile 127.0.0.1:27044 "tls-s-$m" 8) & cp=$!; fi
			case $m in
			plain) produce "tls-s-$m-$r" $PL "$m$r" ;;
			ssl) produce "tls-s-$m-$r" $SSL "$m$r" --tls-ca "$TLS/ca.pem" ;;
			sasl) produce "tls-s-$m-$r" $SASL "$m$r" --tls-ca "$TLS/ca.pem" \
				--sasl-mechanism SCRAM-SHA-512 --sasl-user "$SASL_USER" ;;
			esac
			[ -n "$cp" ] && wait "$cp"
			"$B" topic delete "$m$r" -b $PL >/dev/null
		done
	done
	stop_all
	rm -rf "$d"
}

# cluster_start plain|tls: a fresh three-broker cluster; its Kafka bootstrap goes to $BR.
# The TLS cluster also keeps a PLAINTEXT listener, used only to create the topic: the
# clients of the run are told the SSL listener's addresses (Metadata follows the listener).
cluster_start() {
	local mode=$1 d=$WORK/cluster i extra
	local seeds=127.0.0.1:27193,127.0.0.1:27293,127.0.0.1:27393
	rm -rf "$d"
	mkdir -p "$d"
	for i in 1 2 3; do busy 27${i}92 27${i}93 27${i}94 27${i}44; done
	for i in 1 2 3; do
		extra=(--kafka-addr 127.0.0.1:27${i}92)
		if [ "$mode" = tls ]; then
			extra=(--listeners "PLAINTEXT://127.0.0.1:27${i}92,SSL://127.0.0.1:27${i}94"
				--ssl-certificate-location "$TLS/broker.pem" --ssl-key-location "$TLS/broker-key.pem"
				--rpc-tls-enabled true --rpc-tls-truststore-location "$TLS/ca.pem"
				--rpc-tls-certificate-location "$TLS/broker.pem" --rpc-tls-key-location "$TLS/broker-key.pem")
		fi
		"$B" start --node-id $i --data-dir "$d/d$i" --rpc-addr 127.0.0.1:27${i}93 --admin-addr 127.0.0.1:27${i}44 \
			--rack rack-$i --seeds $seeds "${extra[@]}" >>"$OUT/tls-cluster-$mode-$i.log" 2>&1 &
		pids+=($!)
	done
	for i in 1 2 3; do ready 127.0.0.1:27${i}44; done
}

cluster() {
	local r m order cp i
	local PL=127.0.0.1:27192,127.0.0.1:27292,127.0.0.1:27392 SSL=127.0.0.1:27194,127.0.0.1:27294,127.0.0.1:27394
	certs
	for r in $(seq 1 "$CLUSTER_ROUNDS"); do
		# A B B A …: each kind goes first every other round.
		order="plain tls"
		[ $((r % 2)) = 0 ] && order="tls plain"
		echo "$order" >"$OUT/tls-c-order-$r.txt"
		for m in $order; do
			cluster_start $m
			"$B" topic create "t$r" -p 8 -r 3 -b $PL >/dev/null || exit 1
			cp=""
			if [ "$r" = 1 ]; then
				(sleep 6; for i in 1 2 3; do profile 127.0.0.1:27${i}44 "tls-c-$m-$i" 8 & done; wait) &
				cp=$!
			fi
			if [ $m = plain ]; then
				produce "tls-c-$m-$r" $PL "t$r"
			else
				produce "tls-c-$m-$r" $SSL "t$r" --tls-ca "$TLS/ca.pem"
			fi
			[ -n "$cp" ] && wait "$cp"
			stop_all
		done
	done
	rm -rf "$WORK/cluster"
}

case ${1:-all} in
single) rm -f "$OUT"/tls-s-*; single ;;
cluster) rm -f "$OUT"/tls-c-*; cluster ;;
all) rm -f "$OUT"/tls-s-* "$OUT"/tls-c-*; single; cluster ;;
*) echo "usage: $0 [single|cluster|all]" >&2; exit 2 ;;
esac
/usr/bin/python3 scripts/bench_tls_summary.py "$OUT" "$tick" | tee "$OUT/tls-summary.txt"
