"""Command line: ``weir`` or ``python -m weir.broker`` ``[--host H] [--port P] [--data-dir D]
[--config server.properties] [--override name=value ...] [--feature name=level ...]``.

``--host``/``--port`` make the one PLAINTEXT listener of a broker whose settings name no
``listeners``; a server.properties with ``listeners`` (PLAINTEXT, SSL, SASL_* and named
listeners) needs neither, and giving both is an error.

Settings use Kafka's broker config names; an unknown name or bad value stops
start-up with a clear message (exit code 2). One log line says when the
broker is ready; SIGTERM and SIGINT shut it down cleanly (files flushed,
producer state snapshotted).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import time
from pathlib import Path

import uvloop

from .config import BrokerConfig, ConfigError, read_properties
from .properties import PropertiesError
from .context import BrokerContext
from .features import parse_feature_flag
from .lifecycle import ListenError, RunningBroker
from .log.open_files import raise_open_files_limit

log = logging.getLogger("weir")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="weir", description="Weir Kafka-compatible broker")
    parser.add_argument("--host", help="address of the one PLAINTEXT listener when the config names no "
                                           "`listeners` (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port of that listener (default 9092)")
    parser.add_argument("--data-dir", default="./data", help="where partitions are stored (default ./data)")
    parser.add_argument("--config", help="a server.properties file with Kafka broker settings")
    parser.add_argument("--override", action="append", default=[], metavar="NAME=VALUE",
                        help="a Kafka broker setting; wins over --config; may repeat")
    parser.add_argument("--feature", action="append", default=[], metavar="NAME=LEVEL",
                        help="finalized level of a new data directory, as kafka-storage format --feature "
                             "(e.g. transaction.version=0); ignored once the directory has levels; may repeat")
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    return parser.parse_args(argv)


def load_config(args: argparse.Namespace) -> BrokerConfig:
    values = read_properties(args.config) if args.config else {}
    for item in args.override:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--override expects name=value, got {item!r}")
        values[name.strip()] = value.strip()
    return BrokerConfig(values)


async def serve(context: BrokerContext, started: float) -> None:
    try:
        broker = RunningBroker(context)
    except ConfigError as exc:
        log.error("configuration error: %s", exc)
        raise SystemExit(2) from None
    try:
        await broker.start()
    except ListenError as exc:
        log.error("%s", exc.strerror)
        raise SystemExit(1) from None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if len(broker.server.listeners) == 1 and broker.server.listeners[0].spec.protocol == "PLAINTEXT":
        where = f"{broker.server.listeners[0].spec.host}:{broker.port}"
    else:
        where = broker.server.describe_listeners()
    log.info("Weir broker ready on %s (node %d, data %s) in %.0f ms", where,
             context.node_id, context.data_dir, (time.monotonic() - started) * 1000)
    await stop.wait()
    log.info("shutting down")
    await broker.stop()
    log.info("stopped cleanly")


def main(argv=None) -> int:
    started = time.monotonic()
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    raise_open_files_limit()  # before anything sizes itself by the limit (weir.max.open.segment.files)
    try:
        config = load_config(args)
        if config["listeners"] and (args.host is not None or args.port is not None):
            raise ConfigError("--host/--port and the listeners setting both say where to listen; give one")
        host = "127.0.0.1" if args.host is None else args.host
        port = 9092 if args.port is None else args.port
        features = dict(parse_feature_flag(text) for text in args.feature)
        context = BrokerContext(config, Path(args.data_dir), host, port,  # loads dynamic settings
                                initial_features=features)
    except (ConfigError, PropertiesError, OSError) as exc:
        print(f"weir: configuration error: {exc}", file=sys.stderr)
        return 2
    uvloop.run(serve(context, started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
