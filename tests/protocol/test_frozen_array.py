"""FrozenArray: an array shared by many responses is encoded once per field and version, to the bytes
a plain list gives."""

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from weir.protocol.messages import metadata
from weir.protocol.schema import FrozenArray

from .strategies import instances

RESPONSE = metadata.RESPONSE
VERSIONS = range(0, 13)  # 0-8 classic, 9-12 flexible: both array encodings


def frozen(response):
    """A copy of ``response`` whose topics' partition arrays are FrozenArrays."""
    shared = copy.deepcopy(response)
    for topic in shared.topics or ():
        topic.partitions = FrozenArray(topic.partitions)
    return shared


@settings(max_examples=60, deadline=None)
@given(data=st.data(), version=st.sampled_from(VERSIONS))
def test_encodes_as_a_plain_list_first_and_from_the_cache_after(data, version):
    response = data.draw(instances(RESPONSE, version))
    shared = frozen(response)
    plain = RESPONSE.encode(version, response)
    assert RESPONSE.encode(version, shared) == plain
    assert RESPONSE.encode(version, shared) == plain  # the second time from the cached bytes
    assert RESPONSE.decode(version, plain) == RESPONSE.decode(version, RESPONSE.encode(version, shared))


def test_each_version_keeps_encodings_of_its_own():
    partitions = FrozenArray(metadata.Partition(error_code=0, partition_index=index, leader_id=1, leader_epoch=0,
                                                replica_nodes=[1], isr_nodes=[1]) for index in range(3))
    topic = metadata.Topic(error_code=0, name="t", topic_id=b"\x01" * 16, is_internal=False, partitions=partitions)
    answers = {version: RESPONSE.encode(version, RESPONSE(brokers=[], cluster_id="c", controller_id=1,
                                                          topics=[topic]))
               for version in (8, 9, 12, 8)}
    assert len(partitions.encodings) == 3  # v8 (INT32 counts), v9 and v12 (compact, tagged fields)
    for version, encoded in answers.items():
        decoded = RESPONSE.decode(version, encoded)
        assert [p.partition_index for p in decoded.topics[0].partitions] == [0, 1, 2]
        assert decoded.topics[0].partitions[2].isr_nodes == [1]


@given(st.lists(st.integers(-2**31, 2**31 - 1), max_size=5))
def test_a_frozen_array_is_still_a_list(values):
    array = FrozenArray(values)
    assert array == values and isinstance(array, list) and array.encodings == {}
