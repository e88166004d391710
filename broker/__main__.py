"""Command line: ``weir`` or ``python -m weir.broker`` ``[--host H] [--port P] [--data-dir D]
[--config server.properties] [--override name=value ...] [--feature name=level ...]``.

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
from .context import BrokerContext
from .features import parse_feature_flag
from .lifecycle import ListenError, RunningBroker
from .log.open_files import raise_open_files_limit

log = logging.getLogger("weir")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="weir", description="Weir Kafka-compatible broker")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=9092, help="port to listen on (default 9092)")
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
    log.info("Weir broker ready on %s:%d (node %d, data %s) in %.0f ms", context.host, broker.port,
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
        features = dict(parse_feature_flag(text) for text in args.feature)
        context = BrokerContext(config, Path(args.data_dir), args.host, args.port,  # loads dynamic settings
                                initial_features=features)
    except (ConfigError, OSError) as exc:
        print(f"weir: configuration error: {exc}", file=sys.stderr)
        return 2
    uvloop.run(serve(context, started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
