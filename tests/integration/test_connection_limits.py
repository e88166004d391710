"""max.connections, max.connections.per.ip (and overrides), connections.max.idle.ms on the real broker."""

import asyncio
import time

import pytest

from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import ClientConnection
from weir.protocol.messages import api_versions
from tests.broker_process import BrokerProcess
from tests.integration.test_cli import run_broker


class RawClient:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.codec = ClientConnection("limits")

    @classmethod
    async def open(cls, port, source_ip="127.0.0.1"):
        return cls(*await asyncio.open_connection("127.0.0.1", port, local_addr=(source_ip, 0)))

    async def api_versions(self):
        """The answer, or None when the broker closed the connection instead."""
        self.writer.write(self.codec.send_request(ApiKey.API_VERSIONS, 3, api_versions.REQUEST()))
        try:
            async with asyncio.timeout(10):
                while True:
                    data = await self.reader.read(65536)
                    if not data:
                        return None
                    responses = self.codec.receive_data(data)
                    if responses:
                        return responses[0]
        except ConnectionResetError:
            return None

    def close(self):
        self.writer.close()


@pytest.fixture
def limited_broker(tmp_path):
    process = BrokerProcess(tmp_path / "data", overrides={
        "max.connections": "4", "max.connections.per.ip": "2",
        "max.connections.per.ip.overrides": "127.0.0.3:1"}).start()
    yield process
    process.stop()


async def served(port, source_ip):
    client = await RawClient.open(port, source_ip)
    answer = await client.api_versions()
    assert answer is not None and answer.error_code == 0, f"connection from {source_ip} was not served"
    return client


async def refused(port, source_ip):
    client = await RawClient.open(port, source_ip)
    answer = await client.api_versions()
    client.close()
    return answer is None


async def test_connections_over_the_per_ip_and_broker_limits_are_closed_and_the_rest_served(limited_broker):
    port = limited_broker.port
    first = [await served(port, "127.0.0.1"), await served(port, "127.0.0.1")]
    assert await refused(port, "127.0.0.1"), "a third connection from 127.0.0.1 (max.connections.per.ip=2)"
    assert limited_broker.wait_for_log(
        "Rejected connection from 127.0.0.1, address already has the configured maximum of 2 connections")
    overridden = await served(port, "127.0.0.3")
    assert await refused(port, "127.0.0.3"), "a second connection from 127.0.0.3 (its override is 1)"
    fourth = await served(port, "127.0.0.2")
    assert await refused(port, "127.0.0.4"), "a fifth connection (max.connections=4)"
    assert limited_broker.wait_for_log("the broker already has the configured maximum of 4 connections")
    for client in first + [overridden, fourth]:
        assert (await client.api_versions()).error_code == 0, "the admitted connections are still served"
    # A closed connection frees its slot.
    first.pop().close()
    deadline = time.monotonic() + 10
    while await refused(port, "127.0.0.5"):
        assert time.monotonic() < deadline, "a slot freed by a closed connection was never reused"
    for client in first + [overridden, fourth]:
        client.close()


async def test_a_connection_idle_for_connections_max_idle_ms_is_closed(tmp_path):
    broker = BrokerProcess(tmp_path / "data", overrides={"connections.max.idle.ms": "400"}).start()
    try:
        client = await RawClient.open(broker.port)
        assert (await client.api_versions()).error_code == 0
        answered = time.monotonic()
        async with asyncio.timeout(10):
            assert await client.reader.read(1) == b"", "the broker closes the idle connection"
        assert time.monotonic() - answered >= 0.25, "not (much) before connections.max.idle.ms of idleness"
        client.close()
    finally:
        broker.stop()


def test_connection_limit_settings_are_checked_at_startup(tmp_path):
    result = run_broker("--data-dir", str(tmp_path), "--override", "max.connections.per.ip=0")
    assert result.returncode == 2 and "max.connections.per.ip can be set to zero only if" in result.stderr
    result = run_broker("--data-dir", str(tmp_path), "--override", "max.connections.per.ip.overrides=a b:1")
    assert result.returncode == 2 and "expected host:count" in result.stderr
    result = run_broker("--data-dir", str(tmp_path), "--override",
                        "max.connections.per.ip.overrides=no-such-host.invalid:3")
    assert result.returncode == 2 and "cannot resolve 'no-such-host.invalid'" in result.stderr
