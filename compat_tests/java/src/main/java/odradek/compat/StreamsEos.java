package odradek.compat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

import static odradek.compat.Driver.b;
import static odradek.compat.Driver.check;
import static odradek.compat.Driver.s;

/**
 * The streams-eos scenario: a Kafka Streams application (the kafka-streams jar of the
 * classpath's clients version) with processing.guarantee=exactly_once_v2 counts words by
 * value: the input is keyed by record id, so groupBy(value) writes a repartition topic and
 * count() a changelog. The record cache is off, so every input record makes exactly one count
 * update: per word, the committed output is exactly 1, 2, ..., n. Phase 2 closes the app,
 * wipes its local state (restored from the changelog), produces more input and starts a new
 * instance with the same application.id: the counts go on n+1, ..., n+m, with no repeat and
 * no gap, and the group's committed offsets are at the input's end.
 * Kept in its own class so the Streams classes load only when the scenario runs.
 */
final class StreamsEos {
    static final int PARTITIONS = 3;
    static final int WORDS = 12;
    static final int PHASE1 = 600;
    static final int PHASE2 = 300;
    static final int PHASE3 = 3000;

    private StreamsEos() {}

    static String word(int i) { return String.format("w%02d", (i * 7) % WORDS); }

    static void produceInput(Driver d, String topic, int from, int to, Map<String, Integer> expected) throws Exception {
        List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
        for (int i = from; i < to; i++) {
            String w = word(i);
            recs.add(new ProducerRecord<>(topic, b("r" + i), b(w)));
            expected.merge(w, 1, Integer::sum);
        }
        d.produceAndClose(Map.of(), recs);
    }

    static KafkaStreams start(Driver d, String appId, String input, String output, Path stateDir, AtomicReference<Throwable> died) {
        return start(d.bootstrap, appId, input, output, stateDir, died);
    }

    /** "streams": the streams-groups scenario (KIP-1071, group.protocol=streams); the child JVM
     *  of phase 3 gets it through the environment. "" keeps the classic protocol. */
    static String groupProtocol = System.getenv().getOrDefault("ODRADEK_STREAMS_GROUP_PROTOCOL", "");

    /** Further Streams settings (the streams-groups-failover instances: their client.id). */
    static final Map<String, Object> extraProps = new HashMap<>();

    static KafkaStreams start(String bootstrap, String appId, String input, String output, Path stateDir, AtomicReference<Throwable> died) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .groupBy((k, v) -> v, Grouped.with("by-word", Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream()
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        if (!groupProtocol.isEmpty()) p.put("group.protocol", groupProtocol);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, "exactly_once_v2");
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        // Purge the consumed repartition records (DeleteRecords) every 500 ms, not every 30 s.
        p.put("repartition.purge.interval.ms", 500L);
        // No record cache (statestore.cache.max.bytes, 3.4+): one count update per input record.
        p.put("statestore.cache.max.bytes", 0L);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        // Streams sends no LeaveGroup on close: the restarted instance waits for the old member's
        // session to expire, so the shortest session a Kafka broker allows (group.min.session.timeout.ms).
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);
        p.putAll(extraProps);
        KafkaStreams app = new KafkaStreams(builder.build(), p);
        app.setUncaughtExceptionHandler(e -> {
            died.compareAndSet(null, e);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        if (childListener != null) app.setStateListener(childListener);
        app.start();
        return app;
    }

    /** Every committed output record, partition by partition, read up to the end offsets. */
    static Map<String, List<Long>> readCounts(Driver d, String output) {
        Map<String, List<Long>> out = new TreeMap<>();
        try (KafkaConsumer<byte[], byte[]> c = d.consumer(Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < PARTITIONS; i++) tps.add(new TopicPartition(output, i));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            d.waitFor(() -> tps.stream().allMatch(tp -> c.position(tp) >= end.get(tp)), "the output's end offsets",
                () -> {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                        long v = java.nio.ByteBuffer.wrap(r.value()).getLong();
                        out.computeIfAbsent(s(r.key()), k -> new ArrayList<>()).add(v);
                    }
                });
        }
        return out;
    }

    static Map<String, Long> lastCounts(Map<String, List<Long>> counts) {
        Map<String, Long> out = new TreeMap<>();
        counts.forEach((k, v) -> out.put(k, v.get(v.size() - 1)));
        return out;
    }

    static void awaitCounts(Driver d, String output, Map<String, Integer> expected, AtomicReference<Throwable> died, String phase) {
        Map<String, Long> want = new TreeMap<>();
        expected.forEach((k, v) -> want.put(k, (long) v));
        AtomicReference<Map<String, Long>> seen = new AtomicReference<>(Map.of());
        try {
            d.waitFor(() -> {
                if (died.get() != null) throw new Driver.ScenarioFailed(phase + ": the Streams thread died: " + Driver.describe(died.get()));
                seen.set(lastCounts(readCounts(d, output)));
                return seen.get().equals(want);
            }, phase + " counts", null);
        } catch (Driver.ScenarioFailed e) {
            throw new Driver.ScenarioFailed(e.getMessage() + "; last counts " + seen.get() + ", want " + want);
        }
    }

    static void checkSequences(Map<String, List<Long>> got, Map<String, Integer> expected, String phase) {
        check(got.keySet().equals(expected.keySet()), phase + ": output words " + got.keySet() + ", input words " + expected.keySet());
        for (Map.Entry<String, Integer> e : expected.entrySet()) {
            List<Long> seq = got.get(e.getKey());
            List<Long> want = new ArrayList<>();
            for (long i = 1; i <= e.getValue(); i++) want.add(i);
            check(seq.equals(want), phase + ": counts of " + e.getKey() + " are " + abbreviate(seq) + ", want 1.." + e.getValue());
        }
    }

    static String abbreviate(List<Long> seq) {
        if (seq.size() <= 12) return seq.toString();
        return seq.subList(0, 6) + "..." + seq.subList(seq.size() - 6, seq.size()) + " (" + seq.size() + " updates)";
    }

    static void close(KafkaStreams app) {
        check(app.close(Duration.ofSeconds(20)), "KafkaStreams.close did not finish in 20 s");
    }

    static final StringBuffer childOut = new StringBuffer();
    static KafkaStreams.StateListener childListener;

    static Process startChild(Driver d, String appId, String input, String output, Path stateDir) throws Exception {
        if (d.classpath == null || d.classpath.isEmpty()) throw new Driver.NotSupported("no --classpath for the Streams child JVM");
        childOut.setLength(0);
        ProcessBuilder pb = new ProcessBuilder("java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", d.classpath,
            StreamsEos.class.getName(), d.bootstrap, appId, input, output, stateDir.toString()).redirectErrorStream(true);
        pb.environment().put("ODRADEK_STREAMS_GROUP_PROTOCOL", groupProtocol);
        Process p = pb.start();
        p.getOutputStream().close();
        Thread reader = new Thread(() -> {
            try (java.io.BufferedReader r = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream()))) {
                for (String line; (line = r.readLine()) != null; ) childOut.append(line).append('\n');
            } catch (java.io.IOException e) { /* killed */ }
        });
        reader.setDaemon(true);
        reader.start();
        d.waitFor(() -> {
            check(p.isAlive(), "the Streams child JVM exited: " + Driver.tail(childOut.toString()));
            return childOut.indexOf("STATE RUNNING") >= 0;
        }, "the Streams child JVM RUNNING", null);
        return p;
    }

    /** The child JVM of phase 3: runs the app until killed, printing its state changes. */
    public static void main(String[] argv) throws Exception {
        AtomicReference<Throwable> died = new AtomicReference<>();
        childListener = (now, old) -> { System.out.println("STATE " + now); System.out.flush(); };
        KafkaStreams app = start(argv[0], argv[1], argv[2], argv[3], Path.of(argv[4]), died);
        while (died.get() == null) Thread.sleep(100);
        System.out.println("DIED " + Driver.describe(died.get()));
        System.out.flush();
        app.close(Duration.ofSeconds(5));
        Runtime.getRuntime().halt(1);
    }

    static String run(Driver d) throws Exception {
        String input = d.topic("in");
        String output = d.topic("out");
        String appId = d.prefix + "-streams-eos-" + d.suffix();
        d.createTopic(input, PARTITIONS);
        d.createTopic(output, PARTITIONS);
        Map<String, Integer> expected = new TreeMap<>();
        produceInput(d, input, 0, PHASE1, expected);
        Path stateDir = Files.createTempDirectory("odradek-streams-");
        long t0 = System.nanoTime();
        AtomicReference<Throwable> died = new AtomicReference<>();
        try {
            KafkaStreams app = start(d, appId, input, output, stateDir, died);
            try {
                awaitCounts(d, output, expected, died, "phase 1");
            } finally {
                close(app);
            }
            double phase1 = (System.nanoTime() - t0) / 1e9;
            checkSequences(readCounts(d, output), expected, "phase 1");
            // Kafka Streams made its internal topics: the repartition topic and the changelog.
            Set<String> topics;
            try (Admin a = d.admin()) {
                topics = a.listTopics().names().get(d.remainingMs(), TimeUnit.MILLISECONDS);
            }
            for (String suffix : List.of("-by-word-repartition", "-counts-changelog"))
                check(topics.contains(appId + suffix), "no internal topic " + appId + suffix + " in " + topics.stream().filter(x -> x.startsWith(appId)).collect(Collectors.toList()));
            // Restart: the local store wiped (cleanUp), so the new instance restores the counts
            // from the changelog and resumes the input at the committed offsets.
            app.cleanUp();
            produceInput(d, input, PHASE1, PHASE1 + PHASE2, expected);
            long t1 = System.nanoTime();
            AtomicReference<Throwable> died2 = new AtomicReference<>();
            KafkaStreams app2 = start(d, appId, input, output, stateDir, died2);
            try {
                awaitCounts(d, output, expected, died2, "phase 2 (after the restart)");
            } finally {
                close(app2);
            }
            double phase2 = (System.nanoTime() - t1) / 1e9;
            checkSequences(readCounts(d, output), expected, "phase 2 (after the restart)");
            // Phase 3, a crash: the app in a child JVM (same state dir, so the same process id
            // and transactional id) killed with SIGKILL while it works through 1500 more
            // records, its transaction open; a new instance fences it (the open transaction is
            // aborted), restores and finishes.
            long t2 = System.nanoTime();
            produceInput(d, input, PHASE1 + PHASE2, PHASE1 + PHASE2 + PHASE3, expected);
            String openAtKill;
            long killedAt;
            try (KafkaConsumer<byte[], byte[]> uncommitted = d.consumer(Map.of());
                 KafkaConsumer<byte[], byte[]> committed = d.consumer(Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
                List<TopicPartition> tps = new ArrayList<>();
                for (int i = 0; i < PARTITIONS; i++) tps.add(new TopicPartition(output, i));
                java.util.function.ToLongFunction<KafkaConsumer<byte[], byte[]>> end =
                    c -> c.endOffsets(tps).values().stream().mapToLong(Long::longValue).sum();
                long before = end.applyAsLong(uncommitted);
                Process child = startChild(d, appId, input, output, stateDir);
                try {
                    d.waitFor(() -> {
                        check(child.isAlive(), "the Streams child JVM exited: " + Driver.tail(childOut.toString()));
                        // killed once it has written 100 records and has a transaction open (or,
                        // should it be that quick, once it has written them all)
                        long h = end.applyAsLong(uncommitted);
                        return h >= before + 100 && h > end.applyAsLong(committed) || h >= before + PHASE3;
                    }, "the child's first outputs in an open transaction", () -> { });  // no sleep between looks
                } finally {
                    child.destroyForcibly();
                    child.waitFor(10, TimeUnit.SECONDS);
                }
                long hw = end.applyAsLong(uncommitted), lso = end.applyAsLong(committed);
                killedAt = hw - before;
                openAtKill = hw > lso ? "an open transaction of " + (hw - lso) + " records left" : "no transaction open";
            }
            AtomicReference<Throwable> died3 = new AtomicReference<>();
            KafkaStreams app3 = start(d, appId, input, output, stateDir, died3);
            try {
                awaitCounts(d, output, expected, died3, "phase 3 (after the crash)");
            } finally {
                close(app3);
            }
            double phase3 = (System.nanoTime() - t2) / 1e9;
            checkSequences(readCounts(d, output), expected, "phase 3 (after the crash)");
            // The application's group committed the input's end on every partition, and Streams
            // deleted the consumed records of its repartition topic (its log start moved).
            String purged;
            try (Admin a = d.admin()) {
                Map<TopicPartition, OffsetSpec> earliest = new HashMap<>();
                for (int i = 0; i < PARTITIONS; i++) earliest.put(new TopicPartition(appId + "-by-word-repartition", i), OffsetSpec.earliest());
                long start = a.listOffsets(earliest).all().get(d.remainingMs(), TimeUnit.MILLISECONDS).values().stream()
                    .mapToLong(info -> info.offset()).sum();
                check(start > 0, "the repartition topic was never purged (its log start offsets sum to 0)");
                purged = "repartition topic purged to " + start;
                Map<TopicPartition, OffsetAndMetadata> committed = a.listConsumerGroupOffsets(appId)
                    .partitionsToOffsetAndMetadata().get(d.remainingMs(), TimeUnit.MILLISECONDS);
                Map<TopicPartition, OffsetSpec> req = new HashMap<>();
                for (int i = 0; i < PARTITIONS; i++) req.put(new TopicPartition(input, i), OffsetSpec.latest());
                Map<TopicPartition, Long> ends = new HashMap<>();
                a.listOffsets(req).all().get(d.remainingMs(), TimeUnit.MILLISECONDS).forEach((tp, info) -> ends.put(tp, info.offset()));
                for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
                    OffsetAndMetadata om = committed.get(e.getKey());
                    check(om != null && om.offset() == e.getValue(), "committed offset of " + e.getKey() + " is "
                        + (om == null ? "none" : om.offset()) + ", the input ends at " + e.getValue());
                }
            }
            return String.format("%d + %d + %d records, %d words; phase 1 %.1f s, phase 2 (restored from the changelog) %.1f s, "
                + "phase 3 (killed %d output records in, %s; restarted) %.1f s; %s", PHASE1, PHASE2, PHASE3, expected.size(), phase1,
                phase2, killedAt, openAtKill, phase3, purged);
        } finally {
            try (Stream<Path> w = Files.walk(stateDir)) {
                w.sorted(Comparator.reverseOrder()).forEach(x -> x.toFile().delete());
            }
        }
    }
}
