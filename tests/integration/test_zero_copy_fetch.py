"""Zero-copy fetch over localhost: real clients read a large multi-segment topic whole and in
order; pipelined fetches of regions are answered in order; a segment deleted (DeleteRecords)
while its bytes are being sent still arrives whole, and its file is closed afterwards.
(The held-bytes bound with a client that does not read: test_backpressure.py, whose fetches
are sent as regions too.)"""

import os
import socket
import subprocess
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import ClientConnection
from weir.protocol.messages import fetch
from weir.protocol.records import decode_batches
from tests.support.topics import create_topic

VALUE = 1024


def value_of(i):
    return f"{i:010d}".encode().ljust(VALUE, b"x")


def produce(bootstrap, topic, count, partitions=1):
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    failures = []
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value_of(i), partition=i % partitions,
                                 on_delivery=lambda err, _m: err and failures.append(err))
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0 and not failures, failures


def test_confluent_kafka_and_kcat_read_a_large_multi_segment_topic(broker, topic_name):
    count = 60_000  # ~62 MB over eight segments
    create_topic(broker.bootstrap, topic_name, config={"segment.bytes": str(8 << 20)})
    produce(broker.bootstrap, topic_name, count)
    assert len(list((broker.data_dir / f"{topic_name}-0").glob("*.log"))) >= 7

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": topic_name, "enable.auto.commit": False,
                         "fetch.max.bytes": 4 << 20, "max.partition.fetch.bytes": 2 << 20})
    consumer.assign([TopicPartition(topic_name, 0, 0)])
    expected = 0
    deadline = time.monotonic() + 120
    try:
        while expected < count and time.monotonic() < deadline:
            for message in consumer.consume(1000, 1.0):
                assert message.error() is None, message.error()
                assert (message.offset(), message.value()) == (expected, value_of(expected))
                expected += 1
    finally:
        consumer.close()
    assert expected == count

    out = subprocess.run(["kcat", "-b", broker.bootstrap, "-C", "-t", topic_name, "-o", "beginning", "-e", "-q",
                          "-f", "%o %s\n"], capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout == b"".join(b"%d %s\n" % (i, value_of(i)) for i in range(count))


def fetch_request(topic, offsets, max_bytes=1 << 20):
    """One Fetch for partitions 0..n-1 at ``offsets``: one region per partition in the answer."""
    return fetch.REQUEST(max_wait_ms=0, min_bytes=1, max_bytes=len(offsets) * max_bytes, topics=[
        fetch.FetchTopic(topic=topic, partitions=[
            fetch.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=max_bytes)
            for p, o in enumerate(offsets)])])


def receive(sock, codec, count, timeout=60.0):
    sock.settimeout(timeout)
    got = []
    while len(got) < count:
        data = sock.recv(1 << 20)
        assert data, f"connection closed after {len(got)} responses"
        got += codec.receive_data(data)  # checks correlation ids: responses in request order
    return got


def test_pipelined_fetches_of_regions_are_answered_in_order(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, partitions=3, config={"segment.bytes": str(1 << 20)})
    produce(broker.bootstrap, topic_name, 9_000, partitions=3)
    codec = ClientConnection("pipelined")
    requests = [[(r * 97 + p * 31) % 3000 for p in range(3)] for r in range(60)]
    with socket.create_connection(("127.0.0.1", broker.port)) as sock:
        sock.sendall(b"".join(codec.send_request(ApiKey.FETCH, 12, fetch_request(topic_name, offsets, 2 << 20))
                              for offsets in requests))
        responses = receive(sock, codec, len(requests))
    for offsets, response in zip(requests, responses, strict=False):
        for answer, offset in zip(response.responses[0].partitions, offsets, strict=False):
            assert answer.error_code == 0
            batches = list(decode_batches(answer.records))
            first_batch = batches[0][0]
            assert first_batch.base_offset <= offset <= first_batch.last_offset
            values = [record.value for _header, records in batches for record in records]
            assert all(v == value_of(int(v[:10])) and int(v[:10]) % 3 == answer.partition_index for v in values)
            # partition p holds the messages i with i % 3 == p, at offset i // 3
            assert int(values[offset - first_batch.base_offset][:10]) == offset * 3 + answer.partition_index


def open_fds_to(pid, path_part):
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:
            continue
        if path_part in target:
            found.append(target)
    return found


def test_a_segment_deleted_while_its_region_is_being_sent_arrives_whole(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, config={"segment.bytes": str(24 << 20)})
    produce(broker.bootstrap, topic_name, 40_000)  # ~41 MB: two segments
    directory = broker.data_dir / f"{topic_name}-0"
    first_segment = directory / "00000000000000000000.log"
    assert len(list(directory.glob("*.log"))) == 2
    codec = ClientConnection("slow")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 10)  # far below the 16 MiB response
    sock.connect(("127.0.0.1", broker.port))
    with sock:
        sock.sendall(codec.send_request(ApiKey.FETCH, 12, fetch_request(topic_name, [0], 16 << 20)))
        # The broker is sending the first segment's bytes and the client is not reading: delete it.
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        [done] = admin.delete_records([TopicPartition(topic_name, 0, 30_000)]).values()
        assert done.result(30).low_watermark == 30_000
        assert not first_segment.exists()
        assert open_fds_to(broker.process.pid, str(first_segment)), "the pending send keeps the file open"
        [response] = receive(sock, codec, 1)
    answer = response.responses[0].partitions[0]
    values = [record.value for _header, records in decode_batches(answer.records) for record in records]
    assert len(answer.records) > 15 << 20
    assert values == [value_of(i) for i in range(len(values))]
    deadline = time.monotonic() + 10
    while open_fds_to(broker.process.pid, str(first_segment)):
        assert time.monotonic() < deadline, "the deleted segment's file stays open after its send"
        time.sleep(0.05)
