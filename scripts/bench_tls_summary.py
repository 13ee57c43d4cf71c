"""Prints the figures of docs/benchmarks.md's "TLS and SASL" section from what
scripts/bench_tls.sh wrote: for each kind of run its MB/s, each broker's CPU-seconds per
produced GB and the load generator's cores, and the ratio of each secured kind to
plaintext, taken round by round (the runs of one round are minutes apart, the rounds
further). Usage: bench_tls_summary.py OUT CLK_TCK
"""

import json
import os
import statistics
import sys

out, tick = sys.argv[1], int(sys.argv[2])


def load(name):
    """One run: its report, its brokers' CPU-seconds and the generator's, or None."""
    path = os.path.join(out, name)
    if not (os.path.exists(path + ".json") and os.path.exists(path + ".cpu")):
        return None
    try:
        with open(path + ".json") as f:
            run = json.load(f)
    except ValueError:
        return None
    brokers, gen = {}, None
    with open(path + ".cpu") as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] == "gen":
                gen = float(parts[1]) + float(parts[2])
            elif len(parts) == 2 and parts[0].startswith("broker"):
                brokers[parts[0]] = int(parts[1]) / tick
    gb = run["bytes"] / 1e9
    run["cpu_per_gb"] = {b: (s / gb if gb else float("nan")) for b, s in sorted(brokers.items())}
    run["gen_cores"] = gen / run["duration_s"] if gen is not None and run["duration_s"] else float("nan")
    return run


def fmt(values, digits=2):
    if not values:
        return "no runs"
    return f"median {statistics.median(values):.{digits}f} ({', '.join(f'{v:.{digits}f}' for v in values)})"


def rounds(prefix):
    """The runs of each round, by kind, in round order."""
    out_rounds, r = [], 1
    while os.path.exists(os.path.join(out, f"{prefix}-order-{r}.txt")):
        with open(os.path.join(out, f"{prefix}-order-{r}.txt")) as f:
            kinds = f.read().split()
        out_rounds.append({k: load(f"{prefix}-{k}-{r}") for k in kinds})
        r += 1
    return out_rounds


def report(title, prefix, base, secured, labels):
    rs = rounds(prefix)
    if not rs:
        return
    print(f"{title} ({len(rs)} rounds; order per round: {'; '.join(' '.join(r) for r in rs)})")
    for kind in secured:
        pairs = [(r[kind], r[base]) for r in rs if r.get(kind) and r.get(base)]
        print(f"  {labels[kind]} ÷ {labels[base]}, MB/s: {fmt([a['mb_per_s'] / b['mb_per_s'] for a, b in pairs if b['mb_per_s']])}")
        brokers = sorted({b for a, _ in pairs for b in a["cpu_per_gb"]})
        for br in brokers:
            ratios = [a["cpu_per_gb"][br] / b["cpu_per_gb"][br] for a, b in pairs if br in a["cpu_per_gb"] and br in b["cpu_per_gb"]]
            print(f"  {labels[kind]} ÷ {labels[base]}, {br} CPU-s per GB: {fmt(ratios)}")
    for kind in [base] + secured:
        runs = [r[kind] for r in rs if r.get(kind)]
        if not runs:
            continue
        print(f"  {labels[kind]}: MB/s {fmt([x['mb_per_s'] for x in runs], 1)}; errors {sum(x['errors'] for x in runs)}")
        for br in sorted({b for x in runs for b in x["cpu_per_gb"]}):
            print(f"    {br} CPU-s per produced GB: {fmt([x['cpu_per_gb'][br] for x in runs if br in x['cpu_per_gb']])}")
        print(f"    load generator, cores: {fmt([x['gen_cores'] for x in runs])}")
        p99 = [x["p99_ms"] for x in runs if "p99_ms" in x]
        if p99:
            print(f"    send→ack p99 ms: {fmt(p99, 0)}")


report("single broker, acks=all, 8 producers x 1 KiB, 8 partitions", "tls-s", "plain", ["ssl", "sasl"],
       {"plain": "PLAINTEXT", "ssl": "SSL", "sasl": "SASL_SSL SCRAM-SHA-512"})
report("3 brokers, RF=3, acks=all, 8 producers x 1 KiB, 8 partitions", "tls-c", "plain", ["tls"],
       {"plain": "plaintext", "tls": "SSL listener + rpc mTLS"})
