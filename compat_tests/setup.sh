#!/usr/bin/env bash
# Installs and builds everything the compatibility-matrix drivers need, on a fresh Debian
# machine (root) or again on a prepared one (each step is idempotent). `./test compat` runs it
# when a driver is missing or one of its sources is newer than .setup-stamp, left here at the end.
#   kcat (Debian) | Java: kafka-clients 3.9.1, 4.1.2 and 4.4.0, kafka-tools and kafka_2.13 4.4.0
#   (Maven, then compiled) | Go: franz-go, sarama (module download, build) | Node: kafkajs (npm ci)
# The Python clients come from the project's own `pip install -e '.[test]'`.
set -euo pipefail
cd "$(dirname "$0")"
export DEBIAN_FRONTEND=noninteractive

step() { echo "== compat setup: $*"; }

if ! command -v kcat >/dev/null 2>&1; then
    step "kcat (apt)"
    apt-get update -qq
    apt-get install -y -qq kcat >/dev/null
fi

step "java: resolve kafka-clients 3.9.1 / 4.1.2 / 4.4.0 and the 4.4.0 tools and broker; compile"
(
    cd java
    # Resolve everything first (go-offline), so later builds can run with mvn -o.
    mvn -B -q -Pclients-3.9 dependency:go-offline dependency:build-classpath
    mvn -B -q -Pclients-4.1 dependency:go-offline dependency:build-classpath
    mvn -B -q dependency:go-offline dependency:build-classpath
    # Compiled against the 3.9 API (the older one) and run on either classpath.
    mvn -B -q -Pclients-3.9 compile
    # KIP-932 share-consumer and KIP-1071 streams-group scenarios: kafka-clients 4.4 only
    # (called by Driver by reflection; they use the driver's classes).
    mkdir -p target/share-classes
    javac -d target/share-classes -cp "target/classes:$(cat target/cp-clients-4.4.txt)" \
        src/share/java/odradek/compat/*.java
)

step "go: franz-go and sarama"
(
    cd go
    go mod download
    go build -o bin/compat-go .
)

step "node: kafkajs"
(
    cd node
    npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
    # The lz4 tarball ships binaries built for another platform ("invalid ELF header"):
    # rebuild its native addon here (node-gyp uses the headers of Debian's nodejs).
    npm rebuild lz4 --loglevel=error
    node -e "require('lz4')"
)
touch .setup-stamp
step "done"
