package org.ferrocket.interop.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.MessageListener;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.FerrocketExtension;
import org.ferrocket.interop.Names;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Receipt-handle auto-renew: the PushConsumer receives with auto_renew, and
 * the endpoint keeps renewing the invisible time of what its listener
 * holds. Runs against a `ferrocket proxy` with a 10 s invisible time
 * (`defaultInvisibleTimeMills`) looked at every second; the broker port's
 * endpoint renews the same way with Java's defaults (60 s invisible),
 * too slow to wait out here.
 */
@ExtendWith(FerrocketExtension.class)
class AutoRenewTest {
    private static final List<String> RENEW = List.of(
        "defaultInvisibleTimeMills=10000", "renewSchedulePeriodMillis=1000");
    /** Twice the invisible time. */
    private static final long LISTENER_SLEEP_MS = 20_000;

    private static PushConsumer consumer(String address, String topic, String group, MessageListener listener)
        throws Exception {
        return V5.PROVIDER.newPushConsumerBuilder()
            .setClientConfiguration(V5.config(address))
            .setConsumerGroup(group)
            .setSubscriptionExpressions(Map.of(topic, new FilterExpression("*", FilterExpressionType.TAG)))
            .setConsumptionThreadCount(4)
            .setMessageListener(listener)
            .build();
    }

    private static void send(String address, String topic, List<String> bodies) throws Exception {
        try (Producer producer = V5.producer(address, topic)) {
            for (String body : bodies) {
                producer.send(V5.message(topic, body).build());
            }
        }
    }

    /** The group's total lag from `ferrocket admin consumer progress`, -1 when unread. */
    private static long diffTotal(Ferrocket server, String group, String topic) throws Exception {
        String out = server.admin(false, "consumer", "progress", "-g", group, "-t", topic);
        for (String line : out.split("\n")) {
            if (line.startsWith("Consume Diff Total:")) {
                return Long.parseLong(line.substring("Consume Diff Total:".length()).trim());
            }
        }
        return -1;
    }

    @Test
    void slowListenerGetsEachMessageOnceAndAcks(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("GrpcRenew"), 1);
        String group = Names.unique("GrpcRenewGroup");
        List<String> bodies = List.of("slow-0", "slow-1", "slow-2");
        Map<String, AtomicInteger> deliveries = new ConcurrentHashMap<>();
        CountDownLatch done = new CountDownLatch(bodies.size());
        try (FerrocketProxy proxy = FerrocketProxy.start(server, RENEW)) {
            send(proxy.address(), topic, bodies);
            try (PushConsumer ignored = consumer(proxy.address(), topic, group, view -> {
                deliveries.computeIfAbsent(V5.body(view), b -> new AtomicInteger()).incrementAndGet();
                try {
                    Thread.sleep(LISTENER_SLEEP_MS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return ConsumeResult.FAILURE;
                }
                done.countDown();
                return ConsumeResult.SUCCESS;
            })) {
                assertTrue(done.await(90, TimeUnit.SECONDS), "consumed " + deliveries + "\n" + proxy.logText());
                // The acks land: the group's lag drops to 0 (a stale handle's
                // ack would leave the messages pending).
                long diff = -1;
                for (int i = 0; i < 40 && diff != 0; i++) {
                    diff = diffTotal(server, group, topic);
                    if (diff != 0) {
                        Thread.sleep(500);
                    }
                }
                assertEquals(0, diff, "every message acked");
                // Nothing comes back after another invisible time.
                Thread.sleep(12_000);
            }
        }
        assertEquals(bodies.size(), deliveries.size(), "deliveries " + deliveries);
        deliveries.forEach((body, count) -> assertEquals(1, count.get(), body + " delivered once"));
    }

    @Test
    void pastTheMaxRenewTimeTheMessageComesBack(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("GrpcRenewMax"), 1);
        String group = Names.unique("GrpcRenewMaxGroup");
        List<Integer> attempts = new CopyOnWriteArrayList<>();
        CountDownLatch second = new CountDownLatch(1);
        List<String> settings = List.of("defaultInvisibleTimeMills=10000", "renewSchedulePeriodMillis=1000",
            "renewMaxTimeMillis=2000", "renewAheadTimeMillis=5000");
        try (FerrocketProxy proxy = FerrocketProxy.start(server, settings)) {
            send(proxy.address(), topic, List.of("held"));
            try (PushConsumer ignored = consumer(proxy.address(), topic, group, view -> {
                attempts.add(view.getDeliveryAttempt());
                if (view.getDeliveryAttempt() > 1) {
                    second.countDown();
                    return ConsumeResult.SUCCESS;
                }
                try {
                    // Longer than the max renew time plus the retry wait.
                    second.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return ConsumeResult.SUCCESS;
            })) {
                assertTrue(second.await(60, TimeUnit.SECONDS), "attempts " + attempts + "\n" + proxy.logText());
            }
        }
        assertEquals(List.of(1, 2), attempts.subList(0, 2));
    }
}
