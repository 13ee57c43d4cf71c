# Helpers shared by the benchmark scripts (sourced, not run).

# cpu_ticks PID: the process's CPU so far (utime+stime), in clock ticks (getconf CLK_TCK).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# epochs PORT…: the sum over partitions of the highest leader epoch (Raft term) the
# brokers' /metrics at these admin ports report: it rises by one per election.
epochs() {
	for port in "$@"; do curl -s 127.0.0.1:"$port"/metrics; done | /usr/bin/python3 -c '
import re, sys
top = {}
for line in sys.stdin:
    m = re.match(r"cairn_partition_leader_epoch\{([^}]*)\} (\S+)", line)
    if m:
        top[m.group(1)] = max(top.get(m.group(1), 0), float(m.group(2)))
print(int(sum(top.values())))'
}
