"""KIP-932 share groups, sans IO: share-partition delivery state (`partition.py`), the
initial start offset (`offset_reset.py`), membership and server-side assignment
(`group.py`, `assignor.py`, `records.py`), the persisted share-partition state of
`__share_group_state` (`state.py`), the broker's set of share-partitions (`manager.py`) and
the ShareFetch share sessions (`session.py`).

Nothing here is wired to the broker yet: no share api is registered or advertised. See
docs/share-groups.md for what maps to which Kafka class and what is left.
"""
