# Helpers shared by the benchmark scripts (sourced, not run).

# listening PORT: whether something listens on 127.0.0.1:PORT. A connect is no test: the
# benchmarks' ports lie in the kernel's ephemeral range, and a connect retried while nothing
# listens there in time picks that port as its own source and connects to itself (a restart
# of 50,000 replicas once read as "port open after 36 s" that way, minutes early).
listening() { [ -n "$(ss -Hltn "sport = :$1")" ]; }

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
