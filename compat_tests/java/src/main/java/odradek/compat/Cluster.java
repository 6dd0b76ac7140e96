package odradek.compat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.NotEnoughReplicasException;

/**
 * The cluster suite's rows (`run.py --suite cluster`): each asks the runner for its steps on
 * stdout and reads the answers on stdin (the phase protocol of compat_tests/cluster_suite.py);
 * the driver kills nothing itself.
 */
final class Cluster {
    private static final BufferedReader IN = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    private final Driver d;

    Cluster(Driver d) { this.d = d; }

    @SuppressWarnings("unchecked")
    Map<String, Object> ask(String step, Map<String, Object> data) throws Exception {
        StringBuilder sb = new StringBuilder("{\"cluster\":" + Driver.json(step) + ",\"scenario\":" + Driver.json(d.scenario));
        for (Map.Entry<String, Object> e : data.entrySet()) {
            sb.append(',').append(Driver.json(e.getKey())).append(':');
            List<String> vs = (List<String>) e.getValue();
            sb.append('[');
            for (int i = 0; i < vs.size(); i++) sb.append(i == 0 ? "" : ",").append(Driver.json(vs.get(i)));
            sb.append(']');
        }
        String line;
        synchronized (IN) {
            System.out.println(sb.append('}'));
            System.out.flush();
            line = IN.readLine();
        }
        if (line == null) throw new Driver.ScenarioFailed("no answer from the runner to " + step);
        Map<String, Object> reply = (Map<String, Object>) new Security.Json(line).parse();
        if (!Boolean.TRUE.equals(reply.get("ok"))) throw new Driver.ScenarioFailed(step + ": " + reply.get("error"));
        return reply;
    }

    Map<String, Object> ask(String step) throws Exception { return ask(step, Map.of()); }

    static int num(Object o) { return ((Number) o).intValue(); }

    String verifyThenRestore(String key, List<String> values) throws Exception {
        Object detail = ask("verify", Map.of(key, values)).get("detail");
        ask("restore");
        return String.valueOf(detail);
    }

    String acksAll() throws Exception {
        Map<String, Object> s = ask("setup");
        String topic = (String) s.get("topic");
        List<String> acked = Collections.synchronizedList(new ArrayList<>());
        List<String> failed = Collections.synchronizedList(new ArrayList<>());
        try (KafkaProducer<byte[], byte[]> p = d.producer(Map.of(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true,
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) Math.min(Integer.MAX_VALUE, d.remainingMs() * 6 / 10)))) {
            for (int i = 0; i < 300; i++) {
                if (i == 100) {
                    p.flush();
                    ask("kill");
                }
                String v = Integer.toString(i);
                p.send(new ProducerRecord<>(topic, i % 3, null, Driver.b(v)), (md, e) -> {
                    if (e == null) acked.add(v); else failed.add(e.toString());
                });
                Thread.sleep(2);
            }
            p.flush();
        }
        Driver.check(failed.isEmpty(), failed.size() + " delivery errors: " + (failed.isEmpty() ? "" : failed.get(0)));
        return verifyThenRestore("acked", new ArrayList<>(acked));
    }

    Exception produceOne(String topic, int partition, String acks) {
        Map<String, Object> extra = new HashMap<>();
        extra.put(ProducerConfig.ACKS_CONFIG, acks);
        extra.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
        extra.put(ProducerConfig.RETRIES_CONFIG, 0);
        extra.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 20000);
        try (KafkaProducer<byte[], byte[]> p = d.producer(extra)) {
            p.send(new ProducerRecord<>(topic, partition, null, Driver.b("x"))).get(25, TimeUnit.SECONDS);
            return null;
        } catch (ExecutionException e) {
            return e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
        } catch (Exception e) {
            return e;
        }
    }

    String notEnoughReplicas() throws Exception {
        Map<String, Object> s = ask("setup");
        String topic = (String) s.get("topic");
        int partition = num(s.get("partition"));
        ask("kill");
        Exception err = produceOne(topic, partition, "all");
        Driver.check(err instanceof NotEnoughReplicasException,
            "acks=all with one in-sync replica: " + err + ", expected NotEnoughReplicasException");
        Exception err1 = produceOne(topic, partition, "1");
        Driver.check(err1 == null, "acks=1 with one in-sync replica failed: " + err1);
        ask("restore");
        return "acks=all: " + err.getClass().getSimpleName() + "; acks=1 accepted";
    }

    String groupCoordinator() throws Exception {
        Map<String, Object> s = ask("setup");
        String topic = (String) s.get("topic");
        int count = num(s.get("count"));
        TreeSet<String> seen = new TreeSet<>();
        boolean killed = false;
        try (KafkaConsumer<byte[], byte[]> c = d.consumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, s.get("group")))) {
            c.subscribe(List.of(topic));
            long until = System.nanoTime() + Math.max(1000, d.remainingMs() - 15000) * 1_000_000L;
            while (seen.size() < count && System.nanoTime() < until) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    seen.add(Driver.s(r.value()));
                    try {
                        c.commitSync(Duration.ofSeconds(10));
                    } catch (Exception e) {
                        // the coordinator moving: a later commit covers this record
                    }
                    if (seen.size() >= 20 && !killed) {
                        ask("kill");
                        killed = true;
                    }
                }
            }
            c.commitSync(Duration.ofMillis(Math.max(1000, d.remainingMs() - 5000)));
        }
        return verifyThenRestore("values", new ArrayList<>(seen));
    }
}
