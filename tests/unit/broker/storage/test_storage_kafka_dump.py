"""Kafka's own `kafka-dump-log` (kafka.tools.DumpLogSegments) reads and verifies our segments.

Runs when `java` and Kafka's jars (kafka_2.13 and its dependencies, in the local Maven
repository) are present; otherwise the test is reported as skipped with the reason.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from storage_testutil import abandon, batches_of

from odradek.broker.storage.log import PartitionLog
from odradek.broker.storage.txn_index import AbortedTxn
from odradek.config import LogConfig
from odradek.wire.records import Record, build_batch

M2 = Path.home() / ".m2" / "repository"
# Third-party artifacts DumpLogSegments needs (one version of each: the newest present).
THIRD_PARTY = (
    "org/scala-lang/",
    "com/fasterxml/",
    "org/slf4j/slf4j-api/",
    "net/sf/jopt-simple/",
    "com/github/luben/",
    "org/lz4/",
    "org/xerial/",
    "net/sourceforge/argparse4j/",
    "com/typesafe/",
    "com/yammer/",
    "org/pcollections/",
    "com/github/ben-manes/",
    "commons-validator/",
    "commons-beanutils/",
    "commons-logging/",
    "commons-collections/",
    "commons-digester/",
    "org/apache/logging/log4j/log4j-api/",
)


def _version_key(version: str) -> list[tuple[int, str]]:
    return [(int(p), "") if p.isdigit() else (-1, p) for p in re.split(r"[.-]", version)]


def _kafka_versions() -> list[str]:
    core = M2 / "org" / "apache" / "kafka" / "kafka_2.13"
    if not core.is_dir():
        return []
    return sorted((d.name for d in core.iterdir() if any(d.glob("*.jar"))), key=_version_key)


def _classpath(version: str) -> str:
    best: dict[str, tuple[str, Path]] = {}
    for jar in M2.rglob("*.jar"):
        rel = jar.relative_to(M2).as_posix()
        parts = rel.split("/")
        artifact, ver = "/".join(parts[:-2]), parts[-2]
        if jar.name.endswith(("-sources.jar", "-javadoc.jar", "-test.jar")):
            continue
        if rel.startswith("org/apache/kafka/"):
            if ver == version:
                best[artifact] = (ver, jar)
        elif rel.startswith(THIRD_PARTY) and (
            artifact not in best or _version_key(ver) > _version_key(best[artifact][0])
        ):
            best[artifact] = (ver, jar)
    return ":".join(str(jar) for _, jar in best.values())


# The tool's class: in kafka_2.13 up to 4.1, in the kafka-tools jar (a Java port) later.
DUMP_CLASSES = ("kafka/tools/DumpLogSegments.class", "org/apache/kafka/tools/DumpLogSegments.class")


def _dump_class(version: str) -> str | None:
    """The DumpLogSegments main class found on `version`'s classpath, if any."""
    for jar in _classpath(version).split(":"):
        if not jar:
            continue
        with zipfile.ZipFile(jar) as zf:
            names = set(zf.namelist())
        for cls in DUMP_CLASSES:
            if cls in names:
                return cls.removesuffix(".class").replace("/", ".")
    return None


def _dump(version: str, directory: Path, *args: str) -> str:
    main = _dump_class(version)
    assert main is not None
    result = subprocess.run(
        ["java", "-cp", _classpath(version), main, *args],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    noise = ("SLF4J", "log4j")
    stderr = [line for line in result.stderr.splitlines() if not line.startswith(noise)]
    return result.stdout + "\n".join(stderr)


def _write_sample_log(root: Path) -> tuple[Path, int]:
    """Several segments, every codec, headers, record timestamps out of order inside batches,
    an aborted-txn entry, then a crash with a torn tail and a recovery. Returns the partition
    directory and the number of records kept."""
    directory = root / "orders-0"
    config = LogConfig.from_overrides({"internal.segment.bytes": "2500", "index.interval.bytes": "150"})
    log = PartitionLog.open(directory, config, now_ms=1_000)
    for i in range(45):
        records = [
            Record(j, (j * 7) % 5, b"key-%d" % j, b"value-%d-%d " % (i, j) * 4, [("h", b"x")])
            for j in range(1 + i % 4)
        ]
        raw = bytearray(build_batch(records, base_timestamp=50_000 + 10 * i, compression=i % 5))
        log.append(memoryview(raw), leader_epoch=i // 15, now_ms=1_000)
    log.append_aborted_txn(AbortedTxn(7, 3, log.log_end_offset - 1, 3))
    for _ in range(3):
        log.append(memoryview(bytearray(build_batch([(b"k", b"tail")]))), leader_epoch=3, now_ms=1)
    kept = log.log_end_offset - 1
    abandon(log)
    active = sorted(directory.glob("*.log"))[-1]
    with open(active, "r+b") as f:
        f.truncate(active.stat().st_size - 10)
    recovered = PartitionLog.open(directory, config, now_ms=2_000)
    assert recovered.log_end_offset == kept
    recovered.close()
    return directory, kept


@pytest.mark.skipif(shutil.which("java") is None, reason="java is not installed")
@pytest.mark.parametrize("version", _kafka_versions() or ["none"])
def test_kafka_dump_log_verifies_our_segments(tmp_path: Path, version: str) -> None:
    if version == "none":
        pytest.skip(f"no Kafka jars (kafka_2.13) in {M2}")
    if _dump_class(version) is None:
        pytest.skip(f"Kafka {version}'s jars in {M2} hold no DumpLogSegments "
                    "(the kafka-tools jar was not downloaded)")
    directory, kept = _write_sample_log(tmp_path)
    stems = sorted(p.stem for p in directory.glob("*.log"))
    assert len(stems) > 3

    indexes = ",".join(f"{s}.index,{s}.timeindex" for s in stems)
    verify = _dump(version, directory, "--verify-index-only", "--files", indexes)
    assert re.search(r"mismatch|out of order|not found|exception", verify, re.I) is None, verify

    sanity = _dump(version, directory, "--index-sanity-check", "--files", indexes)
    checked = sanity.count("passed sanity check") + sanity.count("is empty.")
    assert checked == 2 * len(stems), sanity

    logs = ",".join(f"{s}.log" for s in stems)
    deep = _dump(version, directory, "--deep-iteration", "--files", logs)
    batch_lines = [line for line in deep.splitlines() if line.startswith("baseOffset:")]
    assert batch_lines and all("isvalid: true" in line for line in batch_lines), deep
    offsets = [int(m) for m in re.findall(r"^\| offset: (\d+)", deep, re.M)]
    assert offsets == list(range(kept))
    assert "invalid bytes" not in deep
    codecs = set(re.findall(r"compresscodec: (\w+)", deep))
    assert codecs >= {"none", "gzip", "snappy", "lz4", "zstd"}, codecs

    ours = [b for s in stems for b in batches_of((directory / f"{s}.log").read_bytes())]
    assert len(batch_lines) == len(ours)

    txn_files = sorted(p.name for p in directory.glob("*.txnindex"))
    assert len(txn_files) == 1
    txns = _dump(version, directory, "--files", txn_files[0])
    assert re.search(
        r"version: 0 producerId: 7 firstOffset: 3 lastOffset: \d+ lastStableOffset: 3", txns
    ), txns
