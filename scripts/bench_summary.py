"""Prints the ratios of docs/benchmarks.md's table from the JSON files scripts/bench.sh wrote.

Each produce run is divided by the mean of the disk runs just before and after it (same
length, same folder); the 3-broker runs by a third of that; consume by the mean of the
loopback TCP runs just before and after it (or, for older passes, the one TCP run of its
round). Files that are missing (a phase not run) are skipped.
"""

import json
import os
import statistics
import sys

out = sys.argv[1]


def load(name):
    path = os.path.join(out, name + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def cpu_per_gb(name, brokers=1):
    """Broker CPU-seconds per produced GB (per broker), from NAME-cpu.txt; None if absent."""
    path = os.path.join(out, name + "-cpu.txt")
    run = load(name)
    if run is None or not os.path.exists(path) or run["bytes"] == 0:
        return None
    with open(path) as f:
        ticks, tick = (int(v) for v in f.read().split())
    return ticks / tick / brokers / (run["bytes"] / 1e9)


def generator_share(name):
    """The load generator's CPU over its run (warm-up included), as a share of the cores."""
    path = os.path.join(out, name + "-gen.txt")
    run = load(name)
    if run is None or not os.path.exists(path):
        return None
    with open(path) as f:
        user, system = (float(v) for v in f.read().split())
    wall = run["duration_s"] + run["parameters"].get("warmup_s", 0)
    return (user + system) / wall / os.cpu_count()


def show(label, ratios, extra=""):
    if ratios:
        print(f"{label}: median {statistics.median(ratios):.2f} (runs {', '.join(f'{r:.2f}' for r in ratios)}){extra}")


single = {"strict": [], "wc": [], "acks1": []}
for r in (1, 2, 3):
    disks = [load(f"s-disk-{r}-{k}") for k in range(4)]
    order = list(single)  # passes before the order was written ran strict, wc, acks1
    order_path = os.path.join(out, f"s-order-{r}.txt")
    if os.path.exists(order_path):
        with open(order_path) as f:
            order = f.read().split()
    for i, mode in enumerate(order):
        run = load(f"s-{mode}-{r}")
        if run is None or disks[i] is None or disks[i + 1] is None:
            continue
        disk = (disks[i]["mb_per_s"] + disks[i + 1]["mb_per_s"]) / 2
        single[mode].append(run["mb_per_s"] / disk)
        print(f"1 broker {mode:6} round {r}: {run['mb_per_s']:7.1f} MB/s, disk {disk:6.1f} MB/s, "
              f"ratio {run['mb_per_s'] / disk:.2f}, p50 {run['p50_ms']:.0f} ms, p99 {run['p99_ms']:.0f} ms, errors {run['errors']}")
show("1 broker acks=all strict ÷ disk (goal >= 0.9)", single["strict"])
cpu = [c for r in (1, 2, 3) if (c := cpu_per_gb(f"s-strict-{r}")) is not None]
show("1 broker acks=all strict, broker CPU-s per produced GB (goal <= 2.0)", cpu)
gen = [g for r in (1, 2, 3) if (g := generator_share(f"s-strict-{r}")) is not None]
show("1 broker acks=all strict, the load generator's share of the cores", gen)
show("1 broker write caching ÷ disk", single["wc"])
show("1 broker acks=1 ÷ disk", single["acks1"])

consume = {1: [], 2: [], 4: []}
for r in (1, 2, 3):
    single_tcp = load(f"c-tcp-{r}")  # passes before the bracketing measured TCP once a round
    prev = load(f"c-tcp-{r}-0")
    for n in consume:
        run, after = load(f"c-raw{n}-{r}"), load(f"c-tcp-{r}-{n}")
        if run is None:
            continue
        if prev is not None and after is not None:
            tcp = (prev["mb_per_s"] + after["mb_per_s"]) / 2
        elif single_tcp is not None:
            tcp = single_tcp["mb_per_s"]
        else:
            continue
        prev = after
        consume[n].append(run["mb_per_s"] / tcp)
        print(f"consume --raw x{n} round {r}: {run['mb_per_s']:7.1f} MB/s, loopback TCP {tcp:7.1f} MB/s, "
              f"errors {run['errors']}")
for n, ratios in consume.items():
    show(f"consume {n} consumer(s) ÷ loopback TCP (goal >= 0.8)", ratios)

cluster = []
for r in (1, 2, 3):
    before, after, run = load(f"r-disk-{r}-0"), load(f"r-disk-{r}-1"), load(f"r-strict-{r}")
    if None in (before, after, run):
        continue
    third = (before["mb_per_s"] + after["mb_per_s"]) / 2 / 3
    cluster.append(run["mb_per_s"] / third)
    print(f"3 brokers RF=3 round {r}: {run['mb_per_s']:6.1f} MB/s, disk÷3 {third:6.1f} MB/s, "
          f"p50 {run['p50_ms']:.0f} ms, p99 {run['p99_ms']:.0f} ms, errors {run['errors']}")
show("3 brokers RF=3 acks=all ÷ (disk ÷ 3) (goal >= 0.6)", cluster)
cpu = [c for r in (1, 2, 3) if (c := cpu_per_gb(f"r-strict-{r}", brokers=3)) is not None]
show("3 brokers RF=3 acks=all, CPU-s per produced GB per broker", cpu)
elections = []
for r in (1, 2, 3):
    path = os.path.join(out, f"r-strict-{r}-epochs.txt")
    if os.path.exists(path):
        with open(path) as f:
            before, after = (int(v) for v in f.read().split())
        elections.append(after - before)
if elections:
    print(f"3 brokers RF=3 acks=all, elections during the saturating runs: {elections} (goal: none)")
for name in ("r-acks1", "r-rate20k", "r-rate40k"):
    run = load(name)
    if run is not None:
        print(f"{name}: {run['mb_per_s']:.1f} MB/s, p50 {run['p50_ms']:.1f} ms, p99 {run['p99_ms']:.1f} ms, "
              f"p99.9 {run['p999_ms']:.1f} ms, max {run['max_ms']:.1f} ms, errors {run['errors']}")

# min.insync.racks 3 against 1, on the benchnet layouts (scripts/bench.sh racks).
tput = []
for r in (1, 2, 3):
    one, three = load(f"racks-flat-tput-{r}-racks1"), load(f"racks-flat-tput-{r}-racks3")
    if one is None or three is None:
        continue
    tput.append(three["mb_per_s"] / one["mb_per_s"])
    print(f"racks round {r}: min.insync.racks=1 {one['mb_per_s']:6.1f} MB/s, =3 {three['mb_per_s']:6.1f} MB/s, "
          f"errors {one['errors']}/{three['errors']}")
show("3 brokers RF=3 acks=all, min.insync.racks=3 ÷ 1", tput)
for layout in ("flat", "delay", "asym", "five"):
    for k in (1, 3):
        run = load(f"racks-{layout}-lat-racks{k}")
        if run is not None:
            print(f"racks {layout:5} min.insync.racks={k}: send→ack p50 {run['p50_ms']:.2f} ms, p99 {run['p99_ms']:.2f} ms, "
                  f"{run['mb_per_s']:.1f} MB/s, errors {run['errors']}")

# A partition move under load (scripts/bench.sh move, test/benchmove): the move's time as a
# ratio of the fdatasync bandwidth measured before and after, and the load's latency during
# the move against the same load as long without one.
move = load("move")
if move is not None:
    disks = [load(name[:-len(".json")]) for name in move["disk_files"]]
    disks = [d["mb_per_s"] for d in disks if d is not None]
    disk = statistics.mean(disks) if disks else None
    print(f"move: {move['size_bytes'] / 2**30:.2f} GiB, disk fdatasync {', '.join(f'{d:.1f}' for d in disks)} MB/s"
          + (f" (mean {disk:.1f})" if disk else ""))
    for m in move["moves"]:
        bound = ""
        if m.get("bound") is not None and move.get("rate_property"):
            bound = f", {move['rate_property']}={m['bound']}" + (" (default)" if m.get("bound_is_default") else "")
        ratio = f", ÷ disk {m['mb_per_s'] / disk:.2f}" if disk else ""
        copy = f", {m['copy_mb_per_s']:.1f} MB/s" if "copy_mb_per_s" in m else ""
        if bound and m.get("bound") not in ("", "0"):
            copy += f" against a bound of {int(m['bound']) / 1e6:.1f} MB/s"
        print(f"move {m['From']} → {m['To']}{bound}: {m['seconds']:.1f} s (copied in {m['copied_seconds']:.1f} s{copy}), "
              f"{m['mb_per_s']:.1f} MB/s{ratio}")
        if "added_disk_bytes" in m:
            print(f"  the added replica: log start {m['added_log_start']}, {m['added_disk_bytes'] / 2**30:.2f} GiB on disk "
                  f"(the first old replica: {m.get('leader_disk_bytes', 0) / 2**30:.2f} GiB)")
        loadavg = m.get("loadavg_1m", [None, None])
        for i, (label, name) in enumerate((("during the move", m["load_file"]), ("without a move ", m["base_file"]))):
            run = load(name[:-len(".json")])
            if run is not None:
                la = f", load average {loadavg[i]:.1f}" if loadavg[i] else ""
                print(f"  load {label}: {run['mb_per_s']:.1f} MB/s over {run['duration_s']:.1f} s, send→ack p50 "
                      f"{run['p50_ms']:.1f} ms, p99 {run['p99_ms']:.1f} ms, max {run['max_ms']:.1f} ms, errors {run['errors']}{la}")
