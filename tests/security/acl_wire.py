"""Bare-socket helpers for the ACL tests: a SCRAM login, the ACL
requests, and the broker settings that switch Kafka's StandardAuthorizer on (the same on Weir
and on Kafka 4.4.0)."""

from __future__ import annotations

from scramp import ScramClient

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import create_acls, delete_acls, describe_acls

from tests.security.sasl_setup import sasl_settings
from tests.security.sasl_wire import SaslWire

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def acl_settings(super_users: str = "User:admin;User:ANONYMOUS") -> dict[str, str]:
    """SASL (PLAIN users admin/alice, both SCRAM mechanisms) on SASL_PLAINTEXT and the authorizer on.
    ANONYMOUS (the PLAINTEXT listener, which Kafka's own broker-to-controller traffic uses) is a
    super user, so PLAINTEXT is the administrators' door."""
    return {**sasl_settings(["SASL_PLAINTEXT"]), "authorizer.class.name": AUTHORIZER, "super.users": super_users}


def scram_login(bootstrap: str, user: str, password: str, mechanism: str = "SCRAM-SHA-256") -> SaslWire:
    """A connection authenticated as ``user`` by SCRAM (scramp, as our client does); AssertionError
    if the broker refuses."""
    wire = SaslWire(bootstrap)
    try:
        assert wire.handshake(mechanism).error_code == 0
        client = ScramClient([mechanism], user, password)
        first = wire.authenticate(client.get_client_first().encode())
        assert first.error_code == 0, first
        client.set_server_first(bytes(first.auth_bytes).decode())
        final = wire.authenticate(client.get_client_final().encode())
        assert final.error_code == 0, final
        client.set_server_final(bytes(final.auth_bytes).decode())
    except AssertionError:
        wire.close()
        raise
    return wire


def create(wire: SaslWire, *bindings: tuple) -> list[tuple[int, str | None]]:
    """CreateAcls v3 of (resource type, name, pattern type, principal, host, operation, permission)."""
    answer = wire.call(ApiKey.CREATE_ACLS, 3, create_acls.REQUEST(creations=[create_acls.Creation(
        resource_type=b[0], resource_name=b[1], resource_pattern_type=b[2], principal=b[3], host=b[4],
        operation=b[5], permission_type=b[6]) for b in bindings]))
    return [(r.error_code, r.error_message) for r in answer.results]


def describe(wire: SaslWire, resource_type=1, name=None, pattern_type=1, principal=None, host=None,
             operation=1, permission=1) -> tuple[int, list[tuple]]:
    """(error, sorted bindings) a DescribeAcls v3 filter matches; ANY (1) for codes by default."""
    answer = wire.call(ApiKey.DESCRIBE_ACLS, 3, describe_acls.REQUEST(
        resource_type_filter=resource_type, resource_name_filter=name, pattern_type_filter=pattern_type,
        principal_filter=principal, host_filter=host, operation=operation, permission_type=permission))
    return answer.error_code, sorted((r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host,
                                      a.operation, a.permission_type)
                                     for r in answer.resources for a in r.acls)


def delete(wire: SaslWire, *filters: tuple) -> list[tuple[int, list[tuple]]]:
    answer = wire.call(ApiKey.DELETE_ACLS, 3, delete_acls.REQUEST(filters=[delete_acls.Filter(
        resource_type_filter=f[0], resource_name_filter=f[1], pattern_type_filter=f[2], principal_filter=f[3],
        host_filter=f[4], operation=f[5], permission_type=f[6]) for f in filters]))
    return [(r.error_code, sorted((m.resource_type, m.resource_name, m.pattern_type, m.principal, m.host,
                                   m.operation, m.permission_type) for m in r.matching_acls))
            for r in answer.filter_results]
