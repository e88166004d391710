"""The principal a connection ends up with, read from the connection's session in a broker
running in this process (the principal shows nowhere on the wire until an authorizer uses it)."""

from __future__ import annotations

import asyncio
import ssl

from weir.broker.config import BrokerConfig
from weir.broker.context import BrokerContext
from weir.broker.lifecycle import RunningBroker
from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import ClientConnection
from weir.protocol.messages import api_versions

from weir.testing.certs import Pki


async def _principals(tmp_path, pki, client_cert, extra):
    config = BrokerConfig({"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(pki.broker.keystore_path),
                           "ssl.truststore.location": str(pki.ca_path), "ssl.client.auth": "requested", **extra})
    running = RunningBroker(BrokerContext(config, tmp_path / "data", "127.0.0.1", 0))
    await running.start()
    try:
        context = ssl.create_default_context(cafile=str(pki.ca_path))
        if client_cert is not None:
            context.load_cert_chain(str(client_cert.cert_path), str(client_cert.key_path))
        reader, writer = await asyncio.open_connection("127.0.0.1", running.port, ssl=context)
        codec = ClientConnection("principal-test")
        writer.write(codec.send_request(ApiKey.API_VERSIONS, 3, api_versions.REQUEST(
            client_software_name="t", client_software_version="1")))
        answers = []
        while not answers:
            answers = codec.receive_data(await asyncio.wait_for(reader.read(65536), 10))
        assert answers[0].error_code == 0
        principals = [c.session.principal for c in running.server._connections]
        writer.close()
        return principals
    finally:
        await running.stop()


def _pki(tmp_path):
    pki = Pki(tmp_path / "pki")
    pki.broker = pki.issue("broker", [("CN", "localhost")], server=True)
    pki.alice = pki.issue("alice", [("C", "US"), ("O", "Weir, Inc"), ("OU", "eng"), ("CN", "alice")])
    return pki


async def test_a_client_certificate_names_the_principal_by_its_rfc2253_subject(tmp_path):
    pki = _pki(tmp_path)
    # as Kafka's DefaultKafkaPrincipalBuilder prints X500Principal.getName(): most specific first, "," escaped
    assert await _principals(tmp_path, pki, pki.alice, {}) == ["User:CN=alice,OU=eng,O=Weir\\, Inc,C=US"]
    # requested, no certificate: anonymous
    assert await _principals(tmp_path, pki, None, {}) == ["User:ANONYMOUS"]


async def test_principal_mapping_rules_rewrite_the_dn(tmp_path):
    pki = _pki(tmp_path)
    rules = {"ssl.principal.mapping.rules": "RULE:^CN=([a-z]+),OU=eng,.*$/$1@eng/U,DEFAULT"}
    assert await _principals(tmp_path, pki, pki.alice, rules) == ["User:ALICE@ENG"]
