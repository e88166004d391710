"""Operator metrics in Prometheus text format, on an opt-in listener (``metrics.listener``).

Names follow Kafka's JMX MBeans as the Prometheus JMX exporter spells them
(domain_type_name, lower case), so dashboards built for Kafka read Weir:

===========================================================  =================================================
Prometheus name                                              Kafka MBean (or: Weir only)
===========================================================  =================================================
kafka_network_requestmetrics_requests_total{request,version} kafka.network:type=RequestMetrics,
                                                             name=RequestsPerSec,request=*,version=*
kafka_network_requestmetrics_totaltimems{request}            kafka.network:type=RequestMetrics,name=TotalTimeMs
  (histogram, ms)                                            (measured from dispatch to the encoded response:
                                                             time queued behind earlier requests on the same
                                                             connection and the socket write are not in it)
kafka_server_brokertopicmetrics_bytesin_total{topic}         kafka.server:type=BrokerTopicMetrics,
                                                             name=BytesInPerSec,topic=*  (appended batches)
kafka_server_brokertopicmetrics_bytesout_total{topic}        ...name=BytesOutPerSec,topic=*  (fetched batches)
kafka_coordinator_group_groupmetadatamanager_numgroups       kafka.coordinator.group:type=GroupMetadataManager,
  {state}                                                    name=NumGroups<State>; their sum is NumGroups
kafka_server_socket_server_metrics_connection_count          kafka.server:type=socket-server-metrics,
                                                             name=connection-count
kafka_network_socketserver_memorypoolused                    kafka.network:type=SocketServer,
                                                             name=MemoryPoolUsed (bytes held for connections)
process_open_fds                                             java.lang:type=OperatingSystem,
                                                             OpenFileDescriptorCount (/proc/self/fd)
weir_txn_open_transactions                                   Weir only: transactions Ongoing or Prepare*
weir_txn_oldest_open_transaction_age_ms                      Weir only: age of the oldest of them
weir_log_last_stable_offset_lag{topic,partition}             Weir only: high watermark - LSO, listed only for
                                                             partitions where it is not zero
kafka_log_logmanager_offlinelogdirectorycount                kafka.log:type=LogManager,name=OfflineLogDirectoryCount
                                                             (1 while writes fail; Weir keeps serving reads
                                                             and comes back by itself, see broker/log/disk.py)
weir_log_dir_write_failures_total                            Weir only: writes that failed on the disk
weir_event_loop_lag_ms (histogram)                           Weir only: how late the event loop runs a 50 ms
                                                             timer (loop_lag.py)
weir_event_loop_lag_max_ms                                   Weir only: the longest of those lags since start
===========================================================  =================================================

Counters are kept by ``MetricsRecorder`` (hooks: one in the dispatcher, one
line in the Produce and Fetch handlers); gauges are computed at scrape time.
A deleted topic's byte counters are dropped, as Kafka removes its metrics.
"""

from __future__ import annotations

from .recorder import NULL_RECORDER, MetricsRecorder, NullRecorder


def recorder_for(config) -> MetricsRecorder | NullRecorder:
    """A recorder when the metrics listener is configured, the no-op one otherwise."""
    if not config["metrics.listener"]:
        return NULL_RECORDER
    from ..dispatcher import HANDLERS  # the served versions bound the request labels

    def served_versions(api_key: int):
        handler = HANDLERS.get(api_key)
        return None if handler is None else (handler.min_version, handler.max_version)
    return MetricsRecorder(served_versions)
