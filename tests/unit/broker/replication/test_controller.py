"""The simulated cluster's controller, without I/O: placement, elections, ISR, HW."""

from __future__ import annotations

import pytest

from odradek.broker.replication.controller import (
    NO_LEADER,
    Controller,
    PartitionState,
    PlacementError,
    high_watermark,
    place,
)


def test_placement_stripes_round_robin_from_a_start_derived_from_the_name() -> None:
    nodes = [3, 1, 2]
    lists = [place(nodes, "orders", p, 3) for p in range(6)]
    # every partition has 3 distinct replicas, and consecutive partitions rotate the leader
    assert all(sorted(r) == [1, 2, 3] for r in lists)
    leaders = [r[0] for r in lists]
    assert leaders[:3] == leaders[3:] and sorted(leaders[:3]) == [1, 2, 3]
    for r in lists:  # followers follow the leader in node order (striping)
        i = [1, 2, 3].index(r[0])
        assert list(r) == [[1, 2, 3][(i + j) % 3] for j in range(3)]
    assert place(nodes, "orders", 0, 3) == lists[0]  # deterministic: a restart derives it again
    assert len(place(nodes, "orders", 0, 1)) == 1


@pytest.mark.parametrize("factor", [0, 4])
def test_replication_factor_beyond_the_brokers_is_refused(factor: int) -> None:
    with pytest.raises(PlacementError, match="only 3 broker"):
        place([1, 2, 3], "t", 0, factor)


def test_stop_moves_leadership_to_the_next_isr_member_and_bumps_the_epoch() -> None:
    c = Controller([1, 2, 3])
    c.add(("t", 0), (2, 3, 1))
    assert c.get(("t", 0)) == PartitionState((2, 3, 1), 2, 0, [2, 3, 1])
    assert c.broker_stopped(2) == [("t", 0)]
    state = c.get(("t", 0))
    assert state is not None
    assert (state.leader, state.leader_epoch, state.isr) == (3, 1, [3, 1])
    assert state.offline(c.live) == [2]
    # a follower stopping shrinks the ISR but moves no leader
    assert c.broker_stopped(1) == []
    assert (state.leader, state.leader_epoch, state.isr) == (3, 1, [3])


def test_the_last_isr_member_stays_in_the_isr_and_the_partition_goes_leaderless() -> None:
    c = Controller([1, 2])
    state = c.add(("t", 0), (1, 2))
    c.broker_stopped(2)
    c.broker_stopped(1)
    assert (state.leader, state.isr, state.leader_epoch) == (NO_LEADER, [1], 1)
    # the out-of-sync replica coming back cannot lead (no unclean election)...
    assert c.broker_started(2) == []
    assert state.leader == NO_LEADER
    # ...the last ISR member can
    assert c.broker_started(1) == [("t", 0)]
    assert (state.leader, state.leader_epoch) == (1, 2)


def test_unclean_election_takes_a_live_out_of_sync_replica() -> None:
    c = Controller([1, 2], unclean=True)
    state = c.add(("t", 0), (1, 2))
    c.broker_stopped(2)
    c.broker_stopped(1)
    c.broker_started(2)
    assert (state.leader, state.isr) == (2, [2])


def test_isr_joins_in_replica_order_and_never_empties() -> None:
    c = Controller([1, 2, 3])
    state = c.add(("t", 0), (1, 2, 3), isr=[1])
    assert c.join_isr(("t", 0), 3) and c.join_isr(("t", 0), 2)
    assert state.isr == [1, 2, 3]
    assert not c.join_isr(("t", 0), 2)
    assert c.leave_isr(("t", 0), 1) and c.leave_isr(("t", 0), 2)
    assert not c.leave_isr(("t", 0), 3)
    assert state.isr == [3]
    c.broker_stopped(2)
    assert not c.join_isr(("t", 0), 2)  # a stopped broker cannot join


def test_high_watermark_is_the_smallest_isr_log_end_and_never_moves_back() -> None:
    state = PartitionState((1, 2, 3), 1, 0, [1, 2])
    ends = {1: 10, 2: 7, 3: 2}  # 3 is out of the ISR: it does not hold the HW back
    assert high_watermark(state, ends, 0) == 7
    assert high_watermark(state, ends, 8) == 8
    state.isr = [1, 2, 3]
    assert high_watermark(state, ends, 0) == 2
    assert high_watermark(PartitionState((1,), 1, 0, []), {}, 5) == 5


def test_controller_id_is_the_lowest_live_node() -> None:
    c = Controller([4, 5, 6])
    assert c.controller_id == 4
    c.broker_stopped(4)
    assert c.controller_id == 5
