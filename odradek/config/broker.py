"""The broker's settings: the table of every known broker setting (Kafka's names, types and
defaults), `BrokerConfig` (the parsed, validated values, read through typed getters), and
`load_config`, the one function that reads a file.

The table is Kafka 4.4's own (`_kafka`, generated from Kafka's ConfigDefs: names, types,
defaults, validators, internal flags) with Odradek's decision for each setting
(`decisions`), so that `server.properties` files, admin tools and DescribeConfigs answers
look the same; where Odradek's single-node defaults differ from Kafka's, `ODRADEK_DEFAULTS`
says so.

Precedence when loading: built-in defaults < properties file < environment (`ODRADEK_` + the
name upper-cased with dots as underscores, e.g. `ODRADEK_LOG_DIRS`) < `--override key=value`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from odradek.config import _kafka, decisions
from odradek.config.listeners import (
    Listener,
    bound_advertised,
    check_advertised,
    checked_listeners,
    parse_listener_names,
    parse_protocol_map,
)
from odradek.config.properties import env_to_properties, parse_overrides, parse_properties
from odradek.config.synonyms import TOPIC_CONFIG_OF
from odradek.config.types import (
    HOUR_MS,
    MINUTE_MS,
    ConfigEntry,
    ConfigError,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    ConfigValue,
    Effect,
    TypedGetters,
    Validator,
    at_least,
    between,
    each_one_of,
    format_value,
    parse_value,
    validator_from_spec,
)


@dataclass(frozen=True, slots=True)
class ConfigDef:
    """One broker setting. `default` is the parsed default Odradek uses (None: unset/null);
    `kafka_default` is Kafka 4.4's, where the two differ (else the same).

    `dynamic` marks settings Kafka lets AlterConfigs change on a running broker (DescribeConfigs
    reports the others as read-only). `topic_synonym` is the topic config this broker setting
    is the default for, if any. `effect` is the setting's decision and `why` its reason
    (`odradek.config.decisions`). `internal` settings are accepted but never described (Kafka's
    internal ones, and Odradek's own `transaction.version`).
    """

    name: str
    type: ConfigType
    default: ConfigValue
    validator: Validator | None = None
    dynamic: bool = False
    topic_synonym: str | None = None
    effect: Effect = Effect.IMPLEMENTED
    why: str = ""
    internal: bool = False
    kafka_default: ConfigValue = None

    @property
    def read_only(self) -> bool:
        return not self.dynamic

    @property
    def sensitive(self) -> bool:
        return self.type is ConfigType.PASSWORD


# Where Odradek's default differs from Kafka 4.4's (docs/configuration.md lists these).
# Kafka requires node.id; a single node can simply be 1 (broker.id is the same setting). Kafka
# binds every interface on 9092 and keeps data in /tmp; Odradek stays on loopback, in the
# working directory. The internal topics' replication factors and min ISR are capped at the one
# broker there is.
ODRADEK_DEFAULTS: Mapping[str, ConfigValue] = {
    "node.id": 1,
    "broker.id": 1,
    "listeners": ("PLAINTEXT://127.0.0.1:9092",),
    "log.dir": ("./odradek-data",),
    "process.roles": (),
    "controller.listener.names": None,
    "offsets.topic.replication.factor": 1,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
    "share.coordinator.state.topic.replication.factor": 1,
    "share.coordinator.state.topic.min.isr": 1,
}

# Checks Odradek adds to Kafka's validators: ids are never negative here, and the assignors
# are named ones (Odradek loads no Java classes).
_ODRADEK_VALIDATORS: Mapping[str, Validator] = {
    "broker.id": at_least(0),
    "group.consumer.assignors": each_one_of(
        "uniform", "range", "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
        "org.apache.kafka.coordinator.group.assignor.RangeAssignor"),
}

# The releases `tools/kafka_releases.py` found specs for (odradek/broker/kafka_releases.py;
# a unit test keeps the two lists equal: config imports nothing of the broker).
EMULATED_RELEASES = ("2.8", "3.0", "3.1", "3.2", "3.3", "3.4", "3.5", "3.6", "3.7", "3.8", "3.9",
                     "4.0", "4.1", "4.2", "4.3", "4.4")


def _emulated_release(value: ConfigValue) -> str | None:
    if value in ("", None, *EMULATED_RELEASES):
        return None
    return f"Kafka releases that can be emulated: {', '.join(EMULATED_RELEASES)}"


# Odradek's own settings (not Kafka's, so never described). transaction.version: the finalized
# transaction.version feature level (Kafka sets it once with `kafka-storage format --feature
# transaction.version=N`): 2 (Kafka 4.x's default) lets clients use transactions v2 (KIP-890),
# 1 or 0 emulate a cluster where they use the classic protocol.
_ODRADEK_ONLY: tuple[ConfigDef, ...] = (
    ConfigDef("transaction.version", ConfigType.SHORT, 2, between(0, 2), internal=True,
              why="Odradek's stand-in for the finalized feature level"),
    # The admin HTTP server (issue #16): fault rules, /health, /ready and, with the `metrics`
    # extra, /metrics. Off (-1) unless set; 0 picks a free port (logged). Loopback by default.
    ConfigDef("admin.http.port", ConfigType.INT, -1, between(-1, 65535), internal=True,
              why="Odradek's admin HTTP endpoint"),
    ConfigDef("admin.http.host", ConfigType.STRING, "127.0.0.1", internal=True,
              why="Odradek's admin HTTP endpoint"),
    # GET /metrics on that endpoint (Prometheus; the `metrics` extra): counting costs nothing
    # while off.
    ConfigDef("admin.http.metrics", ConfigType.BOOLEAN, False, internal=True,
              why="Odradek's Prometheus metrics"),
    # `--emulate-kafka`: ApiVersions and the finalized features of that Apache Kafka release
    # (odradek/broker/emulation.py); "" is this broker's own (4.4's) ranges.
    ConfigDef("emulate.kafka.version", ConfigType.STRING, "", _emulated_release,
              internal=True, why="Odradek's Kafka release emulation"),
    # SCRAM users written at start-up, as `kafka-storage format --add-scram` writes them:
    # `SCRAM-SHA-512=[name=alice,password=...]`, several separated by `;` (never described).
    ConfigDef("scram.bootstrap.credentials", ConfigType.PASSWORD, None, internal=True,
              why="Odradek's stand-in for kafka-storage format --add-scram"),
    # `--brokers N` (docs/cluster.md): N simulated brokers in this process, node ids node.id
    # on; their listener ports are `simulated.broker.ports` (one per broker, comma-separated)
    # or the first listener's port plus 0, 1, ... (0: each a free port).
    ConfigDef("simulated.brokers", ConfigType.INT, 1, between(1, 64), internal=True,
              why="Odradek's simulated cluster"),
    ConfigDef("simulated.broker.ports", ConfigType.LIST, (), internal=True,
              why="Odradek's simulated cluster"),
)


def _broker_table() -> dict[str, ConfigDef]:
    table: dict[str, ConfigDef] = {}
    for name, type_name, internal, kafka_default, spec in _kafka.BROKER:
        decision = decisions.BROKER.get(name, (Effect.NOT_SUPPORTED_STOP, "no decision yet"))
        effect, why = decision if isinstance(decision, tuple) else (decision, "")
        if kafka_default == _kafka.NO_DEFAULT:
            kafka_default = None
        table[name] = ConfigDef(
            name,
            ConfigType[type_name],
            ODRADEK_DEFAULTS.get(name, kafka_default),
            _ODRADEK_VALIDATORS.get(name) or validator_from_spec(name, spec),
            dynamic=name in decisions.DYNAMIC_BROKER,
            topic_synonym=TOPIC_CONFIG_OF.get(name),
            effect=effect,
            why=why,
            internal=internal,
            kafka_default=kafka_default,
        )
    for definition in _ODRADEK_ONLY:
        table[definition.name] = definition
    return table


BROKER_CONFIGS: Mapping[str, ConfigDef] = _broker_table()

class BrokerConfigRequestError(ConfigError):
    """A dynamic broker config change Kafka answers with INVALID_REQUEST: a setting it does not
    let AlterConfigs change, or a value its validator refuses (Odradek's own refusals, of
    settings not supported or not applied live yet, are INVALID_CONFIG)."""


# The scopes of dynamic broker configs: this broker (BROKER resource "<node id>") and the
# cluster-wide default (BROKER resource "").
PER_BROKER = "broker"
CLUSTER_DEFAULT = "default"


# Implemented dynamic settings that are not topic defaults but are applied while the broker
# runs, as on Kafka: the connection limits (read at every accept; Kafka's ConnectionQuotas
# applies a new limit to new connections), the producer expiry (read at every expiry pass:
# Kafka's DynamicProducerStateManagerConfig) and the cleaner's settings (read before every
# pass: Kafka's LogCleaner.reconfigure restarts its threads with them).
LIVE: frozenset[str] = frozenset({
    "max.connections",
    "max.connections.per.ip",
    "producer.id.expiration.ms",
    "log.cleaner.backoff.ms",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size",
    "log.cleaner.io.max.bytes.per.second",
})


# Dynamic settings Kafka lets AlterConfigs change for one broker only (its
# DynamicBrokerConfig.PerBrokerConfigs: the listener settings, the principal builder and
# SASL's, less the cluster-level max.connections & co.); at the cluster default it answers
# INVALID_REQUEST. (Its SSL ones are refused first for want of a listener prefix.)
PER_BROKER_ONLY: frozenset[str] = frozenset({
    "listeners",
    "listener.security.protocol.map",
    "principal.builder.class",
    "sasl.enabled.mechanisms",
    "sasl.jaas.config",
    "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal.to.local.rules",
    "sasl.kerberos.service.name",
    "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.ticket.renew.window.factor",
    "sasl.login.refresh.buffer.seconds",
    "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter",
    "sasl.mechanism.inter.broker.protocol",
})


def live(definition: ConfigDef) -> bool:
    """Whether Odradek applies a change of this dynamic setting while it runs: the topic
    defaults (every topic's log is reconfigured), the settings in `LIVE` and the settings
    with no effect here. The others (`listeners`, `listener.security.protocol.map`) are read
    at start-up, so changing them dynamically is refused rather than stored without effect."""
    return (definition.topic_synonym is not None or definition.name in LIVE
            or definition.effect is Effect.NO_EFFECT)

# Every broker synonym named by a topic config must be a broker setting.
assert all(s in BROKER_CONFIGS for s in TOPIC_CONFIG_OF), "topic synonym missing"


class BrokerConfig(TypedGetters):
    """The broker's settings: every known setting parsed and validated, unknown ones kept.

    `explicit` maps names to the text given (file, environment, overrides merged); anything
    not given takes its default. Raises ConfigError naming the key on a bad value.

    Read a setting with the typed getters (`get_int("num.partitions")`, `get_bool(...)`,
    `get_float`, `get_str`, `get_list` and `get_optional_*` for settings that default to
    null; see `TypedGetters`). Properties are kept only for values derived beyond their type:
    listeners, the protocol map, log dirs as Paths, and settings with unit synonyms or
    fallbacks (`log_roll_ms`, `log_retention_ms`, `log_flush_interval_ms`,
    `offsets_retention_ms`). `get(name)` gives the untyped value, for code that handles any
    setting alike (DescribeConfigs, topic synonyms).
    """

    __slots__ = ("_advertised", "_dynamic", "_explicit", "_listeners", "_protocols", "_values",
                 "unknown")

    def __init__(self, explicit: Mapping[str, str] | None = None) -> None:
        given = dict(explicit or {})
        # node.id and broker.id are one setting under two names (as in Kafka's KRaft mode).
        if "node.id" in given and "broker.id" not in given:
            given["broker.id"] = given["node.id"]
        elif "broker.id" in given and "node.id" not in given:
            given["node.id"] = given["broker.id"]
        self._explicit: dict[str, str] = given
        # Dynamic broker configs (AlterConfigs on BROKER "<id>" / ""): see `set_dynamic`.
        self._dynamic: dict[str, dict[str, str]] = {PER_BROKER: {}, CLUSTER_DEFAULT: {}}
        self.unknown: dict[str, str] = {k: v for k, v in given.items() if k not in BROKER_CONFIGS}
        self._values: dict[str, ConfigValue] = {}
        for name, definition in BROKER_CONFIGS.items():
            self._values[name] = (
                parse_value(definition, given[name]) if name in given else definition.default
            )
        if self._values["node.id"] != self._values["broker.id"]:
            raise ConfigError(
                f"node.id ({self._values['node.id']}) and broker.id "
                f"({self._values['broker.id']}) must be equal when both are set",
                "node.id",
            )
        self._refuse_unsupported()
        # A STRING in Kafka 4.4 (LISTENER:PROTOCOL pairs split by commas, as Kafka's Csv).
        protocol_map = self.get_str("listener.security.protocol.map").strip()
        self._protocols = parse_protocol_map(
            [p.strip() for p in protocol_map.split(",")] if protocol_map else [])
        controllers = parse_listener_names(
            ",".join(self.get_optional_list("controller.listener.names") or ()))
        self._listeners = checked_listeners(
            self.get_list("listeners"), self._protocols, "listeners", controllers
        )
        advertised = self.get_optional_list("advertised.listeners")
        if advertised is None:
            self._advertised = list(self._listeners)
        else:
            self._advertised = checked_listeners(
                advertised, self._protocols, "advertised.listeners", controllers
            )
            check_advertised(self._advertised, self._listeners)
        if not self.log_dirs:
            raise ConfigError("at least one log directory is needed", "log.dirs")

    def _refuse_unsupported(self) -> None:
        """A setting Odradek does not support yet, given at a value other than its default,
        stops the start (ConfigError: one line, exit code 2) when it would change what
        clients see, what is stored or who may connect; the others are logged by the broker
        (`unsupported_settings`)."""
        for name in sorted(self._explicit):
            definition = BROKER_CONFIGS.get(name)
            if definition is None or definition.effect is not Effect.NOT_SUPPORTED_STOP:
                continue
            if self._values[name] != definition.default:
                default = format_value(definition.default)
                hint = "remove it" if default is None else f"remove it or set its default ({default})"
                raise ConfigError(
                    f"not supported by Odradek yet ({definition.why}); {hint}", name)

    def unsupported_settings(self) -> list[str]:
        """The settings given at a value other than their default that Odradek does not
        support yet and only warns about at start-up (Effect.NOT_SUPPORTED)."""
        return [
            name
            for name in sorted(self._explicit)
            if name in BROKER_CONFIGS
            and BROKER_CONFIGS[name].effect is Effect.NOT_SUPPORTED
            and self._values[name] != BROKER_CONFIGS[name].default
        ]

    # -- dynamic broker configs -----------------------------------------------------------

    def dynamic(self, scope: str) -> dict[str, str]:
        """The dynamic configs of `scope` (PER_BROKER or CLUSTER_DEFAULT), as text."""
        return dict(self._dynamic[scope])

    def check_dynamic(self, scope: str, configs: Mapping[str, str]) -> None:
        """Raise ConfigError (naming the setting) unless `configs` can be the whole set of
        `scope`'s dynamic configs: each a setting Kafka lets AlterConfigs change, with a valid
        value, and one whose change Odradek applies while it runs (see `LIVE`)."""
        for name, text in configs.items():
            definition = BROKER_CONFIGS.get(name)
            if definition is None or definition.internal:
                # Kafka keeps unknown broker keys as custom configs; nothing here would read
                # one, so it is refused rather than stored and ignored.
                raise ConfigError(f"Unknown broker config name: {name}", name)
            if not definition.dynamic:
                raise BrokerConfigRequestError(
                    f"Cannot update these configs dynamically: [{name}]", name)
            try:
                value = parse_value(definition, text)
            except ConfigError as exc:
                raise BrokerConfigRequestError(exc.reason, name) from None
            if scope == CLUSTER_DEFAULT and name in PER_BROKER_ONLY:
                raise BrokerConfigRequestError(
                    "Cannot update these configs at default cluster level, broker id must be "
                    f"specified: [{name}]", name)
            if not definition.effect.supported and value != definition.default:
                raise ConfigError(
                    f"Invalid value {text} for configuration {name}: not supported by Odradek "
                    f"yet ({definition.why})", name)
            if not live(definition) and value != self._values[name]:
                raise ConfigError(
                    f"Invalid value {text} for configuration {name}: Odradek cannot change it "
                    "while it runs yet; set it in server.properties and restart", name)

    def set_dynamic(self, scope: str, configs: Mapping[str, str]) -> None:
        """Replace `scope`'s dynamic configs (checked first: nothing half applied). Values
        resolve as Kafka's: per-broker > cluster default > server.properties > default."""
        self.check_dynamic(scope, configs)
        changed = set(self._dynamic[scope]) | set(configs)
        self._dynamic[scope] = dict(configs)
        for name in changed:
            self._values[name] = self._resolve(name)

    def _resolve(self, name: str) -> ConfigValue:
        definition = BROKER_CONFIGS[name]
        for layer in (self._dynamic[PER_BROKER], self._dynamic[CLUSTER_DEFAULT], self._explicit):
            if name in layer:
                return parse_value(definition, layer[name])
        return definition.default

    def layers(self, name: str) -> list[tuple[str | None, ConfigSource]]:
        """The values given for `name`, highest precedence first, with their sources (Kafka's
        DescribeConfigs synonyms of a broker setting), the default last when it is not null."""
        definition = BROKER_CONFIGS[name]
        out: list[tuple[str | None, ConfigSource]] = []
        for layer, source in ((self._dynamic[PER_BROKER], ConfigSource.DYNAMIC_BROKER_CONFIG),
                              (self._dynamic[CLUSTER_DEFAULT],
                               ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
                              (self._explicit, ConfigSource.STATIC_BROKER_CONFIG)):
            if name in layer:
                out.append((format_value(parse_value(definition, layer[name])), source))
        if definition.default is not None:
            out.append((format_value(definition.default), ConfigSource.DEFAULT_CONFIG))
        return out

    # -- generic access ------------------------------------------------------------------

    def _declared(self, name: str) -> tuple[ConfigType, ConfigValue]:
        return BROKER_CONFIGS[name].type, self._values[name]

    def get(self, name: str) -> ConfigValue:
        """The parsed value of a known setting (its default when not set), untyped: for code
        that treats every setting alike. Read one setting with a typed getter instead."""
        return self._values[name]

    def is_set(self, name: str) -> bool:
        """Given anywhere: server.properties (or environment, overrides) or dynamically."""
        return (name in self._explicit or name in self._dynamic[PER_BROKER]
                or name in self._dynamic[CLUSTER_DEFAULT])

    def source(self, name: str) -> ConfigSource:
        if name in self._dynamic[PER_BROKER]:
            return ConfigSource.DYNAMIC_BROKER_CONFIG
        if name in self._dynamic[CLUSTER_DEFAULT]:
            return ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        if name in self._explicit:
            return ConfigSource.STATIC_BROKER_CONFIG
        return ConfigSource.DEFAULT_CONFIG

    # -- derived values ------------------------------------------------------------------

    @property
    def listeners(self) -> list[Listener]:
        """The client listeners: those of `listeners` not named in controller.listener.names
        (a stock KRaft file's CONTROLLER listener is the controller's, not a client port)."""
        return list(self._listeners)

    @property
    def advertised_listeners(self) -> list[Listener]:
        """As configured; may hold port 0 or an empty host: see `advertised_for`."""
        return list(self._advertised)

    def advertised_for(
        self, bound_ports: Mapping[str, int], fallback_host: str = "127.0.0.1"
    ) -> list[Listener]:
        """Advertised listeners once bound: port 0 becomes the listener's real port (by name),
        an empty or wildcard host becomes the listener's host or else `fallback_host`."""
        return bound_advertised(self._advertised, self._listeners, bound_ports, fallback_host)

    @property
    def listener_security_protocol_map(self) -> dict[str, str]:
        return dict(self._protocols)

    @property
    def log_dirs(self) -> list[Path]:
        """log.dirs if set, else log.dir (Kafka's rule)."""
        dirs = self.get_optional_list("log.dirs")
        if dirs is not None:
            return [Path(d) for d in dirs if d]
        return [Path(d) for d in self.get_list("log.dir") if d]

    @property
    def log_roll_ms(self) -> int:
        """log.roll.ms, else log.roll.hours in ms."""
        ms = self.get_optional_int("log.roll.ms")
        return ms if ms is not None else self.get_int("log.roll.hours") * HOUR_MS

    @property
    def log_retention_ms(self) -> int:
        """ms > minutes > hours, as Kafka; any negative value means unlimited (-1)."""
        ms = self.get_optional_int("log.retention.ms")
        if ms is None:
            minutes = self.get_optional_int("log.retention.minutes")
            ms = (
                minutes * MINUTE_MS
                if minutes is not None
                else self.get_int("log.retention.hours") * HOUR_MS
            )
        return -1 if ms < 0 else ms

    @property
    def log_flush_interval_ms(self) -> int:
        """log.flush.interval.ms, else log.flush.scheduler.interval.ms (Kafka's fallback)."""
        ms = self.get_optional_int("log.flush.interval.ms")
        return ms if ms is not None else self.get_int("log.flush.scheduler.interval.ms")

    @property
    def offsets_retention_ms(self) -> int:
        """offsets.retention.minutes in ms."""
        return self.get_int("offsets.retention.minutes") * MINUTE_MS

    # -- DescribeConfigs -----------------------------------------------------------------

    def describe(self) -> list[ConfigEntry]:
        """Every public broker setting for a DescribeConfigs BROKER resource, sorted by name
        (internal ones are never described, as on Kafka)."""
        entries: list[ConfigEntry] = []
        for name in sorted(BROKER_CONFIGS):
            definition = BROKER_CONFIGS[name]
            if definition.internal:
                continue
            value = None if definition.sensitive else format_value(self._values[name])
            source = self.source(name)
            synonyms = [
                ConfigSynonym(name, None if definition.sensitive else text, level)
                for text, level in self.layers(name)
            ]
            entries.append(
                ConfigEntry(
                    name=name,
                    value=value,
                    source=source,
                    read_only=definition.read_only,
                    sensitive=definition.sensitive,
                    type=definition.type,
                    synonyms=tuple(synonyms),
                    documentation=definition.effect.documentation,
                )
            )
        return entries

    # ------------------------------------------------------------------------------------


def load_config(
    properties_path: Path | None, overrides: Sequence[str], environ: Mapping[str, str]
) -> BrokerConfig:
    """Defaults < properties file < `ODRADEK_*` environment < `--override key=value`."""
    merged: dict[str, str] = {}
    if properties_path is not None:
        try:
            text = properties_path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"cannot read config file {properties_path}: {exc.strerror}"
            ) from None
        except UnicodeDecodeError:
            raise ConfigError(f"config file {properties_path} is not UTF-8 text") from None
        merged.update(parse_properties(text))
    merged.update(env_to_properties(environ))
    merged.update(parse_overrides(overrides))
    return BrokerConfig(merged)
