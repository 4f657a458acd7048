package org.ferrocket.interop;

import static org.ferrocket.interop.Clients.body;
import static org.ferrocket.interop.Clients.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * SQL92 subscriptions (MessageSelector.bySql). The push consumer asks the
 * broker at start whether it takes the expression (CHECK_CLIENT_CONFIG,
 * request code 46), then pulls with it.
 */
@ExtendWith(FerrocketExtension.class)
@BrokerSettings({"enablePropertyFilter=true"})
class SqlFilterTest {
    /** ClientManageProcessor#checkClientConfig's answer to an expression that does not compile. */
    static final int SUBSCRIPTION_PARSE_FAILED = 23;

    @Test
    void sqlSubscription(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("SqlT"), 4);
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.producer();
            Set<String> wanted = new TreeSet<>();
            for (int i = 0; i < 12; i++) {
                String colour = i % 2 == 0 ? "red" : "blue";
                Message message = new Message(topic, "TagQ", bytes("sql-" + i + "-" + colour));
                message.putUserProperty("n", Integer.toString(i));
                message.putUserProperty("colour", colour);
                assertEquals(SendStatus.SEND_OK, producer.send(message).getSendStatus());
                if (i >= 3 && i <= 9 && colour.equals("red")) {
                    wanted.add("sql-" + i + "-" + colour);
                }
            }
            Set<String> received = ConcurrentHashMap.newKeySet();
            CountDownLatch all = new CountDownLatch(wanted.size());
            DefaultMQPushConsumer consumer = clients.pushConsumer(Names.unique("SqlCG"));
            consumer.subscribe(topic, MessageSelector.bySql("n BETWEEN 3 AND 9 AND colour = 'red'"));
            consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                for (MessageExt message : messages) {
                    received.add(body(message));
                    all.countDown();
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            assertTrue(all.await(Clients.RECEIVE_TIMEOUT.toSeconds(), TimeUnit.SECONDS),
                "received only " + received);
            Thread.sleep(1000); // a wrongly matched message has a moment to show up
            assertEquals(wanted, new TreeSet<>(received));
        }
    }

    @Test
    void badSqlRefusedAtStart(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("BadSqlT"), 1);
        try (Clients clients = new Clients(server)) {
            DefaultMQPushConsumer consumer = clients.pushConsumer(Names.unique("BadSqlCG"));
            consumer.subscribe(topic, MessageSelector.bySql("n BETWEEN AND"));
            consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) ->
                ConsumeConcurrentlyStatus.CONSUME_SUCCESS);
            MQClientException refused = assertThrows(MQClientException.class, consumer::start);
            assertEquals(SUBSCRIPTION_PARSE_FAILED, refused.getResponseCode(), refused.toString());
        }
    }
}
