"""ApiVersions (18), v0-5.

The answer is derived from the handler registry, so nothing is advertised that
is not served. A version above 4 is answered by the dispatcher in v0 with
UNSUPPORTED_VERSION, as Kafka does (KIP-511). From v3 the tagged fields carry
the features (broker/features.py): the supported ranges, the finalized levels
(min and max level both the finalized level, as Kafka fills them) and their epoch.
Below v4 a supported range starting at 0 is left out, as Kafka leaves it out
(KAFKA-17492: older clients fail to read a minimum of 0), so v3 lists no
supported transaction.version.

v5 (KIP-1242, Kafka 4.4) lets a client name the cluster and node it means to reach, so that a
connection DNS or a load balancer sent elsewhere is found out: both named and not ours is
REBOOTSTRAP_REQUIRED, a node without a cluster or a cluster without a node INVALID_REQUEST, each
with no API keys and no features, as Kafka 4.4.0 answers (checked on both brokers,
tests/reference/test_differential_api_versions.py). Naming neither skips the check.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import api_versions as msg

from ..dispatcher import advertised_versions, handles
from ..features import SUPPORTED

FIRST_IDENTITY_VERSION = 5
NO_NODE = -1


@handles(ApiKey.API_VERSIONS, versions=(0, 5))
def handle(context, header, request, session=None):
    if header.api_version >= 3 and session is not None:  # client telemetry selectors match on them (KIP-714)
        session.client_software = (request.client_software_name, request.client_software_version)
    if header.api_version >= FIRST_IDENTITY_VERSION:
        refusal = _identity_refusal(context, request.cluster_id, request.node_id)
        if refusal is not None:
            return msg.RESPONSE(error_code=refusal, api_keys=[])
    response = msg.RESPONSE(error_code=0, api_keys=[
        msg.ApiVersion(api_key=key, min_version=lo, max_version=hi) for key, lo, hi in advertised_versions()])
    if header.api_version >= 3:
        features = context.features
        response.supported_features = [msg.SupportedFeature(name=name, min_version=low, max_version=high)
                                       for name, (low, high) in sorted(SUPPORTED.items())
                                       if low > 0 or header.api_version >= 4]
        response.finalized_features_epoch = features.epoch
        response.finalized_features = [msg.FinalizedFeature(name=name, max_version_level=level, min_version_level=level)
                                       for name, level in sorted(features.levels.items())]
    return response


def _identity_refusal(context, cluster_id: str | None, node_id: int) -> int | None:
    """KIP-1242's check of the cluster and node a v5 client names; None when it may go on."""
    if (cluster_id is None) != (node_id == NO_NODE):
        return Errors.INVALID_REQUEST
    if cluster_id is not None and (cluster_id != context.cluster_id or node_id != context.node_id):
        return Errors.REBOOTSTRAP_REQUIRED
    return None
