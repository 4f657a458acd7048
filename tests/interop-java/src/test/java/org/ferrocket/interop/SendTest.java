package org.ferrocket.interop;

import static org.ferrocket.interop.Clients.body;
import static org.ferrocket.interop.Clients.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Sync, async, oneway and batch sends, and a body the client compresses. */
@ExtendWith(FerrocketExtension.class)
class SendTest {
    static final int COUNT = 10;

    private static Set<String> bodies(List<MessageExt> messages) {
        return messages.stream().map(Clients::body).collect(Collectors.toCollection(TreeSet::new));
    }

    private static Set<String> expectedBodies(String prefix, int count) {
        Set<String> bodies = new TreeSet<>();
        for (int i = 0; i < count; i++) {
            bodies.add(prefix + "-" + i);
        }
        return bodies;
    }

    /** msgId (the client's unique key) -> body, as read back from the broker. */
    private static Map<String, String> idsToBodies(List<MessageExt> messages) {
        Map<String, String> ids = new HashMap<>();
        for (MessageExt message : messages) {
            ids.put(message.getMsgId(), body(message));
        }
        return ids;
    }

    @Test
    void syncSend(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("SyncT"), 4);
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.producer();
            Map<String, String> sent = new HashMap<>();
            for (int i = 0; i < COUNT; i++) {
                Message message = new Message(topic, "TagS", "key-" + i, bytes("sync-" + i));
                SendResult result = producer.send(message);
                assertEquals(SendStatus.SEND_OK, result.getSendStatus(), result.toString());
                assertNotNull(result.getMsgId());
                assertNotNull(result.getOffsetMsgId());
                assertEquals(topic, result.getMessageQueue().getTopic());
                sent.put(result.getMsgId(), "sync-" + i);
            }
            List<MessageExt> read = clients.readAll(topic, "*", COUNT);
            assertEquals(sent, idsToBodies(read));
            for (MessageExt message : read) {
                assertEquals("TagS", message.getTags());
                assertTrue(message.getKeys().startsWith("key-"), message.getKeys());
            }
        }
    }

    @Test
    void asyncSend(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("AsyncT"), 4);
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.producer();
            Map<String, String> sent = new ConcurrentHashMap<>();
            List<Throwable> failures = new ArrayList<>();
            CountDownLatch done = new CountDownLatch(COUNT);
            for (int i = 0; i < COUNT; i++) {
                String text = "async-" + i;
                producer.send(new Message(topic, bytes(text)), new SendCallback() {
                    @Override
                    public void onSuccess(SendResult result) {
                        if (result.getSendStatus() == SendStatus.SEND_OK) {
                            sent.put(result.getMsgId(), text);
                            done.countDown();
                        } else {
                            onException(new AssertionError("status " + result));
                        }
                    }

                    @Override
                    public void onException(Throwable error) {
                        synchronized (failures) {
                            failures.add(error);
                        }
                        done.countDown();
                    }
                });
            }
            assertTrue(done.await(30, TimeUnit.SECONDS), "async sends did not all complete");
            assertEquals(List.of(), failures);
            assertEquals(COUNT, sent.size());
            assertEquals(sent, idsToBodies(clients.readAll(topic, "*", COUNT)));
        }
    }

    @Test
    void onewaySend(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("OnewayT"), 4);
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.producer();
            for (int i = 0; i < COUNT; i++) {
                producer.sendOneway(new Message(topic, bytes("oneway-" + i)));
            }
            List<MessageExt> read = clients.readAll(topic, "*", COUNT);
            assertEquals(expectedBodies("oneway", COUNT), bodies(read));
            assertEquals(COUNT, read.size());
        }
    }

    @Test
    void batchSend(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("BatchT"), 4);
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.producer();
            List<Message> batch = new ArrayList<>();
            for (int i = 0; i < COUNT; i++) {
                batch.add(new Message(topic, "TagB", "bkey-" + i, bytes("batch-" + i)));
            }
            SendResult result = producer.send(batch);
            assertEquals(SendStatus.SEND_OK, result.getSendStatus(), result.toString());
            // One id per message, comma-separated, in the batch's order.
            String[] ids = result.getMsgId().split(",");
            assertEquals(COUNT, ids.length, result.getMsgId());
            List<MessageExt> read = clients.readAll(topic, "*", COUNT);
            assertEquals(COUNT, read.size());
            Map<String, String> expected = new HashMap<>();
            for (int i = 0; i < COUNT; i++) {
                expected.put(ids[i], "batch-" + i);
            }
            assertEquals(expected, idsToBodies(read));
            // A batch goes to one queue, in order, at consecutive offsets.
            int queueId = result.getMessageQueue().getQueueId();
            for (int i = 0; i < COUNT; i++) {
                MessageExt message = read.get(i);
                assertEquals(queueId, message.getQueueId());
                assertEquals(result.getQueueOffset() + i, message.getQueueOffset());
                assertEquals("batch-" + i, body(message));
                assertEquals("TagB", message.getTags());
            }
        }
    }

    /** A body over compressMsgBodyOverHowmuch (4 KiB) is sent compressed and read back whole. */
    @Test
    void compressedBody(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("ZipT"), 4);
        StringBuilder text = new StringBuilder();
        for (int i = 0; text.length() < 64 * 1024; i++) {
            text.append("line ").append(i).append(" of a compressible body\n");
        }
        byte[] big = bytes(text.toString());
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.producer();
            assertTrue(big.length > producer.getCompressMsgBodyOverHowmuch());
            SendResult result = producer.send(new Message(topic, big));
            assertEquals(SendStatus.SEND_OK, result.getSendStatus(), result.toString());
            List<MessageExt> read = clients.readAll(topic, "*", 1);
            assertEquals(1, read.size());
            MessageExt message = read.get(0);
            assertEquals(result.getMsgId(), message.getMsgId());
            assertEquals(text.toString(), body(message));
            // Stored compressed: a record much smaller than the body, with
            // the COMPRESSED sys flag (which 5.x clients clear once they
            // inflate the body, keeping the compression type bits, 0x700).
            int sysFlag = message.getSysFlag();
            assertTrue((sysFlag & 1) == 1 || (sysFlag & 0x700) != 0, "sysFlag " + sysFlag);
            assertTrue(message.getStoreSize() < big.length / 2, "store size " + message.getStoreSize());
        }
    }
}
