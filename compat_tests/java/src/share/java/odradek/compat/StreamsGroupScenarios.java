package odradek.compat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.admin.StreamsGroupSubtopologyDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.streams.KafkaStreams;

import static odradek.compat.Driver.b;
import static odradek.compat.Driver.check;

/**
 * KIP-1071 streams-group scenarios that need kafka-clients 4.4 (Admin.describeStreamsGroups,
 * the 4.4 StreamsGroupCommand): compiled into target/share-classes against the 4.4 classpath
 * and called by Driver by reflection. Both run StreamsEos's exactly_once_v2 word count with
 * group.protocol=streams.
 */
public final class StreamsGroupScenarios {
    static final String TOOL = "org.apache.kafka.tools.streams.StreamsGroupCommand";
    final Driver d;

    StreamsGroupScenarios(Driver d) { this.d = d; }

    public static String run(Driver d, String name) throws Exception {
        StreamsEos.groupProtocol = "streams";
        StreamsGroupScenarios s = new StreamsGroupScenarios(d);
        switch (name) {
            case "streams-groups-failover": return s.failover();
            case "cli-streams-groups": return s.cli();
            default: throw new IllegalArgumentException("unknown streams-group scenario " + name);
        }
    }

    /** child BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR CLIENT_ID: one instance in its own JVM
     *  (so it can be SIGKILLed), printing its state changes, until killed. */
    public static void main(String[] argv) throws Exception {
        StreamsEos.groupProtocol = "streams";
        StreamsEos.extraProps.put("client.id", argv[6]);
        AtomicReference<Throwable> died = new AtomicReference<>();
        StreamsEos.childListener = (now, old) -> { System.out.println("STATE " + now); System.out.flush(); };
        KafkaStreams app = StreamsEos.start(argv[1], argv[2], argv[3], argv[4], Path.of(argv[5]), died);
        while (died.get() == null) Thread.sleep(100);
        System.out.println("DIED " + Driver.describe(died.get()));
        System.out.flush();
        app.close(Duration.ofSeconds(5));
        Runtime.getRuntime().halt(1);
    }

    // ------------------------------------------------------------------ instances

    static final class Instance {
        final String name;
        final Process proc;
        final StringBuffer out = new StringBuffer();

        Instance(String name, Process proc) { this.name = name; this.proc = proc; }

        void kill() throws InterruptedException {
            proc.destroyForcibly();  // SIGKILL
            proc.waitFor(10, TimeUnit.SECONDS);
        }
    }

    Instance start(String name, String appId, String input, String output, Path stateDir) throws IOException {
        if (d.classpath == null || d.classpath.isEmpty()) throw new Driver.NotSupported("no --classpath for the Streams JVMs");
        ProcessBuilder pb = new ProcessBuilder("java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", d.classpath,
            StreamsGroupScenarios.class.getName(), "child", d.bootstrap, appId, input, output, stateDir.toString(), name)
            .redirectErrorStream(true);
        Process p = pb.start();
        p.getOutputStream().close();
        Instance inst = new Instance(name, p);
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()))) {
                for (String line; (line = r.readLine()) != null; ) inst.out.append(line).append('\n');
            } catch (IOException e) { /* killed */ }
        });
        reader.setDaemon(true);
        reader.start();
        return inst;
    }

    void awaitRunning(Instance... instances) {
        for (Instance i : instances)
            d.waitFor(() -> {
                check(i.proc.isAlive(), "Streams instance " + i.name + " exited: " + Driver.tail(i.out.toString()));
                return i.out.indexOf("STATE RUNNING") >= 0;
            }, "Streams instance " + i.name + " RUNNING", null);
    }

    void checkAlive(Instance... instances) {
        for (Instance i : instances)
            if (i != null) check(i.proc.isAlive(), "Streams instance " + i.name + " exited: " + Driver.tail(i.out.toString()));
    }

    // ------------------------------------------------------------------ the broker's view

    static String tasks(StreamsGroupMemberAssignment a) {
        List<String> out = new ArrayList<>();
        for (StreamsGroupMemberAssignment.TaskIds t : a.activeTasks())
            for (int p : t.partitions()) out.add(t.subtopologyId() + "_" + p);
        out.sort(null);
        return String.join(",", out);
    }

    StreamsGroupDescription describe(Admin admin, String appId) throws Exception {
        return admin.describeStreamsGroups(List.of(appId)).all().get(d.remainingMs(), TimeUnit.MILLISECONDS).get(appId);
    }

    /** Waits until StreamsGroupDescribe shows the group Stable with exactly the members whose
     *  client ids start with `names`, every one reconciled (its tasks are its target) and
     *  owning active tasks, together every task of the topology exactly once. Returns client
     *  name -> its active tasks ("subtopology_partition", sorted). */
    Map<String, String> awaitSplit(Admin admin, String appId, List<String> names, Instance... alive) {
        AtomicReference<String> last = new AtomicReference<>("nothing described");
        Map<String, String> split = new TreeMap<>();
        try {
            d.waitFor(() -> {
                checkAlive(alive);
                split.clear();
                StreamsGroupDescription g;
                try { g = describe(admin, appId); } catch (Exception e) { throw new RuntimeException(e); }
                Set<String> all = new TreeSet<>();
                for (StreamsGroupSubtopologyDescription s : g.subtopologies())
                    for (int p = 0; p < StreamsEos.PARTITIONS; p++) all.add(s.subtopologyId() + "_" + p);
                StringBuilder sb = new StringBuilder(g.groupState() + " epoch " + g.groupEpoch() + "/" + g.targetAssignmentEpoch() + ":");
                List<String> owned = new ArrayList<>();
                boolean reconciled = true;
                for (StreamsGroupMemberDescription m : g.members()) {
                    String mine = tasks(m.assignment());
                    String name = names.stream().filter(n -> m.clientId().startsWith(n)).findFirst().orElse(m.clientId());
                    sb.append(" ").append(name).append(" epoch ").append(m.memberEpoch()).append(" [").append(mine)
                        .append("] target [").append(tasks(m.targetAssignment())).append("]");
                    reconciled &= mine.equals(tasks(m.targetAssignment())) && !mine.isEmpty();
                    if (!mine.isEmpty()) owned.addAll(List.of(mine.split(",")));
                    split.put(name, mine);
                }
                last.set(sb.toString());
                owned.sort(null);
                return g.groupState() == GroupState.STABLE && all.size() == 2 * StreamsEos.PARTITIONS && reconciled
                    && split.keySet().equals(new TreeSet<>(names)) && g.members().size() == names.size()
                    && owned.equals(new ArrayList<>(all));
            }, "the group Stable with " + names + " sharing every task", null);
        } catch (Driver.ScenarioFailed e) {
            throw new Driver.ScenarioFailed(e.getMessage() + "; last described " + last.get());
        }
        return new TreeMap<>(split);
    }

    // ------------------------------------------------------------------ streams-groups-failover

    String failover() throws Exception {
        String input = d.topic("in");
        String output = d.topic("out");
        String appId = d.prefix + "-failover-" + d.suffix();
        d.createTopic(input, StreamsEos.PARTITIONS);
        d.createTopic(output, StreamsEos.PARTITIONS);
        Map<String, Integer> expected = new TreeMap<>();
        StreamsEos.produceInput(d, input, 0, StreamsEos.PHASE1, expected);
        Path dirA = Files.createTempDirectory("odradek-streams-a-");
        Path dirB = Files.createTempDirectory("odradek-streams-b-");
        Instance a = null, b = null, a2 = null;
        AtomicBoolean producing = new AtomicBoolean(true);
        AtomicReference<Exception> producerFailed = new AtomicReference<>();
        int[] produced = {StreamsEos.PHASE1};
        Thread producer = null;
        long t0 = System.nanoTime();
        try (Admin admin = d.admin()) {
            a = start("failover-a", appId, input, output, dirA);
            b = start("failover-b", appId, input, output, dirB);
            awaitRunning(a, b);
            Map<String, String> before = awaitSplit(admin, appId, List.of("failover-a", "failover-b"), a, b);
            double shared = (System.nanoTime() - t0) / 1e9;
            // Input flows from here until the restarted instance has its tasks back: 50 records
            // every 100 ms.
            Map<String, Integer> flowing = new TreeMap<>();
            producer = new Thread(() -> {
                try (KafkaProducer<byte[], byte[]> p = d.producer(Map.of())) {
                    while (producing.get()) {
                        List<ProducerRecord<byte[], byte[]>> batch = new ArrayList<>();
                        for (int i = produced[0]; i < produced[0] + 50; i++)
                            batch.add(new ProducerRecord<>(input, b("r" + i), b(StreamsEos.word(i))));
                        d.produceAll(p, batch);
                        synchronized (flowing) {
                            for (int i = produced[0]; i < produced[0] + 50; i++) flowing.merge(StreamsEos.word(i), 1, Integer::sum);
                            produced[0] += 50;
                        }
                        Thread.sleep(100);
                    }
                } catch (Exception e) {
                    producerFailed.set(e);
                }
            });
            producer.start();
            Thread.sleep(1500);
            // SIGKILL A mid-stream (its transaction open, no leave heartbeat).
            long killed = System.nanoTime();
            a.kill();
            // The broker keeps the dead member (and its tasks) until its session times out.
            StreamsGroupDescription justAfter = describe(admin, appId);
            int membersAfterKill = justAfter.members().size();
            check(membersAfterKill == 2, "right after the SIGKILL the group has " + membersAfterKill + " members, want 2 (the dead one until its session expires)");
            Map<String, String> takeover = awaitSplit(admin, appId, List.of("failover-b"), b);
            double takenOver = (System.nanoTime() - killed) / 1e9;
            // Not at once: its last heartbeat was at most 1 s before the kill, its session is 6 s.
            check(takenOver >= 3.0, "B owned the dead member's tasks " + takenOver + " s after the SIGKILL, before its 6 s session could expire");
            // Restart A on its state dir (same process id) while the input still flows; the group
            // splits the tasks between the two again.
            long restarted = System.nanoTime();
            a2 = start("failover-a", appId, input, output, dirA);
            awaitRunning(a2);
            Map<String, String> after = awaitSplit(admin, appId, List.of("failover-a", "failover-b"), a2, b);
            double rejoined = (System.nanoTime() - restarted) / 1e9;
            producing.set(false);
            producer.join(30_000);
            check(producerFailed.get() == null, "the input producer failed: " + (producerFailed.get() == null ? "" : Driver.describe(producerFailed.get())));
            synchronized (flowing) { flowing.forEach((w, n) -> expected.merge(w, n, Integer::sum)); }
            AtomicReference<Throwable> died = new AtomicReference<>();
            long t1 = System.nanoTime();
            StreamsEos.awaitCounts(d, output, expected, died, "after the failover");
            checkAlive(a2, b);
            StreamsEos.checkSequences(StreamsEos.readCounts(d, output), expected, "after the failover");
            double drained = (System.nanoTime() - t1) / 1e9;
            return String.format("%d + %d records (%d flowing through the kill and the restart), %d words, exact 1..n per word; "
                + "shared after %.1f s %s; A SIGKILLed: still a member right after, B owned every task %.1f s later %s; A restarted, "
                + "tasks split again %.1f s later %s; counts complete %.1f s after the input stopped",
                StreamsEos.PHASE1, produced[0] - StreamsEos.PHASE1, produced[0] - StreamsEos.PHASE1, expected.size(),
                shared, before, takenOver, takeover, rejoined, after, drained);
        } finally {
            producing.set(false);
            if (producer != null) producer.join(30_000);
            for (Instance i : new Instance[] {a, b, a2}) if (i != null) i.kill();
            for (Path dir : List.of(dirA, dirB))
                try (Stream<Path> w = Files.walk(dir)) {
                    w.sorted(Comparator.reverseOrder()).forEach(x -> x.toFile().delete());
                }
        }
    }

    // ------------------------------------------------------------------ cli-streams-groups

    String tool(String... args) throws Exception {
        List<String> argv = new ArrayList<>(List.of("--bootstrap-server", d.bootstrap));
        argv.addAll(List.of(args));
        return d.okTool(TOOL, null, argv.toArray(new String[0])).out();
    }

    /** The first line holding every part, its columns split on runs of blanks. */
    static String[] row(String out, String... parts) {
        for (String l : out.split("\n")) {
            boolean all = true;
            for (String x : parts) all &= l.contains(x);
            if (all) return l.trim().split("\\s+");
        }
        return null;
    }

    /** The row of GROUP TOPIC PARTITION ... for that topic and partition. */
    static String[] partitionRow(String out, String group, String topic, int partition) {
        for (String l : out.split("\n")) {
            String[] c = l.trim().split("\\s+");
            if (c.length >= 3 && c[0].equals(group) && c[1].equals(topic) && c[2].equals(String.valueOf(partition))) return c;
        }
        return null;
    }

    static String show(String[] cols) { return cols == null ? "no such row" : String.join(" ", cols); }

    String cli() throws Exception {
        String input = d.topic("in");
        String output = d.topic("out");
        String appId = d.prefix + "-cli-streams-" + d.suffix();
        d.createTopic(input, StreamsEos.PARTITIONS);
        d.createTopic(output, StreamsEos.PARTITIONS);
        Map<String, Integer> expected = new TreeMap<>();
        StreamsEos.produceInput(d, input, 0, StreamsEos.PHASE1, expected);
        Path stateDir = Files.createTempDirectory("odradek-streams-cli-");
        AtomicReference<Throwable> died = new AtomicReference<>();
        StreamsEos.extraProps.put("client.id", "cli-streams");
        KafkaStreams app = StreamsEos.start(d, appId, input, output, stateDir, died);
        boolean closed = false;
        StringBuilder seen = new StringBuilder();
        try (Admin admin = d.admin()) {
            StreamsEos.awaitCounts(d, output, expected, died, "the word count");
            awaitSplit(admin, appId, List.of("cli-streams"));
            StreamsGroupMemberDescription member = describe(admin, appId).members().iterator().next();
            Map<org.apache.kafka.common.TopicPartition, org.apache.kafka.clients.admin.OffsetSpec> req = new java.util.HashMap<>();
            for (int i = 0; i < StreamsEos.PARTITIONS; i++)
                req.put(new org.apache.kafka.common.TopicPartition(input, i), org.apache.kafka.clients.admin.OffsetSpec.latest());
            Map<Integer, Long> ends = new TreeMap<>();
            admin.listOffsets(req).all().get(d.remainingMs(), TimeUnit.MILLISECONDS)
                .forEach((tp, info) -> ends.put(tp.partition(), info.offset()));

            check(tool("--list").lines().anyMatch(l -> l.strip().equals(appId)), "--list lacks " + appId);
            // --describe --members --verbose: GROUP TARGET-ASSIGNMENT-EPOCH TOPOLOGY-EPOCH MEMBER
            // MEMBER-PROTOCOL MEMBER-EPOCH PROCESS CLIENT-ID ASSIGNMENTS...
            String members = tool("--describe", "--group", appId, "--members", "--verbose");
            String[] m = row(members, appId, member.memberId());
            String tasks = "ACTIVE: 0:[0,1,2]; 1:[0,1,2]; TARGET-ACTIVE: 0:[0,1,2]; 1:[0,1,2];";
            // Epochs as Kafka 4.4 counts them: a new group starts at 1, the join makes it 2 and
            // the internal topics appearing 3 (target and member epoch follow).
            check(m != null && m.length >= 8 && m[1].equals("3") && m[2].equals("0") && m[4].equals("streams") && m[5].equals("3")
                && m[6].equals(member.processId()) && m[7].startsWith("cli-streams")
                && String.join(" ", List.of(m).subList(8, m.length)).equals(tasks),
                "--describe --members --verbose: want target assignment epoch 3, topology epoch 0, protocol streams, member epoch 3, process "
                + member.processId() + ", client cli-streams..., " + tasks + ": " + members);
            seen.append("--members --verbose [").append(show(m).replace(appId, "G").replace(member.memberId(), "M")
                .replace(member.processId(), "P")).append("]");
            // --describe --state --verbose: GROUP COORDINATOR (ID) ASSIGNOR STATE GROUP-EPOCH
            // TARGET-ASSIGNMENT-EPOCH #MEMBERS
            String state = tool("--describe", "--group", appId, "--state", "--verbose");
            String[] st = row(state, appId, "Stable");
            check(st != null && st.length == 8 && st[3].equals("sticky") && st[5].equals("3") && st[6].equals("3") && st[7].equals("1"),
                "--describe --state --verbose: want assignor sticky, Stable, group epoch 3, target assignment epoch 3, 1 member: " + state);
            seen.append("; --state --verbose [").append(show(st).replace(appId, "G").replaceAll("\\d+\\.\\d+\\.\\d+\\.\\d+:\\d+", "HOST:PORT")).append("]");
            // --describe --offsets --verbose: GROUP TOPIC PARTITION CURRENT-OFFSET LEADER-EPOCH
            // LOG-END-OFFSET OFFSET-LAG; the input at its end, the repartition topic read up.
            String offsets = tool("--describe", "--group", appId, "--offsets", "--verbose");
            for (int i = 0; i < StreamsEos.PARTITIONS; i++) {
                String[] o = partitionRow(offsets, appId, input, i);
                check(o != null && o.length == 7 && o[3].equals(String.valueOf(ends.get(i))) && o[5].equals(o[3]) && o[6].equals("0"),
                    "--describe --offsets --verbose: want " + input + " partition " + i + " at " + ends.get(i) + " with lag 0: " + offsets);
                String[] r = partitionRow(offsets, appId, appId + "-by-word-repartition", i);
                check(r != null && r.length == 7 && r[5].equals(r[3]) && r[6].equals("0"),
                    "--describe --offsets --verbose: want the repartition topic's partition " + i + " read up (lag 0): " + offsets);
            }
            seen.append("; --offsets: input at ").append(ends.values()).append(" lag 0, repartition lag 0");
            StreamsEos.close(app);
            closed = true;
            // Closed, the group empties (the member leaves, or its session times out).
            String[][] empty = {null};
            d.waitFor(() -> {
                try { empty[0] = row(tool("--describe", "--group", appId, "--state"), appId, "Empty"); }
                catch (Exception e) { throw new RuntimeException(e); }
                return empty[0] != null && empty[0][empty[0].length - 1].equals("0");
            }, "--describe --state showing the group Empty with 0 members", () -> { try { Thread.sleep(300); } catch (InterruptedException e) { } });
            seen.append("; after close --state [").append(show(empty[0]).replace(appId, "G").replaceAll("\\d+\\.\\d+\\.\\d+\\.\\d+:\\d+", "HOST:PORT")).append("]");
            // --reset-offsets --to-earliest on the empty group: every input partition at 0.
            String reset = tool("--reset-offsets", "--group", appId, "--all-input-topics", "--to-earliest", "--execute");
            for (int i = 0; i < StreamsEos.PARTITIONS; i++) {
                String[] o = partitionRow(reset, appId, input, i);
                check(o != null && o[o.length - 1].equals("0"), "--reset-offsets --to-earliest --execute: want " + input + " partition " + i + " at 0: " + reset);
            }
            Map<org.apache.kafka.common.TopicPartition, org.apache.kafka.clients.consumer.OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(appId).partitionsToOffsetAndMetadata().get(d.remainingMs(), TimeUnit.MILLISECONDS);
            for (int i = 0; i < StreamsEos.PARTITIONS; i++) {
                org.apache.kafka.clients.consumer.OffsetAndMetadata om = committed.get(new org.apache.kafka.common.TopicPartition(input, i));
                check(om != null && om.offset() == 0, "after --reset-offsets the committed offset of " + input + "-" + i + " is " + om);
            }
            seen.append("; --reset-offsets --to-earliest: input at 0");
            // --delete: the group is gone.
            tool("--delete", "--group", appId);
            check(tool("--list").lines().noneMatch(l -> l.strip().equals(appId)), "--list still names " + appId + " after --delete");
            seen.append("; --delete: gone from --list");
            return seen.toString();
        } finally {
            StreamsEos.extraProps.remove("client.id");
            if (!closed) StreamsEos.close(app);
            try (Stream<Path> w = Files.walk(stateDir)) {
                w.sorted(Comparator.reverseOrder()).forEach(x -> x.toFile().delete());
            }
        }
    }
}
