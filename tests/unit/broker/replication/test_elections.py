"""ElectLeaders' decisions without I/O (elections.py), as Kafka 4.4's controller makes them."""

from __future__ import annotations

from odradek.broker.replication.controller import NO_LEADER, Controller
from odradek.broker.replication.elections import PREFERRED, UNCLEAN, elect
from odradek.wire import ErrorCode

TP = ("t", 0)


def cluster() -> Controller:
    c = Controller([1, 2, 3])
    c.add(TP, (1, 2, 3))
    return c


def test_preferred_is_not_needed_while_the_first_replica_leads() -> None:
    c = cluster()
    assert elect(c, TP, PREFERRED).error == ErrorCode.ELECTION_NOT_NEEDED
    assert c.partitions[TP].leader_epoch == 0


def test_preferred_moves_leadership_back_once_the_first_replica_is_in_the_isr() -> None:
    c = cluster()
    c.broker_stopped(1)
    state = c.partitions[TP]
    assert (state.leader, state.leader_epoch) == (2, 1)
    c.broker_started(1)
    # live but not yet caught up: not in the ISR, the current leader stays
    assert elect(c, TP, PREFERRED).error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assert (state.leader, state.leader_epoch) == (2, 1)
    assert c.join_isr(TP, 1)
    result = elect(c, TP, PREFERRED)
    assert (result.error, result.unclean) == (ErrorCode.NONE, False)
    assert (state.leader, state.leader_epoch, state.isr) == (1, 2, [1, 2, 3])


def test_preferred_with_the_first_replica_stopped_is_not_available() -> None:
    c = cluster()
    c.broker_stopped(1)
    assert elect(c, TP, PREFERRED).error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assert c.partitions[TP].leader == 2


def test_unclean_is_not_needed_while_a_leader_exists() -> None:
    c = cluster()
    c.broker_stopped(1)
    assert elect(c, TP, UNCLEAN).error == ErrorCode.ELECTION_NOT_NEEDED
    assert c.partitions[TP].leader_epoch == 1


def test_unclean_elects_a_live_out_of_sync_replica_when_no_isr_member_lives() -> None:
    c = cluster()
    for n in (3, 2, 1):
        c.broker_stopped(n)
    state = c.partitions[TP]
    assert (state.leader, state.isr) == (NO_LEADER, [1])
    c.broker_started(3)  # out of sync: a clean election cannot pick it
    assert state.leader == NO_LEADER
    epoch = state.leader_epoch
    assert elect(c, TP, PREFERRED).error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    result = elect(c, TP, UNCLEAN)
    assert (result.error, result.unclean) == (ErrorCode.NONE, True)
    assert (state.leader, state.leader_epoch, state.isr) == (3, epoch + 1, [3])


def test_unclean_with_no_live_replica_finds_no_eligible_leader() -> None:
    c = Controller([1, 2, 3])
    c.add(TP, (1, 2))
    c.broker_stopped(2)
    c.broker_stopped(1)
    assert elect(c, TP, UNCLEAN).error == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    assert elect(c, TP, PREFERRED).error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
