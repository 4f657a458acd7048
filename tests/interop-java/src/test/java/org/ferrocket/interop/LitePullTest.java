package org.ferrocket.interop;

import static org.ferrocket.interop.Clients.body;
import static org.ferrocket.interop.Clients.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * DefaultLitePullConsumer in subscribe mode (rebalanced) and in assign
 * mode with seek and commitSync. The 5.x client pulls with
 * LITE_PULL_MESSAGE (request code 361), 4.x with PULL_MESSAGE.
 */
@ExtendWith(FerrocketExtension.class)
class LitePullTest {
    private static void sendAll(DefaultMQProducer producer, String topic, String prefix, int from, int to)
        throws Exception {
        for (int i = from; i < to; i++) {
            assertEquals(SendStatus.SEND_OK, producer.send(new Message(topic, bytes(prefix + i))).getSendStatus());
        }
    }

    /** Polls until `count` messages came (or the receive timeout passed). */
    private static List<MessageExt> pollFor(DefaultLitePullConsumer consumer, int count) {
        List<MessageExt> got = new ArrayList<>();
        long deadline = System.nanoTime() + Clients.RECEIVE_TIMEOUT.toNanos();
        while (got.size() < count && System.nanoTime() < deadline) {
            got.addAll(consumer.poll(500));
        }
        return got;
    }

    @Test
    void subscribeMode(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("LiteSubT"), 4);
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.producer();
            sendAll(producer, topic, "lite-", 0, 20);
            DefaultLitePullConsumer consumer = clients.litePullConsumer(Names.unique("LiteSubCG"));
            consumer.subscribe(topic, "*");
            consumer.setPullBatchSize(8);
            consumer.start();
            List<MessageExt> got = pollFor(consumer, 20);
            Set<String> expected = new TreeSet<>();
            for (int i = 0; i < 20; i++) {
                expected.add("lite-" + i);
            }
            Set<String> bodies = new TreeSet<>();
            got.forEach(m -> bodies.add(body(m)));
            assertEquals(expected, bodies);
            assertEquals(20, got.size(), "duplicates in " + got);
        }
    }

    @Test
    @SuppressWarnings("deprecation")
    void assignModeSeekAndCommit(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("LiteAsgT"), 1);
        String group = Names.unique("LiteAsgCG");
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.producer();
            sendAll(producer, topic, "asg-", 0, 10);

            DefaultLitePullConsumer first = clients.litePullConsumer(group);
            first.setAutoCommit(false);
            first.start();
            Collection<MessageQueue> queues = first.fetchMessageQueues(topic);
            assertEquals(1, queues.size(), queues.toString());
            MessageQueue queue = queues.iterator().next();
            first.assign(queues);
            // A new group starts at offset 0 (the messages are in memory, as
            // Java's broker answers QUERY_CONSUMER_OFFSET). Read them all
            // first: a seek while the assign's first pull is in flight races
            // inside the client, so the seek comes while the client waits at
            // the end. The race (DefaultLitePullConsumerImpl.java, 5.5.0
            // lines 979-988, 4.9.8 lines 946-955): the old pull task checks
            // isCancelled() before it takes the queue's lock; seek() cancels
            // it and sets the seek offset, the new task takes that offset
            // (nextPullOffset resets it to -1), and the old task, let in
            // after, finds -1 and queues its messages from offset 0.
            List<String> all = new ArrayList<>();
            pollFor(first, 10).forEach(m -> all.add(body(m)));
            assertEquals(10, all.size(), all.toString());
            assertEquals("asg-0", all.get(0));
            first.seek(queue, 4);
            List<MessageExt> got = pollFor(first, 6);
            List<String> bodies = new ArrayList<>();
            got.forEach(m -> bodies.add(body(m)));
            assertEquals(List.of("asg-4", "asg-5", "asg-6", "asg-7", "asg-8", "asg-9"), bodies);
            assertEquals(4, got.get(0).getQueueOffset());
            first.commitSync();
            first.shutdown(); // persists the committed offset to the broker

            // The broker holds the commit: offset 10.
            DefaultMQPullConsumer offsets = clients.configure(new DefaultMQPullConsumer(group));
            offsets.start();
            try {
                long deadline = System.nanoTime() + 10_000_000_000L;
                long stored = -1;
                while (stored != 10 && System.nanoTime() < deadline) {
                    stored = offsets.fetchConsumeOffset(queue, true);
                    Thread.sleep(stored == 10 ? 0 : 200);
                }
                assertEquals(10, stored);
            } finally {
                offsets.shutdown();
            }

            // A new client of the group resumes after the commit.
            sendAll(producer, topic, "asg-", 10, 12);
            DefaultLitePullConsumer second = clients.litePullConsumer(group);
            second.setAutoCommit(false);
            second.start();
            second.assign(second.fetchMessageQueues(topic));
            List<String> resumed = new ArrayList<>();
            pollFor(second, 2).forEach(m -> resumed.add(body(m)));
            assertEquals(List.of("asg-10", "asg-11"), resumed);
        }
    }
}
