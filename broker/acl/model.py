"""ACL bindings and binding filters with Kafka's codes and matching rules.

Codes are those of Kafka's ``ResourceType``, ``PatternType``, ``AclOperation`` and
``AclPermissionType``; a code Kafka does not know reads as UNKNOWN (0), as ``fromCode`` does.
Filter matching follows ``ResourcePatternFilter.matches`` and ``AccessControlEntryFilter.matches``:
a MATCH pattern filter with a name matches the LITERAL pattern of that name, the LITERAL ``*``
and every PREFIXED pattern the name starts with; ANY matches every pattern type by exact name.
"""

from __future__ import annotations

from typing import NamedTuple

# ResourceType
UNKNOWN, ANY = 0, 1
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER = 2, 3, 4, 5, 6, 7
RESOURCE_TYPES = {TOPIC: "Topic", GROUP: "Group", CLUSTER: "Cluster", TRANSACTIONAL_ID: "TransactionalId",
                  DELEGATION_TOKEN: "DelegationToken", USER: "User"}
# PatternType
MATCH, LITERAL, PREFIXED = 2, 3, 4
PATTERN_TYPES = {LITERAL: "LITERAL", PREFIXED: "PREFIXED"}
# AclOperation
ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 2, 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12
CREATE_TOKENS, DESCRIBE_TOKENS, TWO_PHASE_COMMIT = 13, 14, 15
OPERATIONS = {ALL: "ALL", READ: "READ", WRITE: "WRITE", CREATE: "CREATE", DELETE: "DELETE", ALTER: "ALTER",
              DESCRIBE: "DESCRIBE", CLUSTER_ACTION: "CLUSTER_ACTION", DESCRIBE_CONFIGS: "DESCRIBE_CONFIGS",
              ALTER_CONFIGS: "ALTER_CONFIGS", IDEMPOTENT_WRITE: "IDEMPOTENT_WRITE", CREATE_TOKENS: "CREATE_TOKENS",
              DESCRIBE_TOKENS: "DESCRIBE_TOKENS", TWO_PHASE_COMMIT: "TWO_PHASE_COMMIT"}
# AclPermissionType
DENY, ALLOW = 2, 3
PERMISSIONS = {DENY: "DENY", ALLOW: "ALLOW"}

CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"

#: The operations each resource type supports (Kafka's ``AclEntry.supportedOperations``), in
#: the order authorized-operations answers are computed.
SUPPORTED_OPERATIONS = {
    TOPIC: (READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS),
    GROUP: (READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS),
    CLUSTER: (CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE),
    TRANSACTIONAL_ID: (DESCRIBE, WRITE, TWO_PHASE_COMMIT),
    DELEGATION_TOKEN: (DESCRIBE,),
    USER: (CREATE_TOKENS, DESCRIBE_TOKENS),
}


def known(code: int, names: dict) -> int:
    """The code if Kafka knows it (ANY and MATCH included), UNKNOWN otherwise."""
    return code if code in names or code in (ANY, MATCH) else UNKNOWN


class AclBinding(NamedTuple):
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int

    def __str__(self) -> str:  # as Kafka's StandardAcl prints in its logs
        return (f"(resourceType={RESOURCE_TYPES.get(self.resource_type, self.resource_type)}, "
                f"resourceName={self.resource_name}, patternType={PATTERN_TYPES.get(self.pattern_type)}, "
                f"principal={self.principal}, host={self.host}, "
                f"operation={OPERATIONS.get(self.operation)}, permissionType={PERMISSIONS.get(self.permission)})")


class AclFilter(NamedTuple):
    """Kafka's ``AclBindingFilter``: None matches any name, principal or host; ANY any code."""
    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission: int

    def is_unknown(self) -> bool:
        return UNKNOWN in (self.resource_type, self.pattern_type, self.operation, self.permission)

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type != ANY and self.resource_type != acl.resource_type:
            return False
        if self.pattern_type not in (ANY, MATCH) and self.pattern_type != acl.pattern_type:
            return False
        if self.resource_name is not None and not self._name_matches(acl):
            return False
        return ((self.principal is None or self.principal == acl.principal)
                and (self.host is None or self.host == acl.host)
                and (self.operation == ANY or self.operation == acl.operation)
                and (self.permission == ANY or self.permission == acl.permission))

    def _name_matches(self, acl: AclBinding) -> bool:
        assert self.resource_name is not None
        if self.pattern_type in (ANY, acl.pattern_type):
            return self.resource_name == acl.resource_name
        if acl.pattern_type == LITERAL:  # the filter is MATCH
            return self.resource_name == acl.resource_name or acl.resource_name == WILDCARD
        return self.resource_name.startswith(acl.resource_name)


def has_concrete_codes(acl: AclBinding) -> bool:
    """A binding names one resource type, LITERAL or PREFIXED, one operation and ALLOW or DENY.
    Kafka 4.3.1 fails a CreateAcls request holding any other as a whole (UNKNOWN_SERVER_ERROR,
    no message: the request forwarded to its controller cannot be built), checked by hand."""
    return (acl.resource_type in RESOURCE_TYPES and acl.pattern_type in PATTERN_TYPES
            and acl.operation in OPERATIONS and acl.permission in PERMISSIONS)


def creation_error(acl: AclBinding) -> str | None:
    """Why Kafka refuses to create this binding (INVALID_REQUEST), or None: AclApis checks the
    cluster name and an empty name; the principal must parse as ``<type>:<name>``."""
    if acl.resource_type == CLUSTER and acl.resource_name != CLUSTER_NAME:
        return "The only valid name for the CLUSTER resource is " + CLUSTER_NAME
    if not acl.resource_name:
        return "Invalid empty resource name"
    if ":" not in acl.principal:
        return (f"Could not parse principal from `{acl.principal}` "
                "(no colon is present separating the principal type from the principal name)")
    return None
