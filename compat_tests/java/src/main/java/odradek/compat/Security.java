package odradek.compat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;

/**
 * The security suite of the matrix (issue #13; the contract is the runner's `--security FILE`):
 * produce/consume in a group over SASL_SSL + SCRAM-SHA-512, SASL_PLAINTEXT + PLAIN, SSL with a
 * client certificate, SASL_PLAINTEXT + OAUTHBEARER (the client's default unsecured login), and
 * the four ACL-denied rows as mallory, each of which passes only on the specific authorization
 * exception. Only APIs that kafka-clients 3.9, 4.1 and 4.4 share.
 */
final class Security {
    final Driver d;
    final Map<String, Object> conf;

    Security(Driver d, Map<String, Object> conf) {
        this.d = d;
        this.conf = conf;
    }

    static Map<String, Object> load(String path) throws Exception {
        Object v = new Json(Files.readString(Path.of(path))).parse();
        if (!(v instanceof Map)) throw new IllegalArgumentException(path + ": not a JSON object");
        @SuppressWarnings("unchecked") Map<String, Object> m = (Map<String, Object>) v;
        return m;
    }

    @SuppressWarnings("unchecked")
    String str(String... path) {
        Object v = conf;
        for (String k : path) {
            if (!(v instanceof Map) || !((Map<String, Object>) v).containsKey(k))
                throw new Driver.ScenarioFailed("security file lacks " + String.join(".", path));
            v = ((Map<String, Object>) v).get(k);
        }
        return String.valueOf(v);
    }

    static String jaas(String module, String user, String password) {
        return module + " required username=\"" + user + "\" password=\"" + password + "\";";
    }

    static final String PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule";
    static final String SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule";
    static final String OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";

    /** The client settings of one way in: bootstrap, protocol, SASL and TLS. */
    Map<String, Object> props(String kind) {
        Map<String, Object> p = new HashMap<>();
        String listener;
        switch (kind) {
            case "scram":
                listener = "SASL_SSL";
                p.put("sasl.mechanism", "SCRAM-SHA-512");
                p.put("sasl.jaas.config", jaas(SCRAM_MODULE, str("scram_sha_512", "user"), str("scram_sha_512", "password")));
                break;
            case "plain":
                listener = "SASL_PLAINTEXT";
                p.put("sasl.mechanism", "PLAIN");
                p.put("sasl.jaas.config", jaas(PLAIN_MODULE, str("plain", "user"), str("plain", "password")));
                break;
            case "mtls":
                listener = "SSL";
                p.put("ssl.keystore.type", "PEM");
                p.put("ssl.keystore.location", str("client_keystore_pem"));
                break;
            case "oauthbearer":
                // No token endpoint: the default login callback handler makes an unsecured JWS.
                listener = "SASL_PLAINTEXT";
                p.put("sasl.mechanism", "OAUTHBEARER");
                p.put("sasl.jaas.config", OAUTH_MODULE + " required unsecuredLoginStringClaim_sub=\""
                    + str("oauthbearer", "principal") + "\";");
                break;
            case "denied":
                listener = str("denied", "listener");
                String mech = str("denied", "mechanism");
                check(mech.equals("PLAIN") || mech.equals("SCRAM-SHA-512"), "denied.mechanism " + mech + " not handled");
                p.put("sasl.mechanism", mech);
                p.put("sasl.jaas.config", jaas(mech.equals("PLAIN") ? PLAIN_MODULE : SCRAM_MODULE,
                    str("denied", "user"), str("denied", "password")));
                break;
            default:
                throw new IllegalArgumentException(kind);
        }
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, str("listeners", listener));
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, listener);
        if (listener.contains("SSL")) {
            p.put("ssl.truststore.type", "PEM");
            p.put("ssl.truststore.location", str("ca_pem"));
        }
        return p;
    }

    static void check(boolean cond, String msg) { Driver.check(cond, msg); }

    /** The first throwable of `cls` in e's cause chain, or null. */
    static <T extends Throwable> T find(Throwable e, Class<T> cls) {
        for (int i = 0; e != null && i < 20; e = e.getCause(), i++) if (cls.isInstance(e)) return cls.cast(e);
        return null;
    }

    static String seen(Throwable e) {
        if (e == null) return "no error";
        List<String> chain = new ArrayList<>();
        for (int i = 0; e != null && i < 5; e = e.getCause(), i++)
            chain.add(e.getClass().getSimpleName() + ": " + e.getMessage());
        return String.join(" <- ", chain);
    }

    Admin admin(Map<String, Object> extra) {
        Properties p = new Properties();
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        p.putAll(extra);
        return Admin.create(p);
    }

    long endOffset(String topic) throws Exception {
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin a = d.admin()) {
            return a.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp).get(d.remainingMs(), TimeUnit.MILLISECONDS).offset();
        }
    }

    // ------------------------------------------------------------------ authenticated round trips

    static final Map<String, String> WHAT = Map.of(
        "scram", "SCRAM-SHA-512 over SASL_SSL as %s",
        "plain", "PLAIN over SASL_PLAINTEXT as %s",
        "mtls", "SSL with the client certificate",
        "oauthbearer", "OAUTHBEARER (unsecured login, sub=%s) over SASL_PLAINTEXT");

    /** Creates P-kind (1 partition) through the secured listener, produces 20 records and
     *  consumes them in a group with a commit, all through that listener; the commit is read
     *  back through the admin listener. */
    String roundTrip(String kind) throws Exception {
        Map<String, Object> p = props(kind);
        String who = kind.equals("scram") ? str("scram_sha_512", "user") : kind.equals("plain") ? str("plain", "user")
            : kind.equals("oauthbearer") ? str("oauthbearer", "principal") : "";
        String what = String.format(WHAT.get(kind), who);
        String t = d.prefix + "-" + kind, g = t + "-g";
        try (Admin a = admin(p)) {
            a.createTopics(List.of(new NewTopic(t, 1, (short) 1))).all().get(d.remainingMs(), TimeUnit.MILLISECONDS);
            d.waitFor(() -> {
                try {
                    TopicDescription td = a.describeTopics(List.of(t)).allTopicNames().get(5, TimeUnit.SECONDS).get(t);
                    return td.partitions().size() == 1 && td.partitions().get(0).leader() != null;
                } catch (Exception e) { throw new RuntimeException(e); }
            }, "topic " + t + " in metadata", null);
        }
        List<String> want = new ArrayList<>();
        List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            want.add(String.format("%s-%02d", kind, i));
            recs.add(new ProducerRecord<>(t, Driver.b(want.get(i))));
        }
        d.produceAndClose(p, recs);
        Map<String, Object> cp = new HashMap<>(p);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, g);
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = d.consumer(cp)) {
            c.subscribe(List.of(t));
            d.waitFor(() -> got.size() >= 20, "20 records in group " + g, () -> {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) got.add(Driver.s(r.value()));
            });
            c.commitSync(Duration.ofMillis(d.remainingMs()));
        }
        check(got.equals(want), "consumed " + got.size() + " records, not the 20 produced in order: " + got);
        try (Admin a = d.admin()) {
            Map<TopicPartition, OffsetAndMetadata> off = a.listConsumerGroupOffsets(g).partitionsToOffsetAndMetadata()
                .get(d.remainingMs(), TimeUnit.MILLISECONDS);
            OffsetAndMetadata o = off.get(new TopicPartition(t, 0));
            check(o != null && o.offset() == 20, "group " + g + " committed " + off + ", want offset 20");
        }
        return what + ": topic created, 20 produced, 20 consumed in a group, offset 20 committed";
    }

    // ------------------------------------------------------------------ ACL-denied rows (as mallory)

    String deniedTopic(String what) { return str("denied", "prefix") + d.prefix + "-" + what; }

    String deniedProduce() throws Exception {
        String t = deniedTopic("produce");
        d.createTopic(t, 1);
        Map<String, Object> p = props("denied");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 15000);
        Throwable err = null;
        KafkaProducer<byte[], byte[]> pr = d.producer(p);
        try {
            pr.send(new ProducerRecord<>(t, Driver.b("must-not-land"))).get(d.remainingMs(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            err = e.getCause();
        } catch (RuntimeException e) {
            err = e;
        } finally {
            pr.close(Duration.ofSeconds(5));
        }
        TopicAuthorizationException tae = find(err, TopicAuthorizationException.class);
        check(tae != null, "produce as " + str("denied", "user") + ": want TopicAuthorizationException, saw "
            + (err == null ? "the send succeeded" : seen(err)));
        long end = endOffset(t);
        check(end == 0, "TopicAuthorizationException seen, but " + t + " ends at offset " + end + ", want 0 (empty)");
        return "TopicAuthorizationException seen (" + tae.getMessage() + "); " + t + " still empty (end offset 0)";
    }

    String deniedConsume() throws Exception {
        String t = deniedTopic("consume");
        d.createTopic(t, 1);
        d.produceAndClose(Map.of(), List.of(new ProducerRecord<>(t, Driver.b("admin-record"))));
        check(endOffset(t) == 1, t + " does not hold the admin's record");
        List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
        Throwable err = pollUntilError(props("denied"), t, false, got);
        TopicAuthorizationException tae = find(err, TopicAuthorizationException.class);
        check(got.isEmpty(), got.size() + " record(s) delivered to " + str("denied", "user"));
        check(tae != null, "consume by assignment as " + str("denied", "user") + ": want TopicAuthorizationException, saw " + seen(err));
        return "TopicAuthorizationException seen (" + tae.getMessage() + "); no record delivered";
    }

    String deniedGroup() throws Exception {
        String t = d.prefix + "-grp";
        d.createTopic(t, 1);
        d.produceAndClose(Map.of(), List.of(new ProducerRecord<>(t, Driver.b("admin-record"))));
        String g = str("denied", "prefix") + d.prefix + "-group";
        Map<String, Object> p = props("denied");
        p.put(ConsumerConfig.GROUP_ID_CONFIG, g);
        List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
        Throwable err = pollUntilError(p, t, true, got);
        GroupAuthorizationException gae = find(err, GroupAuthorizationException.class);
        check(gae != null, "subscribe in group " + g + " as " + str("denied", "user") + ": want GroupAuthorizationException, saw " + seen(err));
        check(got.isEmpty(), got.size() + " record(s) delivered in the denied group");
        return "GroupAuthorizationException seen (" + gae.getMessage() + ")";
    }

    String deniedTxn() throws Exception {
        String id = str("denied", "prefix") + d.prefix + "-txn";
        Map<String, Object> p = props("denied");
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 20000);
        Throwable err = null;
        KafkaProducer<byte[], byte[]> pr = d.producer(p);
        try {
            pr.initTransactions();
        } catch (RuntimeException e) {
            err = e;
        } finally {
            pr.close(Duration.ofSeconds(5));
        }
        TransactionalIdAuthorizationException te = find(err, TransactionalIdAuthorizationException.class);
        check(te != null, "initTransactions with transactional.id " + id + " as " + str("denied", "user")
            + ": want TransactionalIdAuthorizationException, saw " + (err == null ? "it succeeded" : seen(err)));
        return "TransactionalIdAuthorizationException seen (" + te.getMessage() + ")";
    }

    // ------------------------------------------------------------------ quota-throttle (as alice)

    /** The runner set producer_byte_rate for client id quota.client_id: produce 400 KiB as alice
     *  with this driver's client id; the producer's own metric produce-throttle-time-max must be above 0,
     *  every record acknowledged and the rate over the run under 3 x the quota. */
    String quotaThrottle() throws Exception {
        String t = d.prefix + "-quota";
        d.createTopic(t, 1);
        Map<String, Object> p = props("plain");
        p.put(ProducerConfig.CLIENT_ID_CONFIG, str("quota", "client_ids", d.client));
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) Math.max(30000, d.remainingMs()));
        double quota = Double.parseDouble(str("quota", "producer_byte_rate"));
        int count = 400, size = 1024;
        double peak, avg;
        long start = System.nanoTime();
        double elapsed;
        try (KafkaProducer<byte[], byte[]> pr = d.producer(p)) {
            List<java.util.concurrent.Future<org.apache.kafka.clients.producer.RecordMetadata>> acks = new ArrayList<>();
            for (int i = 0; i < count; i++) acks.add(pr.send(new ProducerRecord<>(t, new byte[size])));
            for (var f : acks) f.get(d.remainingMs(), TimeUnit.MILLISECONDS);
            elapsed = (System.nanoTime() - start) / 1e9;
            peak = metric(pr, "produce-throttle-time-max");
            avg = metric(pr, "produce-throttle-time-avg");
        }
        double rate = count * size / elapsed;
        check(peak > 0, String.format("produce-throttle-time-max %.0f (avg %.0f) after %.1f s (%.0f B/s, quota %.0f)",
            peak, avg, elapsed, rate, quota));
        check(rate < 3 * quota, String.format("%.0f B/s over %.1f s, not under 3 x the quota %.0f", rate, elapsed, quota));
        return String.format("%d x %d B acknowledged in %.1f s (%.0f B/s, quota %.0f); produce-throttle-time-max %.0f ms, avg %.0f ms",
            count, size, elapsed, rate, quota, peak, avg);
    }

    static double metric(KafkaProducer<byte[], byte[]> pr, String name) {
        for (var e : pr.metrics().entrySet()) {
            if (e.getKey().name().equals(name) && e.getKey().group().equals("producer-metrics")) {
                Object v = e.getValue().metricValue();
                if (v instanceof Double dv && !dv.isNaN()) return dv;
            }
        }
        return 0;
    }

    /** Polls `topic` (subscribed in a group, or partition 0 assigned) until poll throws or the
     *  deadline passes (then null: a timeout is never a pass). Records go to `got`. */
    Throwable pollUntilError(Map<String, Object> p, String topic, boolean subscribe, List<ConsumerRecord<byte[], byte[]>> got) {
        try (KafkaConsumer<byte[], byte[]> c = d.consumer(p)) {
            if (subscribe) {
                c.subscribe(List.of(topic));
            } else {
                TopicPartition tp = new TopicPartition(topic, 0);
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
            }
            while (System.nanoTime() < d.deadline - 2_000_000_000L) {
                try {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) got.add(r);
                } catch (RuntimeException e) {
                    return e;
                }
            }
            return null;
        }
    }

    /** A small JSON reader (the 3.9 classpath carries no JSON library): objects, arrays,
     *  strings, numbers, true/false/null. */
    static final class Json {
        final String s;
        int i;

        Json(String s) { this.s = s; }

        Object parse() {
            Object v = value();
            ws();
            if (i != s.length()) throw err("trailing data");
            return v;
        }

        IllegalArgumentException err(String m) { return new IllegalArgumentException("JSON: " + m + " at " + i); }

        void ws() { while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++; }

        Object value() {
            ws();
            if (i >= s.length()) throw err("unexpected end");
            char c = s.charAt(i);
            if (c == '{') {
                i++;
                Map<String, Object> m = new LinkedHashMap<>();
                ws();
                if (s.charAt(i) == '}') { i++; return m; }
                while (true) {
                    ws();
                    String k = string();
                    ws();
                    if (s.charAt(i++) != ':') throw err("':' expected");
                    m.put(k, value());
                    ws();
                    char n = s.charAt(i++);
                    if (n == '}') return m;
                    if (n != ',') throw err("',' or '}' expected");
                }
            }
            if (c == '[') {
                i++;
                List<Object> l = new ArrayList<>();
                ws();
                if (s.charAt(i) == ']') { i++; return l; }
                while (true) {
                    l.add(value());
                    ws();
                    char n = s.charAt(i++);
                    if (n == ']') return l;
                    if (n != ',') throw err("',' or ']' expected");
                }
            }
            if (c == '"') return string();
            for (String w : new String[] {"true", "false", "null"}) {
                if (s.startsWith(w, i)) {
                    i += w.length();
                    return w.equals("null") ? null : Boolean.valueOf(w);
                }
            }
            int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
            if (start == i) throw err("value expected");
            String num = s.substring(start, i);
            return num.matches("-?\\d+") ? (Object) Long.valueOf(num) : (Object) Double.valueOf(num);
        }

        String string() {
            if (s.charAt(i) != '"') throw err("string expected");
            i++;
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = s.charAt(i++);
                if (c == '"') return b.toString();
                if (c != '\\') { b.append(c); continue; }
                char e = s.charAt(i++);
                switch (e) {
                    case 'n': b.append('\n'); break;
                    case 't': b.append('\t'); break;
                    case 'r': b.append('\r'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'u': b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                    default: b.append(e);
                }
            }
        }
    }
}
