package org.ferrocket.interop.mixed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.ferrocket.interop.Clients;
import org.ferrocket.interop.Names;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Classic (non-controller) replication across implementations, under one
 * Ferrocket name server: a Ferrocket SYNC_MASTER with an Apache RocketMQ
 * SLAVE, and an Apache RocketMQ SYNC_MASTER with a Ferrocket SLAVE (issue
 * 38). Every acknowledged send is on the slave at the master's CommitLog
 * offsets; reads from the slave work, directly and, once the master is
 * killed, through the name server; the slave copies the master's topics,
 * subscription groups and consumer offsets.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ReplicationTest {
    static final int MESSAGES = 40;
    static final int QUEUES = 4;
    static final Duration CATCH_UP = Duration.ofSeconds(30);

    /**
     * One master/slave set: its broker name, its topic, and how long after
     * the test class started its slave has copied the master's metadata.
     */
    record Pair(String brokerName, Proc master, Proc slave, String topic, long metadataByNanos) {
        @Override
        public String toString() {
            return brokerName + " (master " + master + ", slave " + slave + ")";
        }
    }

    /** How many messages each pair's topic holds once its replication test ran. */
    static final Map<String, Integer> SENT = new ConcurrentHashMap<>();

    Proc namesrv;
    Pair ferrocketMaster;
    Pair javaMaster;
    final List<Proc> all = new ArrayList<>();

    @BeforeAll
    void start() throws Exception {
        Servers.apacheHome();
        namesrv = started(Servers.ferrocketNamesrv("namesrv"));
        namesrv.waitReady(Servers.ferrocketReadyLine("namesrv", namesrv));
        // A Java slave asks its master for topics and timer state on the
        // master's "fast" port, listenPort - 2 (BrokerOuterAPI uses
        // MixAll.brokerVIPChannel(true, addr)).
        Proc fm = started(Servers.ferrocketBroker("ferrocket-master", namesrv.addr(), "fm-a",
            List.of("brokerRole=SYNC_MASTER", "fastListenPortEnable=true")));
        // Java's SYNC_MASTER waits for a slave only with inSyncReplicas >= 2
        // (5.x's default of 1 acknowledges at once).
        Proc jm = started(Servers.javaBroker("java-master", namesrv.addr(), "jm-b",
            List.of("brokerRole=SYNC_MASTER", "inSyncReplicas=2")));
        fm.waitReady(Servers.ferrocketReadyLine("broker", fm));
        jm.waitReady("boot success");
        Servers.waitRegistered(namesrv.addr(), fm);
        Servers.waitRegistered(namesrv.addr(), jm);
        String fmTopic = Names.unique("ReplFmT");
        String jmTopic = Names.unique("ReplJmT");
        Servers.createTopic(namesrv.addr(), fmTopic, QUEUES, fm);
        Servers.createTopic(namesrv.addr(), jmTopic, QUEUES, jm);
        Proc js = started(Servers.javaBroker("java-slave", namesrv.addr(), "fm-a",
            List.of("brokerRole=SLAVE", "brokerId=1", "slaveReadEnable=true")));
        Proc fs = started(Servers.ferrocketBroker("ferrocket-slave", namesrv.addr(), "jm-b",
            List.of("brokerRole=SLAVE", "brokerId=1", "slaveReadEnable=true")));
        long slavesStarted = System.nanoTime();
        fs.waitReady(Servers.ferrocketReadyLine("broker", fs));
        js.waitReady("boot success");
        Servers.waitRegistered(namesrv.addr(), js);
        Servers.waitRegistered(namesrv.addr(), fs);
        // A Java slave copies its master's metadata (SlaveSynchronize.syncAll)
        // first 60 s after it starts, then every 60 s: for the replication
        // tests, the topic is created on it too, as `mqadmin updateTopic -b`
        // would; the metadata test waits for the copy.
        Servers.admin(namesrv.addr(), true, "topic", "create", "--topic", fmTopic, "--broker-addr",
            js.addr(), "-r", Integer.toString(QUEUES), "-w", Integer.toString(QUEUES));
        ferrocketMaster = new Pair("fm-a", fm, js, fmTopic, slavesStarted + Duration.ofSeconds(80).toNanos());
        // A Ferrocket slave copies 3 s after it starts, then every 10 s.
        javaMaster = new Pair("jm-b", jm, fs, jmTopic, 0);
    }

    private Proc started(Proc proc) {
        all.add(proc);
        return proc;
    }

    @AfterAll
    void stop() {
        for (int i = all.size() - 1; i >= 0; i--) {
            all.get(i).close();
        }
    }

    @Test
    @Order(1)
    void ferrocketMasterToJavaSlave() throws Exception {
        replicates(ferrocketMaster);
    }

    @Test
    @Order(2)
    void javaMasterToFerrocketSlave() throws Exception {
        replicates(javaMaster);
    }

    @Test
    @Order(3)
    void ferrocketSlaveCopiesJavaMastersMetadata() throws Exception {
        metadataReachesSlave(javaMaster);
    }

    @Test
    @Order(4)
    void javaSlaveCopiesFerrocketMastersMetadata() throws Exception {
        metadataReachesSlave(ferrocketMaster);
    }

    /**
     * A Java slave asks its Ferrocket master for the timer checkpoint every
     * 3 s (SlaveSynchronize.syncTimerCheckPoint) and takes the master's
     * lastTimerQueueOffset as its masterTimerQueueOffset, the bound of its
     * own timer log: after a timer message the two agree.
     */
    @Test
    @Order(5)
    void javaSlaveTakesFerrocketMastersTimerCheckpoint() throws Exception {
        Pair pair = ferrocketMaster;
        try (Clients clients = new Clients(namesrv.addr())) {
            DefaultMQProducer producer = clients.producer();
            Direct direct = new Direct(producer);
            long before = direct.timerCheckpoint(pair.master().addr())[2];
            Message timed = new Message(pair.topic(), "TagT", Clients.bytes("timer-in-an-hour"));
            timed.setDelayTimeSec(3600);
            assertEquals(SendStatus.SEND_OK, producer.send(timed).getSendStatus());
            Servers.waitFor(CATCH_UP, pair + ": the master's timer takes the message in",
                () -> direct.timerCheckpoint(pair.master().addr())[2] > before);
            long masterOffset = direct.timerCheckpoint(pair.master().addr())[2];
            Servers.waitFor(CATCH_UP, pair + ": the slave's masterTimerQueueOffset reaches " + masterOffset,
                () -> direct.timerCheckpoint(pair.slave().addr())[3] == masterOffset);
        }
    }

    @Test
    @Order(6)
    void javaSlaveServesOnceFerrocketMasterIsKilled() throws Exception {
        servesAfterMasterKilled(ferrocketMaster);
    }

    @Test
    @Order(7)
    void ferrocketSlaveServesOnceJavaMasterIsKilled() throws Exception {
        servesAfterMasterKilled(javaMaster);
    }

    /**
     * Sync sends to the SYNC_MASTER, each acknowledged SEND_OK only once the
     * slave has it; then the slave serves every message at the master's
     * queue and CommitLog offsets, and both report the same CommitLog end.
     */
    private void replicates(Pair pair) throws Exception {
        try (Clients clients = new Clients(namesrv.addr())) {
            DefaultMQProducer producer = clients.producer();
            Direct direct = new Direct(producer);
            Set<String> sent = new TreeSet<>();
            waitForSlave(pair, producer, sent);
            for (int i = 0; i < MESSAGES; i++) {
                String body = pair.topic() + "-" + i;
                SendResult result = producer.send(new Message(pair.topic(), "TagA", Clients.bytes(body)));
                assertEquals(SendStatus.SEND_OK, result.getSendStatus(), pair + ": " + result);
                sent.add(body);
            }
            String group = Names.unique("ReplReaderCG");
            List<String> onMaster = placements(direct, pair.master().addr(), group, pair.topic());
            assertEquals(sent.size(), onMaster.size(), pair + ": the master serves what it acknowledged");
            long deadline = System.nanoTime() + CATCH_UP.toNanos();
            List<String> onSlave = List.of();
            while (System.nanoTime() < deadline) {
                onSlave = placements(direct, pair.slave().addr(), group, pair.topic());
                if (onSlave.size() >= sent.size()) {
                    break;
                }
                Thread.sleep(200);
            }
            assertEquals(onMaster, onSlave, pair + ": the slave serves each message at the master's offsets");
            Set<String> bodies = onSlave.stream().map(p -> p.substring(p.lastIndexOf(' ') + 1))
                .collect(Collectors.toCollection(TreeSet::new));
            assertEquals(sent, bodies);
            long masterEnd = direct.commitLogMaxOffset(pair.master().addr());
            long slaveEnd = direct.commitLogMaxOffset(pair.slave().addr());
            assertEquals(masterEnd, slaveEnd, pair + ": CommitLog ends differ");
        }
    }

    /**
     * A push consumer group consumes the pair's topic through the master
     * and commits its offsets there, and a new topic is created on the
     * master only: the slave's metadata sync (GET_ALL_TOPIC_CONFIG,
     * GET_ALL_SUBSCRIPTIONGROUP_CONFIG, GET_ALL_CONSUMER_OFFSET and the
     * rest, answered by the other implementation) brings all three over.
     */
    private void metadataReachesSlave(Pair pair) throws Exception {
        String group = Names.unique("ReplCG");
        String newTopic = Names.unique("ReplNewT");
        try (Clients clients = new Clients(namesrv.addr())) {
            Direct direct = new Direct(clients.producer());
            Set<String> got = ConcurrentHashMap.newKeySet();
            DefaultMQPushConsumer consumer = clients.pushConsumer(group);
            consumer.setPersistConsumerOffsetInterval(500);
            consumer.subscribe(pair.topic(), "*");
            consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                messages.forEach(m -> got.add(Clients.body(m)));
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            long[] onMaster = new long[QUEUES];
            Servers.waitFor(CATCH_UP, pair + ": the group's offsets committed on the master", () -> {
                long sum = 0;
                for (int queue = 0; queue < QUEUES; queue++) {
                    onMaster[queue] = direct.consumerOffset(pair.master().addr(), group, pair.topic(), queue);
                    sum += Math.max(0, onMaster[queue]);
                }
                return sum == SENT.get(pair.topic());
            });
            assertEquals(SENT.get(pair.topic()), got.size());
            Servers.admin(namesrv.addr(), true, "topic", "create", "--topic", newTopic, "--broker-addr",
                pair.master().addr(), "-r", "2", "-w", "2");
            long waitNanos = Math.max(pair.metadataByNanos() - System.nanoTime(), 0)
                + Duration.ofSeconds(25).toNanos();
            String slave = pair.slave().addr();
            Servers.waitFor(Duration.ofNanos(waitNanos), pair + ": topic, group and offsets on the slave", () -> {
                if (!direct.topics(slave).contains(newTopic) || !direct.groups(slave).contains(group)) {
                    return false;
                }
                for (int queue = 0; queue < QUEUES; queue++) {
                    if (direct.consumerOffset(slave, group, pair.topic(), queue) != onMaster[queue]) {
                        return false;
                    }
                }
                return true;
            });
        }
    }

    /**
     * Until the slave's HA link is up a SYNC_MASTER answers
     * FLUSH_SLAVE_TIMEOUT (the message is stored on the master all the
     * same): sends warm-up messages until one is acknowledged SEND_OK.
     */
    private static void waitForSlave(Pair pair, DefaultMQProducer producer, Set<String> sent) throws Exception {
        long deadline = System.nanoTime() + CATCH_UP.toNanos();
        for (int i = 0; ; i++) {
            String body = pair.topic() + "-warmup-" + i;
            SendResult result = producer.send(new Message(pair.topic(), "TagA", Clients.bytes(body)));
            sent.add(body);
            if (result.getSendStatus() == SendStatus.SEND_OK) {
                SENT.put(pair.topic(), sent.size() + MESSAGES);
                return;
            }
            assertTrue(System.nanoTime() < deadline, pair + ": no slave acknowledged within "
                + CATCH_UP.toSeconds() + " s: " + result);
        }
    }

    /** "queueId queueOffset commitLogOffset body" of every message `addr` serves, in queue order. */
    private static List<String> placements(Direct direct, String addr, String group, String topic)
        throws Exception {
        List<String> out = new ArrayList<>();
        for (int queue = 0; queue < QUEUES; queue++) {
            for (MessageExt message : direct.readQueue(addr, group, topic, queue)) {
                out.add(message.getQueueId() + " " + message.getQueueOffset() + " "
                    + message.getCommitLogOffset() + " " + Clients.body(message));
            }
        }
        return out;
    }

    /**
     * With the master killed (SIGKILL), the name server drops it; the
     * client's pull consumer finds the slave in the route and reads every
     * message the master acknowledged.
     */
    private void servesAfterMasterKilled(Pair pair) throws Exception {
        pair.master().kill();
        Servers.waitUnregistered(namesrv.addr(), pair.master());
        try (Clients clients = new Clients(namesrv.addr())) {
            int expected = SENT.get(pair.topic());
            List<MessageExt> read = clients.readAll(pair.topic(), "*", expected);
            Set<String> bodies = read.stream().map(Clients::body).collect(Collectors.toCollection(TreeSet::new));
            assertEquals(expected, bodies.size(), pair + ": read from the slave after the master died");
            for (MessageExt message : read) {
                assertTrue(message.getBody().length > 0);
            }
        }
    }
}
