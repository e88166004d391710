"""What ShareFetch and ShareAcknowledge check first, alike: share groups enabled (share.version),
the group and member ids given, READ on the group (as KafkaApis checks it)."""

from weir.protocol.errors import Errors

from ..acl import model as acl
from ..features import SHARE_VERSION


def refusal(context, msg, request, session):
    """The whole answer refusing ``request``, or None when it may go on."""
    if context.features.level(SHARE_VERSION) < 1:
        return msg.RESPONSE(error_code=Errors.UNSUPPORTED_VERSION, error_message="Share groups are not enabled.")
    if not request.group_id or not request.member_id:
        return msg.RESPONSE(error_code=Errors.INVALID_REQUEST, error_message="Group and member ids must be given.")
    if not context.authorizer.allows(session, acl.READ, acl.GROUP, request.group_id):
        return msg.RESPONSE(error_code=Errors.GROUP_AUTHORIZATION_FAILED)
    return None
