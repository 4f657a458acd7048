package org.ferrocket.interop.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.Names;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The v5 PushConsumer (pop-based in the client): every message handed to
 * the listener, a FAILURE redelivered with a higher delivery attempt. The
 * client's receipt-handle auto-renewal is not exercised (messages are
 * consumed well within the invisible time).
 */
class PushConsumerTest extends GrpcTestBase {
    @ParameterizedTest
    @EnumSource(Endpoint.class)
    void listenerGetsEveryMessage(Endpoint endpoint, Ferrocket server) throws Exception {
        String address = address(endpoint, server);
        String topic = server.createTopic(Names.unique("GrpcPush"), 4);
        Set<String> sent = ConcurrentHashMap.newKeySet();
        Map<String, Integer> attempts = new ConcurrentHashMap<>();
        CountDownLatch done = new CountDownLatch(20);
        try (Producer producer = V5.producer(address, topic)) {
            for (int i = 0; i < 20; i++) {
                String body = "push-" + i;
                producer.send(V5.message(topic, body).build());
                sent.add(body);
            }
        }
        try (PushConsumer consumer = V5.PROVIDER.newPushConsumerBuilder()
            .setClientConfiguration(V5.config(address))
            .setConsumerGroup(Names.unique("GrpcPushGroup"))
            .setSubscriptionExpressions(Map.of(topic, new FilterExpression("*", FilterExpressionType.TAG)))
            .setMessageListener(view -> {
                String body = V5.body(view);
                // push-0 fails once: it must come back as attempt 2.
                if (body.equals("push-0") && view.getDeliveryAttempt() == 1) {
                    attempts.put(body, 1);
                    return ConsumeResult.FAILURE;
                }
                if (attempts.putIfAbsent(body, view.getDeliveryAttempt()) == null || body.equals("push-0")) {
                    attempts.put(body, view.getDeliveryAttempt());
                    done.countDown();
                }
                return ConsumeResult.SUCCESS;
            })
            .build()) {
            assertTrue(done.await(Duration.ofSeconds(40).toSeconds(), TimeUnit.SECONDS),
                "consumed " + attempts.keySet() + " of " + sent);
        }
        assertEquals(sent, attempts.keySet());
        assertEquals(2, attempts.get("push-0"), "push-0 redelivered after FAILURE");
    }
}
