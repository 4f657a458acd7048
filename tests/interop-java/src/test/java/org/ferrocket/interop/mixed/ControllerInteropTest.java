package org.ferrocket.interop.mixed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.ferrocket.interop.Clients;
import org.ferrocket.interop.Names;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Controller mode across implementations (issue 38), under Ferrocket's name
 * server: two Apache RocketMQ 5.5.0 brokers of one set
 * (enableControllerMode=true) under Ferrocket's controller, two Ferrocket
 * brokers under Apache RocketMQ's controller, and sets of one of each
 * under Ferrocket's controller (AutoSwitch HA both ways). The controller
 * elects one master, the other joins the in-sync set; the master is killed
 * (SIGKILL), the controller elects the slave, and sends resume on it with
 * every message acknowledged before the kill still there.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ControllerInteropTest {
    static final int QUEUES = 4;
    static final int BEFORE = 30;
    static final int AFTER = 20;
    static final Duration WAIT = Duration.ofSeconds(60);
    static final Pattern MASTER = Pattern.compile("#MasterAddr\\t(\\S+)");
    static final Pattern IN_SYNC = Pattern.compile("#SyncStateSetNums\\t(\\d+)");

    /** Starts one broker of the set `brokerName` in controller mode under `controller`. */
    interface Broker {
        Proc start(String name, String brokerName, List<String> settings) throws Exception;

        /** What its log says once it serves. */
        String ready(Proc proc);
    }

    private Broker java() {
        return new Broker() {
            @Override
            public Proc start(String name, String brokerName, List<String> settings) throws Exception {
                return Servers.javaBroker("java-" + name, namesrv.addr(), brokerName, settings);
            }

            @Override
            public String ready(Proc proc) {
                return "boot success";
            }
        };
    }

    private Broker ferrocket() {
        return new Broker() {
            @Override
            public Proc start(String name, String brokerName, List<String> settings) throws Exception {
                return Servers.ferrocketBroker("ferrocket-" + name, namesrv.addr(), brokerName, settings);
            }

            @Override
            public String ready(Proc proc) {
                return Servers.ferrocketReadyLine("broker", proc);
            }
        };
    }

    final List<Proc> started = new ArrayList<>();
    Proc namesrv;

    @BeforeAll
    void start() throws Exception {
        Servers.apacheHome();
        namesrv = started(Servers.ferrocketNamesrv("ferrocket-namesrv"));
        namesrv.waitReady(Servers.ferrocketReadyLine("namesrv", namesrv));
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
    }

    /** Controller-mode settings (both implementations' keys), the checks at 1 s so the test is short. */
    private static List<String> controllerMode(Proc controller) {
        return List.of("enableControllerMode=true", "controllerAddr=" + controller.addr(),
            "allAckInSyncStateSet=true", "syncBrokerMetadataPeriod=1000", "checkSyncStateSetPeriod=1000");
    }

    @Test
    void javaBrokersFailOverUnderFerrocketController() throws Exception {
        try (Proc controller = ferrocketController()) {
            failOver(controller, java(), java(), false);
        }
    }

    @Test
    void ferrocketBrokersFailOverUnderJavaController() throws Exception {
        try (Proc controller = started(Servers.javaController("java-controller"))) {
            controller.waitReady(null);
            failOver(controller, ferrocket(), ferrocket(), false);
        }
    }

    /**
     * A mixed set under Ferrocket's controller: the Java broker, started
     * first, is elected; the Ferrocket one follows it (AutoSwitch HA from a
     * Java master) and, once the Java master is killed, takes over.
     */
    @Test
    void javaMasterFailsOverToFerrocketSlave() throws Exception {
        try (Proc controller = ferrocketController()) {
            failOver(controller, java(), ferrocket(), true);
        }
    }

    /** The other way round: a Java slave of a Ferrocket master, elected when that is killed. */
    @Test
    void ferrocketMasterFailsOverToJavaSlave() throws Exception {
        try (Proc controller = ferrocketController()) {
            failOver(controller, ferrocket(), java(), true);
        }
    }

    private Proc ferrocketController() throws Exception {
        Proc controller = started(Servers.ferrocketController("ferrocket-controller"));
        controller.waitReady(Servers.ferrocketReadyLine("controller", controller));
        return controller;
    }

    /**
     * Two brokers of a new set under `controller` (the second started once
     * the first serves, if `inOrder`): one is elected, the other joins the
     * in-sync set; sends; the master is killed; the other is elected and
     * takes sends; every message is read back. Both are stopped, their
     * data deleted, when it returns.
     */
    private void failOver(Proc controller, Broker one, Broker two, boolean inOrder) throws Exception {
        String brokerName = Names.unique("ctlset");
        try (Proc first = started(one.start("b1", brokerName, controllerMode(controller)))) {
            if (inOrder) {
                first.waitReady(one.ready(first));
            }
            try (Proc second = started(two.start("b2", brokerName, controllerMode(controller)))) {
                first.waitReady(one.ready(first));
                second.waitReady(two.ready(second));
                failOver(controller, brokerName, first, second, inOrder);
            }
        }
    }

    private void failOver(Proc controller, String brokerName, Proc first, Proc second, boolean inOrder)
        throws Exception {
        String masterAddr = awaitSet(controller, brokerName, inOrder ? first.addr() : null, 2);
        Proc master = masterAddr.equals(first.addr()) ? first : second;
        Proc slave = master == first ? second : first;
        assertEquals(masterAddr, master.addr(), "the elected master is one of the two brokers");
        Servers.waitRegistered(namesrv.addr(), master);
        String topic = Names.unique("CtlT");
        for (Proc broker : List.of(master, slave)) {
            Servers.admin(namesrv.addr(), true, "topic", "create", "--topic", topic, "--broker-addr",
                broker.addr(), "-r", Integer.toString(QUEUES), "-w", Integer.toString(QUEUES));
        }
        Servers.createTopic(namesrv.addr(), topic, QUEUES, master);
        try (Clients clients = new Clients(namesrv.addr())) {
            DefaultMQProducer producer = clients.producer();
            Set<String> sent = new TreeSet<>();
            for (int i = 0; i < BEFORE; i++) {
                sent.add(sendOk(producer, topic, "before-" + i, Duration.ZERO));
            }
            master.kill();
            long killed = System.nanoTime();
            awaitSet(controller, brokerName, slave.addr(), 1);
            System.out.println("ControllerInteropTest: " + slave + " elected "
                + (System.nanoTime() - killed) / 1_000_000 + " ms after the kill");
            for (int i = 0; i < AFTER; i++) {
                sent.add(sendOk(producer, topic, "after-" + i, WAIT));
            }
            List<MessageExt> read = clients.readAll(topic, "*", sent.size());
            Set<String> bodies = read.stream().map(Clients::body).collect(Collectors.toCollection(TreeSet::new));
            assertEquals(sent, bodies, "read through the name server once the slave is master");
        }
    }

    /** One sync send, retried for up to `retryFor` until SEND_OK; returns the body. */
    private static String sendOk(DefaultMQProducer producer, String topic, String body, Duration retryFor)
        throws Exception {
        long deadline = System.nanoTime() + retryFor.toNanos();
        while (true) {
            try {
                SendResult result = producer.send(new Message(topic, "TagA", Clients.bytes(body)));
                if (result.getSendStatus() == SendStatus.SEND_OK) {
                    return body;
                }
                assertTrue(System.nanoTime() < deadline, "send of " + body + ": " + result);
            } catch (Exception e) {
                if (System.nanoTime() >= deadline) {
                    throw e;
                }
            }
            Thread.sleep(200);
        }
    }

    /**
     * Waits until the controller has a master (`masterAddr`, if given) and
     * `inSync` in-sync replicas for the set; returns the master's address.
     */
    private String awaitSet(Proc controller, String brokerName, String masterAddr, int inSync)
        throws Exception {
        String[] last = {""};
        String[] master = {null};
        try {
            waitForSet(controller, brokerName, masterAddr, inSync, last, master);
        } catch (AssertionError e) {
            StringBuilder logs = new StringBuilder();
            started.forEach(proc -> logs.append("\n==== ").append(proc).append('\n').append(proc.logTail()));
            throw new AssertionError(e.getMessage() + "; the controller's last answer:\n" + last[0] + logs, e);
        }
        return master[0];
    }

    private void waitForSet(Proc controller, String brokerName, String masterAddr, int inSync, String[] last,
        String[] master) throws Exception {
        Servers.waitFor(WAIT, "the controller's set " + brokerName + " with master " + masterAddr + " and "
            + inSync + " in sync", () -> {
                last[0] = Servers.admin(namesrv.addr(), false, "controller", "sync-state-set", "-a",
                    controller.addr(), "-b", brokerName);
                Matcher m = MASTER.matcher(last[0]);
                Matcher n = IN_SYNC.matcher(last[0]);
                if (!m.find() || !n.find() || "null".equals(m.group(1))) {
                    return false;
                }
                master[0] = m.group(1);
                return (masterAddr == null || masterAddr.equals(master[0])) && Integer.parseInt(n.group(1)) == inSync;
            });
    }
}
