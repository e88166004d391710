"""Admin calls on ACLs (Kafka's StandardAuthorizer): describe, create and delete bindings.

Codes are Kafka's (ResourceType, PatternType, AclOperation, AclPermissionType); bindings and
filters carry their names, as ``kafka-acls`` prints them. Sent to any broker (Kafka forwards
them to its controller); here to the controller Metadata names).
"""

from __future__ import annotations

from dataclasses import dataclass

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import create_acls, delete_acls, describe_acls

from ..calls import ANY_BROKER, first_retriable
from .base import AdminBase, check

RESOURCE_TYPES = {"any": 1, "topic": 2, "group": 3, "cluster": 4, "transactional-id": 5, "delegation-token": 6,
                  "user": 7}
PATTERN_TYPES = {"any": 1, "match": 2, "literal": 3, "prefixed": 4}
OPERATIONS = {"any": 1, "all": 2, "read": 3, "write": 4, "create": 5, "delete": 6, "alter": 7, "describe": 8,
              "cluster-action": 9, "describe-configs": 10, "alter-configs": 11, "idempotent-write": 12,
              "create-tokens": 13, "describe-tokens": 14, "two-phase-commit": 15}
PERMISSIONS = {"any": 1, "deny": 2, "allow": 3}
_NAMES = {table_id: {code: name for name, code in table.items()}
          for table_id, table in enumerate((RESOURCE_TYPES, PATTERN_TYPES, OPERATIONS, PERMISSIONS))}


@dataclass(frozen=True)
class AclBinding:
    """One ACL, or (with ``any``/``match`` values and None for any name, principal or host) a filter."""
    resource_type: str
    resource_name: str | None
    pattern_type: str
    principal: str | None
    host: str | None
    operation: str
    permission: str

    def codes(self) -> tuple[int, int, int, int]:
        """Kafka's numeric codes of resource type, pattern type, operation and permission."""
        return (RESOURCE_TYPES[self.resource_type], PATTERN_TYPES[self.pattern_type], OPERATIONS[self.operation],
                PERMISSIONS[self.permission])

    @classmethod
    def from_codes(cls, resource_type: int, name: str | None, pattern_type: int, principal: str | None,
                   host: str | None, operation: int, permission: int) -> AclBinding:
        """The binding Kafka's numeric codes describe (an unknown code reads ``unknown``)."""
        return cls(_NAMES[0].get(resource_type, "unknown"), name, _NAMES[1].get(pattern_type, "unknown"), principal,
                   host, _NAMES[2].get(operation, "unknown"), _NAMES[3].get(permission, "unknown"))


ANY_ACL = AclBinding("any", None, "any", None, None, "any", "any")


class AclAdmin(AdminBase):
    async def describe_acls(self, acl_filter: AclBinding = ANY_ACL) -> list[AclBinding]:
        """The ACLs that match ``acl_filter`` (every ACL by default), as Kafka's DescribeAcls matches them."""
        resource_type, pattern_type, operation, permission = acl_filter.codes()
        request = describe_acls.REQUEST(
            resource_type_filter=resource_type, resource_name_filter=acl_filter.resource_name,
            pattern_type_filter=pattern_type, principal_filter=acl_filter.principal,
            host_filter=acl_filter.host, operation=operation, permission_type=permission)

        # any broker, as the Java Admin's LeastLoadedNodeProvider for the ACL APIs
        answer = await self._call(ANY_BROKER, ApiKey.DESCRIBE_ACLS, lambda _v: request,
                                  error_of=lambda a: a.error_code)
        check(answer.error_code, answer.error_message or "DescribeAcls")
        return [AclBinding.from_codes(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host,
                                      a.operation, a.permission_type)
                for r in answer.resources for a in r.acls]

    async def create_acls(self, bindings: list[AclBinding]) -> None:
        """Create every binding; the first refused one raises its error."""
        request = create_acls.REQUEST(creations=[create_acls.Creation(
            resource_type=b.codes()[0], resource_name=b.resource_name, resource_pattern_type=b.codes()[1],
            principal=b.principal, host=b.host or "*", operation=b.codes()[2], permission_type=b.codes()[3])
            for b in bindings])

        answer = await self._call(ANY_BROKER, ApiKey.CREATE_ACLS, lambda _v: request,
                                  error_of=lambda a: first_retriable(r.error_code for r in a.results))
        for binding, result in zip(bindings, answer.results, strict=True):
            check(result.error_code, f"{binding}: {result.error_message or ''}")

    async def delete_acls(self, filters: list[AclBinding]) -> list[AclBinding]:
        """Delete what the filters match; the bindings deleted."""
        request = delete_acls.REQUEST(filters=[delete_acls.Filter(
            resource_type_filter=f.codes()[0], resource_name_filter=f.resource_name, pattern_type_filter=f.codes()[1],
            principal_filter=f.principal, host_filter=f.host, operation=f.codes()[2], permission_type=f.codes()[3])
            for f in filters])

        answer = await self._call(ANY_BROKER, ApiKey.DELETE_ACLS, lambda _v: request,
                                  error_of=lambda a: first_retriable(r.error_code for r in a.filter_results))
        deleted = []
        for result in answer.filter_results:
            check(result.error_code, result.error_message or "DeleteAcls")
            deleted += [AclBinding.from_codes(m.resource_type, m.resource_name, m.pattern_type, m.principal,
                                              m.host, m.operation, m.permission_type)
                        for m in result.matching_acls]
        return deleted
