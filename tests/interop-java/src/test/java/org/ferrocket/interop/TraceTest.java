package org.ferrocket.interop;

import static org.ferrocket.interop.Clients.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.trace.TraceBean;
import org.apache.rocketmq.client.trace.TraceContext;
import org.apache.rocketmq.client.trace.TraceDataEncoder;
import org.apache.rocketmq.client.trace.TraceType;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Message trace: a producer made with `new DefaultMQProducer(group, true,
 * null)` (enableMsgTrace, the default trace topic; 5.x has no two-argument
 * constructor) and a consumer with `new DefaultMQPushConsumer(group, true,
 * null)` send their trace records (AsyncTraceDispatcher) to
 * RMQ_SYS_TRACE_TOPIC. Read back with the plain pull consumer and decoded
 * with the client's TraceDataEncoder, the topic holds a Pub record for every
 * message id sent, SubBefore and SubAfter records for every one consumed,
 * and each id among the trace messages' keys; a trace query by message id
 * (QUERY_MESSAGE on the trace topic) finds the message's Pub record.
 */
@ExtendWith(FerrocketExtension.class)
class TraceTest {
    static final String TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC";
    static final int COUNT = 5;
    static final Duration TRACE_TIMEOUT = Duration.ofSeconds(40);

    /** The trace records read so far, by type (of the test's groups). */
    static final class Traces {
        final Set<String> pub = new HashSet<>();
        final Set<String> subBefore = new HashSet<>();
        final Set<String> subAfter = new HashSet<>();
        final Set<String> keys = new HashSet<>();
        final List<String> raw = new ArrayList<>();

        @Override
        public String toString() {
            return "trace topic: " + raw;
        }
    }

    private static Traces readTraces(Clients clients, String producerGroup, String consumerGroup,
        String topic) throws Exception {
        Traces traces = new Traces();
        for (MessageExt trace : clients.readAll(TRACE_TOPIC, "*", 0, Duration.ZERO)) {
            String body = Clients.body(trace);
            traces.raw.add(trace.getKeys() + " | " + body.replace('\u0001', '/').replace('\u0002', ';'));
            if (trace.getKeys() != null) {
                traces.keys.addAll(List.of(trace.getKeys().split(" ")));
            }
            for (TraceContext context : TraceDataEncoder.decoderFromTraceDataString(body)) {
                for (TraceBean bean : context.getTraceBeans()) {
                    if (context.getTraceType() == TraceType.Pub && producerGroup.equals(context.getGroupName())) {
                        assertEquals(topic, bean.getTopic(), "Pub record's topic");
                        traces.pub.add(bean.getMsgId());
                    } else if (context.getTraceType() == TraceType.SubBefore
                        && consumerGroup.equals(context.getGroupName())) {
                        traces.subBefore.add(bean.getMsgId());
                    } else if (context.getTraceType() == TraceType.SubAfter) {
                        traces.subAfter.add(bean.getMsgId());
                    }
                }
            }
        }
        return traces;
    }

    /** Sends COUNT traced messages to a new topic; returns msgId -> body. */
    private static Map<String, String> sendTraced(Clients clients, String topic, String producerGroup)
        throws Exception {
        DefaultMQProducer producer = clients.configure(new DefaultMQProducer(producerGroup, true, null));
        producer.setSendMsgTimeout(Clients.SEND_TIMEOUT_MS);
        producer.start();
        clients.track(producer, producer::shutdown);
        Map<String, String> sent = new TreeMap<>();
        for (int i = 0; i < COUNT; i++) {
            SendResult result = producer.send(new Message(topic, "TagT", "trace-key-" + i, bytes("trace-" + i)));
            assertEquals(SendStatus.SEND_OK, result.getSendStatus(), result.toString());
            sent.put(result.getMsgId(), "trace-" + i);
        }
        return sent;
    }

    @Test
    void producerTraceReachesTheTraceTopic(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("TraceT"), 2);
        String producerGroup = Names.unique("TracePG");
        try (Clients clients = new Clients(server)) {
            Map<String, String> sent = sendTraced(clients, topic, producerGroup);
            Traces traces = new Traces();
            long deadline = System.nanoTime() + TRACE_TIMEOUT.toNanos();
            while (System.nanoTime() < deadline) {
                traces = readTraces(clients, producerGroup, "-", topic);
                if (traces.pub.containsAll(sent.keySet()) && traces.keys.containsAll(sent.keySet())) {
                    break;
                }
                Thread.sleep(500);
            }
            assertTrue(traces.pub.containsAll(sent.keySet()), "Pub records " + traces.pub + "; " + traces);
            assertTrue(traces.keys.containsAll(sent.keySet()), "trace message keys " + traces.keys);
            // The trace query: QUERY_MESSAGE on the trace topic by the message
            // id as key, as mqadmin queryMsgTraceById and the dashboard do.
            DefaultMQProducer querier = clients.producer();
            for (String msgId : sent.keySet()) {
                assertEquals(Set.of(msgId), queryPubTraces(querier, producerGroup, msgId), "trace of " + msgId);
            }
        }
    }

    /** The ids of the Pub records that a trace query for {@code msgId} finds. */
    @SuppressWarnings("deprecation")
    private static Set<String> queryPubTraces(DefaultMQProducer querier, String producerGroup, String msgId)
        throws Exception {
        QueryResult found = querier.queryMessage(TRACE_TOPIC, msgId, 64, 0, Long.MAX_VALUE);
        Set<String> ids = new HashSet<>();
        for (MessageExt trace : found.getMessageList()) {
            for (TraceContext context : TraceDataEncoder.decoderFromTraceDataString(Clients.body(trace))) {
                for (TraceBean bean : context.getTraceBeans()) {
                    if (context.getTraceType() == TraceType.Pub && producerGroup.equals(context.getGroupName())
                        && msgId.equals(bean.getMsgId())) {
                        ids.add(bean.getMsgId());
                    }
                }
            }
        }
        return ids;
    }

    @Test
    void consumerTraceReachesTheTraceTopic(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("TraceCT"), 2);
        String producerGroup = Names.unique("TracePG");
        String consumerGroup = Names.unique("TraceCG");
        try (Clients clients = new Clients(server)) {
            Map<String, String> sent = sendTraced(clients, topic, producerGroup);

            DefaultMQPushConsumer consumer = clients.configure(new DefaultMQPushConsumer(consumerGroup, true, null));
            clients.track(consumer, consumer::shutdown);
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            consumer.subscribe(topic, "*");
            Map<String, String> received = new ConcurrentHashMap<>();
            consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                messages.forEach(m -> received.put(m.getMsgId(), Clients.body(m)));
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            long deadline = System.nanoTime() + Clients.RECEIVE_TIMEOUT.toNanos();
            while (received.size() < COUNT && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            assertEquals(sent, new TreeMap<>(received));

            // The dispatcher sends its batches asynchronously (at least every 5 s).
            Traces traces = new Traces();
            deadline = System.nanoTime() + TRACE_TIMEOUT.toNanos();
            while (System.nanoTime() < deadline) {
                traces = readTraces(clients, producerGroup, consumerGroup, topic);
                if (traces.subBefore.containsAll(sent.keySet()) && traces.subAfter.containsAll(sent.keySet())) {
                    break;
                }
                Thread.sleep(500);
            }
            assertTrue(traces.subBefore.containsAll(sent.keySet()),
                "SubBefore records " + traces.subBefore + "; " + traces);
            assertTrue(traces.subAfter.containsAll(sent.keySet()),
                "SubAfter records " + traces.subAfter + "; " + traces);
        }
    }
}
