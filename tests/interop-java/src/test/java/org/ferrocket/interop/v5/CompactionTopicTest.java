package org.ferrocket.interop.v5;

import static org.ferrocket.interop.Clients.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageRequestMode;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.ferrocket.interop.BrokerSettings;
import org.ferrocket.interop.Clients;
import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.FerrocketExtension;
import org.ferrocket.interop.Names;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Compaction topics (RocketMQ 5.1): the topic made with
 * `cleanup.policy=COMPACTION` through the admin API (as mqadmin's
 * `updateTopic -a +cleanup.policy=COMPACTION` sends it; the policy of an
 * existing topic cannot change, as in Java), several versions
 * of several keys sent by the 5.5.0 producer to each key's queue (as
 * Java's example does), compacted every 500 ms
 * (`compactionScheduleInternal`); a new group then reads only the newest
 * message per key, with the plain pull consumer and with a push consumer
 * in pull and in POP mode.
 */
@ExtendWith(FerrocketExtension.class)
@BrokerSettings({"compactionScheduleInternal=500"})
class CompactionTopicTest {
    private static final int QUEUES = 2;
    private static final int KEYS = 4;
    private static final int VERSIONS = 5;

    @Test
    void aNewGroupReadsTheNewestMessagePerKey(Ferrocket server) throws Exception {
        String topic = Names.unique("CompactT");
        try (Clients clients = new Clients(server)) {
            DefaultMQAdminExt admin = clients.configure(new DefaultMQAdminExt());
            admin.setAdminExtGroup(Names.unique("CompactAdmin"));
            admin.start();
            clients.track(admin, admin::shutdown);
            admin.createAndUpdateTopicConfig(server.brokerAddr(), topicConfig(topic, "COMPACTION"));
            assertEquals("COMPACTION",
                admin.examineTopicConfig(server.brokerAddr(), topic).getAttributes().get("cleanup.policy"));
            // As Java's broker: the policy is set when the topic is made, never changed.
            assertThrows(MQClientException.class,
                () -> admin.createAndUpdateTopicConfig(server.brokerAddr(), topicConfig(topic, "DELETE")));
            waitForRoute(server, topic);

            DefaultMQProducer producer = clients.producer();
            Map<String, String> newest = new TreeMap<>();
            for (int version = 0; version < VERSIONS; version++) {
                for (int key = 0; key < KEYS; key++) {
                    String body = "key" + key + "-v" + version;
                    Message message = new Message(topic, "tag", "key" + key, bytes(body));
                    SendStatus status = producer.send(message,
                        (queues, m, arg) -> queues.get((Integer) arg % queues.size()), key).getSendStatus();
                    assertEquals(SendStatus.SEND_OK, status);
                    newest.put("key" + key, body);
                }
            }

            Map<String, String> read = Map.of();
            long deadline = System.nanoTime() + Clients.RECEIVE_TIMEOUT.toNanos();
            while (!read.equals(newest) && System.nanoTime() < deadline) {
                Thread.sleep(300);
                read = byKey(clients.readAll(topic, "*", 0, Duration.ZERO));
            }
            assertEquals(newest, read, "a pull from offset 0 by a new group, once compacted");

            assertEquals(newest, byKey(pushed(clients, topic, null)), "a new push consumer group");
            String popGroup = Names.unique("CompactPopCG");
            admin.setMessageRequestMode(server.brokerAddr(), topic, popGroup, MessageRequestMode.POP, 0, 5000);
            assertEquals(newest, byKey(pushed(clients, topic, popGroup)), "a new push consumer group in POP mode");
        }
    }

    private static TopicConfig topicConfig(String topic, String policy) {
        TopicConfig config = new TopicConfig(topic, QUEUES, QUEUES, 6);
        config.setAttributes(Map.of("+cleanup.policy", policy));
        return config;
    }

    private static void waitForRoute(Ferrocket server, String topic) throws Exception {
        long deadline = System.nanoTime() + Clients.RECEIVE_TIMEOUT.toNanos();
        while (!server.admin(false, "topic", "route", "--topic", topic).contains(server.brokerAddr())) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no route for " + topic);
            }
            Thread.sleep(100);
        }
    }

    /** What a new push consumer of `group` (a new one when null) receives. */
    private static List<MessageExt> pushed(Clients clients, String topic, String group) throws Exception {
        DefaultMQPushConsumer consumer = clients.pushConsumer(group != null ? group : Names.unique("CompactCG"));
        consumer.setClientRebalance(group == null);
        consumer.subscribe(topic, "*");
        List<MessageExt> pushed = new CopyOnWriteArrayList<>();
        consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            pushed.addAll(messages);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        long deadline = System.nanoTime() + Clients.RECEIVE_TIMEOUT.toNanos();
        while (pushed.size() < KEYS && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        Thread.sleep(1000); // anything more would come now
        consumer.shutdown();
        return pushed;
    }

    /** Bodies by key; a key read twice shows as such. */
    private static Map<String, String> byKey(List<MessageExt> messages) {
        Map<String, String> bodies = new ConcurrentHashMap<>();
        for (MessageExt message : messages) {
            String before = bodies.put(message.getKeys(), Clients.body(message));
            if (before != null) {
                bodies.put(message.getKeys(), "read twice: " + before + ", " + Clients.body(message));
            }
        }
        return new TreeMap<>(bodies);
    }
}
