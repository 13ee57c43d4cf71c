#!/usr/bin/python3
"""confluent-kafka-python (librdkafka) helper for Cairn's end-to-end tests.

  confluent_client.py produce BOOTSTRAP TOPIC N
      Produces N records (key k-i, value v-i) with acks=all and idempotence on, and prints a
      JSON object {"delivered": [{"partition", "offset", "key", "value"}...], "errors": [...]}.
  confluent_client.py consume BOOTSTRAP TOPIC N TIMEOUT_S
      Assigns every partition of TOPIC from offset 0 (no group commits), reads until N records
      arrived and every partition reported end of partition, and prints
      {"records": [...], "errors": [...]}.

Exit status 0 only when everything asked for happened.
"""
import json
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition


def produce(bootstrap, topic, n):
    delivered, errors = [], []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))
            return
        delivered.append({
            "partition": msg.partition(),
            "offset": msg.offset(),
            "key": msg.key().decode(),
            "value": msg.value().decode(),
        })

    p = Producer({
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 5,
        "message.timeout.ms": 30000,
        "error_cb": lambda e: errors.append("error_cb: " + str(e)) if e.fatal() else None,
    })
    for i in range(n):
        while True:
            try:
                p.produce(topic, key="k-%d" % i, value="v-%d" % i, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    left = p.flush(60)
    if left:
        errors.append("%d messages not delivered after flush" % left)
    json.dump({"delivered": delivered, "errors": errors}, sys.stdout)
    return 0 if not errors and len(delivered) == n else 1


def consume(bootstrap, topic, n, timeout_s):
    errors = []
    c = Consumer({
        "bootstrap.servers": bootstrap,
        # Consumer needs a group id, but with assign() and no commits the group
        # coordinator is never asked for anything this test depends on.
        "group.id": "cairn-e2e-never-committed",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 200,
        "enable.partition.eof": True,
    })
    md = c.list_topics(topic, timeout=15)
    tmd = md.topics.get(topic)
    if tmd is None or tmd.error is not None:
        json.dump({"records": [], "errors": ["metadata for %s: %s" % (topic, tmd and tmd.error)]}, sys.stdout)
        return 1
    parts = sorted(tmd.partitions)
    c.assign([TopicPartition(topic, p, 0) for p in parts])
    records = []
    at_eof = set()
    deadline = time.time() + timeout_s
    # Read until N records arrived and every partition reported its end (or time is up).
    while (len(records) < n or len(at_eof) < len(parts)) and time.time() < deadline:
        msg = c.poll(0.5)
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
    c.close()
    if len(records) < n:
        errors.append("read %d of %d records within %ss" % (len(records), n, timeout_s))
    if len(at_eof) < len(parts):
        errors.append("partitions %s never reported end of partition" % sorted(set(parts) - at_eof))
    json.dump({"records": records, "errors": errors}, sys.stdout)
    return 0 if len(records) >= n and not errors else 1


def main(argv):
    if len(argv) >= 4 and argv[1] == "produce":
        return produce(argv[2], argv[3], int(argv[4]))
    if len(argv) >= 6 and argv[1] == "consume":
        return consume(argv[2], argv[3], int(argv[4]), float(argv[5]))
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
