"""Pure pieces of broker/security: SCRAM against RFC 7677's example, the SCRAM store's rules,
JAAS parsing, principal mapping rules, listener settings. No broker, no socket."""

from __future__ import annotations

import base64

import pytest

from weir.broker.config import BrokerConfig, ConfigError
from weir.protocol.jaas import parse_jaas, plain_users
from weir.broker.security.listeners import listener_specs
from weir.broker.security.plain import PlainError, PlainServer
from weir.broker.security.principal import PrincipalMapper, subject_dn
from weir.broker.security.scram import (ScramError, ScramServer, credential_from_salted_password,
                                        salted_password)
from weir.broker.security.scram_store import ScramStore
from weir.protocol.errors import Errors, KafkaError

SHA256, SHA512 = 1, 2


class _Store:
    def __init__(self, credentials):
        self.credentials = credentials

    def get(self, user, mechanism):
        return self.credentials.get((user, mechanism))


def _rfc7677_server(monkeypatch):
    """RFC 7677 section 3: user "user", password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096 iterations."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    credential = credential_from_salted_password("SCRAM-SHA-256", salt,
                                                 salted_password("SCRAM-SHA-256", "pencil", salt, 4096), 4096)
    monkeypatch.setattr("weir.broker.security.scram.secrets.token_urlsafe", lambda n: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    return ScramServer("SCRAM-SHA-256", _Store({("user", "SCRAM-SHA-256"): credential}))


def test_scram_sha_256_follows_rfc_7677s_example(monkeypatch):
    server = _rfc7677_server(monkeypatch)
    first = server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final = server.evaluate(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                            b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.user == "user"


def test_scram_refuses_a_wrong_proof_and_answers_an_unknown_user_alike(monkeypatch):
    server = _rfc7677_server(monkeypatch)
    server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    with pytest.raises(ScramError):
        server.evaluate(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                        b"p=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
    unknown = _rfc7677_server(monkeypatch)
    first = unknown.evaluate(b"n,,n=nobody,r=abc")
    assert first.startswith(b"r=abc") and b",s=" in first and first.endswith(b",i=4096")
    with pytest.raises(ScramError):
        unknown.evaluate(b"c=biws,r=" + first[2:first.index(b",")] + b",p=" + base64.b64encode(bytes(32)))
    # channel binding is refused
    with pytest.raises(ScramError):
        _rfc7677_server(monkeypatch).evaluate(b"p=tls-unique,,n=user,r=x")


def test_plain_checks_the_jaas_users():
    users = plain_users('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
                        'password="a-secret" user_admin="a-secret" user_alice="p\\"w";')
    assert users == {"admin": "a-secret", "alice": 'p"w'}
    assert PlainServer(users).evaluate(b'\0alice\0p"w') == b""
    for token, message in [(b"\0alice\0nope", "Invalid username or password"),
                           (b"\0bob\0p", "Invalid username or password"),
                           (b"\0\0p", "username not specified"), (b"x\0alice\0p\"w", "authorization id")]:
        with pytest.raises(PlainError, match=message):
            PlainServer(users).evaluate(token)


def test_jaas_syntax_errors_name_no_value():
    with pytest.raises(ValueError) as caught:
        parse_jaas('org.apache.kafka.common.security.plain.PlainLoginModule required user_a="secret-value"')
    assert "secret-value" not in str(caught.value) and "must end with ';'" in str(caught.value)
    with pytest.raises(ValueError, match="control flag"):
        parse_jaas("Module maybe;")


def test_scram_store_follows_kafkas_rules(tmp_path):
    store = ScramStore(tmp_path)
    salt, salted = b"salt-bytes", bytes(32)
    results = store.alter([("ghost", SHA256)], [("ann", SHA256, 4096, salt, salted), ("", SHA256, 4096, salt, salted),
                                                ("bob", 9, 4096, salt, salted), ("cid", SHA256, 100, salt, salted),
                                                ("dan", SHA512, 20000, salt, salted),
                                                ("eve", SHA256, 4096, salt, salted),
                                                ("eve", SHA512, 4096, salt, salted)])
    assert {user: code for user, code, _message in results} == {
        "ghost": Errors.RESOURCE_NOT_FOUND, "ann": 0, "": Errors.UNACCEPTABLE_CREDENTIAL,
        "bob": Errors.UNSUPPORTED_SASL_MECHANISM, "cid": Errors.UNACCEPTABLE_CREDENTIAL,
        "dan": Errors.UNACCEPTABLE_CREDENTIAL, "eve": Errors.DUPLICATE_RESOURCE}
    reloaded = ScramStore(tmp_path)
    reloaded.load()
    assert reloaded.get("ann", "SCRAM-SHA-256") == store.get("ann", "SCRAM-SHA-256")
    assert reloaded.describe(None) == [("ann", 0, "", [(SHA256, 4096)])]
    codes = [r[1] for r in reloaded.describe(["ann", "zed", "ann"])]
    assert codes == [Errors.DUPLICATE_RESOURCE, Errors.RESOURCE_NOT_FOUND]



def test_a_credential_the_disk_refuses_is_answered_per_user_and_not_served(tmp_path, monkeypatch):
    from weir.broker.security import scram_store
    store = ScramStore(tmp_path)
    salt, salted = b"salt-bytes", bytes(32)
    assert store.alter([], [("ann", SHA256, 4096, salt, salted)]) == [("ann", Errors.NONE, None)]

    def full_disk(path, data, **_options):
        raise KafkaError(Errors.KAFKA_STORAGE_ERROR, f"cannot write {path}: No space left on device")
    monkeypatch.setattr(scram_store, "replace_durably", full_disk)
    results = store.alter([("ann", SHA256)], [("bob", SHA512, 4096, salt, salted), ("", SHA256, 4096, salt, salted)])
    assert [(user, code) for user, code, _message in results] == [
        ("ann", Errors.KAFKA_STORAGE_ERROR), ("bob", Errors.KAFKA_STORAGE_ERROR), ("", Errors.UNACCEPTABLE_CREDENTIAL)]
    assert store.get("ann", "SCRAM-SHA-256") is not None and store.get("bob", "SCRAM-SHA-512") is None

def test_principal_mapping_rules_as_kafka_reads_them():
    mapper = PrincipalMapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, RULE:^CN=([^,]+),.*$/user-$1/, DEFAULT")
    assert mapper.name("CN=Kafka,OU=ServiceUsers,O=x") == "kafka"
    assert mapper.name("CN=bob,O=y") == "user-bob"
    assert mapper.name("O=z") == "O=z"
    with pytest.raises(PermissionError):
        PrincipalMapper("RULE:^CN=(.*)$/$1/").name("O=z")
    with pytest.raises(ValueError):
        PrincipalMapper("NOT A RULE")
    cert = {"subject": ((("countryName", "US"),), (("organizationName", "A+B"),),
                        (("commonName", "carol"), ("emailAddress", "c@x.io")))}
    assert subject_dn(cert) == "CN=carol+1.2.840.113549.1.9.1=#16066340782e696f,O=A\\+B,C=US"


def test_listener_settings():
    config = BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:9092,CLIENT://:9093",
                           "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENT:SASL_SSL",
                           "advertised.listeners": "CLIENT://broker.example:19093",
                           "listener.name.client.ssl.client.auth": "required",
                           "listener.name.client.scram-sha-256.sasl.jaas.config":
                               "org.apache.kafka.common.security.scram.ScramLoginModule required;"})
    specs = listener_specs(config, "ignored", 1)
    assert [(s.name, s.protocol, s.host, s.port, s.advertised_host, s.advertised_port) for s in specs] == [
        ("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9092, "127.0.0.1", 9092),
        ("CLIENT", "SASL_SSL", "", 9093, "broker.example", 19093)]
    assert config.for_listener("CLIENT", "ssl.client.auth") == "required"
    assert config.for_listener("PLAINTEXT", "ssl.client.auth") == "none"
    with pytest.raises(ConfigError, match="unknown config"):
        BrokerConfig({"listener.name.client.no.such.setting": "1"})
    with pytest.raises(ConfigError, match="GSSAPI|unsupported SASL"):
        BrokerConfig({"sasl.enabled.mechanisms": "GSSAPI"})
    with pytest.raises(ConfigError, match="PEM"):
        BrokerConfig({"ssl.keystore.type": "JKS"})


def test_server_properties_continue_a_line_ending_in_a_backslash(tmp_path):
    from weir.broker.config import read_properties
    path = tmp_path / "server.properties"
    path.write_text('listener.name.x.plain.sasl.jaas.config='
                    'org.apache.kafka.common.security.plain.PlainLoginModule \\\n'
                    '    required user_admin="s";\n# a comment \\\nb=2\n')
    assert read_properties(path) == {
        "listener.name.x.plain.sasl.jaas.config":
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="s";', "b": "2"}


def test_tls_contexts_follow_the_listener_settings(tmp_path):
    import ssl

    from weir.testing.certs import Pki
    from weir.broker.security.tls import server_context
    pki = Pki(tmp_path)
    broker = pki.issue("broker", [("CN", "localhost")], server=True, key_password="kpw")
    config = BrokerConfig({"ssl.keystore.key": broker.key_pem, "ssl.keystore.certificate.chain": broker.cert_pem,
                           "ssl.key.password": "kpw", "ssl.truststore.certificates": pki.ca_pem,
                           "ssl.client.auth": "required", "ssl.enabled.protocols": "TLSv1.3",
                           "listener.name.b.ssl.client.auth": "requested",
                           "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"})
    assert server_context(config, "A", "SSL").verify_mode == ssl.CERT_REQUIRED
    assert server_context(config, "B", "SSL").verify_mode == ssl.CERT_OPTIONAL
    # KIP-684: the broker-wide ssl.client.auth does not apply to SASL_SSL listeners, a prefixed one does
    assert server_context(config, "A", "SASL_SSL").verify_mode == ssl.CERT_NONE
    assert server_context(config, "B", "SASL_SSL").verify_mode == ssl.CERT_OPTIONAL
    context = server_context(config, "A", "SSL")
    assert context.minimum_version == context.maximum_version == ssl.TLSVersion.TLSv1_3
    wrong = BrokerConfig({"ssl.keystore.key": broker.key_pem, "ssl.keystore.certificate.chain": broker.cert_pem,
                          "ssl.key.password": "not-kpw"})
    with pytest.raises(ConfigError) as caught:
        server_context(wrong, "A", "SSL")
    assert "not-kpw" not in str(caught.value) and "BEGIN" not in str(caught.value)
    with pytest.raises(ConfigError, match="must be 0 or more"):
        BrokerConfig({"connections.max.reauth.ms": "-1"})
