"""Share sessions: ShareFetch and ShareAcknowledge epochs and Kafka's errors for them."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.coordinator.share.session import (
    FINAL_EPOCH,
    INT32_MAX,
    ShareSessionCache,
    next_epoch,
)
from odradek.wire import ErrorCode

T = uuid.UUID(int=5)
P0, P1, P2 = (T, 0), (T, 1), (T, 2)


def test_open_continue_close() -> None:
    c = ShareSessionCache()
    ctx = c.fetch("g", "m", 0, [P0, P1], [], False, now=10, connection_id="c1")
    assert ctx.error == ErrorCode.NONE and ctx.full and ctx.session is not None
    assert ctx.session.epoch == 1 and list(ctx.session.partitions) == [P0, P1]
    ctx = c.fetch("g", "m", 1, [P2], [P0], True, now=20)
    assert ctx.error == ErrorCode.NONE and not ctx.full
    assert ctx.added == (P2,) and ctx.removed == (P0,)
    assert ctx.session is not None and list(ctx.session.partitions) == [P1, P2]
    assert ctx.session.epoch == 2 and ctx.session.last_used_ms == 20
    ctx = c.fetch("g", "m", FINAL_EPOCH, [], [], True, now=30)
    assert ctx.error == ErrorCode.NONE and ctx.final
    assert c.remove("g", "m") is not None and c.get("g", "m") is None


def test_incremental_fetch_errors() -> None:
    c = ShareSessionCache()
    assert c.fetch("g", "m", 3, [], [], False, 0).error == ErrorCode.SHARE_SESSION_NOT_FOUND
    c.fetch("g", "m", 0, [P0], [], False, 0)
    ctx = c.fetch("g", "m", 2, [], [], False, 0)
    assert ctx.error == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    session = c.get("g", "m")
    assert session is not None and session.epoch == 1  # a refused request moves nothing
    assert c.fetch("g", "m", -7, [], [], False, 0).error == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    # A replayed request (same epoch twice) is refused the second time.
    assert c.fetch("g", "m", 1, [], [], False, 0).error == ErrorCode.NONE
    assert c.fetch("g", "m", 1, [], [], False, 0).error == ErrorCode.INVALID_SHARE_SESSION_EPOCH


def test_initial_fetch_rules() -> None:
    c = ShareSessionCache()
    assert c.fetch("g", "m", 0, [P0], [], True, 0).error == ErrorCode.INVALID_REQUEST
    first = c.fetch("g", "m", 0, [P0], [], False, 0)
    again = c.fetch("g", "m", 0, [P1], [], False, 1)
    assert again.replaced is first.session and again.session is not None
    assert list(again.session.partitions) == [P1] and again.session.epoch == 1


def test_final_fetch_rules() -> None:
    c = ShareSessionCache()
    assert c.fetch("g", "m", -1, [], [], False, 0).error == ErrorCode.SHARE_SESSION_NOT_FOUND
    c.fetch("g", "m", 0, [P0], [], False, 0)
    assert c.fetch("g", "m", -1, [P1], [], False, 0).error == ErrorCode.INVALID_REQUEST
    assert c.fetch("g", "m", -1, [], [P0], False, 0).error == ErrorCode.INVALID_REQUEST


def test_session_limit() -> None:
    c = ShareSessionCache(max_sessions=1)
    c.fetch("g", "a", 0, [P0], [], False, 0)
    assert c.fetch("g", "b", 0, [P0], [], False, 0).error == ErrorCode.SHARE_SESSION_LIMIT_REACHED
    # The member holding the only session may replace it.
    assert c.fetch("g", "a", 0, [P1], [], False, 0).error == ErrorCode.NONE


def test_acknowledge_epochs() -> None:
    c = ShareSessionCache()
    assert c.acknowledge("g", "m", 1, 0).error == ErrorCode.SHARE_SESSION_NOT_FOUND
    c.fetch("g", "m", 0, [P0], [], False, 0)
    assert c.acknowledge("g", "m", 0, 0).error == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert c.acknowledge("g", "m", 2, 0).error == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert c.acknowledge("g", "m", 1, 0).error == ErrorCode.NONE
    assert c.fetch("g", "m", 2, [], [], True, 0).error == ErrorCode.NONE  # epochs are shared
    ctx = c.acknowledge("g", "m", -1, 0)
    assert ctx.error == ErrorCode.NONE and ctx.final


def test_connection_close_drops_its_sessions() -> None:
    c = ShareSessionCache()
    c.fetch("g", "a", 0, [P0], [], False, 0, connection_id="c1")
    c.fetch("g", "b", 0, [P0], [], False, 0, connection_id="c2")
    gone = c.remove_connection("c1")
    assert [s.member_id for s in gone] == ["a"] and c.get("g", "b") is not None


def test_next_epoch_wraps_to_one() -> None:
    assert next_epoch(0) == 1 and next_epoch(INT32_MAX) == 1 and next_epoch(-1) == -1


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.integers(-2, 6), max_size=30))
def test_only_the_expected_epoch_is_accepted(steps: list[int]) -> None:
    c = ShareSessionCache()
    expected: int | None = None
    for epoch in steps:
        ctx = c.fetch("g", "m", epoch, [], [], False, 0)
        if epoch == 0:
            assert ctx.error == ErrorCode.NONE
            expected = 1
        elif epoch == -1:
            assert ctx.error == (ErrorCode.NONE if expected is not None
                                 else ErrorCode.SHARE_SESSION_NOT_FOUND)
        elif expected is None:
            assert ctx.error == ErrorCode.SHARE_SESSION_NOT_FOUND
        elif epoch == expected:
            assert ctx.error == ErrorCode.NONE
            expected += 1
        else:
            assert ctx.error == ErrorCode.INVALID_SHARE_SESSION_EPOCH
