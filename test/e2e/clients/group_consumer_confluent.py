#!/usr/bin/python3
"""confluent-kafka-python (librdkafka) consumer group member for Cairn's end-to-end tests.

  group_consumer_confluent.py BOOTSTRAP TOPIC GROUP N STOP TIMEOUT_S
      Subscribes to TOPIC as a member of consumer group GROUP (enable.auto.commit off,
      auto.offset.reset earliest, session.timeout.ms 6000) and reads records one at a time:
        STOP=count  stops as soon as N records were read;
        STOP=end    stops once N records were read and every assigned partition reported
                    its end.
      Then it commits the consumed positions synchronously, closes the consumer (which
      leaves the group) and prints
      {"records": [{"partition", "offset", "key", "value"}...], "assigned": [p...],
       "committed": {"p": offset}, "errors": [...]}.

Exit status 0 only when everything asked for happened.
"""
import json
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException


def run(bootstrap, topic, group, n, stop, timeout_s):
    errors, records = [], []
    assigned, at_eof = set(), set()

    def on_assign(_consumer, partitions):
        for tp in partitions:
            assigned.add(tp.partition)

    def on_revoke(_consumer, partitions):
        for tp in partitions:
            assigned.discard(tp.partition)
            at_eof.discard(tp.partition)

    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": "cairn-e2e-confluent-group",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        "max.poll.interval.ms": 10000,
        "fetch.wait.max.ms": 200,
        "enable.partition.eof": True,
        "error_cb": lambda e: errors.append("error_cb: " + str(e)),
    })
    c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    deadline = time.time() + timeout_s

    def done():
        if len(records) < n:
            return False
        if stop == "count":
            return True
        return bool(assigned) and at_eof >= assigned

    while not done() and time.time() < deadline:
        msg = c.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                at_eof.add(msg.partition())
            else:
                errors.append(str(msg.error()))
            continue
        at_eof.discard(msg.partition())
        records.append({
            "partition": msg.partition(),
            "offset": msg.offset(),
            "key": msg.key().decode() if msg.key() is not None else None,
            "value": msg.value().decode(),
        })
    finished = done()
    if not finished:
        errors.append("read %d of %d records (stop=%s, assigned %s, at end %s) within %ss"
                      % (len(records), n, stop, sorted(assigned), sorted(at_eof), timeout_s))
    committed = {}
    if records:
        try:
            for tp in c.commit(asynchronous=False) or []:
                if tp.error is not None:
                    errors.append("commit %s[%d]: %s" % (tp.topic, tp.partition, tp.error))
                elif tp.offset >= 0:
                    committed[str(tp.partition)] = tp.offset
        except KafkaException as e:
            errors.append("commit: %s" % e)
    final_assigned = sorted(assigned)
    c.close()
    json.dump({"records": records, "assigned": final_assigned, "committed": committed,
               "errors": errors}, sys.stdout)
    return 0 if finished and not errors else 1


def main(argv):
    if len(argv) == 7 and argv[5] in ("count", "end"):
        return run(argv[1], argv[2], argv[3], int(argv[4]), argv[5], float(argv[6]))
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
