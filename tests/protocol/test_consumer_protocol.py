import pytest
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata

from weir.protocol.consumer_protocol import (MemberSubscription, decode_assignment, decode_subscription,
                                        encode_assignment, encode_subscription)


def test_subscription_round_trip_at_v3():
    subscription = MemberSubscription(["b", "a"], {"a": [1, 0]}, generation_id=5, user_data=b"\x01", rack_id="r1")
    decoded = decode_subscription(encode_subscription(subscription))
    assert decoded == MemberSubscription(["a", "b"], {"a": [0, 1]}, 5, b"\x01", "r1")


@pytest.mark.parametrize("version", [0, 1])
def test_reads_what_aiokafka_writes(version):
    # aiokafka writes the v0 layout; a v1 reader must also cope with a v1 header and no owned partitions
    metadata = ConsumerProtocolMemberMetadata(0, ["orders", "payments"], b"").encode()
    if version == 1:
        metadata = b"\x00\x01" + metadata[2:] + b"\x00\x00\x00\x00"
    decoded = decode_subscription(metadata)
    assert decoded.topics == ["orders", "payments"] and decoded.generation_id == -1


def test_aiokafka_reads_our_assignment():
    ours = encode_assignment({"orders": [2, 0], "payments": [1]})
    theirs = ConsumerProtocolMemberAssignment.decode(ours)
    assert sorted((t, sorted(p)) for t, p in theirs.assignment) == [("orders", [0, 2]), ("payments", [1])]
    assert decode_assignment(ours) == {"orders": [0, 2], "payments": [1]}
    assert decode_assignment(b"") == {}
