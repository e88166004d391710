"""DescribeLogDirs (35), v1-5.

One log directory, the data dir, as a one-broker Kafka with one ``log.dirs`` entry reports
it: its absolute path, every requested partition it holds with its size (the bytes of its
segments' .log files, Kafka's ``UnifiedLog.size``) and offset lag 0 (Kafka reports a lag
only for a future replica, which an intra-broker move between directories makes; Weir has
one directory), ``is_future_key`` false; from v4 the file system's total and usable bytes,
from v5 ``is_cordoned`` false. A null topic list is every partition; a topic or partition it
does not hold is left out, as Kafka leaves it out. Weir's directory is never offline
(failing writes are a passing spell that reads outlive: broker/log/disk.py), so the
directory's error is always NONE.
ACLs: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED (v3+) and no results.
"""

import shutil

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import describe_log_dirs as msg

from ..acl import model as acl
from ..dispatcher import handles


@handles(ApiKey.DESCRIBE_LOG_DIRS, versions=(1, 5))
def handle(context, header, request, session=None):
    if not context.authorizer.allows_cluster(session, acl.DESCRIBE):
        return msg.RESPONSE(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED, results=[])
    logs = context.logs
    directory = msg.Result(error_code=Errors.NONE, log_dir=str(logs.data_dir.resolve()), topics=[])
    wanted = None if request.topics is None else {}
    for topic in request.topics or ():
        wanted.setdefault(topic.topic, set()).update(topic.partitions)
    for name, topic in sorted(logs.topics.items()):
        if wanted is not None and name not in wanted:
            continue
        partitions = [msg.Partition(partition_index=index, partition_size=partition.size_bytes, offset_lag=0,
                                    is_future_key=False)
                      for index, partition in enumerate(topic.partitions)
                      if wanted is None or index in wanted[name]]
        if partitions:
            directory.topics.append(msg.Topic(name=name, partitions=partitions))
    usage = shutil.disk_usage(logs.data_dir)
    directory.total_bytes, directory.usable_bytes = usage.total, usage.free
    return msg.RESPONSE(error_code=Errors.NONE, results=[directory])
