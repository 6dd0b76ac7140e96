"""Quota configs (issue #13 point 4): Kafka's precedence of entity matches, the controller's
validation of alterations and the describe filters."""

from __future__ import annotations

import pytest

from odradek.coordinator.quota.configs import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    Op,
    QuotaConfigs,
    QuotaError,
)

U, C = "user", "client-id"
LEVELS = [  # Kafka's precedence, most specific first, with the tags the match counts in
    ([(U, "alice"), (C, "app")], ("alice", "app")),
    ([(U, "alice"), (C, None)], ("alice", "app")),
    ([(U, "alice")], ("alice", "")),
    ([(U, None), (C, "app")], ("alice", "app")),
    ([(U, None), (C, None)], ("alice", "app")),
    ([(U, None)], ("alice", "")),
    ([(C, "app")], ("", "app")),
    ([(C, None)], ("", "app")),
]


def _set(q: QuotaConfigs, pairs: list[tuple[str, str | None]], key: str, value: float) -> None:
    results, _ = q.alter([(pairs, [Op(key, value)])], validate_only=False)
    assert [e for _, e in results] == [None]


@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_the_most_specific_entity_wins(level: int) -> None:
    q = QuotaConfigs()
    for i, (pairs, _) in enumerate(LEVELS[level:]):
        _set(q, pairs, PRODUCER_BYTE_RATE, 1000 + level + i)
    tags = LEVELS[level][1]
    assert q.resolve(PRODUCER_BYTE_RATE, "alice", "app") == (tags, 1000 + level)
    assert q.resolve(CONSUMER_BYTE_RATE, "alice", "app") is None  # per key
    # another user and client see only the defaults among them
    other = q.resolve(PRODUCER_BYTE_RATE, "bob", "other")
    defaults = [i for i, (pairs, _) in enumerate(LEVELS) if i >= level
                and all(n is None for _, n in pairs)]
    assert (other is None) == (not defaults)


def test_a_user_quota_is_shared_by_the_users_clients() -> None:
    q = QuotaConfigs()
    _set(q, [(U, "alice")], PRODUCER_BYTE_RATE, 100)
    assert q.resolve(PRODUCER_BYTE_RATE, "alice", "a") == (("alice", ""), 100)
    assert q.resolve(PRODUCER_BYTE_RATE, "alice", "b") == (("alice", ""), 100)
    assert q.resolve(PRODUCER_BYTE_RATE, "bob", "a") is None


@pytest.mark.parametrize(("pairs", "ops", "message"), [
    ([], [Op(PRODUCER_BYTE_RATE, 1)], "Invalid empty client quota entity"),
    ([(U, "a"), (U, "b")], [Op(PRODUCER_BYTE_RATE, 1)],
     "Invalid client quota entity, duplicate entity entry user"),
    ([("ip", "127.0.0.1")], [Op("connection_creation_rate", 1)],
     "Unhandled client quota entity type: ip"),
    ([(C, "")], [Op(PRODUCER_BYTE_RATE, 1)], "Empty client-id not supported"),
    ([(U, "a")], [Op("nope", 1)], "Invalid configuration key nope"),
    ([(U, "a")], [Op(PRODUCER_BYTE_RATE, -1)], "Quota producer_byte_rate must be greater than 0"),
    ([(U, "a")], [Op(CONSUMER_BYTE_RATE, 2.5)], "consumer_byte_rate cannot be a fractional value."),
    ([(U, "a")], [Op(PRODUCER_BYTE_RATE, 1e19)],
     "Proposed value for producer_byte_rate is too large for a LONG."),
])
def test_invalid_alterations(pairs: list[tuple[str, str | None]], ops: list[Op],
                             message: str) -> None:
    q = QuotaConfigs()
    results, changed = q.alter([(pairs, ops)], validate_only=False)
    assert [str(e) for _, e in results] == [message]
    assert not changed and q.describe([], False) == []


def test_one_bad_entity_leaves_the_others_and_duplicates_are_refused() -> None:
    q = QuotaConfigs()
    results, changed = q.alter([
        ([(U, "a")], [Op(PRODUCER_BYTE_RATE, 10), Op("request_percentage", 12.5)]),
        ([(U, "b")], [Op(PRODUCER_BYTE_RATE, 0.5)]),
        ([(U, "c")], [Op(PRODUCER_BYTE_RATE, 1), Op(PRODUCER_BYTE_RATE, 2)]),
    ], validate_only=False)
    assert changed
    assert [e is None for _, e in results] == [True, False, False]
    assert "Ignoring duplicate entity" in str(results[2][1])
    assert q.describe([], False) == [(((U, "a"),), {PRODUCER_BYTE_RATE: 10.0,
                                                   "request_percentage": 12.5})]


def test_validate_only_and_remove() -> None:
    q = QuotaConfigs()
    results, changed = q.alter([([(U, "a")], [Op(PRODUCER_BYTE_RATE, 10)])], validate_only=True)
    assert results[0][1] is None and not changed and not q.enabled(PRODUCER_BYTE_RATE)
    _set(q, [(U, "a")], PRODUCER_BYTE_RATE, 10)
    assert q.enabled(PRODUCER_BYTE_RATE) and q.any_enforced
    _, changed = q.alter([([(U, "a")], [Op(PRODUCER_BYTE_RATE, None)])], validate_only=False)
    assert changed and q.describe([], False) == [] and not q.any_enforced
    # removing what is not there is no error and no change
    results, changed = q.alter([([(U, "a")], [Op("anything", None)])], validate_only=False)
    assert results[0][1] is None and not changed


def _filled() -> QuotaConfigs:
    q = QuotaConfigs()
    for pairs in ([(U, "alice")], [(U, "alice"), (C, "app")], [(U, None)], [(C, None)],
                  [(C, "app")]):
        _set(q, pairs, PRODUCER_BYTE_RATE, 1)
    return q


def _names(q: QuotaConfigs, components: list[tuple[str, int, str | None]],
           strict: bool = False) -> set[tuple[tuple[str, str | None], ...]]:
    return {e for e, _ in q.describe(components, strict)}


def test_describe_match_types_and_strict() -> None:
    q = _filled()
    assert len(_names(q, [])) == 5
    assert _names(q, [], strict=True) == set()
    assert _names(q, [(U, 0, "alice")]) == {((U, "alice"),), ((C, "app"), (U, "alice"))}
    assert _names(q, [(U, 0, "alice")], strict=True) == {((U, "alice"),)}
    assert _names(q, [(U, 1, None)]) == {((U, None),)}
    assert _names(q, [(C, 2, None)], strict=True) == {((C, None),), ((C, "app"),)}
    assert _names(q, [(U, 2, None), (C, 0, "app")]) == {((C, "app"), (U, "alice"))}
    assert _names(q, [("ip", 2, None)]) == set()


@pytest.mark.parametrize(("components", "message", "unsupported"), [
    ([("", 0, "x")], "Invalid empty entity type.", False),
    ([(U, 0, "a"), (U, 2, None)], "Entity type user cannot appear more than once in the filter.",
     False),
    ([("group", 2, None)], "Unsupported entity type group", True),
    ([(U, 0, None)], "Request specified MATCH_TYPE_EXACT, but set match string to null.", False),
    ([(U, 1, "a")], "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
     False),
    ([(U, 2, "a")], "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
     False),
    ([(U, 3, None)], "Unknown match type 3", False),
    ([("ip", 2, None), (U, 2, None)], "Invalid entity filter component combination. IP filter "
     "component should not be used with user or clientId filter component.", False),
])
def test_describe_errors(components: list[tuple[str, int, str | None]], message: str,
                         unsupported: bool) -> None:
    with pytest.raises(QuotaError) as e:
        _filled().describe(components, False)
    assert str(e.value) == message and e.value.unsupported == unsupported


def test_json_round_trip() -> None:
    q = _filled()
    back = QuotaConfigs.from_json(q.to_json())
    assert sorted(back.describe([], False), key=repr) == sorted(q.describe([], False), key=repr)
    assert back.resolve(PRODUCER_BYTE_RATE, "alice", "app") == \
        q.resolve(PRODUCER_BYTE_RATE, "alice", "app")
