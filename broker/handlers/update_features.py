"""UpdateFeatures (57), v0-2: kafka-features upgrade / downgrade / disable.

Kafka's broker forwards the request to its controller; this one node is both and
applies it at once, so ``timeout_ms`` has nothing to wait for. The checks, their
order and their messages are the controller's (broker/features.py): one refused
update fails the whole request with INVALID_UPDATE_VERSION at the top level and
"The update failed for all features since the following feature had an error: ...",
with no per-feature results. A success answers per-feature results (error NONE,
message "NONE", as Kafka's Errors.NONE.message()) up to v1 and none from v2.
v0's ``allow_downgrade`` is ignored: Kafka 4.3.1's controller reads the upgrade type,
which v0 does not carry, so every v0 update is an upgrade (seen on the wire: a v0
downgrade with allow_downgrade is refused). ``validate_only`` (v1+, the tools' --dry-run) checks and changes nothing.
No authorizer: Kafka's CLUSTER ALTER check has nothing to refuse. A change that cannot
be written to disk (ENOSPC, EIO) is answered KAFKA_STORAGE_ERROR and changes nothing,
as the design answers every failed write.
"""

import logging

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import update_features as msg

from ..acl import model as acl
from ..dispatcher import handles

log = logging.getLogger(__name__)


@handles(ApiKey.UPDATE_FEATURES, versions=(0, 2))
def handle(context, header, request, session=None):
    if not context.authorizer.allows_cluster(session, acl.ALTER):  # ACLs
        return msg.RESPONSE(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED,
                            error_message="Cluster authorization failed.", results=[])
    version = header.api_version
    updates = [(update.feature, update.max_version_level, update.upgrade_type)  # v0: the default, UPGRADE
               for update in request.feature_updates]
    try:
        context.features.update(updates, validate_only=request.validate_only)
    except KafkaError as exc:
        return msg.RESPONSE(error_code=exc.code, error_message="The update failed for all features since the "
                                                               f"following feature had an error: {exc.message}")
    except OSError as exc:
        log.error("finalized features could not be written: %s", exc)
        return msg.RESPONSE(error_code=Errors.KAFKA_STORAGE_ERROR,
                            error_message=f"The finalized features could not be written: {exc}")
    results = [] if version >= 2 else [
        msg.FeatureResult(feature=update.feature, error_code=Errors.NONE, error_message=Errors.NONE.name)
        for update in request.feature_updates]
    return msg.RESPONSE(error_code=Errors.NONE, results=results)
