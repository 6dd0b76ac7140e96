"""Kafka-named settings: broker configuration, topic configuration, and how they combine.

Everything here is sans-IO except `load_config`, the one function that reads a file. One
module per concern, each building only on those above it:

- `types`: ConfigType, ConfigSource, ConfigError, validators, parsing and formatting values,
  the typed getters, the DescribeConfigs row;
- `properties`: Java properties text, `ODRADEK_*` environment variables, `--override` items;
- `listeners`: `NAME://host:port` listeners, the security protocol map, advertised listeners;
- `synonyms`: which broker settings default each topic config (ServerTopicConfigSynonyms);
- `broker`: the broker settings table, `BrokerConfig`, `load_config`;
- `topic`: the topic config table, validation, a topic's effective `LogConfig`, its
  DescribeConfigs rows.

The names below are the package's public face; import them from `odradek.config`.
"""

from __future__ import annotations

from odradek.config.broker import BROKER_CONFIGS, BrokerConfig, ConfigDef, load_config
from odradek.config.listeners import Listener, parse_listeners
from odradek.config.properties import (
    ENV_PREFIX,
    env_to_properties,
    parse_overrides,
    parse_properties,
)
from odradek.config.synonyms import BrokerSynonym
from odradek.config.topic import (
    TOPIC_CONFIGS,
    LogConfig,
    TopicConfigDef,
    describe_topic_config,
    resolve_topic_config,
    validate_topic_config,
    validate_topic_configs,
)
from odradek.config.types import (
    INT_MAX,
    LONG_MAX,
    ConfigEntry,
    ConfigError,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    ConfigValue,
    Effect,
    TypedGetters,
    format_value,
    parse_value,
)

__all__ = [
    "BROKER_CONFIGS",
    "ENV_PREFIX",
    "INT_MAX",
    "LONG_MAX",
    "TOPIC_CONFIGS",
    "BrokerConfig",
    "BrokerSynonym",
    "ConfigDef",
    "ConfigEntry",
    "ConfigError",
    "ConfigSource",
    "ConfigSynonym",
    "ConfigType",
    "ConfigValue",
    "Effect",
    "Listener",
    "LogConfig",
    "TopicConfigDef",
    "TypedGetters",
    "describe_topic_config",
    "env_to_properties",
    "format_value",
    "load_config",
    "parse_listeners",
    "parse_overrides",
    "parse_properties",
    "parse_value",
    "resolve_topic_config",
    "validate_topic_config",
    "validate_topic_configs",
]
