"""Drives the KIP-848 coordinator as a consumer does, without sockets: heartbeats built as the wire
decodes them (null = unchanged), on a manual clock."""

from __future__ import annotations

from weir.protocol.messages import consumer_group_heartbeat as msg

G = "kip848-group"


def request(member_id, epoch, *, topics=None, regex=None, owned=None, rebalance_timeout=-1, instance=None,
            assignor=None, group=G):
    return msg.REQUEST(group_id=group, member_id=member_id, member_epoch=epoch, instance_id=instance,
                       rebalance_timeout_ms=rebalance_timeout, subscribed_topic_names=topics,
                       subscribed_topic_regex=regex, server_assignor=assignor,
                       topic_partitions=None if owned is None else [
                           msg.TopicPartitions(topic_id=topic_id, partitions=sorted(partitions))
                           for topic_id, partitions in owned.items()])


class Member:
    """One consumer: remembers its epoch and what it owns, and acknowledges what it is given."""

    def __init__(self, context, member_id, topics=("data",), regex=None, instance=None, assignor=None, group=G):
        self.context, self.member_id, self.group = context, member_id, group
        self.topics, self.regex, self.instance, self.assignor = topics, regex, instance, assignor
        self.epoch = 0
        self.owned: dict[bytes, set[int]] = {}
        self.last = None

    async def send(self, req, version=1):
        answer = await self.context.groups.consumer_group_heartbeat(req, version, "client", "/127.0.0.1")
        self.last = answer
        if answer["error_code"] == 0:
            self.epoch = answer["member_epoch"]
            if answer.get("assignment") is not None:
                self.owned = {t: set(p) for t, p in answer["assignment"].items()}
        return answer

    async def join(self, rebalance_timeout=30_000):
        self.owned = {}
        return await self.send(request(self.member_id, 0, topics=list(self.topics) if self.regex is None else None,
                                       regex=self.regex, owned={}, rebalance_timeout=rebalance_timeout,
                                       instance=self.instance, assignor=self.assignor, group=self.group))

    async def beat(self):
        """A heartbeat reporting what it owns (it revoked whatever it was told to)."""
        return await self.send(request(self.member_id, self.epoch, owned=self.owned, instance=self.instance,
                                       group=self.group))

    async def leave(self, epoch=-1):
        return await self.send(request(self.member_id, epoch, instance=self.instance, group=self.group))

    def partitions(self) -> set[tuple[bytes, int]]:
        return {(t, p) for t, parts in self.owned.items() for p in parts}
