package odradek.compat;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java driver of the compatibility matrix: kafka-clients (3.9, 4.1 or 4.4, whichever is on
 * the classpath) runs every scenario; with --classpath it also runs Kafka's CLI tools by main class.
 * One JSON line per scenario on stdout. Each scenario runs on its own daemon thread with a
 * deadline, so a hung call becomes FAIL "timeout"; the JVM ends with halt() so stuck client
 * threads can't keep it alive.
 */
public final class Driver {
    static final class ScenarioFailed extends RuntimeException {
        ScenarioFailed(String m) { super(m); }
    }

    static final class NotSupported extends RuntimeException {
        NotSupported(String m) { super(m); }
    }

    interface Scenario { String run() throws Exception; }

    final String client;
    final String bootstrap;
    final String prefix;
    final double timeoutSec;
    final String classpath;
    final List<String> logDirs;
    String scenario = "";
    long deadline;
    /** The runner's --security file (the security suite), parsed; null when not given. */
    Map<String, Object> securityConf;

    Driver(String client, String bootstrap, String prefix, double timeoutSec, String classpath, List<String> logDirs) {
        this.client = client;
        this.bootstrap = bootstrap;
        this.prefix = prefix;
        this.timeoutSec = timeoutSec;
        this.classpath = classpath;
        this.logDirs = logDirs;
    }

    // ------------------------------------------------------------------ harness

    static void check(boolean cond, String msg) {
        if (!cond) throw new ScenarioFailed(msg);
    }

    long remainingMs() { return Math.max(100, (deadline - System.nanoTime()) / 1_000_000); }

    void waitFor(BooleanSupplier cond, String what, Runnable step) {
        Exception last = null;
        while (true) {
            try {
                if (step != null) step.run();
                if (cond.getAsBoolean()) return;
            } catch (ScenarioFailed e) {
                throw e;
            } catch (Exception e) {
                last = e;
            }
            if (System.nanoTime() > deadline)
                throw new ScenarioFailed("timed out waiting for " + what + (last != null ? " (last error: " + last + ")" : ""));
            if (step == null) {
                try { Thread.sleep(50); } catch (InterruptedException e) { throw new ScenarioFailed("interrupted"); }
            }
        }
    }

    String suffix() { return UUID.randomUUID().toString().substring(0, 6); }
    String topic(String name) { return prefix + "-" + scenario + (name.isEmpty() ? "" : "-" + name) + "-" + suffix(); }
    String topic() { return topic(""); }
    String group() { return prefix + "-" + scenario + "-g-" + suffix(); }
    String txnId() { return prefix + "-" + scenario + "-tx-" + suffix(); }

    static byte[] b(String s) { return s == null ? null : s.getBytes(StandardCharsets.UTF_8); }
    static String s(byte[] b) { return b == null ? null : new String(b, StandardCharsets.UTF_8); }

    Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        return Admin.create(p);
    }

    void createTopic(String name, int partitions, Map<String, String> config) throws Exception {
        try (Admin a = admin()) {
            a.createTopics(List.of(new NewTopic(name, partitions, (short) 1).configs(config))).all()
                .get(remainingMs(), TimeUnit.MILLISECONDS);
            waitFor(() -> {
                try {
                    TopicDescription d = a.describeTopics(List.of(name)).allTopicNames().get(5, TimeUnit.SECONDS).get(name);
                    return d.partitions().size() == partitions && d.partitions().stream().allMatch(p -> p.leader() != null);
                } catch (Exception e) { throw new RuntimeException(e); }
            }, "topic " + name + " in metadata", null);
        }
    }

    void createTopic(String name, int partitions) throws Exception { createTopic(name, partitions, Map.of()); }

    KafkaProducer<byte[], byte[]> producer(Map<String, Object> extra) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30000);
        p.putAll(extra);
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    List<RecordMetadata> produceAll(KafkaProducer<byte[], byte[]> p, List<ProducerRecord<byte[], byte[]>> records) throws Exception {
        List<Future<RecordMetadata>> fs = new ArrayList<>();
        for (ProducerRecord<byte[], byte[]> r : records) fs.add(p.send(r));
        p.flush();
        List<RecordMetadata> out = new ArrayList<>();
        for (Future<RecordMetadata> f : fs) out.add(f.get(remainingMs(), TimeUnit.MILLISECONDS));
        return out;
    }

    void produceAndClose(Map<String, Object> extra, List<ProducerRecord<byte[], byte[]>> records) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = producer(extra)) {
            produceAll(p, records);
        }
    }

    KafkaConsumer<byte[], byte[]> consumer(Map<String, Object> extra) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20000);
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        p.putAll(extra);
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    List<ConsumerRecord<byte[], byte[]>> readAll(String topic, int partitions, int count, Map<String, Object> extra) {
        try (KafkaConsumer<byte[], byte[]> c = consumer(extra)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(topic, i));
            c.assign(tps);
            c.seekToBeginning(tps);
            List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
            waitFor(() -> got.size() >= count, count + " records", () -> c.poll(Duration.ofMillis(200)).forEach(got::add));
            return got;
        }
    }

    List<ConsumerRecord<byte[], byte[]>> readAll(String topic, int partitions, int count) {
        return readAll(topic, partitions, count, Map.of());
    }

    static List<String> values(List<ConsumerRecord<byte[], byte[]>> rs) {
        return rs.stream().map(r -> s(r.value())).collect(Collectors.toList());
    }

    // ------------------------------------------------------------------ scenarios

    String produceConsume() throws Exception {
        String t = topic();
        createTopic(t, 3);
        List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
        for (int i = 0; i < 30; i++) recs.add(new ProducerRecord<>(t, b("k" + (i % 10)), b(String.format("v%03d", i))));
        produceAndClose(Map.of(), recs);
        List<ConsumerRecord<byte[], byte[]>> got = readAll(t, 3, 30);
        check(got.size() == 30, "read " + got.size() + " records, produced 30");
        Map<String, Integer> partOf = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : got) {
            Integer prev = partOf.putIfAbsent(s(r.key()), r.partition());
            check(prev == null || prev == r.partition(), "key " + s(r.key()) + " in two partitions");
        }
        check(new HashSet<>(partOf.values()).size() > 1, "all keys landed in one partition");
        Map<Integer, List<ConsumerRecord<byte[], byte[]>>> byPart = got.stream().collect(Collectors.groupingBy(ConsumerRecord::partition));
        for (List<ConsumerRecord<byte[], byte[]>> l : byPart.values()) {
            List<String> vs = values(l);
            List<String> sorted = new ArrayList<>(vs);
            Collections.sort(sorted);
            check(vs.equals(sorted), "partition not in produce order: " + vs);
        }
        Set<String> all = new TreeSet<>(values(got));
        check(all.size() == 30, "duplicates or losses");
        return "";
    }

    static List<String> compressibleValues() {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < 50; i++) out.add(String.format("record-%04d-", i) + "abcdefgh".repeat(64));
        return out;
    }

    String compression(String codec) throws Exception {
        String t = topic();
        createTopic(t, 1);
        List<String> vals = compressibleValues();
        List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
        for (String v : vals) recs.add(new ProducerRecord<>(t, b(v)));
        produceAndClose(Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec, ProducerConfig.LINGER_MS_CONFIG, 100), recs);
        List<ConsumerRecord<byte[], byte[]>> got = readAll(t, 1, vals.size());
        check(values(got).equals(vals), "values differ after the round trip");
        for (int i = 0; i < got.size(); i++) check(got.get(i).offset() == i, "offsets not 0..n-1");
        return "";
    }

    // A topic's compression.type applied by the broker (issue #10): for each codec of the topic,
    // records produced in two other codecs are recompressed on append and read back intact.
    String topicCompression() throws Exception {
        List<String> notes = new ArrayList<>();
        for (String codec : List.of("gzip", "snappy", "lz4", "zstd", "uncompressed")) {
            String t = topic(codec);
            createTopic(t, 1, Map.of("compression.type", codec));
            List<String> vals = compressibleValues();
            String first = codec.equals("uncompressed") ? "gzip" : "none";
            String second = codec.equals("gzip") || codec.equals("uncompressed") ? "zstd" : "gzip";
            for (int half = 0; half < 2; half++) {
                List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
                for (String v : vals.subList(half * 25, half * 25 + 25)) recs.add(new ProducerRecord<>(t, b(v)));
                produceAndClose(Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, half == 0 ? first : second,
                    ProducerConfig.LINGER_MS_CONFIG, 100), recs);
            }
            List<ConsumerRecord<byte[], byte[]>> got = readAll(t, 1, vals.size());
            check(values(got).equals(vals), "topic compression.type=" + codec + ": values differ after the round trip");
            for (int i = 0; i < got.size(); i++) check(got.get(i).offset() == i, "topic compression.type=" + codec + ": offsets not 0..n-1");
            notes.add(codec + " (from " + first + ", " + second + ")");
        }
        return "read back intact: " + String.join(", ", notes);
    }

    static List<String> headerList(Iterable<Header> hs) {
        List<String> out = new ArrayList<>();
        for (Header h : hs) { out.add(h.key()); out.add(h.value() == null ? "<null>" : s(h.value())); }
        return out;
    }

    String headersAndNulls() throws Exception {
        String t = topic();
        createTopic(t, 1);
        List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
        recs.add(new ProducerRecord<byte[], byte[]>(t, null, null, null, b("v-null-key"),
            List.of(new RecordHeader("h", b("1")), new RecordHeader("h", b("2")), new RecordHeader("empty", new byte[0]))));
        recs.add(new ProducerRecord<>(t, b("k-tombstone"), null));
        recs.add(new ProducerRecord<>(t, new byte[0], new byte[0]));
        recs.add(new ProducerRecord<>(t, null, null, b("k"), b("v"), List.of(new RecordHeader("nullhdr", (byte[]) null))));
        produceAndClose(Map.of(), recs);
        List<ConsumerRecord<byte[], byte[]>> got = readAll(t, 1, 4);
        List<String> kv = got.stream().map(r -> s(r.key()) + "/" + s(r.value())).collect(Collectors.toList());
        check(kv.equals(List.of("null/v-null-key", "k-tombstone/null", "/", "k/v")), "keys/values differ: " + kv);
        check(got.get(0).key() == null && got.get(1).value() == null, "null became empty");
        check(headerList(got.get(0).headers()).equals(List.of("h", "1", "h", "2", "empty", "")), "headers differ: " + headerList(got.get(0).headers()));
        check(headerList(got.get(1).headers()).isEmpty() && headerList(got.get(2).headers()).isEmpty(), "unexpected headers");
        check(headerList(got.get(3).headers()).equals(List.of("nullhdr", "<null>")), "null header value differs: " + headerList(got.get(3).headers()));
        return "null header value included";
    }

    static byte[] largeValue() {
        byte[] v = new byte[2 * 1024 * 1024];
        for (int i = 0; i < v.length; i++) v[i] = (byte) ((i * 7 + 3) % 251);
        return v;
    }

    String largeMessage() throws Exception {
        String t = topic();
        createTopic(t, 1, Map.of("max.message.bytes", "4194304"));
        byte[] v = largeValue();
        produceAndClose(Map.of(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 5_000_000), List.of(new ProducerRecord<>(t, v)));
        List<ConsumerRecord<byte[], byte[]>> got = readAll(t, 1, 1);
        check(Arrays.equals(got.get(0).value(), v), "value differs");
        return "";
    }

    String listOffsets() throws Exception {
        String t = topic();
        createTopic(t, 1);
        long t0 = System.currentTimeMillis() - 60_000;
        List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
        for (int i = 0; i < 3; i++) recs.add(new ProducerRecord<>(t, 0, t0 + 1000L * i, null, b("r" + i)));
        produceAndClose(Map.of(), recs);
        TopicPartition tp = new TopicPartition(t, 0);
        try (Admin a = admin()) {
            java.util.function.Function<OffsetSpec, Long> lo = spec -> {
                try {
                    return a.listOffsets(Map.of(tp, spec)).partitionResult(tp).get(remainingMs(), TimeUnit.MILLISECONDS).offset();
                } catch (Exception e) { throw new RuntimeException(e); }
            };
            check(lo.apply(OffsetSpec.earliest()) == 0, "earliest != 0");
            check(lo.apply(OffsetSpec.latest()) == 3, "latest != 3");
            check(lo.apply(OffsetSpec.forTimestamp(t0 + 500)) == 1, "by time T+500 != 1");
            check(lo.apply(OffsetSpec.forTimestamp(t0 + 1000)) == 1, "by time T+1000 != 1");
            long after = lo.apply(OffsetSpec.forTimestamp(t0 + 10_000));
            check(after == -1, "by time after the last record: " + after + ", expected -1 (none)");
        }
        try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of())) {
            check(c.beginningOffsets(List.of(tp)).get(tp) == 0, "consumer beginningOffsets != 0");
            check(c.endOffsets(List.of(tp)).get(tp) == 3, "consumer endOffsets != 3");
            Map<TopicPartition, OffsetAndTimestamp> r = c.offsetsForTimes(Map.of(tp, t0 + 1500));
            check(r.get(tp) != null && r.get(tp).offset() == 2, "consumer offsetsForTimes(T+1500) = " + r.get(tp));
            r = c.offsetsForTimes(Map.of(tp, t0 + 10_000));
            check(r.get(tp) == null, "consumer offsetsForTimes after the last record = " + r.get(tp));
        }
        return "";
    }

    static Throwable root(Throwable e) {
        while ((e instanceof ExecutionException || e instanceof KafkaException && !(e instanceof org.apache.kafka.common.errors.ApiException)) && e.getCause() != null)
            e = e.getCause();
        return e;
    }

    String adminTopics() throws Exception {
        String t = topic();
        try (Admin a = admin()) {
            a.createTopics(List.of(new NewTopic(t, 2, (short) 1).configs(Map.of("retention.ms", "3600000")))).all().get(remainingMs(), TimeUnit.MILLISECONDS);
            try {
                a.createTopics(List.of(new NewTopic(t, 2, (short) 1))).all().get(remainingMs(), TimeUnit.MILLISECONDS);
                throw new ScenarioFailed("creating an existing topic succeeded");
            } catch (ExecutionException e) {
                check(e.getCause() instanceof TopicExistsException, "create again: " + e.getCause());
            }
            java.util.function.IntSupplier parts = () -> {
                try {
                    TopicDescription d = a.describeTopics(List.of(t)).allTopicNames().get(5, TimeUnit.SECONDS).get(t);
                    return (int) d.partitions().stream().filter(p -> p.leader() != null && p.leader().id() >= 0).count();
                } catch (Exception e) { throw new RuntimeException(e); }
            };
            waitFor(() -> parts.getAsInt() == 2, "2 partitions with leaders", null);
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, t);
            java.util.function.Supplier<String> retention = () -> {
                try {
                    Config c = a.describeConfigs(List.of(res)).all().get(5, TimeUnit.SECONDS).get(res);
                    ConfigEntry e = c.get("retention.ms");
                    return e == null ? null : e.value();
                } catch (Exception e) { throw new RuntimeException(e); }
            };
            check("3600000".equals(retention.get()), "retention.ms = " + retention.get());
            a.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET))))
                .all().get(remainingMs(), TimeUnit.MILLISECONDS);
            waitFor(() -> "7200000".equals(retention.get()), "altered retention.ms", null);
            a.createPartitions(Map.of(t, NewPartitions.increaseTo(4))).all().get(remainingMs(), TimeUnit.MILLISECONDS);
            waitFor(() -> parts.getAsInt() == 4, "4 partitions", null);
            try {
                a.createPartitions(Map.of(t, NewPartitions.increaseTo(3))).all().get(remainingMs(), TimeUnit.MILLISECONDS);
                throw new ScenarioFailed("decreasing partitions succeeded");
            } catch (ExecutionException e) {
                check(e.getCause() instanceof InvalidPartitionsException, "decrease: " + e.getCause());
            }
            a.deleteTopics(List.of(t)).all().get(remainingMs(), TimeUnit.MILLISECONDS);
            waitFor(() -> {
                try { return !a.listTopics().names().get(5, TimeUnit.SECONDS).contains(t); }
                catch (Exception e) { throw new RuntimeException(e); }
            }, "topic gone", null);
        }
        return "";
    }

    static Set<Integer> parts(KafkaConsumer<byte[], byte[]> c) {
        return c.assignment().stream().map(TopicPartition::partition).collect(Collectors.toSet());
    }

    String consumerGroup() throws Exception {
        String t = topic();
        createTopic(t, 4);
        String g = group();
        Map<String, Object> conf = Map.of(ConsumerConfig.GROUP_ID_CONFIG, g, ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10000,
            ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
        Set<Integer> all4 = Set.of(0, 1, 2, 3);
        List<ConsumerRecord<byte[], byte[]>> ga = new ArrayList<>(), gb = new ArrayList<>(), gc = new ArrayList<>();
        KafkaConsumer<byte[], byte[]> a = consumer(conf), b = consumer(conf);
        try {
            a.subscribe(List.of(t));
            waitFor(() -> parts(a).equals(all4), "A owns all 4 partitions", () -> a.poll(Duration.ofMillis(100)).forEach(ga::add));
            b.subscribe(List.of(t));
            waitFor(() -> {
                Set<Integer> pa = parts(a), pb = parts(b);
                Set<Integer> u = new HashSet<>(pa);
                u.addAll(pb);
                return pa.size() == 2 && pb.size() == 2 && u.equals(all4);
            }, "A and B 2+2", () -> {
                a.poll(Duration.ofMillis(50)).forEach(ga::add);
                b.poll(Duration.ofMillis(50)).forEach(gb::add);
            });
            Set<Integer> pa = parts(a), pb = parts(b);
            List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
            for (int p = 0; p < 4; p++) for (int i = 0; i < 10; i++) recs.add(new ProducerRecord<>(t, p, null, b("p" + p + "-" + i)));
            produceAndClose(Map.of(), recs);
            waitFor(() -> ga.size() + gb.size() >= 40, "40 records", () -> {
                a.poll(Duration.ofMillis(50)).forEach(ga::add);
                b.poll(Duration.ofMillis(50)).forEach(gb::add);
            });
            check(ga.size() + gb.size() == 40, "duplicates");
            check(ga.stream().allMatch(r -> pa.contains(r.partition())) && gb.stream().allMatch(r -> pb.contains(r.partition())),
                "record from a partition the member does not own");
            a.commitSync();
            b.commitSync();
            b.close();
            ga.clear();
            waitFor(() -> parts(a).equals(all4), "A owns all 4 after B left", () -> a.poll(Duration.ofMillis(100)).forEach(ga::add));
            recs.clear();
            List<String> want = new ArrayList<>();
            for (int p = 0; p < 4; p++) for (int i = 0; i < 2; i++) { recs.add(new ProducerRecord<>(t, p, null, b("p" + p + "-x" + i))); want.add("p" + p + "-x" + i); }
            produceAndClose(Map.of(), recs);
            waitFor(() -> ga.size() >= 8, "8 new records on A", () -> a.poll(Duration.ofMillis(100)).forEach(ga::add));
            List<String> gotA = values(ga);
            Collections.sort(gotA);
            check(gotA.equals(want), "A did not resume at the commits: " + gotA);
            a.commitSync();
        } finally {
            a.close();
            b.close();
        }
        List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
        List<String> want = new ArrayList<>();
        for (int p = 0; p < 4; p++) { recs.add(new ProducerRecord<>(t, p, null, b("p" + p + "-y"))); want.add("p" + p + "-y"); }
        produceAndClose(Map.of(), recs);
        try (KafkaConsumer<byte[], byte[]> c = consumer(conf)) {
            c.subscribe(List.of(t));
            waitFor(() -> gc.size() >= 4, "4 records on C", () -> c.poll(Duration.ofMillis(100)).forEach(gc::add));
            List<String> gotC = values(gc);
            Collections.sort(gotC);
            check(gotC.equals(want), "C did not resume at A's commits: " + gotC);
            Set<TopicPartition> tps = new HashSet<>();
            for (int p = 0; p < 4; p++) tps.add(new TopicPartition(t, p));
            Map<TopicPartition, OffsetAndMetadata> com = c.committed(tps);
            for (TopicPartition tp : tps) check(com.get(tp) != null && com.get(tp).offset() == 12, "committed " + com);
        }
        return "";
    }

    /** One member of consumerProtocolGroup: polls, checks ownership, commits what it read. */
    final class Member {
        final String name;
        final Map<String, Object> conf;
        final KafkaConsumer<byte[], byte[]> c;
        final List<String> log = new ArrayList<>();

        Member(String name, Map<String, Object> conf) {
            this.name = name;
            this.conf = conf;
            this.c = consumer(conf);
        }

        void poll(Map<String, String> seen) {
            Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
            for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(50))) {
                TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                check(c.assignment().contains(tp), name + " got a record of " + tp + ", which it does not own");
                String v = s(r.value());
                String before = seen.putIfAbsent(v, name);
                check(before == null, v + " consumed twice: by " + before + " and by " + name);
                commit.put(tp, new OffsetAndMetadata(r.offset() + 1));
            }
            // Committed before the next poll, where a revocation would take effect.
            if (!commit.isEmpty()) c.commitSync(commit, Duration.ofMillis(remainingMs()));
        }
    }

    // ------------------------------------------------------------------ fetch sessions (KIP-227)

    static final int IDLE_PARTITIONS = 1000;

    /** The consumer keeps a fetch session; its node metrics (1 s windows, 2 of them) show what
     *  each idle Fetch costs once the session holds the 1000 partitions. */
    String idleFetchSessions() throws Exception {
        String t = topic();
        createTopic(t, IDLE_PARTITIONS);
        Map<String, Double> node = null;
        double bestRate = -1;
        try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of(
                ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 100,
                ConsumerConfig.METRICS_SAMPLE_WINDOW_MS_CONFIG, 1000,
                ConsumerConfig.METRICS_NUM_SAMPLES_CONFIG, 2))) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < IDLE_PARTITIONS; i++) tps.add(new TopicPartition(t, i));
            c.assign(tps);
            // Every position first (a broker may take a while to open 1000 new logs), then the
            // full fetch that opens the session, then idle polls.
            for (TopicPartition tp : tps) c.position(tp, Duration.ofMillis(remainingMs()));
            long end = System.nanoTime() + 4_000_000_000L;
            while (System.nanoTime() < end) {
                int n = c.poll(Duration.ofMillis(100)).count();
                check(n == 0, "an empty topic returned " + n + " records");
            }
            Map<String, Map<String, Double>> byNode = new HashMap<>();
            for (Map.Entry<org.apache.kafka.common.MetricName, ? extends org.apache.kafka.common.Metric> e : c.metrics().entrySet()) {
                org.apache.kafka.common.MetricName name = e.getKey();
                String nodeId = name.tags().get("node-id");
                if (!name.group().equals("consumer-node-metrics") || nodeId == null || nodeId.equals("node--1")) continue;
                Object v = e.getValue().metricValue();
                if (v instanceof Double) byNode.computeIfAbsent(nodeId, k -> new HashMap<>()).put(name.name(), (Double) v);
            }
            for (Map<String, Double> m : byNode.values()) {
                double rate = m.getOrDefault("request-rate", 0.0);
                if (rate > bestRate) { bestRate = rate; node = m; }
            }
        }
        check(node != null, "no per-broker node metrics");
        double fetches = bestRate * 2.0;  // two 1 s windows
        double requestMax = node.getOrDefault("request-size-max", Double.NaN);
        double responseAvg = node.getOrDefault("incoming-byte-rate", 0.0) / Math.max(node.getOrDefault("response-rate", 0.0), 1e-9);
        check(fetches >= 5, String.format("only %.1f requests in the last 2 s of idle polling", fetches));
        check(requestMax < 1000, String.format("largest idle request %.0f bytes: no fetch session?", requestMax));
        check(responseAvg < 1000, String.format("average idle response %.0f bytes: no fetch session?", responseAvg));
        return String.format("idle: %.1f requests/s, largest request %.0f B, average response %.0f B", bestRate, requestMax, responseAvg);
    }

    static String sizes(List<Member> ms) {
        return ms.stream().map(m -> m.name + "=" + new TreeSet<>(parts(m.c))).collect(Collectors.joining(" "));
    }

    /** KIP-848: three consumer-protocol members, one leaves and comes back; every record once. */
    String consumerProtocolGroup() throws Exception {
        String t = topic();
        int n = 6;
        createTopic(t, n);
        String g = group();
        Map<String, Object> conf = Map.of(ConsumerConfig.GROUP_ID_CONFIG, g, "group.protocol", "consumer");
        Set<Integer> all = new HashSet<>();
        for (int p = 0; p < n; p++) all.add(p);
        Map<String, String> seen = new java.util.concurrent.ConcurrentHashMap<>();
        Member a = new Member("A", conf), b = new Member("B", conf), c = new Member("C", conf);
        List<Member> members = List.of(a, b, c);
        try {
            for (Member m : members) m.c.subscribe(List.of(t));
            java.util.function.Function<List<Member>, Boolean> balanced = live -> {
                Set<Integer> u = new HashSet<>();
                int total = 0;
                for (Member m : live) { u.addAll(parts(m.c)); total += parts(m.c).size(); }
                int lo = n / live.size();
                return total == n && u.equals(all) && live.stream().allMatch(m -> parts(m.c).size() >= lo && parts(m.c).size() <= lo + 1);
            };
            Runnable pollAll = () -> { for (Member m : members) if (!m.c.subscription().isEmpty()) m.poll(seen); };
            waitFor(() -> balanced.apply(members), "A, B and C owning 2+2+2 (" + sizes(members) + ")", pollAll);
            int produced = 0;
            for (int round = 0; round < 3; round++) {
                if (round == 1) {
                    b.c.unsubscribe();  // leaves the group (member epoch -1)
                    check(parts(b.c).isEmpty(), "B still owns partitions after unsubscribe");
                    waitFor(() -> balanced.apply(List.of(a, c)), "A and C owning 3+3 after B left", pollAll);
                } else if (round == 2) {
                    b.c.subscribe(List.of(t));  // joins again (member epoch 0)
                    waitFor(() -> balanced.apply(members), "2+2+2 after B rejoined", pollAll);
                }
                List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
                for (int p = 0; p < n; p++) for (int i = 0; i < 5; i++) recs.add(new ProducerRecord<>(t, p, null, b("r" + round + "-p" + p + "-" + i)));
                produceAndClose(Map.of(), recs);
                produced += recs.size();
                int want = produced;
                waitFor(() -> seen.size() >= want, want + " records consumed (have " + seen.size() + ")", pollAll);
                String desc = sizes(round == 1 ? List.of(a, c) : members);
                check(round == 1 ? balanced.apply(List.of(a, c)) : balanced.apply(members), "assignment changed while consuming: " + desc);
            }
            Set<String> want = new TreeSet<>();
            for (int round = 0; round < 3; round++) for (int p = 0; p < n; p++) for (int i = 0; i < 5; i++) want.add("r" + round + "-p" + p + "-" + i);
            check(seen.keySet().equals(want), "consumed " + seen.size() + " distinct records, expected the 90 produced");
            Set<String> byB = seen.entrySet().stream().filter(e -> e.getValue().equals("B")).map(Map.Entry::getKey).collect(Collectors.toSet());
            check(byB.stream().noneMatch(v -> v.startsWith("r1-")), "B consumed records while it was out of the group");
            check(byB.stream().anyMatch(v -> v.startsWith("r2-")), "B consumed nothing after rejoining");
            Set<TopicPartition> tps = new HashSet<>();
            for (int p = 0; p < n; p++) tps.add(new TopicPartition(t, p));
            Map<TopicPartition, OffsetAndMetadata> com = a.c.committed(tps);
            for (TopicPartition tp : tps)
                check(com.get(tp) != null && com.get(tp).offset() == 15, "committed " + tp + " = " + com.get(tp) + ", expected 15");
        } finally {
            for (Member m : members) m.c.close(Duration.ofSeconds(5));
        }
        return "3 members, B left and rejoined; 90 records once each";
    }

    /** subscribe(SubscriptionPattern) (kafka-clients 4.0+) by reflection: the driver compiles
     *  against the 3.9 API. */
    static void subscribePattern(KafkaConsumer<byte[], byte[]> c, String regex) throws Exception {
        Class<?> sp;
        try {
            sp = Class.forName("org.apache.kafka.clients.consumer.SubscriptionPattern");
        } catch (ClassNotFoundException e) {
            throw new NotSupported("kafka-clients " + clientVersion() + " has no SubscriptionPattern (4.0+)");
        }
        Object pattern = sp.getConstructor(String.class).newInstance(regex);
        KafkaConsumer.class.getMethod("subscribe", sp).invoke(c, pattern);
    }

    static Set<TopicPartition> tps(String topic, int partitions) {
        Set<TopicPartition> out = new HashSet<>();
        for (int p = 0; p < partitions; p++) out.add(new TopicPartition(topic, p));
        return out;
    }

    /** KIP-848: a member subscribed by a regex the broker resolves (SubscriptionPattern) picks
     *  up a matching topic created after it joined; non-matching topics are never assigned. */
    String consumerProtocolRegex() throws Exception {
        String base = topic();
        String m1 = base + "-m1", m2 = base + "-m2", n1 = base + "-n1", n2 = base + "-m2x";
        Map<String, Integer> parts = Map.of(m1, 3, m2, 2, n1, 2, n2, 2);
        java.util.function.BiFunction<String, String, List<ProducerRecord<byte[], byte[]>>> batch = (t, tag) -> {
            List<ProducerRecord<byte[], byte[]>> out = new ArrayList<>();
            for (int i = 0; i < 10; i++) out.add(new ProducerRecord<>(t, i % parts.get(t), null, b(t + "/" + tag + "-" + i)));
            return out;
        };
        createTopic(m1, 3);
        createTopic(n1, 2);
        List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>(batch.apply(m1, "before"));
        recs.addAll(batch.apply(n1, "before"));
        produceAndClose(Map.of(), recs);
        Map<String, String> seen = new java.util.concurrent.ConcurrentHashMap<>();
        Member m = new Member("M", Map.of(ConsumerConfig.GROUP_ID_CONFIG, group(), "group.protocol", "consumer"));
        Set<TopicPartition> ever = new HashSet<>();
        Runnable step = () -> { m.poll(seen); ever.addAll(m.c.assignment()); };
        Set<TopicPartition> first = tps(m1, 3), both = new HashSet<>(first);
        both.addAll(tps(m2, 2));
        double pickedUp;
        try {
            subscribePattern(m.c, base + "-m[0-9]+");
            try {
                waitFor(() -> m.c.assignment().equals(first), "M owning the 3 partitions of " + m1, step);
            } catch (ScenarioFailed e) {
                throw new ScenarioFailed(e.getMessage() + " (owns " + m.c.assignment() + ")");
            }
            waitFor(() -> seen.size() >= 10, "the 10 records of " + m1, step);
            long t0 = System.nanoTime();
            createTopic(m2, 2);
            createTopic(n2, 2);
            recs = new ArrayList<>();
            for (String t : List.of(m1, m2, n1, n2)) recs.addAll(batch.apply(t, "after"));
            produceAndClose(Map.of(), recs);
            try {
                waitFor(() -> m.c.assignment().equals(both), "M owning the 3 partitions of " + m1 + " and the 2 of the new " + m2, step);
            } catch (ScenarioFailed e) {
                throw new ScenarioFailed(e.getMessage() + " (owns " + m.c.assignment() + ")");
            }
            pickedUp = (System.nanoTime() - t0) / 1e9;
            waitFor(() -> seen.size() >= 30, "the 30 records of the matching topics", step);
            // A few more polls: a duplicate or a record of another topic would show now.
            long end = System.nanoTime() + 1_000_000_000L;
            while (System.nanoTime() < end) step.run();
            Set<String> want = new TreeSet<>();
            for (String t : List.of(m1, m2))
                for (ProducerRecord<byte[], byte[]> r : batch.apply(t, "after")) want.add(s(r.value()));
            for (ProducerRecord<byte[], byte[]> r : batch.apply(m1, "before")) want.add(s(r.value()));
            check(seen.keySet().equals(want), "consumed " + new TreeSet<>(seen.keySet()) + ", expected the " + want.size() + " records of " + m1 + " and " + m2);
            for (TopicPartition tp : ever)
                check(tp.topic().equals(m1) || tp.topic().equals(m2), "M was assigned " + tp + ", which the regex does not match");
            Map<TopicPartition, Long> ends = m.c.endOffsets(both);
            Map<TopicPartition, OffsetAndMetadata> com = m.c.committed(both);
            for (TopicPartition tp : both)
                check(com.get(tp) != null && com.get(tp).offset() == ends.get(tp), "committed " + tp + " = " + com.get(tp) + ", end " + ends.get(tp));
            Set<TopicPartition> others = tps(n1, 2);
            others.addAll(tps(n2, 2));
            Map<TopicPartition, OffsetAndMetadata> comN = m.c.committed(others);
            for (TopicPartition tp : others) check(comN.get(tp) == null, "committed " + tp + " = " + comN.get(tp));
        } finally {
            m.c.close(Duration.ofSeconds(5));
        }
        return String.format("subscribe(SubscriptionPattern); the new topic assigned %.1f s after its creation began; 30 records once each", pickedUp);
    }

    String idempotent() throws Exception {
        String t = topic();
        createTopic(t, 1);
        List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
        List<String> vals = new ArrayList<>();
        for (int i = 0; i < 100; i++) { vals.add(String.format("i%03d", i)); recs.add(new ProducerRecord<>(t, b(vals.get(i)))); }
        produceAndClose(Map.of(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true, ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5), recs);
        List<ConsumerRecord<byte[], byte[]>> got = readAll(t, 1, 100);
        for (int i = 0; i < got.size(); i++) check(got.get(i).offset() == i, "offsets not contiguous 0..99");
        check(values(got).equals(vals), "values duplicated, lost or reordered");
        return "";
    }

    KafkaProducer<byte[], byte[]> txProducer(String id) {
        KafkaProducer<byte[], byte[]> p = producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id, ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 60000));
        p.initTransactions();
        return p;
    }

    String transactions() throws Exception {
        String t = topic();
        createTopic(t, 1);
        List<String> committed = new ArrayList<>(), all = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> p = txProducer(txnId())) {
            for (String tag : List.of("c1", "a", "c2")) {
                p.beginTransaction();
                for (int i = 0; i < 5; i++) {
                    p.send(new ProducerRecord<>(t, b(tag + "-" + i)));
                    all.add(tag + "-" + i);
                    if (!tag.equals("a")) committed.add(tag + "-" + i);
                }
                p.flush();
                if (tag.equals("a")) p.abortTransaction(); else p.commitTransaction();
            }
        }
        List<String> rc = values(readAll(t, 1, 10, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed")));
        check(rc.equals(committed), "read_committed saw " + rc);
        List<String> ru = values(readAll(t, 1, 15, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted")));
        check(ru.equals(all), "read_uncommitted saw " + ru);
        return "";
    }

    String consumeTransformProduce() throws Exception {
        String src = topic("in"), dst = topic("out");
        createTopic(src, 1);
        createTopic(dst, 1);
        String g = group();
        List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
        for (int i = 0; i < 10; i++) recs.add(new ProducerRecord<>(src, b("in-" + i)));
        produceAndClose(Map.of(), recs);
        TopicPartition tp = new TopicPartition(src, 0);
        Map<String, Object> cconf = Map.of(ConsumerConfig.GROUP_ID_CONFIG, g, ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        try (KafkaConsumer<byte[], byte[]> c = consumer(cconf); KafkaProducer<byte[], byte[]> p = txProducer(txnId())) {
            c.subscribe(List.of(src));
            for (int round = 0; round < 2; round++) {
                int n = round == 0 ? 10 : 5;
                List<ConsumerRecord<byte[], byte[]>> msgs = new ArrayList<>();
                waitFor(() -> msgs.size() >= n, n + " inputs", () -> c.poll(Duration.ofMillis(100)).forEach(msgs::add));
                check(msgs.size() == n, "read " + msgs.size() + " inputs, expected " + n);
                p.beginTransaction();
                for (ConsumerRecord<byte[], byte[]> m : msgs) p.send(new ProducerRecord<>(dst, b(s(m.value()).toUpperCase())));
                p.sendOffsetsToTransaction(Map.of(tp, new OffsetAndMetadata(msgs.get(msgs.size() - 1).offset() + 1)), c.groupMetadata());
                p.flush();
                if (round == 0) {
                    p.commitTransaction();
                    // The coordinator applies transactional offsets when the commit marker lands.
                    waitFor(() -> {
                        OffsetAndMetadata om = c.committed(Set.of(tp)).get(tp);
                        return om != null && om.offset() == 10;
                    }, "committed offset 10 after the commit", null);
                    recs.clear();
                    for (int i = 10; i < 15; i++) recs.add(new ProducerRecord<>(src, b("in-" + i)));
                    produceAndClose(Map.of(), recs);
                } else {
                    p.abortTransaction();
                    OffsetAndMetadata om = c.committed(Set.of(tp)).get(tp);
                    check(om != null && om.offset() == 10, "committed offset " + om + " after the aborted transaction");
                }
            }
        }
        List<String> out = values(readAll(dst, 1, 10, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed")));
        List<String> want = new ArrayList<>();
        for (int i = 0; i < 10; i++) want.add("IN-" + i);
        check(out.equals(want), "outputs " + out);
        try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of())) {
            long end = c.endOffsets(List.of(new TopicPartition(dst, 0))).get(new TopicPartition(dst, 0));
            check(end == 17, "output end offset " + end + ", expected 17 (10 + marker + 5 + marker)");
        }
        return "";
    }

    String fencing() throws Exception {
        String t = topic();
        createTopic(t, 1);
        String id = txnId();
        KafkaProducer<byte[], byte[]> p1 = txProducer(id);
        try {
            p1.beginTransaction();
            p1.send(new ProducerRecord<>(t, b("from-p1"))).get(remainingMs(), TimeUnit.MILLISECONDS);
            try (KafkaProducer<byte[], byte[]> p2 = txProducer(id)) {
                try {
                    p1.commitTransaction();
                    throw new ScenarioFailed("the fenced producer committed");
                } catch (ProducerFencedException | InvalidProducerEpochException e) {
                    // expected
                } catch (KafkaException e) {
                    Throwable r = root(e);
                    check(r instanceof ProducerFencedException || r instanceof InvalidProducerEpochException,
                        "unexpected error for the fenced producer: " + e);
                }
                p2.beginTransaction();
                p2.send(new ProducerRecord<>(t, b("from-p2")));
                p2.commitTransaction();
            }
        } finally {
            p1.close(Duration.ofSeconds(5));
        }
        List<String> got = values(readAll(t, 1, 1, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed")));
        check(got.equals(List.of("from-p2")), "read_committed saw " + got);
        return "";
    }

    // ------------------------------------------------------------------ Kafka's CLI tools

    record Proc(int code, String out) {}

    Proc tool(String mainClass, String stdin, String... args) throws Exception {
        if (classpath == null || classpath.isEmpty()) throw new NotSupported("no --classpath with the Kafka tools");
        List<String> cmd = new ArrayList<>(List.of("java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classpath, mainClass));
        cmd.addAll(Arrays.asList(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        Process p = pb.start();
        if (stdin != null) p.getOutputStream().write(b(stdin));
        p.getOutputStream().close();
        // Read output on a thread so a full pipe can't block the tool.
        StringBuilder sb = new StringBuilder();
        Thread reader = new Thread(() -> {
            try (InputStream in = p.getInputStream()) { sb.append(new String(in.readAllBytes(), StandardCharsets.UTF_8)); }
            catch (IOException e) { /* the process died */ }
        });
        reader.setDaemon(true);
        reader.start();
        if (!p.waitFor(remainingMs(), TimeUnit.MILLISECONDS)) {
            p.destroyForcibly();
            throw new ScenarioFailed(mainClass.substring(mainClass.lastIndexOf('.') + 1) + " timed out");
        }
        reader.join(5000);
        return new Proc(p.exitValue(), sb.toString());
    }

    Proc okTool(String mainClass, String stdin, String... args) throws Exception {
        Proc r = tool(mainClass, stdin, args);
        String name = mainClass.substring(mainClass.lastIndexOf('.') + 1);
        check(r.code == 0, name + " " + String.join(" ", Arrays.asList(args).subList(0, Math.min(4, args.length))) + " exited " + r.code + ": " + tail(r.out));
        return r;
    }

    static String tail(String s) {
        s = s.strip();
        return s.length() > 400 ? s.substring(s.length() - 400) : s;
    }

    static final String TOPIC_CMD = "org.apache.kafka.tools.TopicCommand";

    String cliTopics() throws Exception {
        String t = topic();
        okTool(TOPIC_CMD, null, "--bootstrap-server", bootstrap, "--create", "--topic", t, "--partitions", "2",
            "--replication-factor", "1", "--config", "retention.ms=3600000");
        waitFor(() -> {
            try { return okTool(TOPIC_CMD, null, "--bootstrap-server", bootstrap, "--describe", "--topic", t).out.contains("PartitionCount: 2"); }
            catch (Exception e) { throw new RuntimeException(e); }
        }, "describe shows 2 partitions", null);
        Proc d = okTool(TOPIC_CMD, null, "--bootstrap-server", bootstrap, "--describe", "--topic", t);
        check(d.out.contains("retention.ms=3600000"), "describe lacks retention.ms: " + tail(d.out));
        check(d.out.contains("Leader: "), "describe lacks leaders: " + tail(d.out));
        okTool(TOPIC_CMD, null, "--bootstrap-server", bootstrap, "--alter", "--topic", t, "--partitions", "3");
        waitFor(() -> {
            try { return okTool(TOPIC_CMD, null, "--bootstrap-server", bootstrap, "--describe", "--topic", t).out.contains("PartitionCount: 3"); }
            catch (Exception e) { throw new RuntimeException(e); }
        }, "describe shows 3 partitions", null);
        Proc dec = tool(TOPIC_CMD, null, "--bootstrap-server", bootstrap, "--alter", "--topic", t, "--partitions", "2");
        check(dec.code != 0 || dec.out.contains("InvalidPartitionsException"), "decrease to 2 was not rejected: " + tail(dec.out));
        check(okTool(TOPIC_CMD, null, "--bootstrap-server", bootstrap, "--list").out.lines().anyMatch(l -> l.strip().equals(t)), "--list lacks the topic");
        okTool(TOPIC_CMD, null, "--bootstrap-server", bootstrap, "--delete", "--topic", t);
        waitFor(() -> {
            try { return okTool(TOPIC_CMD, null, "--bootstrap-server", bootstrap, "--list").out.lines().noneMatch(l -> l.strip().equals(t)); }
            catch (Exception e) { throw new RuntimeException(e); }
        }, "topic gone from --list", null);
        return "";
    }

    String cliConsole() throws Exception {
        String t = topic();
        createTopic(t, 1);
        try (KafkaProducer<byte[], byte[]> p = txProducer(txnId())) {
            p.beginTransaction();
            p.send(new ProducerRecord<>(t, b("tk"), b("committed-1")));
            p.commitTransaction();
            p.beginTransaction();
            p.send(new ProducerRecord<>(t, b("tk"), b("aborted-1")));
            p.flush();
            p.abortTransaction();
        }
        okTool("org.apache.kafka.tools.ConsoleProducer", "k1:console-1\nk2:console-2\n", "--bootstrap-server", bootstrap,
            "--topic", t, "--property", "parse.key=true", "--property", "key.separator=:");
        Proc c = okTool("org.apache.kafka.tools.consumer.ConsoleConsumer", null, "--bootstrap-server", bootstrap, "--topic", t,
            "--from-beginning", "--max-messages", "3", "--timeout-ms", "20000", "--isolation-level", "read_committed",
            "--property", "print.key=true", "--property", "key.separator=|");
        List<String> lines = c.out.lines().filter(l -> l.contains("|")).collect(Collectors.toList());
        check(lines.equals(List.of("tk|committed-1", "k1|console-1", "k2|console-2")), "ConsoleConsumer read_committed printed " + lines + ": " + tail(c.out));
        return "";
    }

    String cliConsumerGroups() throws Exception {
        String t = topic();
        createTopic(t, 1);
        String g = group();
        List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
        for (int i = 0; i < 10; i++) recs.add(new ProducerRecord<>(t, b("r" + i)));
        produceAndClose(Map.of(), recs);
        try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, g))) {
            c.subscribe(List.of(t));
            List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
            waitFor(() -> got.size() >= 10, "10 records", () -> c.poll(Duration.ofMillis(100)).forEach(got::add));
            c.commitSync();
        }
        String cgc = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand";
        Proc list = okTool(cgc, null, "--bootstrap-server", bootstrap, "--list");
        check(list.out.lines().anyMatch(l -> l.strip().equals(g)), "--list lacks the group: " + tail(list.out));
        Proc d = okTool(cgc, null, "--bootstrap-server", bootstrap, "--describe", "--group", g);
        check(d.out.lines().anyMatch(l -> l.contains(t) && l.matches(".*\\s10\\s+10\\s+0\\s.*")), "--describe lacks offset 10 / lag 0: " + tail(d.out));
        okTool(cgc, null, "--bootstrap-server", bootstrap, "--reset-offsets", "--group", g, "--topic", t, "--to-earliest", "--execute");
        d = okTool(cgc, null, "--bootstrap-server", bootstrap, "--describe", "--group", g);
        check(d.out.lines().anyMatch(l -> l.contains(t) && l.matches(".*\\s0\\s+10\\s+10\\s.*")), "after --reset-offsets: " + tail(d.out));
        return "";
    }

    String cliTransactions() throws Exception {
        String t = topic();
        createTopic(t, 1);
        String id = txnId();
        try (KafkaProducer<byte[], byte[]> p = txProducer(id)) {
            p.beginTransaction();
            p.send(new ProducerRecord<>(t, b("v")));
            p.commitTransaction();
        }
        String tc = "org.apache.kafka.tools.TransactionsCommand";
        Proc l = okTool(tc, null, "--bootstrap-server", bootstrap, "list");
        check(l.out.contains(id), "list lacks the transactional id: " + tail(l.out));
        waitFor(() -> {
            try { return okTool(tc, null, "--bootstrap-server", bootstrap, "describe", "--transactional-id", id).out.contains("CompleteCommit"); }
            catch (Exception e) { throw new RuntimeException(e); }
        }, "describe shows CompleteCommit", null);
        return "";
    }

    String cliPerf() throws Exception {
        String t = topic();
        createTopic(t, 1);
        Proc p = okTool("org.apache.kafka.tools.ProducerPerformance", null, "--topic", t, "--num-records", "20000", "--record-size", "100",
            "--throughput", "-1", "--producer-props", "bootstrap.servers=" + bootstrap, "acks=all", "linger.ms=5");
        check(p.out.contains("20000 records sent"), "ProducerPerformance: " + tail(p.out));
        Proc c = okTool("org.apache.kafka.tools.ConsumerPerformance", null, "--bootstrap-server", bootstrap, "--topic", t,
            "--messages", "20000", "--timeout", "30000");
        List<String> lines = c.out.lines().filter(x -> !x.isBlank()).collect(Collectors.toList());
        String last = lines.isEmpty() ? "" : lines.get(lines.size() - 1);
        String[] cols = last.split(",\\s*");
        check(cols.length > 4 && cols[4].strip().equals("20000"), "ConsumerPerformance did not read 20000: " + tail(c.out));
        // Transactional ProducerPerformance and a read_committed ConsoleConsumer agree on the count.
        String tt = topic();
        createTopic(tt, 1);
        Proc tp = okTool("org.apache.kafka.tools.ProducerPerformance", null, "--topic", tt, "--num-records", "5000",
            "--record-size", "100", "--throughput", "-1", "--transactional-id", txnId(), "--transaction-duration-ms", "200",
            "--producer-props", "bootstrap.servers=" + bootstrap);
        check(tp.out.contains("5000 records sent"), "transactional ProducerPerformance: " + tail(tp.out));
        Proc cc = okTool("org.apache.kafka.tools.consumer.ConsoleConsumer", null, "--bootstrap-server", bootstrap, "--topic", tt,
            "--from-beginning", "--max-messages", "5000", "--timeout-ms", "30000", "--isolation-level", "read_committed");
        long read = cc.out.lines().filter(l -> l.matches("[A-Z]{100}")).count();
        check(read == 5000, "read_committed ConsoleConsumer read " + read + " of 5000 transactional records: " + tail(cc.out));
        return "transactional ProducerPerformance 5000 = read_committed ConsoleConsumer " + read;
    }

    /** DumpLogSegments moved from kafka_2.13 (Scala, kafka.tools) to kafka-tools (Java) after 4.1. */
    static String dumpLogSegmentsClass() {
        for (String c : List.of("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")) {
            try {
                Class.forName(c, false, Driver.class.getClassLoader());
                return c;
            } catch (ClassNotFoundException e) {
                // not in this Kafka version
            }
        }
        throw new NotSupported("no DumpLogSegments class on the classpath");
    }

    String cliDumpLogSegments() throws Exception {
        if (logDirs.isEmpty()) throw new NotSupported("no --log-dirs given");
        String t = topic();
        createTopic(t, 1);
        List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
        for (int i = 0; i < 20; i++) recs.add(new ProducerRecord<>(t, b("k" + i), b("plain-" + i)));
        produceAndClose(Map.of(), recs);
        recs.clear();
        for (int i = 0; i < 20; i++) recs.add(new ProducerRecord<>(t, b("k" + i), b("gzip-" + i)));
        produceAndClose(Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, "gzip", ProducerConfig.LINGER_MS_CONFIG, 50), recs);
        try (KafkaProducer<byte[], byte[]> p = txProducer(txnId())) {
            p.beginTransaction();
            p.send(new ProducerRecord<>(t, b("tx")));
            p.commitTransaction();
        }
        Path dir = null;
        for (String d : logDirs) {
            Path cand = Path.of(d, t + "-0");
            if (Files.isDirectory(cand)) dir = cand;
        }
        check(dir != null, "no " + t + "-0 directory under " + logDirs);
        Path log = dir.resolve("00000000000000000000.log");
        waitFor(() -> Files.exists(log), "segment file", null);
        String dump = dumpLogSegmentsClass();
        Proc r = okTool(dump, null, "--files", log.toString(), "--deep-iteration", "--print-data-log");
        long dataRecords = r.out.lines().filter(l -> l.contains("| offset:") && l.contains("payload:")).count();
        check(!r.out.contains("Exception") && !r.out.toLowerCase().contains("corrupt"), "DumpLogSegments: " + tail(r.out));
        check(r.out.contains("payload: plain-19") && r.out.contains("payload: gzip-19") && r.out.contains("payload: tx"), "payloads missing: " + tail(r.out));
        check(r.out.contains("endTxnMarker: COMMIT"), "no COMMIT control record: " + tail(r.out));
        check(dataRecords >= 41, "DumpLogSegments listed " + dataRecords + " records, expected 41 + a marker");
        for (String suffix : List.of(".index", ".timeindex")) {
            Path f = dir.resolve("00000000000000000000" + suffix);
            if (!Files.exists(f)) continue;
            Proc ix = okTool(dump, null, "--files", f.toString());
            // Only "it parses": on a live, preallocated active-segment index Kafka's own files
            // show spurious mismatches too.
            check(!ix.out.contains("Exception"), "DumpLogSegments " + suffix + ": " + tail(ix.out));
        }
        return "";
    }

    // ------------------------------------------------------------------ Kafka's own applications

    /** streams-eos with group.protocol=streams (KIP-1071 streams groups; kafka-streams 4.1+). */
    String streamsGroups() throws Exception {
        try {
            Class.forName("org.apache.kafka.clients.consumer.internals.StreamsMembershipManager", false, Driver.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new NotSupported("kafka-streams without the streams rebalance protocol");
        }
        StreamsEos.groupProtocol = "streams";
        return streamsEos();
    }

    String streamsEos() throws Exception {
        try {
            Class.forName("org.apache.kafka.streams.KafkaStreams", false, Driver.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new NotSupported("no kafka-streams on the classpath");
        }
        return StreamsEos.run(this);
    }

    static final String COPIER = "org.apache.kafka.tools.TransactionalMessageCopier";

    List<String> copierArgs(String input, String output, String group, String txnId, boolean groupMode, int partition, int txnTimeoutMs) {
        List<String> args = new ArrayList<>(List.of("--broker-list", bootstrap, "--input-topic", input,
            "--input-partition", String.valueOf(partition), "--output-topic", output, "--consumer-group", group,
            "--transactional-id", txnId, "--transaction-size", "50", "--max-messages", "-1",
            "--transaction-timeout", String.valueOf(txnTimeoutMs), "--enable-random-aborts"));
        if (groupMode) args.addAll(List.of("--group-mode", "--use-group-metadata"));
        return args;
    }

    /** One TransactionalMessageCopier run to the input's end offsets; its exit status must be 0. */
    Proc copier(String input, String output, String group, String txnId, boolean groupMode, int partition) throws Exception {
        Proc r = okTool(COPIER, null, copierArgs(input, output, group, txnId, groupMode, partition, 30000).toArray(new String[0]));
        // The last status line: "stage":"ShutdownComplete" in 4.4 ("shutdown_complete" before).
        String last = r.out.lines().filter(l -> l.contains("ShutdownComplete") || l.contains("shutdown_complete"))
            .reduce((x, y) -> y).orElse("");
        check(last.contains("\"remaining\":0"), "TransactionalMessageCopier did not shut down with 0 remaining: " + tail(r.out));
        return r;
    }

    /** The values of each partition, read_committed, up to the end offsets. */
    Map<Integer, List<String>> readToEnd(String topic, int partitions) {
        Map<Integer, List<String>> out = new TreeMap<>();
        try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) { tps.add(new TopicPartition(topic, i)); out.put(i, new ArrayList<>()); }
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            waitFor(() -> tps.stream().allMatch(tp -> c.position(tp) >= end.get(tp)), "the end offsets of " + topic,
                () -> c.poll(Duration.ofMillis(200)).forEach(r -> out.get(r.partition()).add(s(r.value()))));
        }
        return out;
    }

    void checkCommitted(String group, String topic, Map<Integer, Integer> want) throws Exception {
        try (Admin a = admin()) {
            Map<TopicPartition, OffsetAndMetadata> got = a.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                .get(remainingMs(), TimeUnit.MILLISECONDS);
            for (Map.Entry<Integer, Integer> e : want.entrySet()) {
                OffsetAndMetadata om = got.get(new TopicPartition(topic, e.getKey()));
                check(om != null && om.offset() == e.getValue(), "group " + group + " committed " + (om == null ? "nothing" : om.offset())
                    + " on " + topic + "-" + e.getKey() + ", the input ends at " + e.getValue());
            }
        }
    }

    String txnCopier() throws Exception {
        String in = topic("in"), outGroup = topic("out"), outAssign = topic("out-assign");
        createTopic(in, 2);
        createTopic(outGroup, 2);
        createTopic(outAssign, 2);
        Map<Integer, List<String>> input = new TreeMap<>(Map.of(0, new ArrayList<>(), 1, new ArrayList<>()));
        // Input: 400 records per partition, then (after the first copy) 100 more.
        java.util.function.BiConsumer<Integer, Integer> produce = (from, to) -> {
            List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
            for (int p = 0; p < 2; p++)
                for (int i = from; i < to; i++) {
                    String v = String.format("v%d-%04d", p, i);
                    recs.add(new ProducerRecord<>(in, p, b("k" + p + "-" + i), b(v)));
                    input.get(p).add(v);
                }
            try { produceAndClose(Map.of(), recs); } catch (Exception e) { throw new RuntimeException(e); }
        };
        produce.accept(0, 400);
        // Group mode with the group-metadata API (KIP-447), random aborts, run twice: the second
        // run resumes at the committed offsets and copies only the new records.
        String g = group(), tx = txnId();
        copier(in, outGroup, g, tx, true, 0);
        produce.accept(400, 500);
        copier(in, outGroup, g, tx, true, 0);
        Map<Integer, List<String>> got = readToEnd(outGroup, 2);
        for (int p = 0; p < 2; p++) {
            List<String> o = got.get(p), want = input.get(p);
            check(o.equals(want), "group mode: output partition " + p + " has " + o.size() + " records"
                + (o.size() == want.size() ? " differing from the input" : ", the input " + want.size())
                + (o.isEmpty() ? "" : " (first " + o.get(0) + ", last " + o.get(o.size() - 1) + ")"));
        }
        checkCommitted(g, in, Map.of(0, 500, 1, 500));
        // Assign mode (one partition, offsets sent by group id: the pre-KIP-447 API) over 4000
        // more records of partition 0: a first copier with a 3 s transaction timeout is killed
        // (SIGKILL) with a transaction open; a second one with another transactional id can read
        // the group's offsets (OffsetFetch, require_stable) only once the coordinator has
        // aborted the dead one's transaction for its timeout, and then copies the rest.
        List<ProducerRecord<byte[], byte[]>> more = new ArrayList<>();
        for (int i = 500; i < 4500; i++) {
            String v = String.format("v0-%04d", i);
            more.add(new ProducerRecord<>(in, 0, b("k0-" + i), b(v)));
            input.get(0).add(v);
        }
        produceAndClose(Map.of(), more);
        String g2 = group();
        String openAtKill;
        TopicPartition outA0 = new TopicPartition(outAssign, 0);
        try (KafkaConsumer<byte[], byte[]> uncommitted = consumer(Map.of());
             KafkaConsumer<byte[], byte[]> committed = consumer(Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
            List<String> cmd = new ArrayList<>(List.of("java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classpath, COPIER));
            cmd.addAll(copierArgs(in, outAssign, g2, txnId(), false, 0, 3000));
            Path log = Files.createTempFile("odradek-copier-", ".out");
            Process first = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            long[] seen = {0, 0, 0};
            boolean[] killedAlive = {false};
            try {
                waitFor(() -> {
                    if (!first.isAlive()) {
                        if (first.exitValue() == 0) return true;  // it copied everything before it could be killed
                        String out = "";
                        try { out = tail(Files.readString(log)); } catch (IOException e) { /* gone */ }
                        throw new ScenarioFailed("the first assign-mode copier exited " + first.exitValue() + " before it was killed (looked "
                            + seen[2] + " times, last high watermark " + seen[0] + ", last stable offset " + seen[1] + "): " + out);
                    }
                    long hw = uncommitted.endOffsets(List.of(outA0)).get(outA0);
                    long lso = committed.endOffsets(List.of(outA0)).get(outA0);
                    seen[0] = hw; seen[1] = lso; seen[2]++;
                    return hw >= 100 && hw > lso;
                }, "the first assign-mode copier's outputs in an open transaction", () -> { });  // no sleep between looks
            } finally {
                killedAlive[0] = first.isAlive();
                first.destroyForcibly();
                first.waitFor(10, TimeUnit.SECONDS);
                Files.deleteIfExists(log);
            }
            long hw = uncommitted.endOffsets(List.of(outA0)).get(outA0), lso = committed.endOffsets(List.of(outA0)).get(outA0);
            openAtKill = !killedAlive[0] ? "finished before it could be killed"
                : hw > lso ? "killed with " + (hw - lso) + " records in its open transaction" : "killed between transactions";
        }
        long t0 = System.nanoTime(), wall0 = System.currentTimeMillis();
        Proc secondRun = copier(in, outAssign, g2, txnId(), false, 0);
        double second = (System.nanoTime() - t0) / 1e9;
        // Its first status line comes once it knows its position (the group's offsets).
        String firstStatus = secondRun.out.lines().filter(l -> l.contains("\"time\":\"")).findFirst().orElse("");
        double positioned = -1;
        java.util.regex.Matcher tm = java.util.regex.Pattern.compile("\"time\":\"([^\"]+)\"").matcher(firstStatus);
        if (tm.find()) positioned = (new java.text.SimpleDateFormat("yyyy/MM/dd HH:mm:ss:SSS").parse(tm.group(1)).getTime() - wall0) / 1e3;
        // The dead copier's open transaction holds the output's last stable offset until the
        // coordinator aborts it (3 s after it began, looked for every second): the second copier
        // waited for that only when the dead one had already sent its offsets.
        AtomicReference<Map<Integer, List<String>>> last = new AtomicReference<>();
        waitFor(() -> {
            last.set(readToEnd(outAssign, 2));
            return last.get().get(0).size() >= input.get(0).size();
        }, "the dead copier's transaction aborted (the output's last stable offset past it)", null);
        double visible = (System.nanoTime() - t0) / 1e9;
        Map<Integer, List<String>> got2 = last.get();
        List<String> o2 = got2.get(0);
        check(o2.equals(input.get(0)), "assign mode: output partition 0 has " + o2.size() + " records"
            + (o2.size() == 4500 ? " differing from the input" : ", want the input's 4500 in order")
            + (o2.isEmpty() ? "" : " (first " + o2.get(0) + ", last " + o2.get(o2.size() - 1) + ")"));
        check(got2.get(1).isEmpty(), "assign mode: output partition 1 has " + got2.get(1).size() + " records, want none");
        checkCommitted(g2, in, Map.of(0, 4500));
        // The output logs are longer than their 500 committed records: commit markers, and the
        // aborted transactions' records and markers.
        String ends;
        try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of())) {
            List<TopicPartition> outs = List.of(new TopicPartition(outGroup, 0), new TopicPartition(outGroup, 1));
            Map<TopicPartition, Long> e = c.endOffsets(outs);
            ends = outs.stream().map(tp -> String.valueOf(e.get(tp))).collect(Collectors.joining("/"));
        }
        return String.format("group mode 2 x 400 + 2 x 100 (two runs), 500 committed records per partition in logs ending at %s; "
            + "assign mode 4500: the first copier %s, the second positioned after %.1f s, done in %.1f s, all visible after %.1f s",
            ends, openAtKill, positioned, second, visible);
    }

    // ------------------------------------------------------------------ share groups

    /** KIP-932 scenarios live in ShareScenarios, compiled against kafka-clients 4.4 only
     *  (target/share-classes, on the java-4.4 classpath): called by reflection so this class
     *  still compiles against 3.9. */
    String shareScenario(String name) throws Exception {
        Class<?> c;
        try {
            c = Class.forName("odradek.compat.ShareScenarios");
        } catch (ClassNotFoundException e) {
            throw new ScenarioFailed("share scenarios need kafka-clients 4.0+ (KafkaShareConsumer); not built for " + client);
        }
        try {
            return (String) c.getMethod("run", String.class, String.class, String.class, double.class)
                .invoke(null, name, bootstrap, prefix, remainingMs() / 1000.0);
        } catch (java.lang.reflect.InvocationTargetException e) {
            Throwable t = e.getCause();
            if (t instanceof IllegalStateException) throw new ScenarioFailed(t.getMessage());
            throw (t instanceof Exception) ? (Exception) t : e;
        }
    }

    /** streams-groups-failover and cli-streams-groups live in StreamsGroupScenarios, compiled
     *  against kafka-clients 4.4 only (Admin.describeStreamsGroups; target/share-classes). */
    String streamsGroupScenario(String name) throws Exception {
        Class<?> c;
        try {
            c = Class.forName("odradek.compat.StreamsGroupScenarios");
        } catch (ClassNotFoundException e) {
            throw new NotSupported("streams-group scenarios need kafka-clients 4.4 (not built for " + client + ")");
        }
        try {
            return (String) c.getMethod("run", Driver.class, String.class).invoke(null, this, name);
        } catch (java.lang.reflect.InvocationTargetException e) {
            Throwable t = e.getCause();
            throw (t instanceof Exception) ? (Exception) t : e;
        }
    }

    // ------------------------------------------------------------------ main

    Scenario lookup(String name) {
        switch (name) {
            case "produce-consume": return this::produceConsume;
            case "compression-gzip": return () -> compression("gzip");
            case "compression-snappy": return () -> compression("snappy");
            case "compression-lz4": return () -> compression("lz4");
            case "compression-zstd": return () -> compression("zstd");
            case "topic-compression": return this::topicCompression;
            case "headers-and-nulls": return this::headersAndNulls;
            case "large-message": return this::largeMessage;
            case "list-offsets": return this::listOffsets;
            case "admin-topics": return this::adminTopics;
            case "consumer-group": return this::consumerGroup;
            case "idempotent-producer": return this::idempotent;
            case "consumer-protocol-group": return this::consumerProtocolGroup;
            case "consumer-protocol-regex": return this::consumerProtocolRegex;
            case "idle-fetch-sessions": return this::idleFetchSessions;
            case "transactions": return this::transactions;
            case "consume-transform-produce": return this::consumeTransformProduce;
            case "fencing": return this::fencing;
            case "cli-topics": return this::cliTopics;
            case "cli-console": return this::cliConsole;
            case "cli-consumer-groups": return this::cliConsumerGroups;
            case "cli-transactions": return this::cliTransactions;
            case "cli-perf": return this::cliPerf;
            case "cli-dump-log-segments": return this::cliDumpLogSegments;
            case "streams-eos": return this::streamsEos;
            case "streams-groups": return this::streamsGroups;
            case "streams-groups-failover":
            case "cli-streams-groups": return () -> streamsGroupScenario(name);
            case "txn-copier": return this::txnCopier;
            case "share-group-split":
            case "share-group-redelivery":
            case "share-group-archive":
            case "cli-share-groups": return () -> shareScenario(name);
            case "sasl-scram-sha-512": return () -> security().roundTrip("scram");
            case "sasl-plain": return () -> security().roundTrip("plain");
            case "mtls": return () -> security().roundTrip("mtls");
            case "sasl-oauthbearer": return () -> security().roundTrip("oauthbearer");
            case "acl-denied-produce": return () -> security().deniedProduce();
            case "acl-denied-consume": return () -> security().deniedConsume();
            case "acl-denied-group": return () -> security().deniedGroup();
            case "acl-denied-txn": return () -> security().deniedTxn();
            case "quota-throttle": return () -> security().quotaThrottle();
            // run.py --suite cluster (Cluster.java)
            case "failover-acks-all": return () -> new Cluster(this).acksAll();
            case "failover-not-enough-replicas": return () -> new Cluster(this).notEnoughReplicas();
            case "failover-group-coordinator": return () -> new Cluster(this).groupCoordinator();
            default: return null;
        }
    }

    Security security() {
        if (securityConf == null) throw new ScenarioFailed("a security scenario needs --security FILE (the runner's --suite security)");
        return new Security(this, securityConf);
    }

    /** kafka-clients' own version, from the properties file its jar carries (the class that
     *  reads it moved to an internals package in 4.x, so the driver reads the file itself). */
    static String clientVersion() {
        try (InputStream in = Driver.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in == null) return "unknown";
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version", "unknown");
        } catch (IOException e) {
            return "unknown";
        }
    }

    static String json(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    if (c < 0x20) sb.append(String.format("\\u%04x", (int) c)); else sb.append(c);
            }
        }
        return sb.append('"').toString();
    }

    void emit(String scenario, String status, String reason) {
        String line = "{\"client\": " + json(client) + ", \"client_version\": " + json(clientVersion())
            + ", \"scenario\": " + json(scenario) + ", \"status\": " + json(status) + ", \"reason\": " + json(reason == null ? "" : reason) + "}";
        System.out.println(line);
        System.out.flush();
    }

    static String describe(Throwable e) {
        Throwable r = e;
        while (r instanceof ExecutionException && r.getCause() != null) r = r.getCause();
        String where = "";
        for (StackTraceElement el : e.getStackTrace()) {
            if (el.getClassName().startsWith("odradek.compat")) { where = " at " + el.getMethodName() + ":" + el.getLineNumber(); break; }
        }
        return r.getClass().getSimpleName() + ": " + r.getMessage() + where;
    }

    public static void main(String[] argv) {
        Map<String, String> a = new LinkedHashMap<>();
        List<String> scenarios = new ArrayList<>();
        for (int i = 0; i + 1 < argv.length; i += 2) {
            if (argv[i].equals("--scenario")) scenarios.addAll(Arrays.asList(argv[i + 1].split(",")));
            else a.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
        }
        if (!a.containsKey("bootstrap")) {
            System.err.println("usage: Driver --bootstrap HOST:PORT [--scenario a,b] [--topic-prefix P] [--timeout S] [--client NAME] [--classpath CP] [--log-dirs D1,D2] [--security FILE]");
            System.exit(2);
        }
        String version = clientVersion();
        String client = a.getOrDefault("client", "java-" + version);
        List<String> logDirs = a.containsKey("log-dirs") ? Arrays.asList(a.get("log-dirs").split(",")) : List.of();
        Driver d = new Driver(client, a.get("bootstrap"), a.getOrDefault("topic-prefix", "j" + UUID.randomUUID().toString().substring(0, 6)),
            Double.parseDouble(a.getOrDefault("timeout", "45")), a.get("classpath"), logDirs);
        if (a.containsKey("security")) {
            try {
                d.securityConf = Security.load(a.get("security"));
            } catch (Exception e) {
                System.err.println("--security " + a.get("security") + ": " + e);
                System.exit(2);
            }
        }
        if (scenarios.isEmpty() || scenarios.equals(List.of("all")))
            scenarios = List.of("produce-consume", "compression-gzip", "compression-snappy", "compression-lz4", "compression-zstd",
                "headers-and-nulls", "large-message", "list-offsets", "admin-topics", "consumer-group", "idempotent-producer",
                "transactions", "consume-transform-produce", "fencing");
        ExecutorService pool = Executors.newCachedThreadPool(r -> {
            Thread th = new Thread(r);
            th.setDaemon(true);
            return th;
        });
        for (String name : scenarios) {
            Scenario sc = d.lookup(name);
            if (sc == null) { d.emit(name, "FAIL", "unknown scenario"); continue; }
            d.scenario = name;
            // The Streams scenario runs an application four times (three restarts): twice the time.
            double limit = name.startsWith("streams-") ? 2 * d.timeoutSec : d.timeoutSec;
            d.deadline = System.nanoTime() + (long) (limit * 1e9);
            Future<String> f = pool.submit(sc::run);
            try {
                String note = f.get((long) ((limit + 10) * 1000), TimeUnit.MILLISECONDS);
                d.emit(name, "PASS", note);
            } catch (TimeoutException e) {
                f.cancel(true);
                d.emit(name, "FAIL", "timeout");
            } catch (ExecutionException e) {
                Throwable c = e.getCause();
                if (c instanceof NotSupported) d.emit(name, "NOT_SUPPORTED", c.getMessage());
                else if (c instanceof ScenarioFailed) d.emit(name, "FAIL", c.getMessage());
                else d.emit(name, "FAIL", describe(c));
            } catch (InterruptedException e) {
                d.emit(name, "FAIL", "interrupted");
            }
        }
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }
}
