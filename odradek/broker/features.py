"""Feature levels (KIP-584, KIP-1022): what this broker supports and which levels are finalized.

ApiVersions v3+ reports them (`SupportedFeatures`, `FinalizedFeaturesEpoch`,
`FinalizedFeatures`), and clients switch protocols on them: the Java producer uses
transactions v2 (KIP-890) only when `transaction.version` is finalized at 2 or more.

What a Kafka 4.4.0 broker formatted with the defaults reports (measured): supported
metadata.version 7-33, kraft.version 0-1, transaction.version 0-2, group.version 0-1,
share.version 0-2, streams.version 0-1, eligible.leader.replicas.version 0-1; finalized
metadata.version 33, transaction.version 2, group.version 1, share.version 2, streams.version
1, eligible.leader.replicas.version 1 (kraft.version stays at 0, which is never listed).

Odradek reports only what it implements: the same metadata.version (its api versions are
4.4's) and kraft.version ranges, `transaction.version` 0-2 finalized at the level the broker
setting `transaction.version` selects (default 2, as Kafka 4.x formats new clusters; 1 or 0
emulate an older cluster: clients then use the classic transaction protocol), and
`group.version` 0-1 finalized at 1 (KIP-848 consumer groups, as Kafka 4.x),
`share.version` 0-2 finalized at 2 (KIP-932 share groups, as Kafka 4.4) and `streams.version`
0-1 finalized at 1 (KIP-1071 streams groups). An emulated release leaves the share and streams
apis out while their feature is at 0, as that release does; Kafka 4.4 advertises them at any
level and answers UNSUPPORTED_VERSION at 0 (`feature_gate.py`). UpdateFeatures changes the
levels at run time (`plan_update` below, `feature_control.py`). Features at level 0 only (eligible leader
replicas) are left out of both lists, as Kafka leaves out a feature whose highest supported
level is 0.

The finalized-features epoch is the broker's start time in milliseconds: Kafka's is the
metadata offset of the last change, and the Java client re-reads the levels only when the
epoch grows, so a level changed across a restart must come with a larger epoch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from odradek.coordinator.group.consumer import group_version_supported

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
TRANSACTION_VERSION = "transaction.version"
GROUP_VERSION = "group.version"
SHARE_VERSION = "share.version"
STREAMS_VERSION = "streams.version"  # 1: KIP-1071 streams groups (StreamsGroupHeartbeat)

# metadata.version 33 is Kafka 4.4.0's latest production level (7 is 3.3-IV3, the floor).
METADATA_VERSION_MIN, METADATA_VERSION_LEVEL = 7, 33
TRANSACTION_VERSION_MAX = 2  # TV2: epoch bump per transaction, implicit partition adds
# 1: KIP-848 consumer groups (the group coordinator says which levels it serves).
GROUP_VERSION_MAX = group_version_supported()[1]
# 1: KIP-932 share groups (4.1, finalized by default from 4.2); 2: ShareFetch/ShareAcknowledge
# v2, RENEW, a level kafka-server-common defines from 4.4 (4.2 and 4.3 have 0-1), finalized by
# default on a 4.4 cluster. At 0 the share apis are not advertised.
SHARE_VERSION_MAX = 2


@dataclass(frozen=True, slots=True)
class FeatureRange:
    min_version: int
    max_version: int


SUPPORTED: Mapping[str, FeatureRange] = MappingProxyType({
    name: rng for name, rng in {
        METADATA_VERSION: FeatureRange(METADATA_VERSION_MIN, METADATA_VERSION_LEVEL),
        KRAFT_VERSION: FeatureRange(0, 1),
        TRANSACTION_VERSION: FeatureRange(0, TRANSACTION_VERSION_MAX),
        GROUP_VERSION: FeatureRange(0, GROUP_VERSION_MAX),
        SHARE_VERSION: FeatureRange(0, SHARE_VERSION_MAX),
        STREAMS_VERSION: FeatureRange(0, 1),
    }.items() if rng.max_version > 0
})

# The finalized level of each feature when nothing selects another; kraft.version stays 0.
DEFAULT_LEVELS: Mapping[str, int] = MappingProxyType({
    METADATA_VERSION: METADATA_VERSION_LEVEL,
    TRANSACTION_VERSION: TRANSACTION_VERSION_MAX,
    GROUP_VERSION: GROUP_VERSION_MAX,
    SHARE_VERSION: SHARE_VERSION_MAX,
    STREAMS_VERSION: 1,
})


class FeatureLevelError(ValueError):
    """A finalized level outside the supported range."""


@dataclass(frozen=True, slots=True)
class Features:
    """The finalized levels of one broker run (a feature at level 0 is not listed)."""

    levels: Mapping[str, int] = field(default_factory=dict)
    epoch: int = 0

    @classmethod
    def finalize(cls, epoch: int, **selected: int) -> Features:
        """The default levels with `selected` overrides (keyword names use underscores:
        `transaction_version=1`); raises FeatureLevelError outside the supported range."""
        levels = dict(DEFAULT_LEVELS)
        for key, level in selected.items():
            name = key.replace("_", ".")
            rng = SUPPORTED.get(name)
            low, high = (rng.min_version, rng.max_version) if rng else (0, 0)
            if not low <= level <= high:
                raise FeatureLevelError(
                    f"{name}={level} is not supported: levels {low}-{high} are")
            levels[name] = level
        return cls(MappingProxyType({n: v for n, v in levels.items() if v > 0}), epoch)

    def level(self, name: str) -> int:
        return self.levels.get(name, 0)

    @property
    def transaction_version(self) -> int:
        return self.level(TRANSACTION_VERSION)

    def supported(self, api_version: int) -> list[tuple[str, FeatureRange]]:
        """The supported ranges ApiVersions `api_version` may carry: before v4 a range whose
        minimum is 0 is left out (KAFKA-17011: older clients reject it), as Kafka does."""
        return [(n, r) for n, r in SUPPORTED.items() if api_version >= 4 or r.min_version > 0]


# -- UpdateFeatures (KIP-584, KIP-778) -------------------------------------------------------

UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3  # UpdateFeatures' UpgradeType codes


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    name: str
    level: int
    upgrade_type: int  # UPGRADE, SAFE_DOWNGRADE or UNSAFE_DOWNGRADE (anything else: unknown)


def _refusal(update: FeatureUpdate, current: Mapping[str, int], controller_id: int
             ) -> str | None:
    """Why Kafka 4.4's FeatureControlManager refuses one update, or None; the order of its
    checks and its messages."""
    name, level = update.name, update.level
    head = f"Invalid update version {level} for feature {name}. "
    if update.upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return head + "The controller does not support the given upgrade type."
    if level < 0:
        return head + "A feature version cannot be less than 0."
    rng = SUPPORTED.get(name)
    if rng is None:
        return head + f"Local controller {controller_id} does not support this feature."
    low, high = rng.min_version, rng.max_version
    if not low <= level <= high:
        return head + f"Local controller {controller_id} only supports versions {low}-{high}"
    now = current.get(name, 0)
    if level < now and update.upgrade_type == UPGRADE:
        return head + ("Can't downgrade the version of this feature without setting the "
                       "upgrade type to either safe or unsafe downgrade.")
    if level > now and update.upgrade_type != UPGRADE:
        return head + "Can't downgrade to a newer version."
    if name == METADATA_VERSION and level < now:
        # Every metadata.version below 4.4-IV2 changed the metadata format: Kafka 4.4 refuses
        # each downgrade from it (measured for every level 7-32, safe and unsafe).
        why = ("Unsafe metadata downgrade is not supported in this version."
               if update.upgrade_type == UNSAFE_DOWNGRADE else
               "Refusing to perform the requested downgrade because it might delete "
               "metadata information.")
        return f"Unsupported metadata.version downgrade from {now} to {level}. {why}"
    return None


def plan_update(features: Features, updates: list[FeatureUpdate], controller_id: int
                ) -> tuple[dict[str, int], str | None]:
    """The finalized levels after `updates`, or the error message of the first update Kafka
    refuses (then nothing changes: all or nothing, as Kafka's controller). Level 0 removes a
    feature."""
    levels = dict(features.levels)
    levels.setdefault(METADATA_VERSION, METADATA_VERSION_LEVEL)
    for update in updates:
        why = _refusal(update, levels, controller_id)
        if why is not None:
            return dict(features.levels), why
    for update in updates:
        if update.level > 0:
            levels[update.name] = update.level
        else:
            levels.pop(update.name, None)
    return levels, None
