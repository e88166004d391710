"""``weir-admin transactions list | describe | describe-producers | find-hanging | abort``, as
``kafka-transactions`` does them: ``find-hanging`` needs ``--topic`` or ``--broker-id`` and looks only
at transactions older than ``--max-transaction-timeout`` minutes (15 by default)."""

from __future__ import annotations

import argparse
import time

from .admin import AbortTransactionSpec, Admin
from .cli_output import UsageError, emit
from .types import TopicPartition


async def transactions_list(admin: Admin, args: argparse.Namespace) -> None:
    listed = await admin.list_transactions(states=args.state, producer_ids=args.producer_id,
                                           min_duration_ms=args.duration_filter)
    emit(args, listed, ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"],
         [[t.transactional_id, t.coordinator_id, t.producer_id, t.state] for t in listed])


async def transactions_describe(admin: Admin, args: argparse.Namespace) -> None:
    described = (await admin.describe_transactions([args.transactional_id]))[args.transactional_id]
    now_ms = int(time.time() * 1000)
    start = described.transaction_start_time_ms
    emit(args, described, ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                           "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                           "TopicPartitions"],
         [[described.coordinator_id, described.transactional_id, described.producer_id, described.producer_epoch,
           described.state, described.transaction_timeout_ms, start if start >= 0 else None,
           now_ms - start if start >= 0 else None, described.topic_partitions]])


async def transactions_describe_producers(admin: Admin, args: argparse.Namespace) -> None:
    tp = TopicPartition(args.topic, args.partition)
    producers = (await admin.describe_producers([tp]))[tp]
    emit(args, producers, ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
                           "LastTimestamp", "CurrentTransactionStartOffset"],
         [[p.producer_id, p.producer_epoch, p.coordinator_epoch if p.coordinator_epoch >= 0 else None,
           p.last_sequence, p.last_timestamp, p.current_transaction_start_offset if p.in_transaction else None]
          for p in producers])


async def transactions_find_hanging(admin: Admin, args: argparse.Namespace) -> None:
    hanging = await admin.find_hanging_transactions(topic=args.topic, partition=args.partition,
                                                    broker_id=args.broker_id,
                                                    max_transaction_timeout_ms=args.max_transaction_timeout * 60000)
    now_ms = int(time.time() * 1000)
    emit(args, hanging, ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                         "LastTimestamp", "Duration(min)"],
         [[h.topic_partition.topic, h.topic_partition.partition, h.producer.producer_id, h.producer.producer_epoch,
           h.producer.coordinator_epoch, h.producer.current_transaction_start_offset, h.producer.last_timestamp,
           (now_ms - h.producer.last_timestamp) // 60000] for h in hanging])


async def transactions_abort(admin: Admin, args: argparse.Namespace) -> None:
    tp = TopicPartition(args.topic, args.partition)
    if args.start_offset is not None:
        spec = await admin.abort_spec_for(tp, args.start_offset)
    else:
        spec = AbortTransactionSpec(tp, args.producer_id, args.producer_epoch, args.coordinator_epoch)
    await admin.abort_transaction(spec)
    emit(args, {"aborted": spec}, ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "Result"],
         [[tp.topic, tp.partition, spec.producer_id, spec.producer_epoch, spec.coordinator_epoch, "aborted"]])


def _check_find_hanging(args: argparse.Namespace) -> None:
    if args.topic is None and args.broker_id is None:
        raise UsageError("find-hanging needs --topic or --broker-id to limit the search")
    if args.partition is not None and args.topic is None:
        raise UsageError("--partition needs --topic")


def _check_abort(args: argparse.Namespace) -> None:
    if args.start_offset is None and None in (args.producer_id, args.producer_epoch, args.coordinator_epoch):
        raise UsageError("identify the transaction with --start-offset, or with --producer-id, --producer-epoch "
                         "and --coordinator-epoch")


def add_parser(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``transactions`` noun."""
    txns = nouns.add_parser("transactions", help="inspect transactions; find and abort hanging ones")
    verbs = txns.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("list")
    p.add_argument("--state", action="append", default=[], help="e.g. Ongoing (repeatable)")
    p.add_argument("--producer-id", type=int, action="append", default=[])
    p.add_argument("--duration-filter", type=int, default=-1, metavar="MS",
                   help="only transactions open at least this long")
    p.set_defaults(run=transactions_list)
    p = verbs.add_parser("describe")
    p.add_argument("--transactional-id", required=True)
    p.set_defaults(run=transactions_describe)
    p = verbs.add_parser("describe-producers")
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=int, required=True)
    p.set_defaults(run=transactions_describe_producers)
    p = verbs.add_parser("find-hanging")
    p.add_argument("--topic")
    p.add_argument("--partition", type=int)
    p.add_argument("--broker-id", type=int)
    p.add_argument("--max-transaction-timeout", type=int, default=15, metavar="MINUTES",
                   help="only transactions open longer than this (default 15, Kafka's transaction.max.timeout.ms)")
    p.set_defaults(run=transactions_find_hanging, check=_check_find_hanging)
    p = verbs.add_parser("abort", help="abort a hanging transaction (an ABORT marker on the partition)")
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=int, required=True)
    p.add_argument("--start-offset", type=int, help="start offset of the transaction (as find-hanging shows it)")
    p.add_argument("--producer-id", type=int)
    p.add_argument("--producer-epoch", type=int)
    p.add_argument("--coordinator-epoch", type=int)
    p.set_defaults(run=transactions_abort, check=_check_abort)
