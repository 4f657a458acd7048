package org.ferrocket.interop.v5;

import static org.ferrocket.interop.Clients.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.impl.consumer.RebalanceImpl;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageRequestMode;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.ferrocket.interop.Clients;
import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.FerrocketExtension;
import org.ferrocket.interop.Names;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A push consumer switched to POP: the group's request mode set to POP
 * for the topic through the admin API (`DefaultMQAdminExt
 * .setMessageRequestMode`, SET_MESSAGE_REQUEST_MODE 401, what mqadmin's
 * setConsumeMode sends) and `setClientRebalance(false)`, so the client asks
 * the broker for its queues (QUERY_ASSIGNMENT 400), is told POP and pops
 * (POP_MESSAGE 200050, acks with ACK_MESSAGE / BATCH_ACK_MESSAGE). Every
 * message arrives once, with a pop checkpoint (POP_CK) property, and none
 * again after its invisible time would have passed. The group's retry topic
 * stays pulled, as on Java's broker.
 */
@ExtendWith(FerrocketExtension.class)
class PopConsumeTest {
    static final int COUNT = 20;

    @Test
    void popPushConsumerGetsEveryMessageOnce(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("PopT"), 4);
        String group = Names.unique("PopCG");
        try (Clients clients = new Clients(server)) {
            DefaultMQAdminExt admin = clients.configure(new DefaultMQAdminExt());
            admin.setAdminExtGroup(Names.unique("PopAdmin"));
            admin.start();
            clients.track(admin, admin::shutdown);
            admin.setMessageRequestMode(server.brokerAddr(), topic, group, MessageRequestMode.POP, 0, 5000);

            DefaultMQProducer producer = clients.producer();
            Map<String, String> sent = new TreeMap<>();
            for (int i = 0; i < COUNT; i++) {
                SendResult result = producer.send(new Message(topic, "TagP", bytes("pop-" + i)));
                assertEquals(SendStatus.SEND_OK, result.getSendStatus(), result.toString());
                sent.put(result.getMsgId(), "pop-" + i);
            }

            DefaultMQPushConsumer consumer = clients.pushConsumer(group);
            consumer.setClientRebalance(false);
            consumer.setPopInvisibleTime(5_000);
            consumer.subscribe(topic, "*");
            Map<String, String> received = new ConcurrentHashMap<>();
            List<String> deliveries = new CopyOnWriteArrayList<>();
            Set<String> withoutCheckpoint = ConcurrentHashMap.newKeySet();
            consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                messages.forEach(m -> {
                    deliveries.add(m.getMsgId());
                    received.put(m.getMsgId(), Clients.body(m));
                    if (m.getProperty(MessageConst.PROPERTY_POP_CK) == null) {
                        withoutCheckpoint.add(m.getMsgId());
                    }
                });
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            long deadline = System.nanoTime() + Clients.RECEIVE_TIMEOUT.toNanos();
            while (received.size() < COUNT && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            assertEquals(sent, new TreeMap<>(received));
            // The consumer pops the topic: its rebalance keeps pop process
            // queues of it and no pull ones (only the group's retry topic is
            // pulled, "retry topic must be pull mode" in Java's
            // QueryAssignmentProcessor).
            RebalanceImpl rebalance = consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl();
            assertTrue(rebalance.getPopProcessQueueTable().keySet().stream()
                .anyMatch(queue -> queue.getTopic().equals(topic)),
                "no pop process queue of the topic: " + rebalance.getPopProcessQueueTable().keySet());
            assertFalse(rebalance.getProcessQueueTable().keySet().stream()
                .anyMatch(queue -> queue.getTopic().equals(topic)),
                "pull process queues of the topic: " + rebalance.getProcessQueueTable().keySet());
            assertEquals(Set.of(), withoutCheckpoint, "messages without " + MessageConst.PROPERTY_POP_CK);
            // Acked: nothing comes again once the invisible time (5 s) is past.
            Thread.sleep(8_000);
            assertEquals(COUNT, deliveries.size(), "deliveries " + deliveries);
        }
    }
}
