"""WeirContainer against testcontainers' KafkaContainer, without starting anything: the calls
KafkaContainer's users make exist with its signatures, and Confluent image environment
variables become Kafka settings as the image's configure script maps them."""

import inspect
import warnings

import pytest
from testcontainers.community.kafka import KafkaContainer

from weir.testing import WeirContainer
from weir.testing.container import env_to_setting

#: What tests written for KafkaContainer call (its own tests, its docs' examples, DockerContainer's basics).
USERS_CALLS = ["start", "stop", "__enter__", "__exit__", "get_bootstrap_server", "get_container_host_ip",
               "get_exposed_port", "get_logs", "with_kraft", "with_cluster_id", "with_env", "with_envs",
               "with_name", "with_exposed_ports"]


@pytest.mark.parametrize("name", USERS_CALLS)
def test_each_call_takes_what_kafkacontainer_takes(name):
    theirs = inspect.signature(getattr(KafkaContainer, name)).parameters
    ours = inspect.signature(getattr(WeirContainer, name)).parameters
    for parameter in theirs.values():
        assert parameter.name in ours, f"{name}() lacks {parameter.name}"
        assert ours[parameter.name].kind == parameter.kind, f"{name}({parameter.name}) is another kind"
        assert ours[parameter.name].default == parameter.default, f"{name}({parameter.name}) has another default"


def test_constructor_takes_kafkacontainers_arguments():
    container = WeirContainer(image="confluentinc/cp-kafka:7.6.0", port=9888,
                              wait_strategy_check_string=".*started.*", listener_name="PLAINTEXT",
                              security_protocol="PLAINTEXT")
    assert container.port == 9888
    assert not container.kraft_enabled
    assert container.with_kraft() is container and container.kraft_enabled


def test_confluent_environment_names():
    assert env_to_setting("KAFKA_TRANSACTION_MAX_TIMEOUT_MS") == "transaction.max.timeout.ms"
    assert env_to_setting("KAFKA_FOO__BAR") == "foo_bar"
    assert env_to_setting("KAFKA_LOG___DIR") == "log-dir"
    assert env_to_setting("CLUSTER_ID") is None


def test_environment_to_settings():
    container = (WeirContainer()
                 .with_env("KAFKA_NUM_PARTITIONS", 3)
                 .with_envs(KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR="1",  # one node: nothing to do
                            KAFKA_ADVERTISED_LISTENERS="PLAINTEXT://kafka:9092",  # the container's network
                            KAFKA_BROKER_ID="1", TZ="UTC"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert container.settings() == {"num.partitions": "3"}
    container.with_env("KAFKA_CONFLUENT_SUPPORT_METRICS_ENABLE", "false")
    with pytest.warns(UserWarning, match="confluent.support.metrics.enable"):
        assert container.settings() == {"num.partitions": "3"}
