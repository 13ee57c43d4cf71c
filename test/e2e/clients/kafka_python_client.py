#!/usr/bin/python3
"""kafka-python helper for Cairn's end-to-end tests.

  kafka_python_client.py produce BOOTSTRAP TOPIC N
      KafkaProducer(acks='all') sends N records (key k-i, value v-i) and prints
      {"delivered": [{"partition", "offset", "key", "value"}...], "errors": [...]}.
  kafka_python_client.py consume BOOTSTRAP TOPIC N TIMEOUT_S
      KafkaConsumer(group_id=None) assigns every partition, seeks to the beginning and prints
      the first N records as {"records": [...], "errors": [...]}.
  kafka_python_client.py create-topic BOOTSTRAP TOPIC PARTITIONS
  kafka_python_client.py delete-topic BOOTSTRAP TOPIC
      KafkaAdminClient create_topics / delete_topics; prints {"result": ..., "errors": [...]}.

Exit status 0 only when everything asked for happened.
"""
import json
import sys
import time
import traceback

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic


def produce(bootstrap, topic, n):
    delivered, errors = [], []
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=5, linger_ms=5,
                      request_timeout_ms=30000)
    futures = [(i, p.send(topic, key=b"k-%d" % i, value=b"v-%d" % i)) for i in range(n)]
    p.flush(60)
    for i, f in futures:
        try:
            md = f.get(timeout=30)
            delivered.append({"partition": md.partition, "offset": md.offset,
                              "key": "k-%d" % i, "value": "v-%d" % i})
        except Exception as e:  # noqa: BLE001 - report every failure kind
            errors.append("record %d: %r" % (i, e))
    p.close(10)
    json.dump({"delivered": delivered, "errors": errors}, sys.stdout)
    return 0 if not errors else 1


def consume(bootstrap, topic, n, timeout_s):
    errors = []
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                      auto_offset_reset="earliest", fetch_max_wait_ms=200,
                      request_timeout_ms=30000)
    deadline = time.time() + timeout_s
    parts = None
    while parts is None and time.time() < deadline:
        parts = c.partitions_for_topic(topic)
        if parts is None:
            time.sleep(0.1)
    if not parts:
        json.dump({"records": [], "errors": ["no partitions known for %s" % topic]}, sys.stdout)
        return 1
    tps = [TopicPartition(topic, p) for p in sorted(parts)]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    records = []
    while len(records) < n and time.time() < deadline:
        batch = c.poll(timeout_ms=500)
        for _tp, msgs in batch.items():
            for m in msgs:
                records.append({"partition": m.partition, "offset": m.offset,
                                "key": m.key.decode() if m.key is not None else None,
                                "value": m.value.decode()})
    c.close()
    if len(records) < n:
        errors.append("read %d of %d records within %ss" % (len(records), n, timeout_s))
    json.dump({"records": records, "errors": errors}, sys.stdout)
    return 0 if not errors else 1


def admin(bootstrap):
    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)


def create_topic(bootstrap, topic, partitions):
    a = admin(bootstrap)
    resp = a.create_topics([NewTopic(name=topic, num_partitions=partitions, replication_factor=1)],
                           timeout_ms=15000)
    errs = [list(t) for t in getattr(resp, "topic_errors", [])]
    a.close()
    json.dump({"result": errs, "errors": [e for e in errs if e[1] != 0]}, sys.stdout)
    return 0 if all(e[1] == 0 for e in errs) and errs else 1


def delete_topic(bootstrap, topic):
    a = admin(bootstrap)
    resp = a.delete_topics([topic], timeout_ms=15000)
    errs = [list(t) for t in getattr(resp, "topic_error_codes", [])]
    a.close()
    json.dump({"result": errs, "errors": [e for e in errs if e[1] != 0]}, sys.stdout)
    return 0 if all(e[1] == 0 for e in errs) and errs else 1


def main(argv):
    try:
        cmd = argv[1] if len(argv) > 1 else ""
        if cmd == "produce" and len(argv) == 5:
            return produce(argv[2], argv[3], int(argv[4]))
        if cmd == "consume" and len(argv) == 6:
            return consume(argv[2], argv[3], int(argv[4]), float(argv[5]))
        if cmd == "create-topic" and len(argv) == 5:
            return create_topic(argv[2], argv[3], int(argv[4]))
        if cmd == "delete-topic" and len(argv) == 4:
            return delete_topic(argv[2], argv[3])
    except Exception:  # noqa: BLE001 - the Go test shows the traceback
        traceback.print_exc()
        return 1
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
