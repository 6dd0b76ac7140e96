"""KIP-848 regex subscriptions in the group coordinator: validation, resolution against the
topics, refresh when topics are created (never within 10 s of the last one), deleted topics
leaving the assignment, ConsumerGroupRegularExpression records, their replay and tombstones."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from test_consumer_group import CHarness, Topics, owned, parts

from odradek.coordinator.group.consumer import records as rec
from odradek.coordinator.group.consumer.coordinator import ConsumerConfig, HeartbeatResult
from odradek.wire import ErrorCode

EU = uuid.UUID(int=0xE0)
US = uuid.UUID(int=0x05)
T = uuid.UUID(int=0xA)


def harness(**extra: tuple[uuid.UUID, int]) -> CHarness:
    return CHarness(topics=Topics(**{"orders-eu": (EU, 2), "t": (T, 1), **extra}))


def join_regex(h: CHarness, regex: str = "^orders-.*") -> HeartbeatResult:
    """m1 joins with `regex`; the resolution runs after the join (Kafka's background task, a
    timer due at once here) and bumps the group epoch; m1's next heartbeat (returned) is at
    epoch 2 with the regex's partitions."""
    r = h.hb(subscribed_topic_names=None, subscribed_topic_regex=regex)
    assert (r.error, r.member_epoch) == (ErrorCode.NONE, 1)
    h.advance(0)
    return h.hb(member_epoch=1, topic_partitions=[])


def regex_records(h: CHarness) -> list[tuple[str, str, object]]:
    """Every ConsumerGroupRegularExpression record written: (group, regex, topics | None)."""
    out: list[tuple[str, str, object]] = []
    for records in h.log.values():
        for key, value in records:
            if int.from_bytes(key[:2], "big") == rec.REGULAR_EXPRESSION:
                k = rec.parse_key(key, rec.REGULAR_EXPRESSION)
                out.append((k.group, k.member_id,
                            None if value is None else sorted(rec.parse_regex(value).topics)))
    return out


def test_invalid_regex_is_refused_with_kafkas_message_and_nothing_is_written() -> None:
    h = harness()
    r = h.hb(subscribed_topic_names=None, subscribed_topic_regex="orders-(")
    assert (r.error, r.message) == (
        ErrorCode.INVALID_REGULAR_EXPRESSION,
        "SubscribedTopicRegex `orders-(` is not a valid regular expression: missing closing ).")
    assert h.coord.consumer_group("g") is None and "g" not in h.coord.groups and not h.log
    # A member of an existing group changing to an invalid regex keeps its old subscription.
    a = h.hb()
    bad = h.hb(member_epoch=1, topic_partitions=owned(a), subscribed_topic_regex="a++")
    assert bad.error == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert bad.message is not None and bad.message.endswith("invalid nested repetition operator.")
    assert h.cg().members["m1"].subscribed_topic_regex is None


def test_empty_regex_is_no_regex() -> None:
    h = harness()
    r = h.hb(subscribed_topic_names=["t"], subscribed_topic_regex="")
    assert r.error == ErrorCode.NONE and parts(r) == {(T, 0)}
    assert h.cg().resolved_regexes == {} and regex_records(h) == []


def test_regex_resolves_to_full_matches_and_is_persisted() -> None:
    h = harness(**{"orders": (US, 1)})
    r = h.hb(subscribed_topic_names=None, subscribed_topic_regex="orders-.*")
    # As Kafka: the join is answered before the regex is resolved, so with nothing yet.
    assert (r.error, r.member_epoch, parts(r)) == (ErrorCode.NONE, 1, set())
    assert regex_records(h) == [] and h.cg().group_epoch == 1
    h.advance(0)  # the resolution (a timer due at once) bumps the group epoch
    assert h.cg().group_epoch == 2
    r = h.hb(member_epoch=1, topic_partitions=[])
    assert r.member_epoch == 2
    assert parts(r) == {(EU, 0), (EU, 1)}  # "orders" itself does not match "orders-.*"
    resolved = h.cg().resolved_regexes["orders-.*"]
    assert (resolved.topics, resolved.timestamp) == ({"orders-eu"}, h.clock.t)
    assert regex_records(h) == [("g", "orders-.*", ["orders-eu"])]
    assert h.cg().subscribed_topic_names() == {"orders-eu"}


def test_names_and_regex_together_and_internal_topics_match() -> None:
    h = harness(**{"__consumer_offsets": (US, 3)})
    r = h.hb(subscribed_topic_names=["t"], subscribed_topic_regex="__.*")
    assert parts(r) == {(T, 0)}  # the topic names at once, the regex's topics next
    h.advance(0)
    r = h.hb(member_epoch=r.member_epoch, topic_partitions=owned(r))
    assert parts(r) == {(T, 0)} | {(US, p) for p in range(3)}


def test_created_topic_is_picked_up_at_a_heartbeat_10s_after_the_last_resolution() -> None:
    h = harness()
    a = join_regex(h)
    h.topics.topics["orders-us"] = (US, 1)
    h.coord.topics_created()
    h.clock.t += 10_000  # not later than 10 s: the resolution stands
    b = h.hb(member_epoch=2, topic_partitions=owned(a))
    assert (b.member_epoch, b.assignment) == (2, None)
    h.clock.t += 1
    c = h.hb(member_epoch=2, topic_partitions=owned(a))
    assert (c.member_epoch, c.assignment) == (2, None)  # resolved after this heartbeat
    h.advance(0)
    c = h.hb(member_epoch=2, topic_partitions=owned(a))
    assert c.member_epoch == 3 and parts(c) == {(EU, 0), (EU, 1), (US, 0)}
    assert regex_records(h)[-1] == ("g", "^orders-.*", ["orders-eu", "orders-us"])


def test_without_new_topics_the_regex_is_resolved_again_only_after_the_interval() -> None:
    h = harness()
    h.cconfig = ConsumerConfig(regex_refresh_interval_ms=60_000)
    h.__post_init__()
    a = join_regex(h)
    h.topics.topics["orders-us"] = (US, 1)  # created without the notification
    h.clock.t += 59_999
    assert h.hb(member_epoch=2, topic_partitions=owned(a)).member_epoch == 2
    h.advance(0)
    assert len(regex_records(h)) == 1
    h.clock.t += 1
    assert h.hb(member_epoch=2, topic_partitions=owned(a)).member_epoch == 2
    h.advance(0)
    assert len(regex_records(h)) == 2
    assert h.hb(member_epoch=2, topic_partitions=owned(a)).member_epoch == 3


def test_deleted_topic_leaves_the_assignment_through_the_metadata_hash() -> None:
    h = harness(**{"orders-us": (US, 1)})
    a = join_regex(h)
    assert parts(a) == {(EU, 0), (EU, 1), (US, 0)}
    del h.topics.topics["orders-us"]
    b = h.hb(member_epoch=2, topic_partitions=owned(a))
    # The epoch moves at once (the hash changed); the regex record is rewritten only at its
    # next resolution, as in Kafka.
    assert h.cg().group_epoch == 3
    assert (b.member_epoch, parts(b)) == (2, {(EU, 0), (EU, 1)})  # revokes orders-us first
    assert h.hb(member_epoch=2, topic_partitions=owned(b)).member_epoch == 3
    assert h.cg().resolved_regexes["^orders-.*"].topics == {"orders-eu", "orders-us"}


def test_shared_regex_counts_members_and_is_tombstoned_with_its_last_user() -> None:
    h = harness()
    a = h.hb(subscribed_topic_names=None, subscribed_topic_regex="^orders-.*")
    b = h.hb(member_id="m2", subscribed_topic_names=None, subscribed_topic_regex="^orders-.*")
    assert b.error == ErrorCode.NONE and h.cg().subscribed_regexes() == {"^orders-.*": 2}
    h.advance(0)
    assert len(regex_records(h)) == 1  # one resolution for both
    h.clock.t += 5_000
    h.hb(member_id="m2", member_epoch=b.member_epoch, topic_partitions=[])
    h.advance(0)
    assert len(regex_records(h)) == 1  # within 10 s: not resolved again
    # m1 moves to topic names: the regex stays, m2 still uses it.
    h.clock.t += 20_000
    h.hb(member_epoch=1, topic_partitions=owned(a), subscribed_topic_names=["t"],
         subscribed_topic_regex="")
    assert h.cg().subscribed_regexes() == {"^orders-.*": 1}
    assert "^orders-.*" in h.cg().resolved_regexes
    assert h.hb(member_id="m2", member_epoch=-1).error == ErrorCode.NONE
    assert h.cg().resolved_regexes == {}
    assert regex_records(h)[-1] == ("g", "^orders-.*", None)


def test_changing_regex_tombstones_the_old_one_and_resolves_the_new() -> None:
    h = harness(**{"pay": (US, 1)})
    a = join_regex(h)
    h.clock.t += 10_001
    b = h.hb(member_epoch=2, topic_partitions=owned(a), subscribed_topic_regex="pay|t")
    assert b.error == ErrorCode.NONE
    assert set(h.cg().resolved_regexes) == set()  # the old one tombstoned at once
    h.advance(0)
    assert set(h.cg().resolved_regexes) == {"pay|t"}
    assert regex_records(h)[1:] == [("g", "^orders-.*", None), ("g", "pay|t", ["pay", "t"])]
    assert h.cg().group_epoch == 4  # join, resolution, old regex gone, new one resolved


def test_session_expiry_drops_the_regex_and_delete_tombstones_it() -> None:
    h = harness()
    h.hb(subscribed_topic_names=None, subscribed_topic_regex="^orders-.*")
    h.hb(group_id="g2", subscribed_topic_names=None, subscribed_topic_regex="t")
    h.clock.t += 45_001
    h.coord.on_timer()
    h.flush()
    assert h.cg().resolved_regexes == {} and h.cg("g2").resolved_regexes == {}
    assert ("g", "^orders-.*", None) in regex_records(h)
    # An empty group keeps nothing; delete tombstones every regex it still had (none here),
    # and a replay finds both groups without regexes.
    replayed = h.replay()
    assert all(g.consumer is None or g.consumer.resolved_regexes == {}
               for g in replayed.groups.values())


def test_group_tombstones_include_resolved_regexes() -> None:
    h = harness()
    join_regex(h)
    keys = [k for k, _ in h.coord.consumer_group_tombstones(h.cg())]
    assert rec.regex_tombstone("g", "^orders-.*")[0] in keys
    assert keys[-1] == rec.group_epoch_tombstone("g")[0]  # the group epoch goes last


def test_replay_rebuilds_resolved_regexes_and_refreshes_after_load() -> None:
    h = harness()
    a = join_regex(h)
    h.hb(member_id="m2", subscribed_topic_names=["t"])
    loaded = h.replay()
    cg = loaded.consumer_group("g")
    assert cg is not None
    assert cg.resolved_regexes == h.cg().resolved_regexes
    assert cg.subscribed_topic_names() == h.cg().subscribed_topic_names()
    assert (cg.group_epoch, cg.metadata_hash) == (h.cg().group_epoch, h.cg().metadata_hash)
    # A loaded coordinator treats every topic as new: a heartbeat after the 10 s resolves the
    # regex again and finds a topic created while it was down.
    h.topics.topics["orders-us"] = (US, 1)
    h.coord = loaded
    h.clock.t += 10_001
    r = h.hb(member_epoch=a.member_epoch, topic_partitions=owned(a))
    assert r.error == ErrorCode.NONE
    h.advance(0)
    assert h.cg().resolved_regexes["^orders-.*"].topics == {"orders-eu", "orders-us"}
    assert h.cg().group_epoch == 4


def only(*allowed: str) -> Callable[[set[str]], set[str]]:
    """A `describable` filter: the member may DESCRIBE these topics only."""
    return lambda names: names & set(allowed)


def test_regex_keeps_only_the_topics_the_member_may_describe() -> None:
    h = harness(**{"orders-us": (US, 1)})
    seen: list[set[str]] = []

    def describable(names: set[str]) -> set[str]:
        seen.append(set(names))
        return names & {"orders-eu"}

    r = h.hb(subscribed_topic_names=None, subscribed_topic_regex="^orders-.*",
             describable=describable)
    assert seen == []  # consulted when the regex is resolved, not at the heartbeat
    h.advance(0)
    assert seen == [{"orders-eu", "orders-us"}]  # each matched topic once
    r = h.hb(member_epoch=1, topic_partitions=[])
    assert parts(r) == {(EU, 0), (EU, 1)}
    assert regex_records(h) == [("g", "^orders-.*", ["orders-eu"])]


def test_shared_regex_resolves_with_the_member_that_triggered_it() -> None:
    """As Kafka: one resolution for every regex of the group, with the context of the member
    whose heartbeat scheduled it; a heartbeat while it is pending does not replace it."""
    h = harness(**{"orders-us": (US, 1)})
    h.hb(subscribed_topic_names=None, subscribed_topic_regex="^orders-.*",
         describable=only("orders-eu"))
    h.hb(member_id="m2", subscribed_topic_names=None, subscribed_topic_regex="^orders-.*",
         describable=only("orders-eu", "orders-us"))
    h.advance(0)
    assert h.cg().resolved_regexes["^orders-.*"].topics == {"orders-eu"}  # m1's principal
    h.topics.topics["orders-ap"] = (uuid.UUID(int=0xAB), 1)
    h.coord.topics_created()
    h.clock.t += 10_001
    h.hb(member_id="m2", member_epoch=h.cg().members["m2"].member_epoch,
         topic_partitions=[], describable=only("orders-eu", "orders-us"))
    h.advance(0)  # m2 asked this time: its principal decides for the whole group
    assert h.cg().resolved_regexes["^orders-.*"].topics == {"orders-eu", "orders-us"}


def test_no_filter_without_an_authorizer() -> None:
    h = harness(**{"orders-us": (US, 1)})
    join_regex(h)
    assert h.cg().resolved_regexes["^orders-.*"].topics == {"orders-eu", "orders-us"}
