"""The fault table with no broker process: argument checks, times counting, narrowing to a
topic and partition, and the error answers built for every API and version it covers."""

from __future__ import annotations

import asyncio

import pytest

from weir.broker import handlers  # noqa: F401  (registers every handler: their versions)
from weir.broker.clock import ManualClock
from weir.broker.dispatcher import HANDLERS, NO_RESPONSE, ClosingError
from weir.broker.fault_errors import ERRORS, WHOLE_REQUEST
from weir.broker.faults import API_KEYS, FaultError, FaultTable, api_name
from weir.broker.log import disk
from weir.protocol.api_keys import ApiKey
from weir.protocol.error_response import error_response
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.headers import RequestHeader
from weir.protocol.messages import BY_KEY, fetch, find_coordinator, init_producer_id, produce

NOT_LEADER = "NOT_LEADER_OR_FOLLOWER"


@pytest.fixture
def table(tmp_path):
    return FaultTable(ManualClock(), tmp_path)


def header(api: ApiKey, version: int) -> RequestHeader:
    return RequestHeader(api_key=api, api_version=version, correlation_id=1, client_id="t")


def produce_request(*topics: tuple[str, list[int]], acks: int = -1):
    return produce.REQUEST(transactional_id=None, acks=acks, timeout_ms=1000, topic_data=[
        produce.TopicData(name=name, partition_data=[produce.PartitionData(index=i, records=None) for i in parts])
        for name, parts in topics])


class Recorder:
    """A handler stand-in: records what it was given, answers every partition with offset 7."""

    def __init__(self):
        self.seen = []

    async def __call__(self, body):
        self.seen.append(body)
        return produce.RESPONSE(responses=[
            produce.TopicResponse(name=t.name, partition_responses=[
                produce.PartitionResponse(index=p.index, base_offset=7) for p in t.partition_data])
            for t in body.topic_data])


def answered(response) -> dict[tuple[str, int], tuple[int, int]]:
    return {(t.name, p.index): (p.error_code, p.base_offset) for t in response.responses for p in t.partition_responses}


@pytest.mark.parametrize("call, message", [
    (lambda t: t.error("Produse", NOT_LEADER), "unknown API 'Produse'"),
    (lambda t: t.error("Produce", "NOT_LEADER"), "unknown Kafka error 'NOT_LEADER'"),
    (lambda t: t.error("Produce", "NONE"), "unknown Kafka error 'NONE'"),
    (lambda t: t.error("Produce", "GROUP_ID_NOT_FOUND"), "Kafka never answers Produce with GROUP_ID_NOT_FOUND"),
    (lambda t: t.error("InitProducerId", "OFFSET_OUT_OF_RANGE"), "never answers InitProducerId"),
    (lambda t: t.error("CreateAcls", "INVALID_REQUEST"), "errors cannot be injected into CreateAcls"),
    (lambda t: t.error("Produce", NOT_LEADER, times=-1), "times must be"),
    (lambda t: t.error("Produce", NOT_LEADER, times=0), "times must be"),
    (lambda t: t.error("Produce", NOT_LEADER, times=True), "times must be"),
    (lambda t: t.error("Produce", NOT_LEADER, partition=0), "give topic= too"),
    (lambda t: t.error("Produce", NOT_LEADER, topic="t", partition=-1), "partition must be"),
    (lambda t: t.error("JoinGroup", "REBALANCE_IN_PROGRESS", topic="t"), "JoinGroup requests name no partitions"),
    (lambda t: t.error("Fetch", "FETCH_SESSION_ID_NOT_FOUND", topic="t"), "answers a whole Fetch request"),
    (lambda t: t.delay("Produce", -1), "seconds must be"),
    (lambda t: t.delay("Produce", float("nan")), "seconds must be"),
    (lambda t: t.delay("Produce", 1, times=-2), "times must be"),
    (lambda t: t.disconnect("Nope"), "unknown API 'Nope'"),
])
def test_bad_use_is_refused_with_a_reason(table, call, message):
    with pytest.raises(FaultError, match=message):
        call(table)
    assert table.armed() == []


def test_api_names_are_kafkas():
    assert API_KEYS["InitProducerId"] == ApiKey.INIT_PRODUCER_ID
    assert API_KEYS["OffsetForLeaderEpoch"] == ApiKey.OFFSET_FOR_LEADER_EPOCH
    assert api_name(ApiKey.API_VERSIONS) == "ApiVersions"


async def test_an_error_fires_times_then_the_handler_answers(table):
    table.error("Produce", NOT_LEADER, times=2)
    handle = Recorder()
    request = produce_request(("t", [0, 1]))
    for _ in range(2):
        response = await table.intercept(header(ApiKey.PRODUCE, 9), request, produce.RESPONSE, handle)
        assert answered(response) == {("t", 0): (Errors.NOT_LEADER_OR_FOLLOWER, -1),
                                      ("t", 1): (Errors.NOT_LEADER_OR_FOLLOWER, -1)}
    assert handle.seen == []  # nothing applied
    response = await table.intercept(header(ApiKey.PRODUCE, 9), request, produce.RESPONSE, handle)
    assert answered(response) == {("t", 0): (0, 7), ("t", 1): (0, 7)}
    assert table.fired() == {"Produce": 2} and table.armed() == []
    table.clear()
    assert table.fired() == {}


async def test_other_apis_pass_untouched(table):
    table.error("InitProducerId", "COORDINATOR_NOT_AVAILABLE")
    handle = Recorder()
    await table.intercept(header(ApiKey.PRODUCE, 9), produce_request(("t", [0])), produce.RESPONSE, handle)
    assert len(handle.seen) == 1 and table.fired() == {} and len(table.armed()) == 1


async def test_narrowed_to_a_partition_the_rest_is_handled(table):
    table.error("Produce", NOT_LEADER, topic="t", partition=1)
    handle = Recorder()
    request = produce_request(("t", [0, 1, 2]), ("u", [1]))
    response = await table.intercept(header(ApiKey.PRODUCE, 9), request, produce.RESPONSE, handle)
    assert answered(response) == {("t", 0): (0, 7), ("t", 2): (0, 7), ("u", 1): (0, 7),
                                  ("t", 1): (Errors.NOT_LEADER_OR_FOLLOWER, -1)}
    (handled,) = handle.seen
    assert [(t.name, [p.index for p in t.partition_data]) for t in handled.topic_data] == [("t", [0, 2]), ("u", [1])]
    assert [p.index for p in request.topic_data[0].partition_data] == [0, 1, 2]  # the request itself is unchanged
    assert produce.RESPONSE.encode(9, response)  # a well-formed answer


async def test_a_narrowed_fault_waits_for_a_request_naming_its_topic(table):
    table.error("Produce", NOT_LEADER, topic="t")
    handle = Recorder()
    await table.intercept(header(ApiKey.PRODUCE, 9), produce_request(("u", [0])), produce.RESPONSE, handle)
    assert table.fired() == {} and len(handle.seen) == 1
    response = await table.intercept(header(ApiKey.PRODUCE, 9), produce_request(("t", [0, 1])), produce.RESPONSE,
                                     handle)
    assert answered(response) == {("t", 0): (Errors.NOT_LEADER_OR_FOLLOWER, -1),
                                  ("t", 1): (Errors.NOT_LEADER_OR_FOLLOWER, -1)}
    assert len(handle.seen) == 1 and table.fired() == {"Produce": 1}


async def test_acks_zero_gets_no_answer_even_an_error(table):
    table.error("Produce", NOT_LEADER)
    response = await table.intercept(header(ApiKey.PRODUCE, 9), produce_request(("t", [0]), acks=0),
                                     produce.RESPONSE, Recorder())
    assert response is NO_RESPONSE


async def test_disconnect_closes_instead_of_answering(table):
    table.disconnect("Produce")
    handle = Recorder()
    with pytest.raises(ClosingError, match="fault injection"):
        await table.intercept(header(ApiKey.PRODUCE, 9), produce_request(("t", [0])), produce.RESPONSE, handle)
    assert handle.seen == [] and table.fired() == {"Produce": 1}


async def test_delay_holds_the_answer_until_the_clock_passes_it(tmp_path):
    clock = ManualClock()
    table = FaultTable(clock, tmp_path)
    table.delay("Produce", 2.0)
    handle = Recorder()
    answer = asyncio.create_task(table.intercept(header(ApiKey.PRODUCE, 9), produce_request(("t", [0])),
                                                 produce.RESPONSE, handle))
    for _ in range(20):
        await asyncio.sleep(0)  # let the task run as far as it can
    assert len(handle.seen) == 1 and not answer.done()  # handled, answer held
    clock.advance(1999)
    for _ in range(20):
        await asyncio.sleep(0)
    assert not answer.done()
    clock.advance(1)
    assert answered(await asyncio.wait_for(answer, 10)) == {("t", 0): (0, 7)}
    assert table.fired() == {"Produce": 1}


async def test_pause_holds_every_request_until_resumed(table):
    table.pause()
    handle = Recorder()
    answer = asyncio.create_task(table.intercept(header(ApiKey.PRODUCE, 9), produce_request(("t", [0])),
                                                 produce.RESPONSE, handle))
    for _ in range(20):
        await asyncio.sleep(0)
    assert handle.seen == [] and not answer.done() and table.paused
    table.resume()
    assert answered(await asyncio.wait_for(answer, 10)) == {("t", 0): (0, 7)}


def test_disk_full_fails_writes_through_the_disk_layer(table, tmp_path):
    target = tmp_path / "topic-0" / "file"
    target.parent.mkdir()
    table.disk_full()
    with pytest.raises(KafkaError) as failed:
        disk.write_file(target, b"data")
    assert failed.value.error == Errors.KAFKA_STORAGE_ERROR and not target.exists()
    table.disk_ok()
    disk.write_file(target, b"data")
    assert target.read_bytes() == b"data"


def served_versions(api: ApiKey) -> range:
    handler = HANDLERS[api]
    return range(handler.min_version, handler.max_version + 1)


def sample_request(api: ApiKey, version: int):
    """A request of every API the table covers, with one element in each array (decoded from bytes
    encoded from defaults, so it is what the dispatcher would hand over)."""
    message = BY_KEY[api].REQUEST
    return message.decode(version, message.encode(version, _filled(message, version)))


def _filled(struct, version):
    from weir.protocol.schema import INT32, STRING, Array, Struct
    values = {}
    for field in struct.fields:
        if not field.present(version):
            continue
        kind = field.type
        if isinstance(kind, Array):
            element = kind.element
            values[field.name] = [_filled(element, version) if isinstance(element, Struct)
                                  else ("a" if element is STRING else 0 if element is INT32 else element.default)]
        elif isinstance(kind, Struct):
            values[field.name] = _filled(kind, version)
        elif kind is STRING:
            values[field.name] = "a"
    return struct(**values)


@pytest.mark.parametrize("api", sorted(ERRORS), ids=api_name)
def test_an_error_answer_for_every_version_encodes_and_carries_the_error(api):
    for version in served_versions(api):
        for error in sorted(ERRORS[api]):
            response_schema = BY_KEY[api].RESPONSE
            whole = error in WHOLE_REQUEST.get(api, ())
            answer = error_response(response_schema, version, sample_request(api, version), error,
                                    whole_request=whole)
            decoded = response_schema.decode(version, response_schema.encode(version, answer))
            assert error in _error_codes(decoded), (api_name(api), version, error.name)


def _error_codes(obj) -> list[int]:
    codes = []
    for slot in getattr(type(obj), "__slots__", ()):
        value = getattr(obj, slot, None)
        if slot == "error_code" or slot.endswith("_error_code"):
            codes.append(value)
        elif isinstance(value, list):
            for item in value:
                codes += _error_codes(item)
    return codes


def test_error_answers_where_kafka_carries_them():
    answer = error_response(init_producer_id.RESPONSE, 4, sample_request(ApiKey.INIT_PRODUCER_ID, 4),
                            Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    assert (answer.error_code, answer.producer_id, answer.producer_epoch) == (53, -1, -1)
    request = sample_request(ApiKey.FETCH, 12)
    per_partition = error_response(fetch.RESPONSE, 12, request, Errors.NOT_LEADER_OR_FOLLOWER)
    (topic,) = per_partition.responses
    (partition,) = topic.partitions
    assert per_partition.error_code == 0 and topic.topic == "a"
    assert (partition.error_code, partition.high_watermark, partition.records) == (6, -1, None)
    session = error_response(fetch.RESPONSE, 12, request, Errors.FETCH_SESSION_ID_NOT_FOUND, whole_request=True)
    assert session.error_code == Errors.FETCH_SESSION_ID_NOT_FOUND and session.responses == []
    keys = find_coordinator.REQUEST(key_type=0, coordinator_keys=["g1", "g2"])
    coordinators = error_response(find_coordinator.RESPONSE, 4, keys, Errors.COORDINATOR_NOT_AVAILABLE)
    assert [(c.key, c.error_code, c.node_id) for c in coordinators.coordinators] == [("g1", 15, -1), ("g2", 15, -1)]
