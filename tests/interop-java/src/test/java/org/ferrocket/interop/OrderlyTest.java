package org.ferrocket.interop;

import static org.ferrocket.interop.Clients.body;
import static org.ferrocket.interop.Clients.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Orderly send through a MessageQueueSelector (order id -> queue) and an
 * orderly push consumer (LOCK_BATCH_MQ, one queue at a time) that must see
 * each order's messages in the order they were sent.
 */
@ExtendWith(FerrocketExtension.class)
class OrderlyTest {
    static final int QUEUES = 4;
    static final int ORDERS = 4;
    static final int STEPS = 10;

    @Test
    void orderlySendAndConsume(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("OrderT"), QUEUES);
        MessageQueueSelector byOrderId = (queues, message, orderId) ->
            queues.get((Integer) orderId % queues.size());
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.producer();
            // queue id -> bodies in send order
            Map<Integer, List<String>> sent = new TreeMap<>();
            for (int step = 0; step < STEPS; step++) {
                for (int order = 0; order < ORDERS; order++) {
                    String text = "order-" + order + "-step-" + step;
                    SendResult result = producer.send(new Message(topic, "TagO", bytes(text)), byOrderId, order);
                    assertEquals(SendStatus.SEND_OK, result.getSendStatus());
                    assertEquals(order % QUEUES, result.getMessageQueue().getQueueId(), result.toString());
                    sent.computeIfAbsent(result.getMessageQueue().getQueueId(), q -> new ArrayList<>()).add(text);
                }
            }

            Map<Integer, List<String>> received = new ConcurrentHashMap<>();
            CountDownLatch all = new CountDownLatch(ORDERS * STEPS);
            DefaultMQPushConsumer consumer = clients.pushConsumer(Names.unique("OrderCG"));
            consumer.subscribe(topic, "*");
            consumer.setConsumeMessageBatchMaxSize(3);
            consumer.registerMessageListener((MessageListenerOrderly) (messages, context) -> {
                for (MessageExt message : messages) {
                    received.computeIfAbsent(message.getQueueId(), q -> new ArrayList<>()).add(body(message));
                    all.countDown();
                }
                return ConsumeOrderlyStatus.SUCCESS;
            });
            consumer.start();
            assertTrue(all.await(Clients.RECEIVE_TIMEOUT.toSeconds(), TimeUnit.SECONDS),
                "received only " + received);
            // Each queue delivered exactly what was sent to it, in order.
            assertEquals(sent, new TreeMap<>(received));
        }
    }
}
