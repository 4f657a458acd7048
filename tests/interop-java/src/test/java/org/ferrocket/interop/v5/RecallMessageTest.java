package org.ferrocket.interop.v5;

import static org.ferrocket.interop.Clients.body;
import static org.ferrocket.interop.Clients.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.producer.RecallMessageHandle;
import org.ferrocket.interop.BrokerSettings;
import org.ferrocket.interop.Clients;
import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.FerrocketExtension;
import org.ferrocket.interop.Names;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * 5.x only: RecallMessage (RocketMQ 5.3, RECALL_MESSAGE 370) with
 * DefaultMQProducer.recallMessage and the handle a timer send answers.
 */
@ExtendWith(FerrocketExtension.class)
@BrokerSettings({"recallMessageEnable=true"})
class RecallMessageTest {
    /** ILLEGAL_OPERATION, Java's answer to a handle it refuses. */
    private static final int ILLEGAL_OPERATION = 604;

    @Test
    void aRecalledTimerMessageIsNeverDelivered(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("RecallT"), 2);
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.producer();
            long due = System.currentTimeMillis() + 4_000;
            SendResult recalled = producer.send(timed(topic, "recalled", due));
            SendResult kept = producer.send(timed(topic, "kept", due));
            SendResult plain = producer.send(new Message(topic, bytes("plain")));
            Message levelled = new Message(topic, bytes("level"));
            levelled.setDelayTimeLevel(1);
            SendResult level = producer.send(levelled);
            assertNotNull(recalled.getRecallHandle(), "a timer message's send answers a recall handle");
            assertNotNull(kept.getRecallHandle());
            assertNull(plain.getRecallHandle(), "a plain message has no recall handle");
            assertNull(level.getRecallHandle(), "a delay-level message has no recall handle (as in Java)");

            String id = producer.recallMessage(topic, recalled.getRecallHandle());
            assertEquals(recalled.getMsgId(), id, "recall answers the recalled message's id");
            // Recalling twice is accepted (Java checks only the handle).
            assertEquals(id, producer.recallMessage(topic, recalled.getRecallHandle()));

            List<MessageExt> read = clients.readAll(topic, "*", 3);
            assertTrue(System.currentTimeMillis() >= due - 1_000, "kept came at its time");
            // The recalled one was due with the kept one: give it time anyway.
            Thread.sleep(2_000);
            read.addAll(clients.readAll(topic, "*", 0, java.time.Duration.ZERO));
            Set<String> bodies = new HashSet<>();
            for (MessageExt message : read) {
                bodies.add(body(message));
            }
            assertEquals(Set.of("kept", "plain", "level"), bodies, "what was delivered");
        }
    }

    @Test
    void badHandlesAreRefusedWithJavasCodes(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("RecallBad"), 1);
        String other = server.createTopic(Names.unique("RecallOther"), 1);
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.producer();
            SendResult sent = producer.send(timed(topic, "held", System.currentTimeMillis() + 30_000));
            RecallMessageHandle.HandleV1 handle =
                (RecallMessageHandle.HandleV1) RecallMessageHandle.decodeHandle(sent.getRecallHandle());
            assertEquals(topic, handle.getTopic());
            assertEquals(sent.getMsgId(), handle.getMessageId());

            // Not a handle at all: the client refuses it before sending.
            assertThrows(MQClientException.class, () -> producer.recallMessage(topic, "not a handle"));

            String past = RecallMessageHandle.HandleV1.buildHandle(topic, handle.getBrokerName(),
                Long.toString(System.currentTimeMillis() - 1_000), handle.getMessageId());
            MQBrokerException late = assertThrows(MQBrokerException.class,
                () -> producer.recallMessage(topic, past));
            assertEquals(ILLEGAL_OPERATION, late.getResponseCode());
            assertTrue(late.getErrorMessage().contains("timestamp invalid"), late.getErrorMessage());

            MQBrokerException mismatch = assertThrows(MQBrokerException.class,
                () -> producer.recallMessage(other, sent.getRecallHandle()));
            assertEquals(ILLEGAL_OPERATION, mismatch.getResponseCode());
            assertTrue(mismatch.getErrorMessage().contains("topic not match"), mismatch.getErrorMessage());
        }
    }

    private static Message timed(String topic, String body, long due) {
        Message message = new Message(topic, bytes(body));
        message.setDeliverTimeMs(due);
        return message;
    }
}
