"""The timers that notice hard failures in a simulated cluster, without I/O (docs/cluster.md
"Hard failures"): which brokers are cut off, the controller's broker sessions
(`broker.session.timeout.ms`) and each follower's last caught-up time
(`replica.lag.time.max.ms`).

A broker is *reachable* unless killed or isolated: only a reachable broker heartbeats the
controller, and replication runs only between two reachable brokers. The controller fences
a broker whose last heartbeat is older than the session timeout (Kafka's
BrokerHeartbeatManager). A follower is out of sync when its log end differs from the
leader's and it has not been caught up for longer than the lag max (Kafka's
Partition.getOutOfSyncReplicas); an equal log end is in sync however old.
"""

from __future__ import annotations

from collections.abc import Iterable

TopicPartition = tuple[str, int]


class FailureRules:
    def __init__(self, nodes: Iterable[int], *, session_timeout_ms: int, lag_max_ms: int,
                 now_ms: int) -> None:
        self.session_timeout_ms = session_timeout_ms
        self.lag_max_ms = lag_max_ms
        self.killed: set[int] = set()
        self.isolated: set[int] = set()
        self.delay_ms: dict[int, int] = {}
        self.last_heartbeat: dict[int, int] = {n: now_ms for n in nodes}
        self._caught_up: dict[tuple[TopicPartition, int], int] = {}

    # -- reachability --------------------------------------------------------------------------

    def reachable(self, node: int) -> bool:
        """Can talk to the controller and the other brokers."""
        return node not in self.killed and node not in self.isolated

    def linked(self, a: int, b: int) -> bool:
        return self.reachable(a) and self.reachable(b)

    def link_delay_ms(self, a: int, b: int) -> int:
        """Replication between `a` and `b` is as slow as the slower end."""
        return max(self.delay_ms.get(a, 0), self.delay_ms.get(b, 0))

    @property
    def any_fault(self) -> bool:
        return bool(self.killed or self.isolated or self.delay_ms)

    # -- broker sessions -----------------------------------------------------------------------

    def heartbeat(self, now_ms: int) -> None:
        """Every reachable broker heartbeats (its interval is below the session timeout)."""
        for node in self.last_heartbeat:
            if self.reachable(node):
                self.last_heartbeat[node] = now_ms

    def expired(self, unfenced: Iterable[int], now_ms: int) -> list[int]:
        """The unfenced brokers whose session timed out: the controller fences them."""
        return sorted(n for n in unfenced
                      if now_ms - self.last_heartbeat.get(n, now_ms) > self.session_timeout_ms)

    # -- follower lag --------------------------------------------------------------------------

    def caught_up(self, tp: TopicPartition, node: int, now_ms: int) -> None:
        """`node`'s replica of `tp` reached the leader's log end (as of `now_ms`)."""
        self._caught_up[(tp, node)] = now_ms

    def out_of_sync(self, tp: TopicPartition, node: int, now_ms: int, leader_end: int,
                    follower_end: int) -> bool:
        if follower_end == leader_end:
            self._caught_up[(tp, node)] = now_ms
            return False
        since = self._caught_up.setdefault((tp, node), now_ms)
        return now_ms - since > self.lag_max_ms

    def forget(self, tp: TopicPartition) -> None:
        for key in [k for k in self._caught_up if k[0] == tp]:
            del self._caught_up[key]
