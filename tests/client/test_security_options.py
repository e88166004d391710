"""Our client's security keywords (aiokafka's names), checked before any connection is made."""

from __future__ import annotations

import ssl

import pytest

from weir.client import Producer
from weir.client.security import ClientSecurity


def test_plaintext_by_default_and_tls_with_a_default_context():
    assert ClientSecurity.from_options() == ClientSecurity()
    assert ClientSecurity.from_options().tls is None and not ClientSecurity.from_options().uses_sasl
    tls = ClientSecurity.from_options(security_protocol="ssl")
    assert tls.protocol == "SSL" and isinstance(tls.tls, ssl.SSLContext) and tls.tls.check_hostname
    given = ssl.create_default_context()
    assert ClientSecurity.from_options(security_protocol="SASL_SSL", ssl_context=given, sasl_plain_username="a",
                                       sasl_plain_password="b").tls is given


@pytest.mark.parametrize("options, complaint", [
    ({"security_protocol": "TLS"}, "security_protocol"),
    ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "GSSAPI"}, "sasl_mechanism"),
    ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256", "sasl_plain_username": "a"},
     "sasl_plain_password"),
    ({"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER"}, "sasl_oauth_token_provider"),
])
def test_options_that_cannot_work_are_refused_at_construction(options, complaint):
    with pytest.raises(ValueError, match=complaint):
        ClientSecurity.from_options(**options)
    with pytest.raises(ValueError, match=complaint):
        Producer("127.0.0.1:9092", **options)
