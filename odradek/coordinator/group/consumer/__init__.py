"""KIP-848 consumer groups (the consumer protocol): model, assignors, records, operations."""

# The `group.version` feature levels this coordinator serves: 1 (KIP-848 consumer groups:
# ConsumerGroupHeartbeat and ConsumerGroupDescribe are advertised). Kafka 4 finalizes 1 by
# default, and so does odradek/broker/features.py.
GROUP_VERSION_MIN = 0
GROUP_VERSION_MAX = 1


def group_version_supported() -> tuple[int, int]:
    """(min, max) supported `group.version`, for ApiVersions' SupportedFeatures."""
    return GROUP_VERSION_MIN, GROUP_VERSION_MAX
