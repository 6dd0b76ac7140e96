#!/usr/bin/env bash
# The second, slower target of the compatibility work (not the README's fast command):
#   1. the matrix against Apache Kafka 4.4.0 (the oracle): every row must pass, else a scenario
#      is wrong; rewrites the Kafka section of docs/compat.md;
#   2. franz-go's kgo integration tests against Odradek (allow-list franz_go_allow.txt);
#   3. librdkafka's broker tests against Odradek (allow-list librdkafka_allow.txt; the first
#      run builds librdkafka from npm node-rdkafka, a few minutes on 2 cores);
#   4. Kafka's own applications (streams-eos, txn-copier) with every Java client on Odradek at
#      transaction.version 2 and 1, and on the oracle at 1 (step 1 ran it at 2): the rows the
#      compat tier leaves out (drivers.SLOW_ROWS), about 6 minutes.
#   5. the consumer protocol (KIP-848) runs of both suites: franz-go's `/848` subtests and
#      Test848RegexBrokerResolves (step 2 runs them with the rest: kgo enables them when the
#      broker advertises ConsumerGroupHeartbeat v1), and librdkafka's group-related tests with
#      TEST_CONSUMER_GROUP_PROTOCOL=consumer in the tests' full mode (in quick mode most
#      group tests skip their subtests), allow-list librdkafka_consumer_allow.txt.
#   6. both suites against Odradek --brokers 3 (issue #15): librdkafka's tests that need three
#      brokers (0008, 0098, 0103; allow-list librdkafka_rf3_allow.txt) and kgo's tests with
#      KGO_TEST_RF=3 (franz_go_rf3_allow.txt), about 2.5 minutes.
# Needs `bash compat_tests/setup.sh` first. About 35 minutes on 2 cores.
set -uo pipefail
cd "$(dirname "$0")/.."
rc=0
echo "== oracle: the matrix against Apache Kafka"
python3 -m compat_tests.run --target kafka --strict || rc=1
echo "== franz-go kgo tests against Odradek (classic groups and the KIP-848 /848 subtests)"
python3 -m compat_tests.upstream.franz_go --target odradek || rc=1
echo "== librdkafka tests against Odradek"
python3 -m compat_tests.upstream.librdkafka --target odradek || rc=1
echo "== Kafka Streams and the transactional copier at transaction.version 2 and 1"
apps=(--clients java-4.4,java-4.1,java-3.9 --scenarios streams-eos,txn-copier --jobs 1 --strict --no-doc)
for tv in 2 1; do
    python3 -m compat_tests.run --target odradek --transaction-version "$tv" "${apps[@]}" || rc=1
done
python3 -m compat_tests.run --target kafka --transaction-version 1 "${apps[@]}" || rc=1
echo "== librdkafka tests against Odradek, group.protocol=consumer (KIP-848)"
python3 -m compat_tests.upstream.librdkafka --target odradek --group-protocol consumer --full --limit 1500 || rc=1
echo "== librdkafka and franz-go tests against Odradek --brokers 3 (replication factor 3)"
python3 -m compat_tests.upstream.librdkafka --target odradek --brokers 3 || rc=1
python3 -m compat_tests.upstream.franz_go --target odradek --brokers 3 || rc=1
exit "$rc"
