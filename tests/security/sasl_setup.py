"""Settings and clients for SASL tests: one listener set used on Weir (and, where compared, on Kafka)."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

JAAS_PLAIN = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
JAAS_SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
SCRAM_PASSWORD = "scram-secret"


def sasl_settings(listeners: list[str]) -> dict[str, str]:
    """PLAIN (users admin, alice) and both SCRAM mechanisms on each of ``listeners``."""
    settings = {"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"}
    for name in listeners:
        settings[f"listener.name.{name.lower()}.plain.sasl.jaas.config"] = JAAS_PLAIN
        for mechanism in ("scram-sha-256", "scram-sha-512"):  # Kafka wants a JAAS entry per mechanism
            settings[f"listener.name.{name.lower()}.{mechanism}.sasl.jaas.config"] = JAAS_SCRAM
    return settings


def confluent_config(bootstrap: str, protocol: str, mechanism: str, user: str, password: str, **extra) -> dict:
    return {"bootstrap.servers": bootstrap, "security.protocol": protocol, "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": password, **extra}


def java_client_properties(protocol: str, mechanism: str, user: str, password: str, ca_path=None) -> str:
    module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
              else "org.apache.kafka.common.security.scram.ScramLoginModule")
    text = (f"security.protocol={protocol}\nsasl.mechanism={mechanism}\n"
            f'sasl.jaas.config={module} required username="{user}" password="{password}";\n')
    if ca_path is not None:
        text += f"ssl.truststore.type=PEM\nssl.truststore.location={ca_path}\n"
    return text


def add_scram_user(bootstrap: str, user: str, password: str) -> None:
    """SCRAM-SHA-256 and -512 credentials for ``user``, through AlterUserScramCredentials."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
        # one request per mechanism: Kafka refuses a user named twice in one request (DUPLICATE_RESOURCE)
        upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, 4096), password.encode())
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(10)
