"""What the share-offset admin APIs (AlterShareGroupOffsets, DeleteShareGroupOffsets) check first."""

from __future__ import annotations

from typing import Any

from weir.protocol.errors import Errors

from ..acl import model as acl


def refusal(context: Any, session: Any, group_id: str, operation: int) -> tuple[Errors, str | None]:
    """The whole request's error: no right on the group, another protocol's group, or members."""
    if not context.authorizer.allows(session, operation, acl.GROUP, group_id):
        return Errors.GROUP_AUTHORIZATION_FAILED, None
    groups = context.groups
    if group_id in groups.consumer.groups or group_id in groups.groups:
        return Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
    group = groups.share.groups.get(group_id)
    if group is not None and group.members:
        return Errors.NON_EMPTY_GROUP, "The group is not empty."
    return Errors.NONE, None
