package org.ferrocket.interop;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * The Java clients of one test, each with its own instance name (its own
 * client factory and connections), pointed at one server; all shut down
 * by {@link #close()}, newest first.
 */
public final class Clients implements AutoCloseable {
    public static final int SEND_TIMEOUT_MS = 10_000;
    public static final Duration RECEIVE_TIMEOUT = Duration.ofSeconds(40);

    private final String namesrvAddr;
    private final Deque<Runnable> shutdowns = new ArrayDeque<>();

    public Clients(Ferrocket server) {
        this(server.namesrvAddr());
    }

    /** Clients of any name server (a mixed cluster's: Ferrocket's or Apache RocketMQ's). */
    public Clients(String namesrvAddr) {
        this.namesrvAddr = namesrvAddr;
    }

    /** Name server address and a unique instance name. */
    public <T extends ClientConfig> T configure(T client) {
        client.setNamesrvAddr(namesrvAddr);
        client.setInstanceName(Names.unique("i"));
        client.setVipChannelEnabled(false);
        // A consumer's retry topic comes to be at its group's first
        // heartbeat, after the client's first route lookup (as with Apache's
        // broker); the client finds its route at its next name server poll,
        // 30 s by default.
        client.setPollNameServerInterval(1000);
        return client;
    }

    /** Registers a client this class did not make, shut down by {@link #close()}. */
    public <T> T track(T client, Runnable shutdown) {
        shutdowns.push(shutdown);
        return client;
    }

    public DefaultMQProducer producer() throws Exception {
        DefaultMQProducer producer = configure(new DefaultMQProducer(Names.unique("PG")));
        producer.setSendMsgTimeout(SEND_TIMEOUT_MS);
        producer.start();
        shutdowns.push(producer::shutdown);
        return producer;
    }

    public TransactionMQProducer transactionProducer(TransactionListener listener) throws Exception {
        TransactionMQProducer producer = configure(new TransactionMQProducer(Names.unique("TPG")));
        producer.setSendMsgTimeout(SEND_TIMEOUT_MS);
        producer.setTransactionListener(listener);
        producer.start();
        shutdowns.push(producer::shutdown);
        return producer;
    }

    /** A push consumer of a new group, from the first offset; not started. */
    public DefaultMQPushConsumer pushConsumer(String group) {
        DefaultMQPushConsumer consumer = configure(new DefaultMQPushConsumer(group));
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setConsumeThreadMin(2);
        consumer.setConsumeThreadMax(4);
        shutdowns.push(consumer::shutdown);
        return consumer;
    }

    /** A lite pull consumer of `group`, from the first offset; not started. */
    public DefaultLitePullConsumer litePullConsumer(String group) {
        DefaultLitePullConsumer consumer = configure(new DefaultLitePullConsumer(group));
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        shutdowns.push(consumer::shutdown);
        return consumer;
    }

    /**
     * Reads `topic` from offset 0 of every queue with the plain pull
     * consumer (PULL_MESSAGE, no subscription state) until at least
     * `expected` messages came or the receive timeout passed; returns all read.
     */
    public List<MessageExt> readAll(String topic, String expression, int expected) throws Exception {
        return readAll(topic, expression, expected, RECEIVE_TIMEOUT);
    }

    /** {@link #readAll(String, String, int)} with its own timeout (zero: one pass). */
    @SuppressWarnings("deprecation")
    public List<MessageExt> readAll(String topic, String expression, int expected, Duration timeout)
        throws Exception {
        DefaultMQPullConsumer reader = configure(new DefaultMQPullConsumer(Names.unique("ReaderCG")));
        reader.start();
        try {
            Map<MessageQueue, Long> next = new HashMap<>();
            List<MessageExt> read = new ArrayList<>();
            long deadline = System.nanoTime() + timeout.toNanos();
            while (true) {
                for (MessageQueue queue : reader.fetchSubscribeMessageQueues(topic)) {
                    drain(reader, queue, expression, next, read);
                }
                if (read.size() >= expected || System.nanoTime() >= deadline) {
                    break;
                }
                Thread.sleep(200);
            }
            return read;
        } finally {
            reader.shutdown();
        }
    }

    @SuppressWarnings("deprecation")
    private static void drain(DefaultMQPullConsumer reader, MessageQueue queue, String expression,
        Map<MessageQueue, Long> next, List<MessageExt> read) throws Exception {
        while (true) {
            long offset = next.getOrDefault(queue, 0L);
            PullResult result = reader.pull(queue, expression, offset, 32);
            next.put(queue, result.getNextBeginOffset());
            if (result.getPullStatus() != PullStatus.FOUND) {
                return;
            }
            read.addAll(result.getMsgFoundList());
        }
    }

    public static String body(MessageExt message) {
        return new String(message.getBody(), StandardCharsets.UTF_8);
    }

    public static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        while (!shutdowns.isEmpty()) {
            try {
                shutdowns.pop().run();
            } catch (RuntimeException e) {
                System.err.println("shutting a client down failed: " + e);
            }
        }
    }
}
