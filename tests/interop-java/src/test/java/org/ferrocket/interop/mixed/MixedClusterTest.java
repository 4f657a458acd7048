package org.ferrocket.interop.mixed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * A mixed cluster: Apache RocketMQ's name server and broker beside
 * Ferrocket's, each broker registered with both name servers. The Java
 * client routes through either name server to either broker, and to both
 * at once for a topic on both (issue 38: mixed clusters).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MixedClusterTest {
    static final int MESSAGES = 20;

    Proc javaNamesrv;
    Proc ferrocketNamesrv;
    Proc javaBroker;
    Proc ferrocketBroker;

    @BeforeAll
    void start() throws Exception {
        Servers.apacheHome();
        // Launched together, waited for together: the JVMs start in parallel.
        javaNamesrv = Servers.javaNamesrv("java-namesrv");
        ferrocketNamesrv = Servers.ferrocketNamesrv("ferrocket-namesrv");
        ferrocketNamesrv.waitReady(Servers.ferrocketReadyLine("namesrv", ferrocketNamesrv));
        javaNamesrv.waitReady(null);
        String both = javaNamesrv.addr() + ";" + ferrocketNamesrv.addr();
        javaBroker = Servers.javaBroker("java-broker", both, "java-a", List.of());
        ferrocketBroker = Servers.ferrocketBroker("ferrocket-broker", both, "ferrocket-a",
            List.of("autoCreateTopicEnable=true"));
        ferrocketBroker.waitReady(Servers.ferrocketReadyLine("broker", ferrocketBroker));
        javaBroker.waitReady("boot success");
        for (Proc namesrv : List.of(javaNamesrv, ferrocketNamesrv)) {
            Servers.waitRegistered(namesrv.addr(), javaBroker);
            Servers.waitRegistered(namesrv.addr(), ferrocketBroker);
        }
    }

    @AfterAll
    void stop() {
        for (Proc proc : new Proc[] {ferrocketBroker, javaBroker, ferrocketNamesrv, javaNamesrv}) {
            if (proc != null) {
                proc.close();
            }
        }
    }

    @Test
    void eachNameServerListsBothBrokers() throws Exception {
        for (Proc namesrv : List.of(javaNamesrv, ferrocketNamesrv)) {
            String clusters = Servers.admin(namesrv.addr(), true, "cluster", "list");
            assertTrue(clusters.contains("java-a") && clusters.contains("ferrocket-a"),
                namesrv + " cluster list:\n" + clusters);
        }
    }

    /** (a) A Ferrocket broker found through Java's name server. */
    @Test
    void ferrocketBrokerThroughJavaNamesrv() throws Exception {
        sendAndRead(javaNamesrv, ferrocketBroker, "ferrocket-a");
    }

    /** (b) A Java broker found through Ferrocket's name server. */
    @Test
    void javaBrokerThroughFerrocketNamesrv() throws Exception {
        sendAndRead(ferrocketNamesrv, javaBroker, "java-a");
    }

    @Test
    void ferrocketBrokerThroughFerrocketNamesrvBesideJava() throws Exception {
        sendAndRead(ferrocketNamesrv, ferrocketBroker, "ferrocket-a");
    }

    @Test
    void javaBrokerThroughJavaNamesrvBesideFerrocket() throws Exception {
        sendAndRead(javaNamesrv, javaBroker, "java-a");
    }

    /** A topic on one broker: sync sends land there, a pull consumer reads them all back. */
    private void sendAndRead(Proc namesrv, Proc broker, String brokerName) throws Exception {
        String topic = Names.unique("MixedT");
        Servers.createTopic(namesrv.addr(), topic, 4, broker);
        try (Clients clients = new Clients(namesrv.addr())) {
            DefaultMQProducer producer = clients.producer();
            Set<String> sent = new TreeSet<>();
            for (int i = 0; i < MESSAGES; i++) {
                String body = topic + "-" + i;
                SendResult result = producer.send(new Message(topic, "TagA", Clients.bytes(body)));
                assertEquals(SendStatus.SEND_OK, result.getSendStatus(), result.toString());
                assertEquals(brokerName, result.getMessageQueue().getBrokerName());
                sent.add(body);
            }
            List<MessageExt> read = clients.readAll(topic, "*", MESSAGES);
            Set<String> got = read.stream().map(Clients::body).collect(Collectors.toCollection(TreeSet::new));
            assertEquals(sent, got, "read back through " + namesrv);
            for (MessageExt message : read) {
                assertEquals(broker.addr(), message.getStoreHost().toString().replaceFirst("^.*/", ""),
                    "stored by " + broker);
            }
        }
    }

    /**
     * A topic on both brokers, through each name server: the producer spreads
     * sends over both brokers' queues; a push consumer group balances the
     * queues of both and gets every message.
     */
    @Test
    void topicOnBothBrokersThroughEitherNamesrv() throws Exception {
        for (Proc namesrv : List.of(javaNamesrv, ferrocketNamesrv)) {
            String topic = Names.unique("MixedBothT");
            Servers.createTopic(namesrv.addr(), topic, 2, javaBroker, ferrocketBroker);
            try (Clients clients = new Clients(namesrv.addr())) {
                DefaultMQProducer producer = clients.producer();
                Set<String> sent = new TreeSet<>();
                Set<String> brokers = new TreeSet<>();
                for (int i = 0; i < MESSAGES; i++) {
                    String body = topic + "-" + i;
                    SendResult result = producer.send(new Message(topic, Clients.bytes(body)));
                    assertEquals(SendStatus.SEND_OK, result.getSendStatus(), result.toString());
                    brokers.add(result.getMessageQueue().getBrokerName());
                    sent.add(body);
                }
                assertEquals(Set.of("java-a", "ferrocket-a"), brokers, "sends through " + namesrv);
                Set<String> got = ConcurrentHashMap.newKeySet();
                DefaultMQPushConsumer consumer = clients.pushConsumer(Names.unique("MixedCG"));
                consumer.subscribe(topic, "*");
                consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                    messages.forEach(m -> got.add(Clients.body(m)));
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
                consumer.start();
                long deadline = System.nanoTime() + Clients.RECEIVE_TIMEOUT.toNanos();
                while (!got.containsAll(sent) && System.nanoTime() < deadline) {
                    Thread.sleep(100);
                }
                assertEquals(sent, new TreeSet<>(got), "consumed through " + namesrv);
            }
        }
    }
}
