package org.ferrocket.interop.v5;

import static org.ferrocket.interop.Clients.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageRequestMode;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.ferrocket.interop.Clients;
import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.FerrocketExtension;
import org.ferrocket.interop.Names;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Priority messages (RocketMQ 5.4) over Remoting: the topic made a priority
 * topic through the admin API (`message.type=PRIORITY`, as mqadmin's
 * `updateTopic -a +message.type=PRIORITY` sends it), `Message.setPriority`
 * on the 5.5.0 producer (the broker answers the queue it stored in:
 * min(priority, queues - 1)), and a push consumer in POP mode with one
 * consume thread receiving the backlog highest priority first.
 */
@ExtendWith(FerrocketExtension.class)
class PriorityPopTest {
    private static final int QUEUES = 4;
    private static final int[] PRIORITIES = {1, 0, 3, 2, 0, 9, 1, 2, 3};

    @Test
    void popConsumerGetsTheHighestPriorityFirst(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("PrioT"), QUEUES);
        String group = Names.unique("PrioCG");
        try (Clients clients = new Clients(server)) {
            DefaultMQAdminExt admin = clients.configure(new DefaultMQAdminExt());
            admin.setAdminExtGroup(Names.unique("PrioAdmin"));
            admin.start();
            clients.track(admin, admin::shutdown);
            TopicConfig config = new TopicConfig(topic, QUEUES, QUEUES, 6);
            config.setAttributes(Map.of("+message.type", "PRIORITY"));
            admin.createAndUpdateTopicConfig(server.brokerAddr(), config);
            assertEquals("PRIORITY",
                admin.examineTopicConfig(server.brokerAddr(), topic).getAttributes().get("message.type"));
            admin.setMessageRequestMode(server.brokerAddr(), topic, group, MessageRequestMode.POP, 0, 5000);

            DefaultMQProducer producer = clients.producer();
            for (int i = 0; i < PRIORITIES.length; i++) {
                Message message = new Message(topic, bytes("p" + PRIORITIES[i] + "-" + i));
                message.setPriority(PRIORITIES[i]);
                SendResult result = producer.send(message);
                assertEquals(Math.min(PRIORITIES[i], QUEUES - 1), result.getMessageQueue().getQueueId(),
                    "stored in its priority's queue: " + result);
            }

            DefaultMQPushConsumer consumer = clients.pushConsumer(group);
            consumer.setClientRebalance(false);
            consumer.setConsumeThreadMin(1);
            consumer.setConsumeThreadMax(1);
            consumer.subscribe(topic, "*");
            List<Integer> queues = new CopyOnWriteArrayList<>();
            List<String> wrongPriority = new CopyOnWriteArrayList<>();
            consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                messages.forEach(m -> {
                    queues.add(m.getQueueId());
                    if (!Clients.body(m).startsWith("p" + m.getPriority() + "-")) {
                        wrongPriority.add(Clients.body(m) + " priority " + m.getPriority());
                    }
                });
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            long deadline = System.nanoTime() + Clients.RECEIVE_TIMEOUT.toNanos();
            while (queues.size() < PRIORITIES.length && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            assertEquals(List.of(3, 3, 3, 2, 2, 1, 1, 0, 0), queues, "highest priority first");
            assertTrue(wrongPriority.isEmpty(), "priorities as sent: " + wrongPriority);
        }
    }
}
