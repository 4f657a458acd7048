package org.ferrocket.interop.mixed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageQueue;
import org.ferrocket.interop.Clients;
import org.ferrocket.interop.Names;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * A rolling migration under load (issue 38): an Apache RocketMQ 5.5.0
 * master/slave set, under Apache's name server, with a producer (sync
 * sends) and a push consumer running throughout, is turned into a Ferrocket
 * set one broker at a time, each new broker on the store and ports of the
 * one it replaces: first the slave (the Ferrocket slave follows the Java
 * master), then the master (the Ferrocket slave follows the Ferrocket
 * master). Every acknowledged message is consumed, every queue offset is
 * consumed, a message comes twice only if the Java master stored it at or
 * past the group's offset committed before the switch, the group's
 * committed offsets carry over, and the two CommitLogs end equal.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RollingMigrationTest {
    static final int QUEUES = 4;
    /** Load between two steps, so each broker serves a share of it. */
    static final Duration STEADY = Duration.ofSeconds(3);
    static final Duration WAIT = Duration.ofSeconds(60);
    /** A clean Java broker stop takes several seconds (it persists its config files on the way). */
    static final Duration CLEAN_STOP = Duration.ofSeconds(60);

    /**
     * The master's HA address, as the name server gives it to slaves, stays
     * the same across the switch (unset, Java announces an address of the
     * host it picks, Ferrocket its brokerIP1): the slave need not wait for
     * its next registration (30 s) to find the new master.
     */
    static final String HA_IP = "brokerIP2=127.0.0.1";

    final List<Proc> started = new ArrayList<>();
    Path stores;
    Proc namesrv;
    String brokerName;
    int masterPort;
    int slavePort;

    @BeforeAll
    void start() throws Exception {
        Servers.apacheHome();
        stores = Servers.workDir("rolling-stores");
        brokerName = Names.unique("rolling");
        namesrv = started(Servers.javaNamesrv("java-namesrv"));
        namesrv.waitReady(null);
        masterPort = Servers.freePort(2, 1);
        slavePort = Servers.freePort(2, 1);
    }

    private Proc started(Proc proc) {
        started.add(proc);
        return proc;
    }

    @AfterAll
    void stop() {
        for (int i = started.size() - 1; i >= 0; i--) {
            started.get(i).close();
        }
        Proc.deleteTree(stores);
        log("stopped");
    }

    @Test
    void javaSetBecomesFerrocketSetUnderLoad() throws Exception {
        Proc javaMaster = started(Servers.javaBrokerOn("java-master", namesrv.addr(), brokerName, masterPort,
            stores.resolve("master"), List.of("brokerRole=ASYNC_MASTER", "brokerId=0", HA_IP,
                // One pop revive service, not 8: each may hold a clean stop
                // up for 7 s (no pop consumer here).
                "reviveQueueNum=1")));
        // The slave learns its master's HA address from the name server (with
        // haMasterAddress set instead, 5.5.0's slave logged "HAClient connect
        // to master null failed" here and copied nothing).
        Proc javaSlave = started(Servers.javaBrokerOn("java-slave", namesrv.addr(), brokerName, slavePort,
            stores.resolve("slave"), List.of("brokerRole=SLAVE", "brokerId=1")));
        javaMaster.waitReady("boot success");
        javaSlave.waitReady("boot success");
        Servers.waitRegistered(namesrv.addr(), javaMaster);
        log("Java master and slave serving");
        String topic = Names.unique("RollingT");
        Servers.createTopic(namesrv.addr(), topic, QUEUES, javaMaster);
        String group = Names.unique("RollingCG");
        try (Clients clients = new Clients(namesrv.addr())) {
            DefaultMQProducer producer = clients.producer();
            Direct direct = new Direct(producer);
            DefaultMQPushConsumer consumer = clients.pushConsumer(group);
            consumer.setPersistConsumerOffsetInterval(1000);
            // The heartbeat a rebalance asks for is skipped while another is
            // in flight; Java's broker then answers SUBSCRIPTION_NOT_LATEST
            // to every pull until the next periodic one (30 s by default).
            consumer.setHeartbeatBrokerInterval(2000);
            try (Traffic traffic = new Traffic(producer, consumer, topic)) {
                Thread.sleep(STEADY.toMillis());
                Proc ferrocketSlave = replaceSlave(javaSlave, javaMaster, direct, traffic);
                Thread.sleep(STEADY.toMillis());
                Switch masterSwitch = replaceMaster(javaMaster, direct, group, topic, traffic);
                Thread.sleep(STEADY.toMillis());
                traffic.stopSending();
                int ackedByFerrocket = traffic.ackedCount() - masterSwitch.ackedBefore();
                assertTrue(ackedByFerrocket > 0, "no send acknowledged by the Ferrocket master");
                checkConsumed(traffic, producer, masterSwitch);
                checkReplicated(direct, masterSwitch.master(), ferrocketSlave, Names.unique("RollingReaderCG"),
                    topic);
                log("the Ferrocket slave holds the master's CommitLog");
            }
        }
    }

    /**
     * Stops the Java slave cleanly and starts a Ferrocket slave on its store
     * and ports; waits until it holds what the Java master held then.
     */
    private Proc replaceSlave(Proc javaSlave, Proc javaMaster, Direct direct, Traffic traffic)
        throws Exception {
        long javaMasterEnd = direct.commitLogMaxOffset(javaMaster.addr());
        Servers.waitFor(WAIT, "the Java slave reaches the Java master's CommitLog end " + javaMasterEnd,
            () -> direct.commitLogMaxOffset(javaSlave.addr()) >= javaMasterEnd);
        long javaSlaveEnd = direct.commitLogMaxOffset(javaSlave.addr());
        long stopping = System.nanoTime();
        javaSlave.stop(CLEAN_STOP);
        log("Java slave stopped in " + millisSince(stopping) + " ms at CommitLog end " + javaSlaveEnd + "; "
            + traffic.ackedCount() + " acked");
        Proc slave = started(Servers.ferrocketBrokerOn("ferrocket-slave", namesrv.addr(), brokerName, slavePort,
            stores.resolve("slave"), List.of("brokerRole=SLAVE", "brokerId=1", "fastListenPortEnable=true",
                // Ferrocket's slave answers pulls only with this (the check reads it directly).
                "slaveReadEnable=true")));
        slave.waitReady(Servers.ferrocketReadyLine("broker", slave));
        Servers.waitRegistered(namesrv.addr(), slave);
        // It goes on from the Java slave's end: what it reports never falls below it.
        assertTrue(direct.commitLogMaxOffset(slave.addr()) >= javaSlaveEnd, "the Ferrocket slave lost the"
            + " Java slave's CommitLog, which ended at " + javaSlaveEnd);
        long masterEnd = direct.commitLogMaxOffset(javaMaster.addr());
        Servers.waitFor(WAIT, "the Ferrocket slave reaches the Java master's CommitLog end " + masterEnd,
            () -> direct.commitLogMaxOffset(slave.addr()) >= masterEnd);
        return slave;
    }

    /**
     * What the master switch left: the Ferrocket master, when the Java one
     * was told to stop, the group's offsets it had committed just before,
     * and how many sends were acknowledged by then.
     */
    record Switch(Proc master, long stopAtMs, long[] committedBefore, int ackedBefore) {
    }

    /**
     * Stops the Java master cleanly and starts a Ferrocket master (brokerId
     * 0, same brokerName) on its store and ports; its committed offsets of
     * the group are at least the ones the Java master had.
     */
    private Switch replaceMaster(Proc javaMaster, Direct direct, String group, String topic, Traffic traffic)
        throws Exception {
        long[] before = committed(direct, javaMaster.addr(), group, topic);
        assertTrue(LongStream.of(before).sum() > 0, "the group committed nothing on the Java master: "
            + Arrays.toString(before) + ", " + traffic.delivered.size() + " messages consumed");
        long stopAtMs = System.currentTimeMillis();
        javaMaster.stop(CLEAN_STOP);
        int ackedBefore = traffic.ackedCount();
        log("Java master stopped in " + (System.currentTimeMillis() - stopAtMs) + " ms; " + ackedBefore
            + " acked");
        long starting = System.nanoTime();
        Proc master = started(Servers.ferrocketBrokerOn("ferrocket-master", namesrv.addr(), brokerName,
            masterPort, stores.resolve("master"),
            List.of("brokerRole=ASYNC_MASTER", "brokerId=0", HA_IP, "fastListenPortEnable=true")));
        master.waitReady(Servers.ferrocketReadyLine("broker", master));
        long[] after = committed(direct, master.addr(), group, topic);
        Servers.waitRegistered(namesrv.addr(), master);
        log("Ferrocket master serving in " + millisSince(starting) + " ms; committed offsets before "
            + Arrays.toString(before) + ", on the Ferrocket master " + Arrays.toString(after));
        for (int queue = 0; queue < QUEUES; queue++) {
            assertTrue(after[queue] >= before[queue], "queue " + queue + ": the Ferrocket master has offset "
                + after[queue] + " for the group, the Java master had " + before[queue]);
        }
        return new Switch(master, stopAtMs, before, ackedBefore);
    }

    private static long[] committed(Direct direct, String addr, String group, String topic) throws Exception {
        long[] offsets = new long[QUEUES];
        for (int queue = 0; queue < QUEUES; queue++) {
            offsets[queue] = direct.consumerOffset(addr, group, topic, queue);
        }
        return offsets;
    }

    /**
     * Every acknowledged key consumed; every queue consumed from 0 to its
     * end without a gap; a message delivered again only once, only if the
     * Java master stored it, and only at or past the offset the group had
     * committed there before the switch.
     */
    @SuppressWarnings("deprecation")
    private void checkConsumed(Traffic traffic, DefaultMQProducer producer, Switch masterSwitch)
        throws Exception {
        awaitAcked(traffic);
        long[] ends = new long[QUEUES];
        for (int queue = 0; queue < QUEUES; queue++) {
            ends[queue] = producer.maxOffset(new MessageQueue(traffic.topic, brokerName, queue));
        }
        // A send that failed may still have been stored: it is consumed too.
        Servers.waitFor(WAIT, "the consumer reaches the end of every queue " + Arrays.toString(ends),
            () -> {
                Map<Integer, List<Long>> now = traffic.offsetsByQueue();
                return LongStream.range(0, QUEUES)
                    .allMatch(q -> now.getOrDefault((int) q, List.of()).size() >= ends[(int) q]);
            });
        Map<Integer, List<Long>> byQueue = traffic.offsetsByQueue();
        for (int queue = 0; queue < QUEUES; queue++) {
            List<Long> expected = LongStream.range(0, ends[queue]).boxed().collect(Collectors.toList());
            assertEquals(expected, byQueue.getOrDefault(queue, List.of()), "queue " + queue + ": offsets consumed");
        }
        checkDuplicates(traffic, masterSwitch);
    }

    /** Waits until every acknowledged key was consumed; fails naming those that were not. */
    private static void awaitAcked(Traffic traffic) throws Exception {
        Set<String> acked = traffic.acked.keySet();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!traffic.consumedKeys.containsAll(acked) && System.nanoTime() < deadline) {
            Thread.sleep(250);
        }
        Set<String> lost = new TreeSet<>(acked);
        lost.removeAll(traffic.consumedKeys);
        assertEquals(Set.of(), lost, "acknowledged, not consumed within " + WAIT.toSeconds() + " s");
    }

    /**
     * A message delivered again only once, only if the Java master stored
     * it, and only at or past the offset the group had committed there
     * before the switch.
     */
    private static void checkDuplicates(Traffic traffic, Switch masterSwitch) {
        List<List<Traffic.Delivery>> duplicates = traffic.duplicates();
        log(traffic.ackedCount() + " acked, " + traffic.failed.get() + " sends failed, "
            + traffic.delivered.size() + " messages consumed, " + duplicates.size() + " of them twice or more");
        for (List<Traffic.Delivery> deliveries : duplicates) {
            Traffic.Delivery first = deliveries.get(0);
            String what = "message " + first + " delivered " + deliveries.size() + " times";
            assertEquals(2, deliveries.size(), what);
            assertTrue(first.storeTimestamp() < masterSwitch.stopAtMs(), what + ": stored after the switch");
            assertTrue(first.queueOffset() >= masterSwitch.committedBefore()[first.queueId()],
                what + ": below the offset committed before the switch, "
                    + masterSwitch.committedBefore()[first.queueId()]);
        }
    }

    /**
     * Once the load stops, the Ferrocket slave's CommitLog ends where the
     * master's does, and the slave serves every message of the topic as the
     * master does (the part the Java slave copied, the part the Ferrocket
     * slave took from the Java master, and from the Ferrocket master).
     */
    private static void checkReplicated(Direct direct, Proc master, Proc slave, String group, String topic)
        throws Exception {
        long masterEnd = direct.commitLogMaxOffset(master.addr());
        Servers.waitFor(WAIT, "the slave's CommitLog reaches the master's end " + masterEnd,
            () -> direct.commitLogMaxOffset(slave.addr()) >= masterEnd);
        assertEquals(masterEnd, direct.commitLogMaxOffset(slave.addr()), "CommitLog ends of master and slave");
        assertEquals(masterEnd, direct.commitLogMaxOffset(master.addr()), "the master's CommitLog end moved");
        StoreView onMaster = StoreView.read(direct, master.addr(), group, Map.of(topic, QUEUES));
        StoreView onSlave = StoreView.read(direct, slave.addr(), group, Map.of(topic, QUEUES));
        assertTrue(onMaster.size() > 0, "the master serves nothing");
        assertEquals(onMaster.entries, onSlave.entries, "what the slave serves differs from the master's");
    }

    private static long millisSince(long nanos) {
        return (System.nanoTime() - nanos) / 1_000_000;
    }

    private static final long CLASS_START = System.nanoTime();

    private static void log(String line) {
        System.out.println("RollingMigrationTest +" + millisSince(CLASS_START) + " ms: " + line);
    }
}
