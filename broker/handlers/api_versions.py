"""ApiVersions (18), v0-4.

The answer is derived from the handler registry, so nothing is advertised that
is not served. A version above 4 is answered by the dispatcher in v0 with
UNSUPPORTED_VERSION, as Kafka does (KIP-511). From v3 the tagged fields carry
the features (broker/features.py): the supported ranges, the finalized levels
(min and max level both the finalized level, as Kafka fills them) and their epoch.
Below v4 a supported range starting at 0 is left out, as Kafka leaves it out
(KAFKA-17492: older clients fail to read a minimum of 0), so v3 lists no
supported transaction.version.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import api_versions as msg

from ..dispatcher import advertised_versions, handles
from ..features import SUPPORTED

@handles(ApiKey.API_VERSIONS, versions=(0, 4))
def handle(context, header, request):
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
