package org.ferrocket.interop.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.ferrocket.interop.BrokerSettings;
import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.Names;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Compaction topics (RocketMQ 5.1) through the v5 API: a topic made by
 * `ferrocket admin topic create --attributes +cleanup.policy=COMPACTION`,
 * several versions of several keys (`setKeys`), compacted every 500 ms;
 * a SimpleConsumer of a new group then receives only the newest message
 * per key (its pops read the compacted file, as every consumer's reads).
 */
@BrokerSettings({"compactionScheduleInternal=500"})
class CompactionTest extends GrpcTestBase {
    private static final int KEYS = 4;
    private static final int VERSIONS = 5;

    @ParameterizedTest
    @EnumSource(Endpoint.class)
    void aNewGroupReceivesTheNewestMessagePerKey(Endpoint endpoint, Ferrocket server) throws Exception {
        String address = address(endpoint, server);
        String topic = server.createTopic(Names.unique("GrpcCompact"), 1, List.of(),
            List.of("--attributes", "+cleanup.policy=COMPACTION"));
        Map<String, String> newest = new TreeMap<>();
        try (Producer producer = V5.producer(address, topic)) {
            for (int version = 0; version < VERSIONS; version++) {
                for (int key = 0; key < KEYS; key++) {
                    String body = "key" + key + "-v" + version;
                    producer.send(V5.message(topic, body).setKeys("key" + key).build());
                    newest.put("key" + key, body);
                }
            }
        }
        Map<String, String> received = Map.of();
        long deadline = System.nanoTime() + Duration.ofSeconds(40).toNanos();
        while (!received.equals(newest) && System.nanoTime() < deadline) {
            received = receiveAll(address, topic);
        }
        assertEquals(newest, received, "a new group, once compacted");
    }

    /** What a new group receives until a receive finds nothing, by key. */
    private static Map<String, String> receiveAll(String address, String topic) throws Exception {
        Map<String, String> bodies = new TreeMap<>();
        try (SimpleConsumer consumer = V5.simpleConsumer(address, Names.unique("GrpcCompactGroup"), topic)) {
            for (int round = 0; round < 20; round++) {
                List<MessageView> views = consumer.receive(16, V5.INVISIBLE);
                if (views.isEmpty()) {
                    break;
                }
                for (MessageView view : views) {
                    consumer.ack(view);
                    String key = String.join(" ", view.getKeys());
                    String before = bodies.put(key, V5.body(view));
                    if (before != null) {
                        bodies.put(key, "received twice: " + before + ", " + V5.body(view));
                    }
                }
            }
        }
        return bodies;
    }
}
