"""Fault injection from a test: ``broker.faults`` and ``pause()``/``disk_full()`` of the test brokers.

    with weir.run_broker() as broker:
        broker.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", times=3)
        ...                                       # the producer retries three times
        assert broker.faults.fired() == {"Produce": 3}
        broker.pause(); ...; broker.resume()      # the broker stops answering, then carries on
        broker.disk_full(); ...; broker.disk_ok() # writes fail with KAFKA_STORAGE_ERROR, reads go on

The brokers of ``weir.testing`` start with fault injection on (``weir.faults.enable``): a
``weir.Broker`` drives its table in-process, a child-process broker (``run_broker()``, the
``weir_broker`` fixture, ``WeirContainer``) over its control channel (broker/faults_listener.py),
the one other languages' tests use too. A fault that cannot be armed (unknown API or error name,
an error Kafka never answers for that API, times below 1) raises ``FaultError`` here, in the test.
"""

from __future__ import annotations

from weir.broker.faults import FaultError, make_delay, make_disconnect, make_error
from weir.client import fault_control

from .fault_channel import CHANNEL_LINE, channel_url, control_settings

__all__ = ["CHANNEL_LINE", "FaultControl", "FaultError", "channel_url", "control_settings"]


class FaultControl(fault_control.FaultControl):
    """``broker.faults`` of a child-process broker: the control channel's client
    (client/fault_control.py), with the same methods as the in-process table (broker/faults.py's
    ``FaultTable``). Faults are checked here first, so a bad one fails in the test, with no round trip."""

    def error(self, api: str, code: str, times: int = 1, topic: str | None = None,
              partition: int | None = None) -> None:
        make_error(api, code, times, topic, partition)
        super().error(api, code, times, topic, partition)

    def delay(self, api: str, seconds: float, times: int = 1) -> None:
        make_delay(api, seconds, times)
        super().delay(api, seconds, times)

    def disconnect(self, api: str, times: int = 1) -> None:
        make_disconnect(api, times)
        super().disconnect(api, times)
