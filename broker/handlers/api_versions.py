"""ApiVersions (18), v0-4.

The answer is derived from the handler registry, so nothing is advertised that
is not served. A version above 4 is answered by the dispatcher in v0 with
UNSUPPORTED_VERSION, as Kafka does (KIP-511).
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import api_versions as msg

from ..dispatcher import advertised_versions, handles


@handles(ApiKey.API_VERSIONS, versions=(0, 4))
def handle(context, header, request):
    return msg.RESPONSE(error_code=0, api_keys=[
        msg.ApiVersion(api_key=key, min_version=lo, max_version=hi) for key, lo, hi in advertised_versions()])
