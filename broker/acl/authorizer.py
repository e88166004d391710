"""The authorization decision, as Kafka's StandardAuthorizer makes it, and its audit log.

``authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer`` switches it
on; otherwise ``enabled`` is False and every check answers "allowed" after one attribute test.
A decision, per StandardAuthorizerData: a principal named in ``super.users`` may do anything;
otherwise the ACLs on the resource (LITERAL of its name, LITERAL ``*``, PREFIXED of a prefix of
its name) for the principal or ``User:*`` and the client's host or ``*`` decide: a DENY wins,
then an ALLOW; READ/WRITE/DELETE/ALTER ALLOW imply DESCRIBE and ALTER_CONFIGS implies
DESCRIBE_CONFIGS (for ALLOW only), ALL matches every operation. With no ACL at all on the
resource, ``allow.everyone.if.no.acl.found`` decides (default: deny).

Every decision goes to the ``kafka.authorizer.logger`` logger in Kafka's words: denials at
INFO, grants at DEBUG; checks that only compute authorized operations or filter a listing log
at DEBUG only (Kafka: TRACE).

ACLs on DelegationToken and User resources are checked only by the delegation-token APIs
(broker/handlers/*_delegation_token.py), as in Kafka.

Callers without a connection (handler tests, the broker's own calls) pass ``session=None``
and are treated as the broker itself: allowed.
"""

from __future__ import annotations

import logging

from weir.protocol.api_keys import ApiKey

from .model import (ALL, ALLOW, ALTER, ALTER_CONFIGS, CLUSTER, CLUSTER_NAME, DELETE, DENY, DESCRIBE, DESCRIBE_CONFIGS,
                    LITERAL, OPERATIONS, PATTERN_TYPES, PREFIXED, READ, RESOURCE_TYPES, SUPPORTED_OPERATIONS,
                    WILDCARD, WILDCARD_PRINCIPAL, WRITE)
from .settings import STANDARD_AUTHORIZER
from .store import AclStore

audit = logging.getLogger("kafka.authorizer.logger")

_NOTHING: frozenset = frozenset()
_EVERY_OPERATION = {rtype: sum(1 << op for op in ops) for rtype, ops in SUPPORTED_OPERATIONS.items()}
_IMPLIED_BY = {DESCRIBE: frozenset({DESCRIBE, READ, WRITE, DELETE, ALTER}),
               DESCRIBE_CONFIGS: frozenset({DESCRIBE_CONFIGS, ALTER_CONFIGS})}


def _grants(acl, operation: int) -> bool:
    """Whether an ALLOW ``acl`` covers ``operation`` (implications apply to ALLOW only)."""
    if acl.operation == ALL:
        return True
    implied = _IMPLIED_BY.get(operation)
    return acl.operation in implied if implied else acl.operation == operation


class Authorizer:
    def __init__(self, config, store: AclStore):
        self.store = store
        self.enabled = config["authorizer.class.name"] == STANDARD_AUTHORIZER
        self.super_users = frozenset(config["super.users"])
        self.allow_if_no_acl = config["allow.everyone.if.no.acl.found"]

    # -- decisions --------------------------------------------------------------------------

    def allows(self, session, operation: int, resource_type: int, name: str, *, audit_denial: bool = True) -> bool:
        """May the session's principal perform ``operation`` on the resource? Logged as Kafka does."""
        if not self.enabled or session is None:
            return True
        allowed, rule = self._decide(session, operation, resource_type, name)
        if not allowed and audit_denial:
            audit.info(self._message(session, allowed, operation, resource_type, name, rule))
        elif audit.isEnabledFor(logging.DEBUG):
            audit.debug(self._message(session, allowed, operation, resource_type, name, rule))
        return allowed

    def allows_cluster(self, session, operation: int, *, audit_denial: bool = True) -> bool:
        return self.allows(session, operation, CLUSTER, CLUSTER_NAME, audit_denial=audit_denial)

    def filter(self, session, operation: int, resource_type: int, names, *, audit_denial: bool = True) -> set[str]:
        """The names among ``names`` the principal may ``operation`` (each decided once)."""
        if not self.enabled or session is None:
            return set(names)
        return {name for name in set(names)
                if self.allows(session, operation, resource_type, name, audit_denial=audit_denial)}

    def denied(self, session, operation: int, resource_type: int, names, *,
               audit_denial: bool = True) -> frozenset | set[str]:
        """The names among ``names`` the principal may not ``operation``: empty when authorization is off."""
        if not self.enabled or session is None:
            return _NOTHING
        return {name for name in set(names)
                if not self.allows(session, operation, resource_type, name, audit_denial=audit_denial)}

    def allows_any(self, session, operation: int, resource_type: int) -> bool:
        """Kafka's ``authorizeByResourceType``: is there any resource of the type the principal may
        ``operation``? An ALLOW (literal or prefixed) not covered by a DENY of the same scope."""
        if not self.enabled or session is None:
            return True
        if self._decide(session, operation, resource_type, "hardcode")[0]:
            return True  # super user, or no ACL and allow.everyone.if.no.acl.found
        principals = (session.principal, WILDCARD_PRINCIPAL)
        host = _host(session)
        denied: dict[int, set[str]] = {LITERAL: set(), PREFIXED: set()}
        allowed: dict[int, set[str]] = {LITERAL: set(), PREFIXED: set()}
        for acl in self.store.by_type.get(resource_type, ()):
            if acl.host not in (host, WILDCARD) or acl.principal not in principals:
                continue
            if acl.operation not in (operation, ALL):
                continue
            if acl.permission == DENY:
                if acl.pattern_type == LITERAL and acl.resource_name == WILDCARD:
                    return False
                denied[acl.pattern_type].add(acl.resource_name)
            elif acl.permission == ALLOW:
                if acl.pattern_type == LITERAL and acl.resource_name == WILDCARD:
                    return True
                allowed[acl.pattern_type].add(acl.resource_name)
        for pattern_type, names in allowed.items():
            for name in names:
                if pattern_type == LITERAL and name in denied[LITERAL]:
                    continue
                if not any(name[:end] in denied[PREFIXED] for end in range(1, len(name) + 1)):
                    return True
        return False

    def authorized_operations(self, session, resource_type: int, name: str) -> int:
        """The 32-bit set of operations allowed on the resource (Metadata, DescribeCluster,
        DescribeGroups, ConsumerGroupDescribe); every supported one when authorization is off."""
        if not self.enabled or session is None:
            return _EVERY_OPERATION[resource_type]
        bits = 0
        for op in SUPPORTED_OPERATIONS[resource_type]:
            if self.allows(session, op, resource_type, name, audit_denial=False):
                bits |= 1 << op
        return bits

    def _decide(self, session, operation: int, resource_type: int, name: str) -> tuple[bool, object]:
        principal = session.principal
        if principal in self.super_users:
            return True, "SuperUser"
        principals = (principal, WILDCARD_PRINCIPAL)
        host = _host(session)
        store = self.store
        allow = None
        found = False
        for group in (store.literal(resource_type, name), store.prefixed(resource_type, name),
                      store.literal(resource_type, WILDCARD)):
            for acl in group:
                found = True
                if acl.principal not in principals or acl.host not in (host, WILDCARD):
                    continue
                if acl.permission == DENY:
                    if acl.operation in (operation, ALL):
                        return False, f"MatchingAcl(acl={acl})"
                elif allow is None and _grants(acl, operation):
                    allow = acl
        if allow is not None:
            return True, f"MatchingAcl(acl={allow})"
        if not found:
            return self.allow_if_no_acl, "DefaultAllow" if self.allow_if_no_acl else "DefaultDeny"
        return False, "DefaultDeny"

    @staticmethod
    def _message(session, allowed, operation, resource_type, name, rule) -> str:
        api_key = getattr(session, "api_key", None)
        request = ApiKey(api_key).name if api_key is not None else "UNKNOWN"
        return (f"Principal = {session.principal} is {'Allowed' if allowed else 'Denied'} operation = "
                f"{OPERATIONS[operation]} from host = {_host(session)} on resource = "
                f"{RESOURCE_TYPES[resource_type]}:{PATTERN_TYPES[LITERAL]}:{name} for request = {request} "
                f"with resourceRefCount = 1 based on rule {rule}")


def _host(session) -> str:
    """The client's address as Kafka compares it with an ACL's host (no leading slash)."""
    return session.client_host.lstrip("/")
