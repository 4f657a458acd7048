package org.ferrocket.interop.v5;

import static org.ferrocket.interop.Clients.body;
import static org.ferrocket.interop.Clients.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.compression.CompressionType;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.ferrocket.interop.Clients;
import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.FerrocketExtension;
import org.ferrocket.interop.Names;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * 5.x only: the producer's compressType (LZ4 and ZSTD besides zlib). The
 * client compresses a body over compressMsgBodyOverHowmuch (4 KiB) and names
 * the codec in sysFlag bits 8-10; the broker stores it untouched and a
 * consumer, pull or push, inflates it by those bits.
 */
@ExtendWith(FerrocketExtension.class)
class CompressionTypeTest {
    static String bigText(String tag) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; text.length() < 48 * 1024; i++) {
            text.append(tag).append(" line ").append(i).append(" of a compressible body\n");
        }
        return text.toString();
    }

    @ParameterizedTest
    @EnumSource(value = CompressionType.class, names = {"LZ4", "ZSTD"})
    void storedCompressedAndReadWhole(CompressionType type, Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("Zip" + type + "T"), 2);
        String text = bigText(type.name());
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.configure(new DefaultMQProducer(Names.unique("ZipPG")));
            producer.setSendMsgTimeout(Clients.SEND_TIMEOUT_MS);
            producer.setCompressType(type);
            producer.start();
            clients.track(producer, producer::shutdown);
            assertTrue(bytes(text).length > producer.getCompressMsgBodyOverHowmuch());
            SendResult result = producer.send(new Message(topic, "TagZ", bytes(text)));
            assertEquals(SendStatus.SEND_OK, result.getSendStatus(), result.toString());

            // Pull: the record as stored, much smaller than the body, with
            // the codec's type bits (the client clears COMPRESSED, bit 0,
            // once it has inflated the body).
            List<MessageExt> read = clients.readAll(topic, "TagZ", 1);
            assertEquals(1, read.size());
            MessageExt message = read.get(0);
            assertEquals(result.getMsgId(), message.getMsgId());
            assertEquals(text, body(message));
            assertEquals(type.getCompressionFlag(), message.getSysFlag() & 0x700, "sysFlag " + message.getSysFlag());
            assertTrue(message.getStoreSize() < text.length() / 4, "store size " + message.getStoreSize());

            // Push: the same body.
            Map<String, String> pushed = new ConcurrentHashMap<>();
            CountDownLatch got = new CountDownLatch(1);
            DefaultMQPushConsumer consumer = clients.pushConsumer(Names.unique("ZipCG"));
            consumer.subscribe(topic, "TagZ");
            consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                for (MessageExt each : messages) {
                    pushed.put(each.getMsgId(), body(each));
                    got.countDown();
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            assertTrue(got.await(Clients.RECEIVE_TIMEOUT.toSeconds(), TimeUnit.SECONDS), "nothing pushed");
            assertEquals(Map.of(result.getMsgId(), text), pushed);
        }
    }
}
