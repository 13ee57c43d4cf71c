#!/usr/bin/python3
"""kafka-python consumer group member for Cairn's end-to-end tests.

  group_consumer_kafka_python.py BOOTSTRAP TOPIC GROUP N STOP TIMEOUT_S
      KafkaConsumer(group_id=GROUP, enable_auto_commit=False, auto_offset_reset='earliest',
      session_timeout_ms=6000) subscribes to TOPIC and reads records one at a time:
        STOP=count  stops as soon as N records were read;
        STOP=end    stops once N records were read and the position of every assigned
                    partition reached its end offset.
      Then it commits the consumed positions (commit()), reads them back (committed()),
      closes the consumer (which leaves the group) and prints
      {"records": [{"partition", "offset", "key", "value"}...], "assigned": [p...],
       "committed": {"p": offset}, "errors": [...]}.

Exit status 0 only when everything asked for happened.
"""
import json
import sys
import time
import traceback

from kafka import KafkaConsumer


def run(bootstrap, topic, group, n, stop, timeout_s):
    errors, records = [], []
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                      client_id="cairn-e2e-kafka-python-group", enable_auto_commit=False,
                      auto_offset_reset="earliest", session_timeout_ms=6000,
                      heartbeat_interval_ms=1000, max_poll_interval_ms=10000,
                      fetch_max_wait_ms=200, request_timeout_ms=30000)
    c.subscribe([topic])
    deadline = time.time() + timeout_s

    def at_end():
        tps = c.assignment()
        if not tps:
            return False
        ends = c.end_offsets(list(tps))
        return all(c.position(tp) >= ends[tp] for tp in tps)

    finished = False
    while time.time() < deadline:
        if len(records) >= n and (stop == "count" or at_end()):
            finished = True
            break
        batch = c.poll(timeout_ms=200, max_records=1)
        for _tp, msgs in batch.items():
            for m in msgs:
                records.append({"partition": m.partition, "offset": m.offset,
                                "key": m.key.decode() if m.key is not None else None,
                                "value": m.value.decode()})
    assigned = sorted(tp.partition for tp in c.assignment())
    if not finished:
        errors.append("read %d of %d records (stop=%s, assigned %s) within %ss"
                      % (len(records), n, stop, assigned, timeout_s))
    committed = {}
    if records:
        try:
            c.commit()
            for tp in c.assignment():
                off = c.committed(tp)
                if off is not None:
                    committed[str(tp.partition)] = off
        except Exception as e:  # noqa: BLE001 - report every failure kind
            errors.append("commit: %r" % e)
    c.close(autocommit=False)
    json.dump({"records": records, "assigned": assigned, "committed": committed,
               "errors": errors}, sys.stdout)
    return 0 if finished and not errors else 1


def main(argv):
    try:
        if len(argv) == 7 and argv[5] in ("count", "end"):
            return run(argv[1], argv[2], argv[3], int(argv[4]), argv[5], float(argv[6]))
    except Exception:  # noqa: BLE001 - the Go test shows the traceback
        traceback.print_exc()
        return 1
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
