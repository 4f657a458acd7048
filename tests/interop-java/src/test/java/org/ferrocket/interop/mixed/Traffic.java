package org.ferrocket.interop.mixed;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.exception.RemotingException;
import org.ferrocket.interop.Clients;

/**
 * Load that runs while brokers are replaced: a producer thread making
 * sync sends of distinct keys (only SEND_OK ones count as acknowledged;
 * a failed send is counted and the loop goes on with the next key), and a
 * push consumer recording every delivery by queue and queue offset.
 */
final class Traffic implements AutoCloseable {
    /** Between two sends: about 100 messages a second, light for a 2-core host. */
    static final long SEND_PAUSE_MS = 10;
    /** After a failed send (no route, connection refused): the client's own retries came first. */
    static final long FAILED_PAUSE_MS = 100;

    /** One stored message, as the consumer got it. */
    record Delivery(int queueId, long queueOffset, String key, long storeTimestamp) {
    }

    final String topic;
    /** Acknowledged keys to their send results. */
    final Map<String, SendResult> acked = new ConcurrentHashMap<>();
    /** Sends that threw or answered other than SEND_OK. */
    final AtomicInteger failed = new AtomicInteger();
    /** `queueId/queueOffset` to the deliveries of that message. */
    final Map<String, List<Delivery>> delivered = new ConcurrentHashMap<>();
    final Set<String> consumedKeys = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean sending = new AtomicBoolean(true);
    private final Thread sender;
    private volatile Throwable senderFailure;

    Traffic(DefaultMQProducer producer, DefaultMQPushConsumer consumer, String topic) throws Exception {
        this.topic = topic;
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            messages.forEach(this::record);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        sender = new Thread(() -> sendLoop(producer), "rolling-producer");
        sender.setDaemon(true);
        sender.start();
    }

    private void record(MessageExt message) {
        Delivery delivery = new Delivery(message.getQueueId(), message.getQueueOffset(), message.getKeys(),
            message.getStoreTimestamp());
        delivered.computeIfAbsent(delivery.queueId() + "/" + delivery.queueOffset(),
            k -> Collections.synchronizedList(new ArrayList<>())).add(delivery);
        consumedKeys.add(message.getKeys());
    }

    private void sendLoop(DefaultMQProducer producer) {
        try {
            for (long i = 0; sending.get(); i++) {
                String key = "k-" + i;
                try {
                    SendResult result = producer.send(new Message(topic, "TagA", key, Clients.bytes(key)));
                    if (result.getSendStatus() == SendStatus.SEND_OK) {
                        acked.put(key, result);
                    } else {
                        failed.incrementAndGet();
                    }
                    Thread.sleep(SEND_PAUSE_MS);
                } catch (MQClientException | RemotingException | MQBrokerException e) {
                    failed.incrementAndGet();
                    Thread.sleep(FAILED_PAUSE_MS);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            senderFailure = e;
        }
    }

    /** Stops the producer thread; throws what ended it, if anything but the stop did. */
    void stopSending() throws Exception {
        sending.set(false);
        sender.join(Clients.SEND_TIMEOUT_MS * 3L);
        if (sender.isAlive()) {
            throw new IllegalStateException("the producer thread did not stop");
        }
        if (senderFailure != null) {
            throw new IllegalStateException("the producer thread failed", senderFailure);
        }
    }

    /** Distinct messages consumed, per queue: the queue offsets, sorted. */
    Map<Integer, List<Long>> offsetsByQueue() {
        Map<Integer, List<Long>> byQueue = new TreeMap<>();
        for (String id : delivered.keySet()) {
            String[] parts = id.split("/");
            byQueue.computeIfAbsent(Integer.parseInt(parts[0]), q -> new ArrayList<>()).add(Long.parseLong(parts[1]));
        }
        byQueue.values().forEach(list -> list.sort(null));
        return byQueue;
    }

    /** Messages delivered more than once: their deliveries. */
    List<List<Delivery>> duplicates() {
        List<List<Delivery>> out = new ArrayList<>();
        for (List<Delivery> deliveries : delivered.values()) {
            synchronized (deliveries) {
                if (deliveries.size() > 1) {
                    out.add(List.copyOf(deliveries));
                }
            }
        }
        return out;
    }

    int ackedCount() {
        return acked.size();
    }

    @Override
    public void close() throws Exception {
        stopSending();
    }
}
