package org.ferrocket.interop;

import static org.ferrocket.interop.Clients.body;
import static org.ferrocket.interop.Clients.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Concurrent push consumers: tag subscription, broadcasting, retry, %DLQ%, delay level. */
@ExtendWith(FerrocketExtension.class)
class PushConsumerTest {
    private static final long WAIT_S = Clients.RECEIVE_TIMEOUT.toSeconds();

    private static void send(DefaultMQProducer producer, Message message) throws Exception {
        SendResult result = producer.send(message);
        assertEquals(SendStatus.SEND_OK, result.getSendStatus(), result.toString());
    }

    @Test
    void tagSubscription(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("TagT"), 4);
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.producer();
            Set<String> wanted = new TreeSet<>();
            for (int i = 0; i < 12; i++) {
                String tag = "Tag" + "ABC".charAt(i % 3);
                send(producer, new Message(topic, tag, bytes(tag + "-" + i)));
                if (!tag.equals("TagC")) {
                    wanted.add(tag + "-" + i);
                }
            }
            // After the unwanted ones: a marker that must arrive last of all.
            Set<String> received = ConcurrentHashMap.newKeySet();
            CountDownLatch all = new CountDownLatch(wanted.size());
            DefaultMQPushConsumer consumer = clients.pushConsumer(Names.unique("TagCG"));
            consumer.subscribe(topic, "TagA || TagB");
            consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                for (MessageExt message : messages) {
                    received.add(body(message));
                    all.countDown();
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            assertTrue(all.await(WAIT_S, TimeUnit.SECONDS), "received only " + received);
            // Give a wrongly delivered TagC message a moment to show up.
            Thread.sleep(1000);
            assertEquals(wanted, new TreeSet<>(received));
        }
    }

    @Test
    void broadcasting(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("BcastT"), 4);
        String group = Names.unique("BcastCG");
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.producer();
            Set<String> sent = new TreeSet<>();
            for (int i = 0; i < 8; i++) {
                send(producer, new Message(topic, bytes("bcast-" + i)));
                sent.add("bcast-" + i);
            }
            List<Set<String>> receivedBy = new CopyOnWriteArrayList<>();
            CountDownLatch all = new CountDownLatch(2 * sent.size());
            for (int c = 0; c < 2; c++) {
                Set<String> received = ConcurrentHashMap.newKeySet();
                receivedBy.add(received);
                DefaultMQPushConsumer consumer = clients.pushConsumer(group);
                Compat.broadcasting(consumer);
                consumer.subscribe(topic, "*");
                consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                    for (MessageExt message : messages) {
                        if (received.add(body(message))) {
                            all.countDown();
                        }
                    }
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
                consumer.start();
            }
            assertTrue(all.await(WAIT_S, TimeUnit.SECONDS), "received only " + receivedBy);
            // Every client of the group got every message.
            assertEquals(sent, new TreeSet<>(receivedBy.get(0)));
            assertEquals(sent, new TreeSet<>(receivedBy.get(1)));
        }
    }

    /** RECONSUME_LATER sends the message back (CONSUMER_SEND_MSG_BACK); it comes again. */
    @Test
    void retryAfterReconsumeLater(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("RetryT"), 2);
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.producer();
            Map<String, String> sent = new HashMap<>();
            for (int i = 0; i < 3; i++) {
                SendResult result = producer.send(new Message(topic, bytes("retry-" + i)));
                assertEquals(SendStatus.SEND_OK, result.getSendStatus());
                sent.put(result.getMsgId(), "retry-" + i);
            }
            // msgId -> reconsumeTimes of each delivery
            Map<String, List<Integer>> deliveries = new ConcurrentHashMap<>();
            Map<String, String> redelivered = new ConcurrentHashMap<>();
            CountDownLatch again = new CountDownLatch(sent.size());
            DefaultMQPushConsumer consumer = clients.pushConsumer(Names.unique("RetryCG"));
            consumer.subscribe(topic, "*");
            consumer.setConsumeMessageBatchMaxSize(1);
            consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                MessageExt message = messages.get(0);
                List<Integer> times = deliveries.computeIfAbsent(message.getMsgId(),
                    id -> new CopyOnWriteArrayList<>());
                times.add(message.getReconsumeTimes());
                if (times.size() == 1) {
                    context.setDelayLevelWhenNextConsume(1); // 1 s
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
                if (redelivered.putIfAbsent(message.getMsgId(), body(message)) == null) {
                    again.countDown();
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            assertTrue(again.await(WAIT_S, TimeUnit.SECONDS), "deliveries " + deliveries);
            // The same messages (same ids, bodies) came a second time, counted as a retry.
            assertEquals(sent, redelivered);
            for (String id : sent.keySet()) {
                assertEquals(List.of(0, 1), deliveries.get(id).subList(0, 2), "deliveries of " + id);
            }
        }
    }

    /**
     * Past the group's maxReconsumeTimes the client's CONSUMER_SEND_MSG_BACK
     * puts the message into the group's dead-letter topic, `%DLQ%{group}`,
     * whole: its id, key, tag and body, RETRY_TOPIC naming where it came
     * from, and a plain consumer can read it there.
     */
    @Test
    void deadLetterAfterMaxReconsumeTimes(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("DlqT"), 1);
        String group = Names.unique("DlqCG");
        try (Clients clients = new Clients(server)) {
            SendResult sent = clients.producer().send(new Message(topic, "TagD", "dlq-key", bytes("dead")));
            assertEquals(SendStatus.SEND_OK, sent.getSendStatus(), sent.toString());
            List<Integer> tries = new CopyOnWriteArrayList<>();
            DefaultMQPushConsumer consumer = clients.pushConsumer(group);
            consumer.subscribe(topic, "*");
            consumer.setMaxReconsumeTimes(1);
            consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                messages.forEach(m -> tries.add(m.getReconsumeTimes()));
                context.setDelayLevelWhenNextConsume(1); // 1 s
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            });
            consumer.start();
            String dlq = MixAll.getDLQTopic(group);
            List<MessageExt> dead = List.of();
            long deadline = System.nanoTime() + Clients.RECEIVE_TIMEOUT.toNanos();
            while (dead.isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(500);
                try {
                    dead = clients.readAll(dlq, "*", 1, Duration.ZERO);
                } catch (MQClientException noRouteYet) {
                    // The DLQ topic is made by the second failure.
                }
            }
            assertEquals(1, dead.size(), "tries " + tries + ", in " + dlq + ": " + dead);
            MessageExt message = dead.get(0);
            assertEquals(dlq, message.getTopic());
            assertEquals(sent.getMsgId(), message.getMsgId());
            assertEquals("dead", body(message));
            assertEquals("dlq-key", message.getKeys());
            assertEquals("TagD", message.getTags());
            assertEquals(topic, message.getProperty(MessageConst.PROPERTY_RETRY_TOPIC));
            // Tried once, retried once; never delivered again.
            Thread.sleep(3_000);
            assertEquals(List.of(0, 1), tries);
        }
    }

    /** Delay level 2 (5 s): not delivered before it is due. */
    @Test
    void delayLevel(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("DelayT"), 2);
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.producer();
            Map<String, Long> receivedAt = new ConcurrentHashMap<>();
            CountDownLatch got = new CountDownLatch(2);
            DefaultMQPushConsumer consumer = clients.pushConsumer(Names.unique("DelayCG"));
            consumer.subscribe(topic, "*");
            consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                for (MessageExt message : messages) {
                    if (receivedAt.putIfAbsent(body(message), System.currentTimeMillis()) == null) {
                        got.countDown();
                    }
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            Message delayed = new Message(topic, bytes("delayed"));
            delayed.setDelayTimeLevel(2);
            long sentAt = System.currentTimeMillis();
            send(producer, delayed);
            send(producer, new Message(topic, bytes("immediate")));
            assertTrue(got.await(WAIT_S, TimeUnit.SECONDS), "received only " + receivedAt.keySet());
            long delay = receivedAt.get("delayed") - sentAt;
            assertTrue(delay >= 4_500, "delivered after " + delay + " ms, level 2 is 5 s");
            assertTrue(delay < 20_000, "delivered after " + delay + " ms, level 2 is 5 s");
            assertTrue(receivedAt.get("immediate") < receivedAt.get("delayed"));
        }
    }
}
