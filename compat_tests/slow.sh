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
# Needs `bash compat_tests/setup.sh` first. About 20 minutes on 2 cores.
set -uo pipefail
cd "$(dirname "$0")/.."
rc=0
echo "== oracle: the matrix against Apache Kafka"
python3 -m compat_tests.run --target kafka --strict || rc=1
echo "== franz-go kgo tests against Odradek"
python3 -m compat_tests.upstream.franz_go --target odradek || rc=1
echo "== librdkafka tests against Odradek"
python3 -m compat_tests.upstream.librdkafka --target odradek || rc=1
echo "== Kafka Streams and the transactional copier at transaction.version 2 and 1"
apps=(--clients java-4.4,java-4.1,java-3.9 --scenarios streams-eos,txn-copier --jobs 1 --strict --no-doc)
for tv in 2 1; do
    python3 -m compat_tests.run --target odradek --transaction-version "$tv" "${apps[@]}" || rc=1
done
python3 -m compat_tests.run --target kafka --transaction-version 1 "${apps[@]}" || rc=1
exit "$rc"
