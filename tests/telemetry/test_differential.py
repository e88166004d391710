"""KIP-714 on the wire, on Weir and on Apache Kafka 4.4.0 (the session's shared pair): the same
requests, the same answers.

Subscriptions (CLIENT_METRICS config resources) with Kafka's errors; DescribeConfigs and
ListConfigResources of them; GetTelemetrySubscriptions without a subscription, with one, after it
changed and after it went; PushTelemetry with a stale subscription id, too large, too early, an
unknown compression type, a zero client instance id, after a terminating push. Every scenario's
subscription selects only its own client id (``match``), so no other client of the session is
asked to push. Intervals are long (2 min and more), so no answer depends on how fast this
machine is.

One deliberate difference: Kafka without a ClientTelemetryReceiver plugin leaves keys 71 and 72
out of ApiVersions (clients then never push); Weir receives the metrics itself and advertises them.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import api_versions
from weir.protocol.messages import incremental_alter_configs as alter

from .wire import (CLIENT_METRICS, ZERO, connect, describe_configs, get_subscription, list_resources, otlp_payload,
                   push_metrics, set_configs, unique)

LONG = 240_000  # below the 5-minute default: a client gets the smallest interval of the default and its subscriptions
DEFAULT_MAX_BYTES = 1_048_576  # telemetry.max.bytes


def _shape(answer) -> tuple:
    """What a GetTelemetrySubscriptions answer says, without the random ids."""
    return (answer.error_code, answer.client_instance_id != ZERO, sorted(answer.requested_metrics),
            answer.push_interval_ms, list(answer.accepted_compression_types), answer.telemetry_max_bytes,
            bool(answer.delta_temporality))


async def _fresh_subscription(connection, interval: int, timeout: float = 30.0):
    """A new client instance's subscription once it has ``interval``: Kafka applies a config change
    when its metadata reaches the broker, a moment after IncrementalAlterConfigs is answered."""
    deadline = time.monotonic() + timeout
    while True:
        answer = await get_subscription(connection)
        if answer.push_interval_ms == interval or time.monotonic() > deadline:
            return answer
        await asyncio.sleep(0.05)  # poll interval of a deadline-bounded wait


def _both(kafka_broker, weir_process, scenario):
    kafka = asyncio.run(scenario(kafka_broker))
    weir = asyncio.run(scenario(weir_process))
    assert weir == kafka
    return weir


def test_api_versions_advertise_telemetry_only_on_weir(kafka_broker, weir_process):
    async def advertised(broker):
        connection = await connect(broker, "telemetry-versions")
        try:
            answer = await connection.request(ApiKey.API_VERSIONS, 3, api_versions.REQUEST(
                client_software_name="weir-tests", client_software_version="1"))
        finally:
            await connection.close()
        return {(k.api_key, k.min_version, k.max_version) for k in answer.api_keys if k.api_key in (71, 72, 74)}
    assert asyncio.run(advertised(kafka_broker)) == {(74, 0, 1)}  # no receiver plugin: no 71, 72
    assert asyncio.run(advertised(weir_process)) == {(71, 0, 0), (72, 0, 0), (74, 0, 1)}


def test_subscription_configs_and_their_errors(kafka_broker, weir_process):
    name, other = unique("tel-configs"), unique("tel-gone")

    async def scenario(broker):
        connection = await connect(broker, "telemetry-configs")
        try:
            answers = [
                await set_configs(connection, name,
                                  ("metrics", "org.apache.kafka.producer., org.apache.kafka.consumer."),
                                  ("interval.ms", "1800000"), ("match", f"client_id={name}, client_software_name = x")),
                await set_configs(connection, name, ("interval.ms", "50")),
                await set_configs(connection, name, ("interval.ms", "3600001")),
                await set_configs(connection, name, ("interval.ms", "abc")),
                await set_configs(connection, name, ("bogus", "1")),
                await set_configs(connection, name, ("match", "client_id=a=b")),
                await set_configs(connection, name, ("match", "nope=x")),
                await set_configs(connection, name, ("match", "client_id=[")),
                await set_configs(connection, name, ("match", "client_id=")),
                await set_configs(connection, "", ("interval.ms", "1000")),
                await set_configs(connection, name, ("metrics", "more"), op=alter.APPEND),
                await set_configs(connection, other, ("metrics", "x")),
                await set_configs(connection, other, ("metrics", None), op=alter.DELETE),
            ]
            described = [await describe_configs(connection, n) for n in (name, other, "")]
            listed = [(code, {(n, t) for n, t in found if n in (name, other)})
                      for code, found in [await list_resources(connection, 1, [CLIENT_METRICS]),
                                          await list_resources(connection, 0, []),
                                          await list_resources(connection, 1, [99])]]
            return answers, described, listed
        finally:
            await connection.close()
    answers, described, listed = _both(kafka_broker, weir_process, scenario)
    assert answers[0] == (Errors.NONE, None)
    assert [code for code, _ in answers[1:]] == [Errors.INVALID_REQUEST, Errors.INVALID_REQUEST, Errors.INVALID_CONFIG,
                                                  Errors.INVALID_REQUEST] + [Errors.INVALID_CONFIG] * 4 + [
        Errors.INVALID_REQUEST, Errors.INVALID_CONFIG, Errors.NONE, Errors.NONE]
    assert [entry[:2] for entry in described[0][2]] == [
        ("interval.ms", "1800000"), ("match", f"client_id={name},client_software_name = x"),
        ("metrics", "org.apache.kafka.producer.,org.apache.kafka.consumer.")]
    assert [entry[:2] for entry in described[1][2]] == [("interval.ms", "300000"), ("match", ""), ("metrics", "")]
    assert described[2][0] == Errors.INVALID_REQUEST
    assert listed == [(0, {(name, CLIENT_METRICS)}), (0, {(name, 0)}), (Errors.UNSUPPORTED_VERSION, set())]


def test_subscriptions_without_a_match(kafka_broker, weir_process):
    client_id = unique("tel-alone")

    async def scenario(broker):
        connection = await connect(broker, client_id)
        try:
            first = await get_subscription(connection)
            instance = first.client_instance_id
            again = await get_subscription(connection, instance)
            steps = [
                await push_metrics(connection, instance, first.subscription_id, otlp_payload()),  # right after a Get
                await push_metrics(connection, instance, first.subscription_id, otlp_payload()),  # too early
                await push_metrics(connection, ZERO, first.subscription_id),
                await push_metrics(connection, instance, first.subscription_id, terminating=True),  # always taken
                await push_metrics(connection, instance, first.subscription_id),  # after terminating
            ]
            return _shape(first), again.error_code, steps
        finally:
            await connection.close()
    first, again, steps = _both(kafka_broker, weir_process, scenario)
    assert first == (Errors.NONE, True, [], 300_000, [4, 3, 1, 2], DEFAULT_MAX_BYTES, True)
    assert again == Errors.THROTTLING_QUOTA_EXCEEDED
    assert steps == [Errors.NONE, Errors.THROTTLING_QUOTA_EXCEEDED, Errors.INVALID_REQUEST, Errors.NONE,
                     Errors.INVALID_REQUEST]


def test_subscription_push_errors_and_changes(kafka_broker, weir_process):
    name = unique("tel-sub")

    async def scenario(broker):
        connection = await connect(broker, name)
        admin = await connect(broker, "telemetry-admin")
        try:
            await set_configs(admin, name, ("metrics", "org.apache.kafka.producer.,org.apache.kafka.consumer."),
                              ("interval.ms", str(LONG)), ("match", f"client_id={name}"))
            a = await _fresh_subscription(connection, LONG)
            stale = await push_metrics(connection, a.client_instance_id, a.subscription_id + 1)
            after_stale = await get_subscription(connection, a.client_instance_id)  # allowed after that error
            throttled = await get_subscription(connection, a.client_instance_id)
            b = await get_subscription(connection)
            unknown_codec = await push_metrics(connection, b.client_instance_id, b.subscription_id, compression=9)
            c = await get_subscription(connection)
            too_large = await push_metrics(connection, c.client_instance_id, c.subscription_id,
                                           bytes(DEFAULT_MAX_BYTES + 1))
            too_early = await push_metrics(connection, c.client_instance_id, c.subscription_id, otlp_payload())
            await set_configs(admin, name, ("interval.ms", str(LONG // 2)))
            await _fresh_subscription(connection, LONG // 2)
            changed = await get_subscription(connection, a.client_instance_id)  # re-evaluated: a new slot
            old_id = await push_metrics(connection, a.client_instance_id, a.subscription_id)
            await set_configs(admin, name, ("metrics", None), ("interval.ms", None), ("match", None), op=alter.DELETE)
            gone = await _fresh_subscription(connection, 300_000)
            return [_shape(a), stale, _shape(after_stale), after_stale.subscription_id == a.subscription_id,
                    throttled.error_code, unknown_codec, too_large, too_early, _shape(changed),
                    changed.subscription_id != a.subscription_id, old_id, _shape(gone)]
        finally:
            await connection.close()
            await admin.close()
    transcript = _both(kafka_broker, weir_process, scenario)
    subscribed = (Errors.NONE, True, ["org.apache.kafka.consumer.", "org.apache.kafka.producer."], LONG,
                  [4, 3, 1, 2], DEFAULT_MAX_BYTES, True)
    assert transcript == [subscribed, Errors.UNKNOWN_SUBSCRIPTION_ID, subscribed, True,
                          Errors.THROTTLING_QUOTA_EXCEEDED, Errors.UNSUPPORTED_COMPRESSION_TYPE,
                          Errors.TELEMETRY_TOO_LARGE, Errors.THROTTLING_QUOTA_EXCEEDED,
                          (*subscribed[:3], LONG // 2, *subscribed[4:]), True, Errors.UNKNOWN_SUBSCRIPTION_ID,
                          (Errors.NONE, True, [], 300_000, [4, 3, 1, 2], DEFAULT_MAX_BYTES, True)]


@pytest.mark.parametrize("payload", [b"\xff\xff\xff", b"not compressed"], ids=["not-otlp", "bad-zstd"])
def test_weir_refuses_a_payload_that_is_not_otlp(weir_process, payload):
    """Kafka hands the payload to its receiver plugin (none here: dropped); Weir decodes it
    itself and answers INVALID_RECORD, as Kafka does when its plugin fails."""
    async def scenario():
        connection = await connect(weir_process, unique("tel-garbage"))
        try:
            first = await get_subscription(connection)
            return await push_metrics(connection, first.client_instance_id, first.subscription_id, payload,
                                      compression=0 if payload.startswith(b"\xff") else 4)
        finally:
            await connection.close()
    assert asyncio.run(scenario()) == Errors.INVALID_RECORD
