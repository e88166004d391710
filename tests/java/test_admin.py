"""The Java AdminClient against both brokers: one program (AdminScenario) runs every topic,
config, group and transaction call in order and prints what the client saw, normalised
(no cluster/topic/producer ids, hosts or timestamps). Kafka's answers are the expectation:
every step must equal Kafka's except the deliberate differences listed in DEVIATIONS."""

from tests.java.java_client import run

def _min_isr_source_as_weir(answer):
    """Kafka 4's storage format (eligible leader replicas, KIP-966) writes min.insync.replicas
    as a cluster-wide dynamic default, so its topics show that source; Weir has no format step
    and shows Kafka's built-in default. Same value, other source."""
    entry = answer["result"]["min.insync.replicas"]
    assert entry["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    return {"result": {**answer["result"], "min.insync.replicas": {**entry, "source": "DEFAULT_CONFIG"}}}


#: step -> what turns Kafka's answer into the one Weir deliberately gives instead.
DEVIATIONS = {
    "describe_topic_config": _min_isr_source_as_weir,
}


def scenario(broker, prefix: str) -> dict[str, dict]:
    events = run("AdminScenario", broker.bootstrap, prefix)
    assert events[-1]["event"] == "done"
    steps = {}
    for event in events[:-1]:
        event.pop("ms")  # when the step ended, for finding slow ones; not compared
        steps[event.pop("event")] = event
    return steps


def test_admin_client_answers_as_kafka_does(weir_process, kafka_broker, topic_name):
    kafka = scenario(kafka_broker, topic_name)
    weir = scenario(weir_process, topic_name)
    assert list(weir) == list(kafka)
    expected = {step: DEVIATIONS.get(step, lambda answer: answer)(answer) for step, answer in kafka.items()}
    differences = {step: {"weir": weir[step], "kafka": expected[step]}
                   for step in kafka if weir[step] != expected[step]}
    assert differences == {}

    # The scenario did what it says (checked on Kafka's answers, which Weir's equal).
    assert kafka["create_topics"]["result"]["a"]["partitions"] == 3
    assert kafka["create_topics"]["result"]["a"]["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    assert kafka["alter_topic_config"]["result"]["cleanup.policy"]["value"] == "delete,compact"
    assert kafka["alter_broker_config"]["result"]["log.index.interval.bytes"]["value"] == "8192"
    assert kafka["alter_broker_config_back"]["result"]["log.index.interval.bytes"]["value"] == "4096"
    assert kafka["describe_active_group"]["result"]["state"] == "Stable"
    assert kafka["alter_group_offsets"]["result"] == {"0": {"offset": 1, "metadata": "moved"}}
    assert kafka["describe_deleted_group"] == {"error": "GroupIdNotFoundException"}
    assert kafka["list_transactions"]["result"] == [{"state": "Ongoing"}]
    assert kafka["describe_producers"]["result"][-1]["transaction_start"] == 0
    assert kafka["stable_offset_after_abort"]["result"] > kafka["stable_offset_before_abort"]["result"]
    assert kafka["describe_producers_after_abort"]["result"][-1]["transaction_start"] is None
    assert kafka["create_partitions"]["result"] == 5
    assert kafka["delete_records"]["result"] == 4 and kafka["earliest_after_delete"]["result"] == 4
    assert kafka["delete_topics"]["result"] == []
