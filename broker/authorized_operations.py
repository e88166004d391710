"""The authorized-operations bit sets Kafka reports when no authorizer is configured.

Kafka answers "which operations may this client perform" (Metadata v8+,
DescribeCluster, DescribeGroups v3+) with a 32-bit field where bit N is set
for ``AclOperation`` code N. Without an authorizer every operation the
resource type supports is allowed, so the answer is the full supported set
(``AclEntry.supportedOperations``). Weir has no authorizer, so that is always
the answer.
"""

# AclOperation codes
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12


def _bits(*codes: int) -> int:
    return sum(1 << code for code in codes)


TOPIC = _bits(READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS)
GROUP = _bits(READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS)
CLUSTER = _bits(CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE)
