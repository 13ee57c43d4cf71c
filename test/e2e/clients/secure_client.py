#!/usr/bin/python3
"""SASL and TLS client helper (confluent-kafka-python or kafka-python) for Cairn's
end-to-end tests.

  secure_client.py LIB produce SECURITY BOOTSTRAP TOPIC N
      Produces N records (key k-i, value v-i, acks=all) and prints
      {"delivered": [{"partition", "offset", "key", "value"}...], "errors": [...]}.
  secure_client.py LIB group SECURITY BOOTSTRAP TOPIC GROUP N TIMEOUT_S
      Subscribes to TOPIC in consumer group GROUP from the earliest offset, reads N records,
      commits them, closes and prints {"records": [...], "errors": [...]}.
  secure_client.py LIB probe SECURITY BOOTSTRAP TOPIC TIMEOUT_S
      Tries to produce one record (no idempotence, no retries) and prints every error the
      client reported as {"delivered": [...], "errors": [...]}; for the tests of refusals.

LIB is "confluent" or "kafka-python". SECURITY is a JSON object: {"protocol":
"SASL_SSL"|"SSL"|..., "mechanism", "username", "password", "ca", "cert", "key"}, each
optional. Exit status 0 only when everything asked for happened.
"""
import json
import sys
import time
import traceback


def confluent_config(sec, bootstrap):
    cfg = {"bootstrap.servers": bootstrap, "security.protocol": sec.get("protocol", "PLAINTEXT")}
    for ours, theirs in (("mechanism", "sasl.mechanisms"), ("username", "sasl.username"),
                         ("password", "sasl.password"), ("ca", "ssl.ca.location"),
                         ("cert", "ssl.certificate.location"), ("key", "ssl.key.location")):
        if ours in sec:
            cfg[theirs] = sec[ours]
    return cfg


def kafka_python_config(sec, bootstrap):
    cfg = {"bootstrap_servers": bootstrap, "security_protocol": sec.get("protocol", "PLAINTEXT")}
    for ours, theirs in (("mechanism", "sasl_mechanism"), ("username", "sasl_plain_username"),
                         ("password", "sasl_plain_password"), ("ca", "ssl_cafile"),
                         ("cert", "ssl_certfile"), ("key", "ssl_keyfile")):
        if ours in sec:
            cfg[theirs] = sec[ours]
    return cfg


def confluent_produce(sec, bootstrap, topic, n, probe=False, timeout_s=30):
    from confluent_kafka import Producer
    delivered, errors = [], []

    def on_delivery(err, msg):
        if err is not None:
            errors.append("delivery: %s: %s" % (err.name(), err.str()))
            return
        delivered.append({"partition": msg.partition(), "offset": msg.offset(),
                          "key": msg.key().decode(), "value": msg.value().decode()})

    cfg = confluent_config(sec, bootstrap)
    cfg.update({"acks": "all", "linger.ms": 5, "message.timeout.ms": int(timeout_s * 1000),
                "error_cb": lambda e: errors.append("error_cb: %s: %s" % (e.name(), e.str()))})
    if probe:
        cfg.update({"enable.idempotence": False, "retries": 0})
    else:
        cfg["enable.idempotence"] = True
    p = Producer(cfg)
    for i in range(n):
        p.produce(topic, key="k-%d" % i, value="v-%d" % i, on_delivery=on_delivery)
        p.poll(0)
    left = p.flush(timeout_s + 10)
    if left:
        errors.append("%d messages not delivered after flush" % left)
    return delivered, errors


def confluent_group(sec, bootstrap, topic, group, n, timeout_s):
    from confluent_kafka import Consumer
    errors, records = [], []
    cfg = confluent_config(sec, bootstrap)
    cfg.update({"group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest",
                "session.timeout.ms": 6000, "fetch.wait.max.ms": 200})
    c = Consumer(cfg)
    c.subscribe([topic])
    deadline = time.time() + timeout_s
    while len(records) < n and time.time() < deadline:
        msg = c.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            errors.append(str(msg.error()))
            continue
        records.append({"partition": msg.partition(), "offset": msg.offset(),
                        "key": msg.key().decode(), "value": msg.value().decode()})
    if records:
        c.commit(asynchronous=False)
    c.close()
    return records, errors


def kafka_python_produce(sec, bootstrap, topic, n, probe=False, timeout_s=30):
    from kafka import KafkaProducer
    delivered, errors = [], []
    try:
        p = KafkaProducer(acks="all", retries=0 if probe else 5, linger_ms=5,
                          request_timeout_ms=int(timeout_s * 1000), max_block_ms=int(timeout_s * 1000),
                          **kafka_python_config(sec, bootstrap))
    except Exception as e:  # noqa: BLE001 - the test asserts on the refusal
        return delivered, ["constructor: %s: %s" % (type(e).__name__, e)]
    futures = []
    for i in range(n):
        try:
            futures.append((i, p.send(topic, key=b"k-%d" % i, value=b"v-%d" % i)))
        except Exception as e:  # noqa: BLE001
            errors.append("send %d: %s: %s" % (i, type(e).__name__, e))
    p.flush(timeout_s)
    for i, f in futures:
        try:
            md = f.get(timeout=timeout_s)
            delivered.append({"partition": md.partition, "offset": md.offset,
                              "key": "k-%d" % i, "value": "v-%d" % i})
        except Exception as e:  # noqa: BLE001
            errors.append("record %d: %s: %s" % (i, type(e).__name__, e))
    p.close(10)
    return delivered, errors


def kafka_python_group(sec, bootstrap, topic, group, n, timeout_s):
    from kafka import KafkaConsumer
    errors, records = [], []
    c = KafkaConsumer(topic, group_id=group, enable_auto_commit=False, auto_offset_reset="earliest",
                      session_timeout_ms=6000, heartbeat_interval_ms=1000, fetch_max_wait_ms=200,
                      request_timeout_ms=30000, **kafka_python_config(sec, bootstrap))
    deadline = time.time() + timeout_s
    while len(records) < n and time.time() < deadline:
        for _tp, msgs in c.poll(timeout_ms=500).items():
            for m in msgs:
                records.append({"partition": m.partition, "offset": m.offset,
                                "key": m.key.decode(), "value": m.value.decode()})
    if records:
        c.commit()
    c.close()
    return records, errors


def main(argv):
    if len(argv) < 4 or argv[1] not in ("confluent", "kafka-python"):
        sys.stderr.write(__doc__)
        return 2
    lib, cmd, sec, args = argv[1], argv[2], json.loads(argv[3]), argv[4:]
    produce = confluent_produce if lib == "confluent" else kafka_python_produce
    group = confluent_group if lib == "confluent" else kafka_python_group
    try:
        if cmd == "produce" and len(args) == 3:
            n = int(args[2])
            delivered, errors = produce(sec, args[0], args[1], n)
            json.dump({"delivered": delivered, "errors": errors}, sys.stdout)
            return 0 if not errors and len(delivered) == n else 1
        if cmd == "group" and len(args) == 5:
            n = int(args[3])
            records, errors = group(sec, args[0], args[1], args[2], n, float(args[4]))
            if len(records) < n:
                errors.append("read %d of %d records within %ss" % (len(records), n, args[4]))
            json.dump({"records": records, "errors": errors}, sys.stdout)
            return 0 if not errors else 1
        if cmd == "probe" and len(args) == 3:
            delivered, errors = produce(sec, args[0], args[1], 1, probe=True, timeout_s=float(args[2]))
            json.dump({"delivered": delivered, "errors": errors}, sys.stdout)
            return 0
    except Exception:  # noqa: BLE001 - the Go test shows the traceback
        traceback.print_exc()
        return 1
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
