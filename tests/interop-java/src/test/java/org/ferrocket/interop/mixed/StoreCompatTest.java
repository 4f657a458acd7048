package org.ferrocket.interop.mixed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.ferrocket.interop.Clients;
import org.ferrocket.interop.Names;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Store compatibility both ways (issue 38): one broker writes a store
 * (topics, keys, tags, properties, a delivered delay and timer message, a
 * group's committed offsets, a delay message still pending), stops
 * (SIGTERM, or kill -9), and the other implementation starts on the same
 * store directory, port and broker name. It serves every message at the
 * same queue offsets with the same offset ids, bodies and properties, has
 * the topics, the subscription group and its committed offsets, answers
 * query by key, by offset id and by unique key, delivers the pending delay
 * message (and, on Java's store, a pending timer message) once and the
 * delivered timer message not again, and the group resumes where it stopped.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class StoreCompatTest {
    static final int BEFORE = 24;
    static final int OTHER = 8;
    static final int AFTER = 12;
    static final Duration WAIT = Duration.ofSeconds(60);
    /** A clean Java shutdown takes 15 s and more. */
    static final Duration CLEAN_STOP = Duration.ofSeconds(90);
    /** Both brokers persist consumer offsets every 5 s. */
    static final Duration OFFSET_FLUSH = Duration.ofSeconds(7);
    /** Both flush the CommitLog every 500 ms under ASYNC_FLUSH. */
    static final Duration COMMITLOG_FLUSH = Duration.ofSeconds(2);
    /** The test's clock read before a send may be this much after the broker's store time. */
    static final long DUE_SLACK_MS = 100;

    /** One implementation of the broker, started on a given port and store. */
    interface Side {
        Proc start(String namesrv, String brokerName, int port, Path store) throws Exception;

        String ready(Proc proc);
    }

    static final Side JAVA = new Side() {
        @Override
        public Proc start(String namesrv, String brokerName, int port, Path store) throws Exception {
            return Servers.javaBrokerOn("java-" + brokerName, namesrv, brokerName, port, store, List.of());
        }

        @Override
        public String ready(Proc proc) {
            return "boot success";
        }
    };

    static final Side FERROCKET = new Side() {
        @Override
        public Proc start(String namesrv, String brokerName, int port, Path store) throws Exception {
            return Servers.ferrocketBrokerOn("ferrocket-" + brokerName, namesrv, brokerName, port, store,
                List.of("autoCreateTopicEnable=true"));
        }

        @Override
        public String ready(Proc proc) {
            return Servers.ferrocketReadyLine("broker", proc);
        }
    };

    Proc namesrv;

    @BeforeAll
    void start() throws Exception {
        Servers.apacheHome();
        namesrv = Servers.ferrocketNamesrv("namesrv");
        namesrv.waitReady(Servers.ferrocketReadyLine("namesrv", namesrv));
    }

    @AfterAll
    void stop() {
        if (namesrv != null) {
            namesrv.close();
        }
    }

    @Test
    void javaStoreToFerrocketAfterCleanStop() throws Exception {
        migrate(JAVA, FERROCKET, false);
    }

    @Test
    void javaStoreToFerrocketAfterKill() throws Exception {
        migrate(JAVA, FERROCKET, true);
    }

    @Test
    void ferrocketStoreToJavaAfterCleanStop() throws Exception {
        migrate(FERROCKET, JAVA, false);
    }

    @Test
    void ferrocketStoreToJavaAfterKill() throws Exception {
        migrate(FERROCKET, JAVA, true);
    }

    /** What the first broker wrote and what the second must serve. */
    static final class Written {
        final String topic = Names.unique("CompatA");
        final String other = Names.unique("CompatB");
        final String group = Names.unique("CompatCG");
        final Set<String> before = new TreeSet<>();
        final Set<String> after = new TreeSet<>();
        final String pending = Names.unique("pending-delay");
        /** A timer message still held when the first broker stops (Java's only: see pendingTimer). */
        final String pendingTimer;
        /** When the pending delay message (level 3: 10 s) was sent. */
        long pendingSentAtMs;
        final Map<String, Long> offsets = new TreeMap<>();
        StoreView view;

        Written(boolean pendingTimer) {
            this.pendingTimer = pendingTimer ? Names.unique("pending-timer") : null;
        }

        Map<String, Integer> queues() {
            Map<String, Integer> queues = new LinkedHashMap<>();
            queues.put(topic, 4);
            queues.put(other, 2);
            return queues;
        }
    }

    private void migrate(Side from, Side to, boolean crash) throws Exception {
        String brokerName = Names.unique("compat");
        int port = Servers.freePort(2, 1);
        Path store = Servers.workDir("store").resolve("store");
        // A Ferrocket store with timers pending makes Java re-read the whole
        // timer queue (README: timers delivered already may come again), so
        // only Java's store carries a pending timer here.
        Written written = new Written(from == JAVA);
        try {
            Proc first = from.start(namesrv.addr(), brokerName, port, store);
            try {
                write(first, from, written, crash);
                if (crash) {
                    first.kill();
                } else {
                    first.stop(CLEAN_STOP);
                }
            } finally {
                if (first.alive()) {
                    first.kill(); // a failed write: the store is thrown away
                }
            }
            Proc second = to.start(namesrv.addr(), brokerName, port, store);
            try {
                second.waitReady(to.ready(second));
                Servers.waitRegistered(namesrv.addr(), second);
                check(second, written);
            } finally {
                if (second.alive()) {
                    second.kill(); // the store is thrown away
                }
            }
        } finally {
            Proc.deleteTree(store.getParent());
        }
    }

    /** Writes the store through `broker` and records what it serves. */
    private void write(Proc broker, Side side, Written w, boolean crash) throws Exception {
        broker.waitReady(side.ready(broker));
        Servers.waitRegistered(namesrv.addr(), broker);
        Servers.createTopic(namesrv.addr(), w.topic, 4, broker);
        Servers.createTopic(namesrv.addr(), w.other, 2, broker);
        try (Clients clients = new Clients(namesrv.addr())) {
            DefaultMQProducer producer = clients.producer();
            for (int i = 0; i < BEFORE; i++) {
                w.before.add(send(producer, w.topic, "before-" + i, i, 0, 0));
            }
            for (int i = 0; i < OTHER; i++) {
                send(producer, w.other, "other-" + i, i, 0, 0);
            }
            w.before.add(send(producer, w.topic, "delayed", 100, 1, 0));
            w.before.add(send(producer, w.topic, "timer", 101, 0, System.currentTimeMillis() + 1500));
            consume(clients, w.topic, w.group, w.before, Set.of());
            Direct direct = new Direct(producer);
            awaitOffsetsCommitted(direct, broker.addr(), w);
            for (int i = 0; i < AFTER; i++) {
                w.after.add(send(producer, w.topic, "after-" + i, 200 + i, 0, 0));
            }
            if (crash) {
                // What a crash may lose is what was not persisted yet (the
                // group's offsets: every 5 s); the delays below are to be
                // pending at the kill, not delivered just before it.
                Thread.sleep(OFFSET_FLUSH.toMillis());
            }
            // 10 s: pending while the first broker stops, due under the second.
            w.pendingSentAtMs = System.currentTimeMillis();
            send(producer, w.topic, w.pending, 300, 3, 0);
            if (w.pendingTimer != null) {
                send(producer, w.topic, w.pendingTimer, 301, 0, System.currentTimeMillis() + 12_000);
            }
            if (crash) {
                Thread.sleep(COMMITLOG_FLUSH.toMillis());
            }
            w.view = StoreView.read(direct, broker.addr(), w.group, w.queues());
            assertEquals(BEFORE + OTHER + 2 + AFTER, w.view.size(), "served by " + broker);
            for (int queueId = 0; queueId < 4; queueId++) {
                w.offsets.put(w.topic + "/" + queueId, direct.consumerOffset(broker.addr(), w.group, w.topic, queueId));
            }
        }
    }

    /**
     * One send: keys `k-N` and `shared`, tag TagN%3, a user property; with a
     * delay level or a delivery time when given. Returns the body.
     */
    private static String send(DefaultMQProducer producer, String topic, String body, int n, int delayLevel,
        long deliverAtMs) throws Exception {
        Message message = new Message(topic, "Tag" + (n % 3), "k-" + n + " shared", Clients.bytes(body));
        message.putUserProperty("compat", "v" + n);
        if (delayLevel > 0) {
            message.setDelayTimeLevel(delayLevel);
        }
        if (deliverAtMs > 0) {
            message.setDeliverTimeMs(deliverAtMs);
        }
        SendResult result = producer.send(message);
        assertEquals(SendStatus.SEND_OK, result.getSendStatus(), result.toString());
        return body;
    }

    /**
     * Consumes `topic` with `group` until every body of `expected` came;
     * asserts none of `unexpected` came. Returns what came.
     */
    private static Set<String> consume(Clients clients, String topic, String group, Set<String> expected,
        Set<String> unexpected) throws Exception {
        Set<String> got = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer consumer = clients.pushConsumer(group);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            messages.forEach(m -> got.add(Clients.body(m)));
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        try {
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (!got.containsAll(expected) && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            assertTrue(got.containsAll(expected), "group " + group + " consumed " + new TreeSet<>(got)
                + ", expected " + expected);
            Set<String> twice = got.stream().filter(unexpected::contains).collect(Collectors.toSet());
            assertEquals(Set.of(), twice, "consumed again after the store changed brokers");
        } finally {
            consumer.shutdown();
        }
        return got;
    }

    /** Waits until the broker holds the group's offsets at the end of every queue. */
    private static void awaitOffsetsCommitted(Direct direct, String addr, Written w) throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (true) {
            long committed = 0;
            for (int queueId = 0; queueId < 4; queueId++) {
                committed += Math.max(0, direct.consumerOffset(addr, w.group, w.topic, queueId));
            }
            if (committed == w.before.size()) {
                return;
            }
            assertTrue(System.nanoTime() < deadline, "group " + w.group + " committed " + committed
                + " of " + w.before.size() + " on " + addr);
            Thread.sleep(200);
        }
    }

    /** Everything the first broker served, the second serves. */
    private void check(Proc broker, Written w) throws Exception {
        try (Clients clients = new Clients(namesrv.addr())) {
            DefaultMQProducer producer = clients.producer();
            Direct direct = new Direct(producer);
            StoreView view = StoreView.read(direct, broker.addr(), w.group, w.queues());
            for (Map.Entry<String, String> entry : w.view.entries.entrySet()) {
                assertEquals(entry.getValue(), view.entries.get(entry.getKey()),
                    "message at " + entry.getKey() + " served by " + broker);
            }
            assertTrue(direct.topics(broker.addr()).containsAll(Set.of(w.topic, w.other)), "topics");
            assertTrue(direct.groups(broker.addr()).contains(w.group), "subscription groups");
            for (int queueId = 0; queueId < 4; queueId++) {
                assertEquals(w.offsets.get(w.topic + "/" + queueId),
                    direct.consumerOffset(broker.addr(), w.group, w.topic, queueId),
                    "committed offset of " + w.group + " on queue " + queueId);
            }
            checkQueries(producer, w);
            Set<String> resumed = new TreeSet<>(w.after);
            resumed.add(w.pending);
            if (w.pendingTimer != null) {
                resumed.add(w.pendingTimer);
            }
            consume(clients, w.topic, w.group, resumed, w.before);
            StoreView now = StoreView.read(direct, broker.addr(), w.group, w.queues());
            assertEquals(1, now.count(w.pending), "the pending delay message delivered once");
            // Not early: Java takes the deliver time from the ConsumeQueue
            // entry's tag code, which the other broker wrote.
            long deliveredAt = now.messages.values().stream().filter(m -> w.pending.equals(Clients.body(m)))
                .findFirst().orElseThrow().getStoreTimestamp();
            assertTrue(deliveredAt >= w.pendingSentAtMs + 10_000 - DUE_SLACK_MS, "the pending delay message"
                + " (10 s) was delivered " + (deliveredAt - w.pendingSentAtMs) + " ms after it was sent");
            if (w.pendingTimer != null) {
                assertEquals(1, now.count(w.pendingTimer), "the pending timer message delivered once");
            }
            assertEquals(1, now.count("timer"), "the timer message delivered before the move, once");
            String fresh = send(producer, w.topic, "fresh", 400, 0, 0);
            assertEquals(1, StoreView.read(direct, broker.addr(), w.group, w.queues()).count(fresh),
                "a new send after the old tail");
        }
    }

    /** Query by key (topic#key index), by offset id, and by unique key. */
    @SuppressWarnings("deprecation")
    private static void checkQueries(DefaultMQProducer producer, Written w) throws Exception {
        MessageExt sample = w.view.messages.values().stream()
            .filter(m -> "before-5".equals(Clients.body(m))).findFirst().orElseThrow();
        QueryResult byKey = producer.queryMessage(w.topic, "k-5", 32, 0, Long.MAX_VALUE);
        Set<String> bodies = byKey.getMessageList().stream().map(Clients::body).collect(Collectors.toSet());
        assertEquals(Set.of("before-5"), bodies, "query by key k-5");
        QueryResult shared = producer.queryMessage(w.topic, "shared", 64, 0, Long.MAX_VALUE);
        assertTrue(shared.getMessageList().size() >= BEFORE, "query by key shared: "
            + shared.getMessageList().size());
        MessageExt byId = producer.viewMessage(w.topic, sample.getMsgId());
        assertEquals("before-5", Clients.body(byId), "view by offset id " + sample.getMsgId());
        String uniq = sample.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
        assertNotNull(uniq, "unique key");
        MessageExt byUniq = producer.getDefaultMQProducerImpl().queryMessageByUniqKey(w.topic, uniq);
        assertEquals("before-5", Clients.body(byUniq), "query by unique key " + uniq);
    }
}
