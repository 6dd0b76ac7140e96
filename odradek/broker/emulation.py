"""Kafka release emulation (issue #16): `emulate.kafka.version` / `odradek serve
--emulate-kafka 2.8` makes this broker advertise and serve what a broker of that Apache Kafka
release would, as far as Odradek implements it.

- The apis and version ranges are those of the release (`kafka_releases.py`, extracted from
  Kafka's own specs by `tools/kafka_releases.py`) intersected with Odradek's registry: an api
  the release lacks is not advertised, and a request for it, or for a version above the
  release's max, closes the connection, as Kafka does for a version it does not know
  (ApiVersions itself gets the v0 UNSUPPORTED_VERSION answer with the list, KIP-511). Where
  the release serves older versions than Odradek (Produce v0-2, Fetch v0-3: the legacy
  message format), Odradek's own floor stays.
- Finalized features: a release before 4.0 finalizes none (transaction.version 0: clients use
  the classic transaction protocol; group.version 0: no KIP-848 consumer groups, whose apis
  are left out, as a 3.7 or 3.8 broker leaves out its preview of them unless told to serve
  it); from 4.0 on, the levels a cluster of that release finalizes when formatted with its
  defaults (`_FINALIZED` below), with `transaction.version` as the broker setting selects (2,
  every 4.x release's default). 4.4 has Odradek's defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from odradek.broker.kafka_releases import RELEASES
from odradek.broker.registry import advertised
from odradek.wire import ApiKey

# KIP-848's apis: in the specs of 3.7 and 3.8 as an early-access preview that a broker serves
# only when told to (group.coordinator.rebalance.protocols); generally available in 4.0.
_KIP_848 = frozenset({ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE})

Ranges = Mapping[int, tuple[int, int]]

# The finalized levels of a freshly formatted cluster of each 4.x release, other than
# transaction.version (2 in all): each feature's highest level whose bootstrap metadata.version
# is at most the release's latest production one (read from the Feature, MetadataVersion,
# ShareVersion and StreamsVersion definitions of kafka-server-common 4.0.2, 4.1.2, 4.2.2, 4.3.1
# and 4.4.0). metadata.version: 4.0-IV3 (25), 4.1-IV1 (27), 4.2-IV1 (29), 4.3-IV0 (30),
# 4.4-IV2 (33). share.version 1 needs 4.2-IV0 and streams.version 1 4.2-IV1: in 4.1 share
# groups are a preview (level 0 by default: their apis are not advertised) and 4.0 has neither
# in its stable specs; share.version 2 is 4.4's (4.4-IV0). A level 0 here leaves the feature
# unfinalized and its apis out, as the registry's `advertised` does.
_FINALIZED: Mapping[str, Mapping[str, int]] = MappingProxyType({
    "4.0": {"metadata.version": 25, "group.version": 1, "share.version": 0, "streams.version": 0},
    "4.1": {"metadata.version": 27, "group.version": 1, "share.version": 0, "streams.version": 0},
    "4.2": {"metadata.version": 29, "group.version": 1, "share.version": 1, "streams.version": 1},
    "4.3": {"metadata.version": 30, "group.version": 1, "share.version": 1, "streams.version": 1},
})


def api_ranges(release: str, levels: Mapping[str, int] | None = None) -> Ranges:
    """api key -> the (min, max) versions served; `release` "" is Odradek's own ranges.
    With the finalized feature `levels`, an api whose feature is at 0 (share groups without
    share.version) is left out, as the registry's `advertised` does."""
    ours = {key: (low, high) for key, low, high in advertised(levels)}
    if not release:
        return MappingProxyType(ours)
    theirs = RELEASES[release]
    old = not finalizes_features(release)
    out: dict[int, tuple[int, int]] = {}
    for key, (low, high) in ours.items():
        rng = theirs.get(key)
        if rng is None or (old and key in _KIP_848):
            continue
        lo, hi = max(low, rng[0]), min(high, rng[1])
        if lo <= hi:
            out[key] = (lo, hi)
    return MappingProxyType(out)


def finalizes_features(release: str) -> bool:
    """Does a broker of `release` finalize feature levels clients act on (transaction.version,
    group.version)? Those arrived with Kafka 4.0's defaults."""
    return not release or tuple(int(p) for p in release.split(".")) >= (4, 0)


def finalized_levels(release: str) -> Mapping[str, int]:
    """The feature levels (name -> level) `release` finalizes other than transaction.version,
    to pass to `Features.finalize`: empty for Odradek's own defaults ("" and 4.4); only call
    it for a release that `finalizes_features`."""
    return MappingProxyType(dict(_FINALIZED.get(release, {})))
