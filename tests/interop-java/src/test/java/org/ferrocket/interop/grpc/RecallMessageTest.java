package org.ferrocket.interop.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.RecallReceipt;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.java.exception.InternalErrorException;
import org.ferrocket.interop.BrokerSettings;
import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.Names;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** v5 Producer.recallMessage (RocketMQ 5.3's RecallMessage) with the handle a delay send answers. */
@BrokerSettings({"recallMessageEnable=true"})
class RecallMessageTest extends GrpcTestBase {
    private static final Duration RECEIVE_TIMEOUT = Duration.ofSeconds(20);

    @ParameterizedTest
    @EnumSource(Endpoint.class)
    void aRecalledDelayMessageIsNeverDelivered(Endpoint endpoint, Ferrocket server) throws Exception {
        String address = address(endpoint, server);
        String topic = server.createTopic(Names.unique("GrpcRecall"), 2);
        long due;
        try (Producer producer = V5.producer(address, topic)) {
            due = System.currentTimeMillis() + 4_000;
            SendReceipt recalled = producer.send(V5.message(topic, "recalled").setDeliveryTimestamp(due).build());
            SendReceipt kept = producer.send(V5.message(topic, "kept").setDeliveryTimestamp(due).build());
            SendReceipt now = producer.send(V5.message(topic, "now").build());
            assertFalse(recalled.getRecallHandle().isEmpty(), "a delay message's receipt has a recall handle");
            assertFalse(kept.getRecallHandle().isEmpty());
            assertTrue(now.getRecallHandle() == null || now.getRecallHandle().isEmpty(),
                "a normal message has no recall handle");

            RecallReceipt receipt = producer.recallMessage(topic, recalled.getRecallHandle());
            assertEquals(recalled.getMessageId(), receipt.getMessageId());

            InternalErrorException bad = assertThrows(InternalErrorException.class,
                () -> producer.recallMessage(topic, "bm90IGEgaGFuZGxl"));
            assertTrue(bad.getMessage().contains("recall handle is invalid"), bad.getMessage());
        }
        try (SimpleConsumer consumer = V5.simpleConsumer(address, Names.unique("GrpcRecallGroup"), topic)) {
            List<MessageView> got = V5.receiveAndAck(consumer, 2, RECEIVE_TIMEOUT);
            // The recalled one was due with the kept one: give it time anyway.
            got.addAll(V5.receiveAndAck(consumer, 1, Duration.ofSeconds(3)));
            Set<String> bodies = new HashSet<>(V5.bodies(got));
            assertEquals(Set.of("kept", "now"), bodies, "what was delivered\n" + proxyLog());
            assertTrue(System.currentTimeMillis() >= due, "the kept one came at its time");
        }
    }
}
