"""librdkafka (confluent-kafka-python) transactions against Cairn.

usage: txn_confluent.py BOOTSTRAP TOPIC COMMITTED ABORTED

A transactional producer commits one transaction of COMMITTED records ("c-<i>") and
aborts one of ABORTED records ("a-<i>"), then commits a last record ("end"); a
read_committed and a read_uncommitted consumer read the topic from the start until they see
"end". Prints JSON: {"read_committed": [...values], "read_uncommitted": [...values]}.
"""
import json
import sys
import time

from confluent_kafka import Consumer, Producer

bootstrap, topic, committed, aborted = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "librdkafka-txn", "transaction.timeout.ms": 60000})
p.init_transactions(60)


def transaction(values, commit):
    p.begin_transaction()
    for v in values:
        p.produce(topic, value=v.encode())
    if commit:
        p.commit_transaction(60)
    else:
        p.flush(60)
        p.abort_transaction(60)


transaction(["c-%d" % i for i in range(committed)], True)
transaction(["a-%d" % i for i in range(aborted)], False)
transaction(["end"], True)


def read(isolation):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-reader-" + isolation,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "isolation.level": isolation})
    c.subscribe([topic])
    got = []
    deadline = time.time() + 60
    while time.time() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        v = m.value().decode()
        got.append(v)
        if v == "end":
            break
    c.close()
    return got


print(json.dumps({"read_committed": read("read_committed"), "read_uncommitted": read("read_uncommitted")}))
