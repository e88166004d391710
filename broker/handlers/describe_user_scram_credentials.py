"""DescribeUserScramCredentials (50), v0: mechanisms and iteration counts per user, never salts
or keys. Null or no users: every user with credentials. A user named twice is DUPLICATE_RESOURCE,
one without credentials RESOURCE_NOT_FOUND, as Kafka's ScramImage answers. ACLs: DESCRIBE on the cluster
(CLUSTER_AUTHORIZATION_FAILED, as KafkaApis answers; in the ACL differential Kafka 4.3.1 did not
answer a refused request within 10 s, so that case is not compared).
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import describe_user_scram_credentials as msg

from ..acl import model as acl
from ..dispatcher import handles


@handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, versions=(0, 0))
def handle(context, header, request, session=None):
    if not context.authorizer.allows_cluster(session, acl.DESCRIBE):  # ACLs
        refused = "Cluster authorization failed."
        return msg.RESPONSE(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED, error_message=refused, results=[
            msg.Result(user=user.name, error_code=Errors.CLUSTER_AUTHORIZATION_FAILED, error_message=refused,
                       credential_infos=[]) for user in request.users or []])
    users = None if request.users is None else [user.name for user in request.users]
    return msg.RESPONSE(results=[
        msg.Result(user=user, error_code=code, error_message=message,
                   credential_infos=[msg.CredentialInfo(mechanism=m, iterations=i) for m, i in infos])
        for user, code, message, infos in context.scram.describe(users)])
