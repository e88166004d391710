"""AlterUserScramCredentials (51), v0: set or delete a user's SCRAM-SHA-256/512 credential.

The client sends salt, iterations and the salted password (``kafka-configs --alter
--add-config 'SCRAM-SHA-256=[password=...]' --entity-type users`` salts it); the broker keeps
StoredKey and ServerKey derived from it and writes them durably before answering
(broker/security/scram_store.py). Errors per user as Kafka's ScramControlManager gives them.
(No authorizer yet: Kafka requires ALTER on the cluster.)
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import alter_user_scram_credentials as msg

from ..acl import model as acl
from ..dispatcher import handles


@handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, versions=(0, 0))
def handle(context, header, request, session=None):
    if not context.authorizer.allows_cluster(session, acl.ALTER):  # ACLs
        users = dict.fromkeys([d.name for d in request.deletions] + [u.name for u in request.upsertions])
        return msg.RESPONSE(results=[msg.Result(user=user, error_code=Errors.CLUSTER_AUTHORIZATION_FAILED,
                                                error_message="Cluster authorization failed.") for user in users])
    results = context.scram.alter(
        [(d.name, d.mechanism) for d in request.deletions],
        [(u.name, u.mechanism, u.iterations, bytes(u.salt), bytes(u.salted_password)) for u in request.upsertions])
    return msg.RESPONSE(results=[msg.Result(user=user, error_code=code, error_message=message)
                                 for user, code, message in results])
