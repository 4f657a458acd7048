package org.ferrocket.interop.v5;

import static org.ferrocket.interop.Clients.body;
import static org.ferrocket.interop.Clients.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.ferrocket.interop.Clients;
import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.FerrocketExtension;
import org.ferrocket.interop.Names;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** 5.x only: a timer message (Message.setDeliverTimeMs, property TIMER_DELIVER_MS). */
@ExtendWith(FerrocketExtension.class)
class TimerMessageTest {
    @Test
    void deliveredAtItsTime(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("TimerT"), 2);
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.producer();
            Map<String, Long> receivedAt = new ConcurrentHashMap<>();
            CountDownLatch got = new CountDownLatch(2);
            DefaultMQPushConsumer consumer = clients.pushConsumer(Names.unique("TimerCG"));
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
            long due = System.currentTimeMillis() + 4_000;
            Message timed = new Message(topic, bytes("timed"));
            timed.setDeliverTimeMs(due);
            assertEquals(SendStatus.SEND_OK, producer.send(timed).getSendStatus());
            assertEquals(SendStatus.SEND_OK, producer.send(new Message(topic, bytes("now"))).getSendStatus());
            assertTrue(got.await(Clients.RECEIVE_TIMEOUT.toSeconds(), TimeUnit.SECONDS),
                "received only " + receivedAt.keySet());
            long early = due - receivedAt.get("timed");
            // Timer precision is 1 s on the broker's wheel; never much before it is due.
            assertTrue(early <= 1_000, "delivered " + early + " ms before it was due");
            assertTrue(receivedAt.get("timed") - due < 15_000, "delivered far too late");
            assertTrue(receivedAt.get("now") < receivedAt.get("timed"));
        }
    }
}
