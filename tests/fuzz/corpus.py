"""The fuzz corpus: recorded client frames, plus our codec's frames for every other (API, version).

Clients send only the versions they negotiate, so each recorded request is
also decoded and re-encoded at every other version Weir advertises; an API no
client sent here (WriteTxnMarkers, OffsetForLeaderEpoch, ...) gets a body built
by hand. The result covers every advertised (API key, version).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from weir.broker import handlers  # noqa: F401  (registers the served versions)
from weir.broker.dispatcher import advertised_versions
from weir.protocol.api_keys import ApiKey
from weir.protocol.headers import RequestHeader, decode_request_header, encode_request_header, peek_key_and_version
from weir.protocol.messages import create_acls, delete_acls, describe_acls
from weir.protocol.messages import alter_client_quotas, alter_partition_reassignments, describe_log_dirs
from weir.protocol.messages import elect_leaders, list_partition_reassignments
from weir.protocol.messages import get_telemetry_subscriptions, list_config_resources, push_telemetry
from weir.protocol.messages import (create_delegation_token, describe_delegation_token, expire_delegation_token,
                                    renew_delegation_token)
from weir.protocol.messages import (BY_KEY, alter_user_scram_credentials, consumer_group_describe,
                                   consumer_group_heartbeat, describe_client_quotas, describe_topic_partitions,
                                   describe_user_scram_credentials, offset_delete, offset_for_leader_epoch,
                                   sasl_authenticate, sasl_handshake, update_features, write_txn_markers)
from weir.protocol.primitives import DecodeError
from weir.protocol.messages import (alter_share_group_offsets, delete_share_group_offsets,  # noqa: I001 (KIP-932)
                                   describe_share_group_offsets, share_acknowledge, share_fetch, share_group_describe,
                                   share_group_heartbeat, streams_group_describe, streams_group_heartbeat)

PER_VERSION_CAP = 6  # distinct recorded frames kept per (API, version); Produce/Fetch/Heartbeat repeat a lot


@dataclass(frozen=True)
class Seed:
    api_key: int
    version: int
    payload: bytes  # the request frame without its length prefix
    origin: str     # "recorded" or "codec"


def advertised_pairs() -> list[tuple[int, int]]:
    return [(key, version) for key, low, high in advertised_versions() for version in range(low, high + 1)]


def recorded_seeds(frames: list[bytes]) -> list[Seed]:
    seen: set[bytes] = set()
    kept: dict[tuple[int, int], int] = {}
    seeds = []
    for payload in frames:
        if payload in seen or len(payload) < 8:
            continue
        seen.add(payload)
        api_key, version, _ = peek_key_and_version(payload)
        if kept.get((api_key, version), 0) >= PER_VERSION_CAP:
            continue
        kept[(api_key, version)] = kept.get((api_key, version), 0) + 1
        seeds.append(Seed(api_key, version, payload, "recorded"))
    return seeds


def _element(struct, name: str):
    """The element struct of the array field ``name`` (for structs declared inline)."""
    return next(field.type.element for field in struct.fields if field.name == name)


def hand_built(topic: str) -> dict[int, object]:
    """Bodies for APIs the recording clients do not send."""
    epoch_topic = _element(offset_for_leader_epoch.REQUEST, "topics")
    epoch_partition = _element(epoch_topic, "partitions")
    return {
        ApiKey.WRITE_TXN_MARKERS: write_txn_markers.REQUEST(markers=[write_txn_markers.Marker(
            producer_id=4242, producer_epoch=0, transaction_result=False, coordinator_epoch=0,
            topics=[write_txn_markers.MarkerTopic(name=topic, partition_indexes=[0, 1])])]),
        ApiKey.OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch.REQUEST(topics=[
            epoch_topic(topic=topic, partitions=[
                epoch_partition(partition=0, current_leader_epoch=0, leader_epoch=0)])]),
        ApiKey.OFFSET_DELETE: offset_delete.REQUEST(group_id="fuzz-confluent", topics=[
            offset_delete.RequestTopic(name=topic, partitions=[offset_delete.RequestPartition(partition_index=0)])]),
        ApiKey.UPDATE_FEATURES: update_features.REQUEST(feature_updates=[  # kafka-features; level 1 is the default
            update_features.FeatureUpdate(feature="transaction.version", max_version_level=1)]),
        ApiKey.DESCRIBE_TOPIC_PARTITIONS: describe_topic_partitions.REQUEST(  # Kafka's Java admin only
            topics=[describe_topic_partitions.TopicRequest(name=topic)], response_partition_limit=1,
            cursor=describe_topic_partitions.Cursor(topic_name=topic, partition_index=1)),
        # on the fuzz broker's PLAINTEXT listener the SASL pair is out of place (ILLEGAL_SASL_STATE)
        ApiKey.SASL_HANDSHAKE: sasl_handshake.REQUEST(mechanism="PLAIN"),
        ApiKey.SASL_AUTHENTICATE: sasl_authenticate.REQUEST(auth_bytes=b"\0fuzz\0pw"),
        ApiKey.DESCRIBE_LOG_DIRS: describe_log_dirs.REQUEST(topics=[  # kafka-log-dirs
            describe_log_dirs.DescribableLogDirTopic(topic=topic, partitions=[0])]),
        ApiKey.ELECT_LEADERS: elect_leaders.REQUEST(election_type=0, topic_partitions=[
            elect_leaders.TopicPartitions(topic=topic, partitions=[0])]),
        ApiKey.ALTER_PARTITION_REASSIGNMENTS: alter_partition_reassignments.REQUEST(topics=[
            alter_partition_reassignments.ReassignableTopic(name=topic, partitions=[
                alter_partition_reassignments.ReassignablePartition(partition_index=0, replicas=[0])])]),
        ApiKey.LIST_PARTITION_REASSIGNMENTS: list_partition_reassignments.REQUEST(topics=None),
        # an ip entity's quota, which Weir keeps but does not enforce, and validate_only: a mutated
        # frame is unlikely to become a byte-rate quota that mutes the fuzzing clients
        ApiKey.ALTER_CLIENT_QUOTAS: alter_client_quotas.REQUEST(validate_only=True, entries=[
            alter_client_quotas.EntryData(entity=[alter_client_quotas.EntityData(entity_type="ip", entity_name=None)],
                                          ops=[alter_client_quotas.OpData(key="connection_creation_rate", value=5.0,
                                                                          remove=False)])]),
        ApiKey.DESCRIBE_CLIENT_QUOTAS: describe_client_quotas.REQUEST(components=[
            describe_client_quotas.Component(entity_type="user", match_type=0, match="fuzz")], strict=False),
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: describe_user_scram_credentials.REQUEST(
            users=[describe_user_scram_credentials.UserName(name="fuzz")]),
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS: alter_user_scram_credentials.REQUEST(deletions=[], upsertions=[
            alter_user_scram_credentials.Upsertion(name="fuzz", mechanism=1, iterations=4096, salt=b"salt",
                                                   salted_password=bytes(32))]),
        # KIP-848: a join with a regex, owning nothing; and a describe of it (group.protocol=consumer)
        ApiKey.CONSUMER_GROUP_HEARTBEAT: consumer_group_heartbeat.REQUEST(
            group_id="fuzz-kip848", member_id="fuzz-member", member_epoch=0, instance_id=None,
            rebalance_timeout_ms=30000, subscribed_topic_names=[topic], subscribed_topic_regex=None,
            server_assignor="uniform", topic_partitions=[]),
        ApiKey.CONSUMER_GROUP_DESCRIBE: consumer_group_describe.REQUEST(group_ids=["fuzz-kip848"],
                                                                        include_authorized_operations=True),
        # KIP-932 share groups: a join, a fetch opening a share session, an acknowledgement in it
        ApiKey.SHARE_GROUP_HEARTBEAT: share_group_heartbeat.REQUEST(
            group_id="fuzz-share", member_id="fuzz-share-member", member_epoch=0, subscribed_topic_names=[topic]),
        ApiKey.SHARE_FETCH: share_fetch.REQUEST(
            group_id="fuzz-share", member_id="fuzz-share-member", share_session_epoch=0, max_wait_ms=10, min_bytes=1,
            max_records=100, batch_size=100, topics=[share_fetch.FetchTopic(topic_id=bytes(range(16)), partitions=[
                share_fetch.FetchPartition(partition_index=0, acknowledgement_batches=[])])], forgotten_topics_data=[]),
        ApiKey.SHARE_ACKNOWLEDGE: share_acknowledge.REQUEST(
            group_id="fuzz-share", member_id="fuzz-share-member", share_session_epoch=1, topics=[
                share_acknowledge.AcknowledgeTopic(topic_id=bytes(range(16)), partitions=[
                    share_acknowledge.AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                        share_fetch.AcknowledgementBatch(first_offset=0, last_offset=1, acknowledge_types=[1])])])]),
        ApiKey.SHARE_GROUP_DESCRIBE: share_group_describe.REQUEST(group_ids=["fuzz-share", "nobody"],
                                                                  include_authorized_operations=True),
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: describe_share_group_offsets.REQUEST(groups=[
            describe_share_group_offsets.RequestGroup(group_id="fuzz-share", topics=None),
            describe_share_group_offsets.RequestGroup(group_id="fuzz-share", topics=[
                describe_share_group_offsets.RequestTopic(topic_name=topic, partitions=[0])])]),
        ApiKey.ALTER_SHARE_GROUP_OFFSETS: alter_share_group_offsets.REQUEST(group_id="fuzz-share-idle", topics=[
            _element(alter_share_group_offsets.REQUEST, "topics")(topic_name=topic, partitions=[
                _element(_element(alter_share_group_offsets.REQUEST, "topics"), "partitions")(
                    partition_index=0, start_offset=0)])]),
        ApiKey.DELETE_SHARE_GROUP_OFFSETS: delete_share_group_offsets.REQUEST(group_id="fuzz-share-idle", topics=[
            _element(delete_share_group_offsets.REQUEST, "topics")(topic_name=topic)]),
        # KIP-1071 streams groups: a join with a one-subtopology topology, and a describe of it
        ApiKey.STREAMS_GROUP_HEARTBEAT: streams_group_heartbeat.REQUEST(
            group_id="fuzz-streams", member_id="fuzz-streams-member", member_epoch=0, endpoint_information_epoch=0,
            rebalance_timeout_ms=30000, process_id="fuzz-process", active_tasks=[], standby_tasks=[], warmup_tasks=[],
            topology=streams_group_heartbeat.Topology(epoch=1, subtopologies=[streams_group_heartbeat.Subtopology(
                subtopology_id="0", source_topics=[topic], source_topic_regex=[], state_changelog_topics=[],
                repartition_sink_topics=[], repartition_source_topics=[], copartition_groups=[])])),
        ApiKey.STREAMS_GROUP_DESCRIBE: streams_group_describe.REQUEST(group_ids=["fuzz-streams", "nobody"],
                                                                      include_authorized_operations=True),
        # kafka-acls (SECURITY_DISABLED on the fuzz broker, which runs no authorizer)
        ApiKey.DESCRIBE_ACLS: describe_acls.REQUEST(resource_type_filter=2, resource_name_filter=topic,
                                                    pattern_type_filter=2, operation=1, permission_type=1),
        ApiKey.CREATE_ACLS: create_acls.REQUEST(creations=[create_acls.Creation(
            resource_type=2, resource_name=topic, resource_pattern_type=3, principal="User:fuzz", host="*",
            operation=3, permission_type=3)]),
        ApiKey.DELETE_ACLS: delete_acls.REQUEST(filters=[delete_acls.Filter(
            resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1, principal_filter="User:fuzz",
            host_filter=None, operation=1, permission_type=1)]),
        # KIP-714 client telemetry: a new client instance, a push (an unknown instance: a fresh slot), a listing
        ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: get_telemetry_subscriptions.REQUEST(client_instance_id=bytes(16)),
        ApiKey.PUSH_TELEMETRY: push_telemetry.REQUEST(client_instance_id=bytes(range(16)), subscription_id=0,
                                                      terminating=False, compression_type=0, metrics=b""),
        ApiKey.LIST_CONFIG_RESOURCES: list_config_resources.REQUEST(resource_types=[16]),
        # delegation tokens (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on the fuzz broker's PLAINTEXT listener)
        ApiKey.CREATE_DELEGATION_TOKEN: create_delegation_token.REQUEST(
            owner_principal_type="User", owner_principal_name="fuzz",
            renewers=[create_delegation_token.Renewer(principal_type="User", principal_name="fuzz-renewer")],
            max_lifetime_ms=60_000),
        ApiKey.RENEW_DELEGATION_TOKEN: renew_delegation_token.REQUEST(hmac=bytes(range(64)), renew_period_ms=60_000),
        ApiKey.EXPIRE_DELEGATION_TOKEN: expire_delegation_token.REQUEST(hmac=bytes(range(64)),
                                                                        expiry_time_period_ms=-1),
        ApiKey.DESCRIBE_DELEGATION_TOKEN: describe_delegation_token.REQUEST(
            owners=[describe_delegation_token.Owner(principal_type="User", principal_name="fuzz")]),
    }


def encode_frame(api_key: int, version: int, body, client_id: str = "fuzz-codec") -> bytes:
    """A request frame (no length prefix) whose body is ``body`` encoded at ``version``.

    Versions below the declared schema (Produce v0-2, advertised but refused) get
    the lowest declared version's body under their own header version.
    """
    request = BY_KEY[api_key].REQUEST
    body_version = max(version, request.versions[0])
    out = bytearray()
    encode_request_header(out, RequestHeader(api_key, version, 0x5EED, client_id))
    request.encode_into(out, body_version, body)
    return bytes(out)


def _decoded_bodies(seeds: list[Seed]) -> dict[int, list]:
    bodies: dict[int, list] = {}
    for seed in seeds:
        try:
            header, start = decode_request_header(memoryview(seed.payload))
            body = BY_KEY[seed.api_key].REQUEST.decode(seed.version, memoryview(seed.payload)[start:], exact=False)
        except (DecodeError, KeyError):
            continue
        bodies.setdefault(seed.api_key, []).append(body)
    return bodies


def build_corpus(frames: list[bytes], topic: str) -> list[Seed]:
    """Recorded seeds, then codec seeds so that every advertised (key, version) has at least one."""
    seeds = recorded_seeds(frames)
    bodies = _decoded_bodies(seeds)
    for api_key, body in hand_built(topic).items():
        bodies.setdefault(api_key, []).append(body)
    for api_key, version in advertised_pairs():
        for body in bodies.get(api_key, [])[:2]:  # two differently shaped bodies where clients sent two
            try:
                seeds.append(Seed(api_key, version, encode_frame(api_key, version, body), "codec"))
            except (ValueError, TypeError, AttributeError, OverflowError):
                continue  # a value this version cannot carry (e.g. null where it is not nullable)
    return seeds


def missing_pairs(seeds: list[Seed]) -> list[tuple[int, int]]:
    have = {(seed.api_key, seed.version) for seed in seeds}
    return [pair for pair in advertised_pairs() if pair not in have]


_SAVED = struct.Struct(">hhBi")  # api key, version, recorded?, payload length


def save(seeds: list[Seed], path: Path) -> None:
    """Keep a corpus so that ``WEIR_FUZZ_CORPUS=path`` replays exactly the same plan for a seed."""
    with open(path, "wb") as out:
        for seed in seeds:
            out.write(_SAVED.pack(seed.api_key, seed.version, seed.origin == "recorded", len(seed.payload)))
            out.write(seed.payload)


def load(path: Path) -> list[Seed]:
    data = Path(path).read_bytes()
    seeds, pos = [], 0
    while pos < len(data):
        api_key, version, recorded, size = _SAVED.unpack_from(data, pos)
        pos += _SAVED.size
        seeds.append(Seed(api_key, version, data[pos:pos + size], "recorded" if recorded else "codec"))
        pos += size
    return seeds
