package odradek.compat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** KIP-932 share-group scenarios (KafkaShareConsumer exists from kafka-clients 4.0 on): compiled
 *  against 4.4 only and called by Driver by reflection, so Driver still compiles against 3.9. */
public final class ShareScenarios {
    final String bootstrap;
    final String prefix;
    final long deadline;

    ShareScenarios(String bootstrap, String prefix, double timeoutS) {
        this.bootstrap = bootstrap;
        this.prefix = prefix;
        this.deadline = System.nanoTime() + (long) (timeoutS * 1e9);
    }

    /** Entry point for Driver: the scenario's reason on success; throws on failure. */
    public static String run(String scenario, String bootstrap, String prefix, double timeoutS) throws Exception {
        ShareScenarios s = new ShareScenarios(bootstrap, prefix + "-" + scenario, timeoutS);
        switch (scenario) {
            case "share-group-split": return s.split();
            case "share-group-redelivery": return s.redelivery();
            case "share-group-archive": return s.archive();
            case "cli-share-groups": return s.cli();
            default: throw new IllegalArgumentException("unknown share scenario " + scenario);
        }
    }

    public static void main(String[] argv) throws Exception {
        if (argv[0].equals("hold")) { hold(argv[1], argv[2], argv[3], Integer.parseInt(argv[4])); return; }
        if (argv[0].equals("consume")) { consume(argv[1], argv[2], argv[3]); return; }
        System.out.println(run(argv[0], argv[1], "manual" + UUID.randomUUID().toString().substring(0, 4), 60));
    }

    static void check(boolean cond, String msg) { if (!cond) throw new IllegalStateException(msg); }
    static byte[] b(String s) { return s.getBytes(StandardCharsets.UTF_8); }
    static String s(byte[] b) { return b == null ? null : new String(b, StandardCharsets.UTF_8); }
    boolean late() { return System.nanoTime() > deadline; }
    String suffix() { return UUID.randomUUID().toString().substring(0, 6); }

    Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(p);
    }

    String newTopic() throws Exception {
        String t = prefix + "-" + suffix();
        try (Admin a = admin()) {
            a.createTopics(List.of(new NewTopic(t, 1, (short) 1))).all().get(20, TimeUnit.SECONDS);
        }
        return t;
    }

    KafkaProducer<byte[], byte[]> producer() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("acks", "all");
        p.put("linger.ms", "5");
        return new KafkaProducer<>(p);
    }

    KafkaShareConsumer<byte[], byte[]> shareConsumer(String group, Map<String, String> extra) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.putAll(extra);
        return new KafkaShareConsumer<>(p);
    }

    /** share.auto.offset.reset is `latest`: records produced before the group's share-partition
     *  is initialised are never delivered. Produce probe records until one of the group's
     *  consumers got one, so the real records come after the start offset on any broker. */
    void primeGroup(KafkaProducer<byte[], byte[]> prod, String topic, Set<String> seen) throws Exception {
        int n = 0;
        while (seen.stream().noneMatch(v -> v.startsWith("probe-"))) {
            check(!late(), "timed out waiting for the share group to deliver a probe record");
            prod.send(new ProducerRecord<>(topic, 0, null, b("probe-" + n++))).get();
            Thread.sleep(300);
        }
    }

    // (a) three consumers on one single-partition topic: disjoint records, all of them once.
    String split() throws Exception {
        String topic = newTopic();
        String group = prefix + "-g-" + suffix();
        int total = 300;
        List<Map<String, Integer>> got = new ArrayList<>();
        Set<String> seen = ConcurrentHashMap.newKeySet();
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService pool = Executors.newFixedThreadPool(3);
        List<Future<?>> fs = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Map<String, Integer> mine = new ConcurrentHashMap<>();
            got.add(mine);
            fs.add(pool.submit(() -> {
                try (KafkaShareConsumer<byte[], byte[]> c = shareConsumer(group, Map.of("max.poll.records", "20"))) {
                    c.subscribe(List.of(topic));
                    while (!stop.get()) {
                        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                            String v = s(r.value());
                            seen.add(v);
                            if (!v.startsWith("probe-")) mine.merge(v, 1, Integer::sum);
                        }
                        c.commitSync();  // implicit acknowledgement: every record accepted
                    }
                }
                return null;
            }));
        }
        try (KafkaProducer<byte[], byte[]> prod = producer()) {
            primeGroup(prod, topic, seen);
            for (int i = 0; i < total; i++) prod.send(new ProducerRecord<>(topic, 0, null, b("r-" + i)));
            prod.flush();
        }
        while (got.stream().mapToInt(Map::size).sum() < total && !late()) Thread.sleep(100);
        Thread.sleep(1500);  // anything delivered twice would show up now
        stop.set(true);
        for (Future<?> f : fs) f.get(30, TimeUnit.SECONDS);
        pool.shutdownNow();
        Map<String, Integer> all = new HashMap<>();
        List<Integer> sizes = new ArrayList<>();
        for (Map<String, Integer> m : got) {
            sizes.add(m.size());
            for (Map.Entry<String, Integer> e : m.entrySet()) all.merge(e.getKey(), e.getValue(), Integer::sum);
        }
        List<String> twice = new ArrayList<>();
        for (Map.Entry<String, Integer> e : all.entrySet()) if (e.getValue() > 1) twice.add(e.getKey());
        check(twice.isEmpty(), "delivered more than once: " + twice.subList(0, Math.min(5, twice.size())) + " (" + twice.size() + ")");
        check(all.size() == total, "got " + all.size() + " distinct records of " + total + " (per consumer " + sizes + ")");
        int busy = (int) sizes.stream().filter(n -> n > 0).count();
        return total + " records, each delivered once, split " + sizes + " over 3 share consumers (" + busy + " got records)";
    }

    // (b) a consumer killed (SIGKILL, another JVM) with records in flight: another member of
    // the group gets them, with delivery count 2 (Kafka 4.1+ releases them when the dead
    // consumer's connection closes; at the latest when their acquisition lock expires).
    String redelivery() throws Exception {
        String topic = newTopic();
        String group = prefix + "-g-" + suffix();
        int total = 20;
        Set<String> seen = ConcurrentHashMap.newKeySet();
        Map<String, Short> counts = new ConcurrentHashMap<>();
        ProcessBuilder pb = new ProcessBuilder(
            Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
            "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-cp", System.getProperty("java.class.path"), ShareScenarios.class.getName(),
            "hold", bootstrap, topic, group, String.valueOf(total));
        pb.redirectError(ProcessBuilder.Redirect.DISCARD);
        Process child = pb.start();
        BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            try { for (String l; (l = out.readLine()) != null; ) lines.add(l); } catch (IOException e) { /* ended */ }
        });
        reader.setDaemon(true);
        reader.start();
        long killedAt;
        try (KafkaProducer<byte[], byte[]> prod = producer()) {
            int n = 0;
            while (!lines.contains("PRIMED")) {
                check(!late() && child.isAlive(), "the first consumer never got a probe record");
                prod.send(new ProducerRecord<>(topic, 0, null, b("probe-" + n++))).get();
                Thread.sleep(300);
            }
            for (int i = 0; i < total; i++) prod.send(new ProducerRecord<>(topic, 0, null, b("r-" + i)));
            prod.flush();
            while (lines.stream().noneMatch(l -> l.startsWith("HELD "))) {
                check(!late() && child.isAlive(), "the first consumer acquired no record");
                Thread.sleep(50);
            }
        } finally {
            child.destroyForcibly();  // SIGKILL: no acknowledgement, no leave, no close
            killedAt = System.nanoTime();
        }
        child.waitFor(10, TimeUnit.SECONDS);
        Set<String> held = new TreeSet<>();
        for (String l : lines) if (l.startsWith("HELD ")) held.addAll(Arrays.asList(l.substring(5).split(",")));
        try (KafkaShareConsumer<byte[], byte[]> c = shareConsumer(group, Map.of())) {
            c.subscribe(List.of(topic));
            while (seen.size() < total && !late()) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    String v = s(r.value());
                    if (v.startsWith("r-")) { seen.add(v); counts.put(v, r.deliveryCount().orElse((short) -1)); }
                }
                c.commitSync();
            }
        }
        double after = (System.nanoTime() - killedAt) / 1e9;
        check(seen.size() == total, "the other consumer got " + seen.size() + " of the " + total + " in-flight records");
        List<String> wrong = new ArrayList<>();
        for (Map.Entry<String, Short> e : counts.entrySet())
            // A record the dead client had fetched but not yet handed to its application was
            // delivered to it too: 2 is right for those as well.
            if (held.contains(e.getKey()) ? e.getValue() != 2 : e.getValue() < 1 || e.getValue() > 2)
                wrong.add(e.getKey() + "=" + e.getValue());
        check(wrong.isEmpty(), "delivery counts (want 2 for the " + held.size() + " held records, 1 or 2 for the others): " + wrong);
        return "a consumer killed holding " + held.size() + " of " + total + " records; another got all " + total
            + ", the held ones with delivery count 2, " + String.format("%.1f", after) + " s after the kill";
    }

    /** The child of `redelivery`: acquire records and never acknowledge them. Explicit mode
     *  forbids another poll before the records of the last one are acknowledged, so it holds
     *  what its first poll with real records brought, and names them. */
    static void hold(String bootstrap, String topic, String group, int n) throws Exception {
        ShareScenarios s = new ShareScenarios(bootstrap, "hold", 60);
        try (KafkaShareConsumer<byte[], byte[]> c = s.shareConsumer(group, Map.of(
                "share.acknowledgement.mode", "explicit", "max.poll.records", String.valueOf(n)))) {
            c.subscribe(List.of(topic));
            List<String> held = new ArrayList<>();
            boolean primed = false;
            while (held.isEmpty()) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    String v = s(r.value());
                    if (v.startsWith("probe-")) {
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                        if (!primed) { primed = true; System.out.println("PRIMED"); System.out.flush(); }
                    } else held.add(v);
                }
                if (held.isEmpty()) c.commitSync();
            }
            System.out.println("HELD " + String.join(",", held));
            System.out.flush();
            Thread.sleep(600_000);
        }
    }

    /** For tests/integration/test_share_groups.py: consume forever in implicit mode; print
     *  "GOT value deliveryCount" per record and "ACKED v1,v2,..." once commitSync says the
     *  acknowledgement of those records succeeded. */
    static void consume(String bootstrap, String topic, String group) throws Exception {
        ShareScenarios s = new ShareScenarios(bootstrap, "consume", 600);
        try (KafkaShareConsumer<byte[], byte[]> c = s.shareConsumer(group, Map.of("max.poll.records", "10"))) {
            c.subscribe(List.of(topic));
            while (true) {
                List<String> batch = new ArrayList<>();
                try {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                        batch.add(s(r.value()));
                        System.out.println("GOT " + s(r.value()) + " " + r.deliveryCount().orElse((short) -1));
                    }
                    System.out.flush();
                    boolean ok = true;
                    for (Optional<org.apache.kafka.common.KafkaException> e : c.commitSync(Duration.ofSeconds(5)).values())
                        ok &= e.isEmpty();
                    if (ok && !batch.isEmpty()) System.out.println("ACKED " + String.join(",", batch));
                } catch (Exception e) {
                    System.out.println("ERROR " + e);
                }
                System.out.flush();
            }
        }
    }

    String tool(String... args) throws Exception {
        List<String> argv = new ArrayList<>(List.of(
            Paths.get(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
            "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
            "org.apache.kafka.tools.consumer.group.ShareGroupCommand", "--bootstrap-server", bootstrap));
        argv.addAll(List.of(args));
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        check(p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0,
            "ShareGroupCommand " + String.join(" ", args) + " failed: " + out);
        return out;
    }

    static String row(String out, String... parts) {
        for (String l : out.split("\n")) {
            boolean all = true;
            for (String x : parts) all &= l.contains(x);
            if (all) return l.trim().replaceAll("\\s+", " ");
        }
        return null;
    }

    // (e) kafka-share-groups.sh: --list, --describe --members while a member consumes,
    // then (after it closed) --describe (offsets) and --describe --state.
    String cli() throws Exception {
        String topic = newTopic();
        String group = prefix + "-g-" + suffix();
        int probes;
        String members;
        try (KafkaShareConsumer<byte[], byte[]> c = shareConsumer(group, Map.of("client.id", "share-cli"));
             KafkaProducer<byte[], byte[]> prod = producer()) {
            c.subscribe(List.of(topic));
            int n = 0;
            boolean primed = false;
            while (!primed) {
                check(!late(), "timed out waiting for a probe record");
                prod.send(new ProducerRecord<>(topic, 0, null, b("probe-" + n++))).get();
                primed = !c.poll(Duration.ofMillis(300)).isEmpty();
                c.commitSync();
            }
            probes = n;
            for (int i = 0; i < 10; i++) prod.send(new ProducerRecord<>(topic, 0, null, b("r-" + i)));
            prod.flush();
            int got = 0;
            while (got < 10) {
                check(!late(), "the member read " + got + " of 10");
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200)))
                    if (s(r.value()).startsWith("r-")) got++;
                c.commitSync();
            }
            check(tool("--list").lines().anyMatch(l -> l.strip().equals(group)), "--list lacks the group");
            String m = tool("--describe", "--group", group, "--members");
            members = row(m, group, "share-cli");
            check(members != null && members.contains(topic + ":0"), "--members lacks the member owning " + topic + ":0: " + m);
        }
        long end = 0, firstReal = probes;
        try (Admin a = admin()) {
            end = a.listOffsets(Map.of(new org.apache.kafka.common.TopicPartition(topic, 0),
                org.apache.kafka.clients.admin.OffsetSpec.latest())).all().get().values().iterator().next().offset();
        }
        String offsets = null, state = null;
        long start = -1;
        while (!late()) {
            offsets = row(tool("--describe", "--group", group), group, topic);
            state = row(tool("--describe", "--group", group, "--state"), group, "Empty");
            String[] cols = offsets == null ? new String[0] : offsets.split(" ");
            if (cols.length == 5 && cols[2].equals("0") && cols[4].equals("0") && state != null) {
                start = Long.parseLong(cols[3]);
                break;
            }
            Thread.sleep(500);
        }
        // Every record accepted: lag 0. The start offset Kafka 4.4 shows is the persisted SPSO,
        // which may stay at the first offset of the last acknowledged batch (the
        // delivery-complete count covers the rest, KIP-1226): anything from the first real
        // record's offset to the log end.
        check(start >= firstReal && start <= end, "--describe: want partition 0 with lag 0 and a start offset in "
            + firstReal + ".." + end + ": " + offsets);
        check(state != null && state.endsWith(" Empty 0"), "--describe --state: want Empty with 0 members: " + state);
        // --reset-offsets --to-earliest (AlterShareGroupOffsets): start offset 0, every record lags.
        tool("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute");
        String reset = row(tool("--describe", "--group", group), group, topic);
        check(reset != null && reset.endsWith(" 0 0 " + end), "after --reset-offsets --to-earliest: want start offset 0 lag " + end + ": " + reset);
        return "--list; --members: [" + members.replace(group, "G").replace(topic, "T").replaceAll("\\S{22}", "ID")
            + "]; --describe: [" + offsets.replace(group, "G").replace(topic, "T") + "] (log end " + end + "); --state: ["
            + state.replace(group, "G").replaceAll("\\d+\\.\\d+\\.\\d+\\.\\d+:\\d+", "HOST:PORT") + "]; after --reset-offsets --to-earliest: ["
            + reset.replace(group, "G").replace(topic, "T") + "] (" + probes + " probe records)";
    }

    // (c) a rejected record and a poison record released until the delivery limit: both archived.
    String archive() throws Exception {
        String topic = newTopic();
        String group = prefix + "-g-" + suffix();
        Map<String, Integer> deliveries = new HashMap<>();
        try (KafkaShareConsumer<byte[], byte[]> c = shareConsumer(group, Map.of("share.acknowledgement.mode", "explicit"));
             KafkaProducer<byte[], byte[]> prod = producer()) {
            c.subscribe(List.of(topic));
            int n = 0;
            boolean primed = false;
            while (!primed) {
                check(!late(), "timed out waiting for a probe record");
                prod.send(new ProducerRecord<>(topic, 0, null, b("probe-" + n++))).get();
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(300))) {
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                    primed = true;
                }
                c.commitSync();
            }
            prod.send(new ProducerRecord<>(topic, 0, null, b("reject-me"))).get();
            prod.send(new ProducerRecord<>(topic, 0, null, b("poison"))).get();
            prod.send(new ProducerRecord<>(topic, 0, null, b("good"))).get();
            long quiet = 0;
            while (!late()) {
                ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(300));
                for (ConsumerRecord<byte[], byte[]> r : rs) {
                    String v = s(r.value());
                    deliveries.merge(v, 1, Integer::sum);
                    if (v.equals("reject-me")) c.acknowledge(r, AcknowledgeType.REJECT);
                    else if (v.equals("poison")) c.acknowledge(r, AcknowledgeType.RELEASE);
                    else c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                c.commitSync();
                if (rs.isEmpty() && deliveries.containsKey("good") && deliveries.getOrDefault("poison", 0) >= 5) {
                    if (++quiet >= 5) break;  // 1.5 s of nothing after the limit
                } else quiet = 0;
            }
        }
        check(deliveries.getOrDefault("reject-me", 0) == 1, "the rejected record was delivered " + deliveries.get("reject-me") + " times, want 1");
        check(deliveries.getOrDefault("poison", 0) == 5, "the released record was delivered " + deliveries.get("poison") + " times, want 5 (group.share.delivery.count.limit)");
        check(deliveries.getOrDefault("good", 0) == 1, "the accepted record was delivered " + deliveries.get("good") + " times, want 1");
        return "rejected record delivered once, released record 5 times (the delivery limit), then both archived and never delivered again";
    }
}
