// The Java 4.4 client's use of the newest versions of ListOffsets, OffsetCommit, OffsetFetch,
// DescribeGroups, DeleteGroups and ListTransactions, run against Odradek or Kafka 4.4 by
// `python -m compat_tests.probe_versions --java` (single-file source: `java -cp <4.4 classpath>
// AdminVersionsProbe.java <bootstrap> <prefix>`). Prints one `key = value` line per answer,
// the same on both brokers when they agree.
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class AdminVersionsProbe {
    static String bootstrap;

    static void out(String key, Object value) {
        System.out.println(key + " = " + value);
        System.out.flush();
    }

    static String error(Throwable e) {
        Throwable c = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
        return c.getClass().getSimpleName();
    }

    static Map<String, Object> common() {
        Map<String, Object> m = new HashMap<>();
        m.put("bootstrap.servers", bootstrap);
        return m;
    }

    static KafkaConsumer<byte[], byte[]> consumer(String group, String protocol) {
        Map<String, Object> m = common();
        m.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        m.put("group.protocol", protocol);
        m.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        m.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        return new KafkaConsumer<>(m, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    static String consumeAndCommit(KafkaConsumer<byte[], byte[]> c, String topic) {
        c.subscribe(List.of(topic));
        int got = 0;
        long end = System.currentTimeMillis() + 30_000;
        while (got < 3 && System.currentTimeMillis() < end) got += c.poll(Duration.ofMillis(200)).count();
        c.commitSync(Duration.ofSeconds(30));
        Map<TopicPartition, OffsetAndMetadata> committed = c.committed(
            Set.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1)), Duration.ofSeconds(30));
        return "read " + got + ", committed " + new TreeMap<>(committed.entrySet().stream().collect(Collectors.toMap(
            e -> e.getKey().partition(), e -> e.getValue() == null ? "none" : String.valueOf(e.getValue().offset()))));
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        String prefix = args[1];
        String topic = prefix + "-t";
        Map<String, Object> ac = common();
        try (Admin admin = Admin.create(ac)) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get(30, TimeUnit.SECONDS);
            Map<String, Object> pc = common();
            pc.put(ProducerConfig.ACKS_CONFIG, "all");
            pc.put(ProducerConfig.PARTITIONER_CLASS_CONFIG, "org.apache.kafka.clients.producer.RoundRobinPartitioner");
            try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(pc, new ByteArraySerializer(), new ByteArraySerializer())) {
                for (int i = 0; i < 3; i++) p.send(new ProducerRecord<>(topic, 0, null, ("v" + i).getBytes())).get();
            }
            TopicPartition tp0 = new TopicPartition(topic, 0);
            Map<String, OffsetSpec> specs = new LinkedHashMap<>();
            specs.put("earliest", OffsetSpec.earliest());
            specs.put("latest", OffsetSpec.latest());
            specs.put("earliestLocal", OffsetSpec.earliestLocal());
            specs.put("latestTiered", OffsetSpec.latestTiered());
            specs.put("earliestPendingUpload", OffsetSpec.earliestPendingUpload());
            for (Map.Entry<String, OffsetSpec> s : specs.entrySet()) {
                try {
                    ListOffsetsResult.ListOffsetsResultInfo info = admin.listOffsets(Map.of(tp0, s.getValue()))
                        .partitionResult(tp0).get(30, TimeUnit.SECONDS);
                    out("listOffsets " + s.getKey(), info.offset() + " ts=" + info.timestamp() + " epoch=" + info.leaderEpoch());
                } catch (Exception e) {
                    out("listOffsets " + s.getKey(), error(e));
                }
            }

            String classic = prefix + "-classic", modern = prefix + "-consumer", unknown = prefix + "-unknown";
            try (KafkaConsumer<byte[], byte[]> c = consumer(classic, "classic")) {
                out("classic consumer", consumeAndCommit(c, topic));
            }
            KafkaConsumer<byte[], byte[]> live = consumer(modern, "consumer");
            out("consumer-protocol consumer", consumeAndCommit(live, topic));
            // the committed offsets as the admin reads them (OffsetFetch without a member)
            for (String g : List.of(classic, modern)) {
                Map<TopicPartition, OffsetAndMetadata> offs = admin.listConsumerGroupOffsets(g)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
                out("listConsumerGroupOffsets " + (g.equals(classic) ? "classic" : "consumer"),
                    new TreeMap<>(offs.entrySet().stream().collect(Collectors.toMap(e -> e.getKey().partition(), e -> e.getValue().offset()))));
            }

            Map<String, String> label = Map.of(classic, "classic", modern, "consumer", unknown, "unknown");
            DescribeConsumerGroupsResult dcg = admin.describeConsumerGroups(List.of(classic, modern, unknown));
            for (String g : List.of(classic, modern, unknown)) {
                try {
                    ConsumerGroupDescription d = dcg.describedGroups().get(g).get(30, TimeUnit.SECONDS);
                    out("describeConsumerGroups " + label.get(g), d.groupState() + " type=" + d.type() + " members=" + d.members().size());
                } catch (Exception e) {
                    out("describeConsumerGroups " + label.get(g), error(e));
                }
            }
            DescribeClassicGroupsResult dcl = admin.describeClassicGroups(List.of(classic, modern, unknown));
            for (String g : List.of(classic, modern, unknown)) {
                try {
                    ClassicGroupDescription d = dcl.describedGroups().get(g).get(30, TimeUnit.SECONDS);
                    out("describeClassicGroups " + label.get(g), d.state() + " members=" + d.members().size());
                } catch (Exception e) {
                    Throwable c = e.getCause() != null ? e.getCause() : e;
                    out("describeClassicGroups " + label.get(g), error(e) + ": " + c.getMessage());
                }
            }

            DeleteConsumerGroupsResult del = admin.deleteConsumerGroups(List.of(classic, modern, unknown));
            for (String g : List.of(classic, modern, unknown)) {
                try {
                    del.deletedGroups().get(g).get(30, TimeUnit.SECONDS);
                    out("deleteConsumerGroups " + label.get(g), "deleted");
                } catch (Exception e) {
                    Throwable c = e.getCause() != null ? e.getCause() : e;
                    out("deleteConsumerGroups " + label.get(g), error(e) + ": " + c.getMessage());
                }
            }
            live.close();
            try {
                admin.deleteConsumerGroups(List.of(modern)).all().get(30, TimeUnit.SECONDS);
                out("deleteConsumerGroups consumer after close", "deleted");
            } catch (Exception e) {
                out("deleteConsumerGroups consumer after close", error(e));
            }

            for (String id : List.of(prefix + "-txn-a", prefix + "-txn-b", prefix + "-xtxn-c")) {
                Map<String, Object> tc = common();
                tc.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id);
                try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(tc, new ByteArraySerializer(), new ByteArraySerializer())) {
                    p.initTransactions();
                    p.beginTransaction();
                    p.send(new ProducerRecord<>(topic, 1, null, "t".getBytes()));
                    p.commitTransaction();
                }
            }
            for (String pattern : List.of(prefix + "-txn-.*", prefix + "-txn", ".*-xtxn-c", "[")) {
                try {
                    Collection<TransactionListing> l = admin.listTransactions(
                        new ListTransactionsOptions().filterOnTransactionalIdPattern(pattern)).all().get(30, TimeUnit.SECONDS);
                    out("listTransactions " + pattern.replace(prefix, "<p>"), new TreeSet<>(l.stream()
                        .map(t -> t.transactionalId().replace(prefix, "<p>")).collect(Collectors.toList())));
                } catch (Exception e) {
                    out("listTransactions " + pattern.replace(prefix, "<p>"), error(e));
                }
            }
        }
    }
}
