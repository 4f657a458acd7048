package org.ferrocket.interop.mixed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.LitePushConsumer;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.remoting.protocol.body.GetBrokerLiteInfoResponseBody;
import org.apache.rocketmq.remoting.protocol.body.GetLiteGroupInfoResponseBody;
import org.apache.rocketmq.remoting.protocol.body.GetLiteTopicInfoResponseBody;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.ferrocket.interop.Names;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Apache RocketMQ's own proxy (`mqproxy` 5.5.0, cluster mode) in front of
 * Ferrocket's name server and broker, with the v5 Java client
 * (rocketmq-client-java) talking gRPC to the proxy and the proxy talking
 * Remoting to Ferrocket: normal messages through a SimpleConsumer and a
 * PushConsumer, FIFO messages in order per message group, and a
 * LitePushConsumer, for which the proxy sends LITE_SUBSCRIPTION_CTL and
 * POP_LITE_MESSAGE to the broker and acks with the lite topic; then the
 * lite admin requests (GET_BROKER_LITE_INFO, ...) with Java's own client.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ApacheProxyTest {
    static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();
    static final Duration WAIT = Duration.ofSeconds(60);
    static final long TIMEOUT_MS = 5_000;

    Proc namesrv;
    Proc broker;
    Proc proxy;
    DefaultMQProducer remoting;
    MQClientAPIImpl api;

    @BeforeAll
    void start() throws Exception {
        Servers.apacheHome();
        namesrv = Servers.ferrocketNamesrv("ferrocket-namesrv");
        namesrv.waitReady(Servers.ferrocketReadyLine("namesrv", namesrv));
        broker = Servers.ferrocketBroker("ferrocket-broker", namesrv.addr(), "ferrocket-a", List.of());
        broker.waitReady(Servers.ferrocketReadyLine("broker", broker));
        Servers.waitRegistered(namesrv.addr(), broker);
        proxy = Servers.javaProxy("java-proxy", namesrv.addr());
        proxy.waitReady(null);
        remoting = new DefaultMQProducer(Names.unique("ProxyTestAdmin"));
        remoting.setNamesrvAddr(namesrv.addr());
        remoting.setInstanceName(Names.unique("proxy-test"));
        remoting.start();
        api = remoting.getDefaultMQProducerImpl().getMqClientFactory().getMQClientAPIImpl();
    }

    @AfterAll
    void stop() {
        if (remoting != null) {
            remoting.shutdown();
        }
        for (Proc proc : new Proc[] {proxy, broker, namesrv}) {
            if (proc != null) {
                proc.close();
            }
        }
    }

    private ClientConfiguration config() {
        return ClientConfiguration.newBuilder()
            .setEndpoints(proxy.addr())
            .enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
    }

    private void createGroup(String group, boolean orderly, String liteBindTopic) throws Exception {
        SubscriptionGroupConfig config = new SubscriptionGroupConfig();
        config.setGroupName(group);
        config.setConsumeMessageOrderly(orderly);
        config.setLiteBindTopic(liteBindTopic);
        api.createSubscriptionGroup(broker.addr(), config, TIMEOUT_MS);
    }

    private static String body(MessageView view) {
        ByteBuffer body = view.getBody().duplicate();
        byte[] bytes = new byte[body.remaining()];
        body.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static void send(Producer producer, String topic, String body, String group, String lite)
        throws Exception {
        var builder = PROVIDER.newMessageBuilder().setTopic(topic).setBody(body.getBytes(StandardCharsets.UTF_8));
        if (group != null) {
            builder.setMessageGroup(group);
        }
        if (lite != null) {
            builder.setLiteTopic(lite);
        }
        producer.send(builder.build());
    }

    /** Receives and acks until `count` messages came or WAIT passed; bodies in order received. */
    private static List<MessageView> receiveAll(SimpleConsumer consumer, int count) throws Exception {
        List<MessageView> got = new ArrayList<>();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (got.size() < count && System.nanoTime() < deadline) {
            for (MessageView view : consumer.receive(16, Duration.ofSeconds(30))) {
                consumer.ack(view);
                got.add(view);
            }
        }
        return got;
    }

    private SimpleConsumer simpleConsumer(String group, String topic) throws Exception {
        return PROVIDER.newSimpleConsumerBuilder()
            .setClientConfiguration(config())
            .setConsumerGroup(group)
            .setAwaitDuration(Duration.ofSeconds(2))
            .setSubscriptionExpressions(Map.of(topic, new FilterExpression("*", FilterExpressionType.TAG)))
            .build();
    }

    @Test
    void normalMessagesThroughSimpleAndPushConsumers() throws Exception {
        String topic = Names.unique("ProxyNormal");
        Servers.createTopic(namesrv.addr(), topic, 4, broker);
        Set<String> sent = new TreeSet<>();
        try (Producer producer = PROVIDER.newProducerBuilder().setClientConfiguration(config())
            .setTopics(topic).build()) {
            for (int i = 0; i < 10; i++) {
                send(producer, topic, "normal-" + i, null, null);
                sent.add("normal-" + i);
            }
        }
        try (SimpleConsumer consumer = simpleConsumer(Names.unique("ProxySimple"), topic)) {
            Set<String> got = new TreeSet<>();
            receiveAll(consumer, sent.size()).forEach(view -> got.add(body(view)));
            assertEquals(sent, got, "the SimpleConsumer through Apache's proxy");
        }
        Set<String> pushed = ConcurrentHashMap.newKeySet();
        try (PushConsumer consumer = PROVIDER.newPushConsumerBuilder()
            .setClientConfiguration(config())
            .setConsumerGroup(Names.unique("ProxyPush"))
            .setSubscriptionExpressions(Map.of(topic, new FilterExpression("*", FilterExpressionType.TAG)))
            .setMessageListener(view -> {
                pushed.add(body(view));
                return ConsumeResult.SUCCESS;
            })
            .build()) {
            Servers.waitFor(WAIT, "the PushConsumer gets every message", () -> pushed.containsAll(sent));
        }
        assertEquals(sent, new TreeSet<>(pushed));
    }

    @Test
    void fifoMessagesInOrderPerMessageGroup() throws Exception {
        String topic = Names.unique("ProxyFifo");
        Servers.createTopic(namesrv.addr(), topic, 2, List.of("--attributes", "+message.type=FIFO"), broker);
        String group = Names.unique("ProxyFifoGroup");
        createGroup(group, true, null);
        Map<String, List<String>> sent = new TreeMap<>();
        try (Producer producer = PROVIDER.newProducerBuilder().setClientConfiguration(config())
            .setTopics(topic).build()) {
            for (int i = 0; i < 5; i++) {
                for (String messageGroup : List.of("g1", "g2", "g3")) {
                    String body = messageGroup + "-" + i;
                    send(producer, topic, body, messageGroup, null);
                    sent.computeIfAbsent(messageGroup, k -> new ArrayList<>()).add(body);
                }
            }
        }
        Map<String, List<String>> got = new TreeMap<>();
        try (SimpleConsumer consumer = simpleConsumer(group, topic)) {
            for (MessageView view : receiveAll(consumer, 15)) {
                String messageGroup = view.getMessageGroup().orElse("(none)");
                got.computeIfAbsent(messageGroup, k -> new ArrayList<>()).add(body(view));
            }
        }
        assertEquals(sent, got, "each message group in the order sent");
    }

    @Test
    void litePushConsumerAndLiteAdmin() throws Exception {
        String topic = Names.unique("ProxyLite");
        Servers.createTopic(namesrv.addr(), topic, 2, List.of("--attributes", "+message.type=LITE"), broker);
        String group = Names.unique("ProxyLiteGroup");
        createGroup(group, false, topic);
        Map<String, Set<String>> received = new ConcurrentHashMap<>();
        try (Producer producer = PROVIDER.newProducerBuilder().setClientConfiguration(config())
            .setTopics(topic).build();
             LitePushConsumer consumer = PROVIDER.newLitePushConsumerBuilder()
                 .setClientConfiguration(config())
                 .setConsumerGroup(group)
                 .bindTopic(topic)
                 .setMessageListener(view -> {
                     received.computeIfAbsent(view.getLiteTopic().orElse("(none)"),
                         k -> ConcurrentHashMap.newKeySet()).add(body(view));
                     return ConsumeResult.SUCCESS;
                 })
                 .build()) {
            consumer.subscribeLite("a");
            consumer.subscribeLite("b");
            for (String lite : List.of("a", "b", "c")) {
                for (int i = 0; i < 3; i++) {
                    send(producer, topic, lite + "-" + i, null, lite);
                }
            }
            Map<String, Set<String>> expected = Map.of(
                "a", Set.of("a-0", "a-1", "a-2"), "b", Set.of("b-0", "b-1", "b-2"));
            Servers.waitFor(WAIT, "the LitePushConsumer gets lite topics a and b",
                () -> expected.equals(snapshot(received)));
            // Acked: nothing comes again, and c never comes.
            Thread.sleep(2000);
            assertEquals(expected, snapshot(received));
            checkLiteAdmin(topic, group);
        }
    }

    private static Map<String, Set<String>> snapshot(Map<String, Set<String>> received) {
        Map<String, Set<String>> copy = new TreeMap<>();
        received.forEach((k, v) -> copy.put(k, new TreeSet<>(v)));
        return copy;
    }

    /** The lite admin requests, decoded by Java's own client. */
    private void checkLiteAdmin(String topic, String group) throws Exception {
        GetBrokerLiteInfoResponseBody info = api.getBrokerLiteInfo(broker.addr(), TIMEOUT_MS);
        assertTrue(info.getLiteSubscriptionCount() >= 2, "subscriptions: " + info.getLiteSubscriptionCount());
        assertTrue(info.getGroupMeta().get(topic).contains(group), "groupMeta: " + info.getGroupMeta());
        GetLiteTopicInfoResponseBody lite = api.getLiteTopicInfo(broker.addr(), topic, "a", TIMEOUT_MS);
        assertEquals(topic, lite.getParentTopic());
        assertEquals(1, lite.getSubscriber().size(), "subscribers of a: " + lite.getSubscriber());
        assertEquals(0, api.getLiteTopicInfo(broker.addr(), topic, "c", TIMEOUT_MS).getSubscriber().size());
        SubscriptionGroupConfig stored = api.getAllSubscriptionGroup(broker.addr(), TIMEOUT_MS)
            .getSubscriptionGroupTable().get(group);
        assertEquals(topic, stored.getLiteBindTopic(), "the group as the broker keeps it");
        GetLiteGroupInfoResponseBody groupInfo = api.getLiteGroupInfo(broker.addr(), group, "", 10, TIMEOUT_MS);
        assertEquals(topic, groupInfo.getParentTopic());
        api.triggerLiteDispatch(broker.addr(), group, "", TIMEOUT_MS);
    }
}
