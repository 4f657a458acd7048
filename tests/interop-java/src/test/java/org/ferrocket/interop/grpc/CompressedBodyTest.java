package org.ferrocket.interop.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.compression.CompressionType;
import org.apache.rocketmq.common.message.Message;
import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.Names;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A body the Java 5.x Remoting producer (rocketmq-client 5.5.0) compressed,
 * with zlib, LZ4 or ZSTD, reaches a v5 SimpleConsumer inflated: the v5 API
 * has no such codecs, so the endpoint inflates by the sysFlag's compression
 * type bits, as Java's proxy does.
 */
class CompressedBodyTest extends GrpcTestBase {
    @ParameterizedTest
    @CsvSource({"BROKER, ZLIB", "BROKER, LZ4", "BROKER, ZSTD", "PROXY, ZLIB", "PROXY, LZ4", "PROXY, ZSTD"})
    void remotingCompressedBodyArrivesWhole(Endpoint endpoint, CompressionType type, Ferrocket server)
        throws Exception {
        String topic = server.createTopic(Names.unique("GrpcZip" + type), 2);
        StringBuilder text = new StringBuilder();
        for (int i = 0; text.length() < 48 * 1024; i++) {
            text.append(type).append(" line ").append(i).append(" of a compressible body\n");
        }
        DefaultMQProducer producer = new DefaultMQProducer(Names.unique("GrpcZipPG"));
        producer.setNamesrvAddr(server.namesrvAddr());
        producer.setInstanceName(Names.unique("i"));
        producer.setVipChannelEnabled(false);
        producer.setSendMsgTimeout(10_000);
        producer.setCompressType(type);
        producer.start();
        try {
            Message message = new Message(topic, text.toString().getBytes(StandardCharsets.UTF_8));
            assertEquals(SendStatus.SEND_OK, producer.send(message).getSendStatus());
        } finally {
            producer.shutdown();
        }
        String address = address(endpoint, server);
        try (SimpleConsumer consumer = V5.simpleConsumer(address, Names.unique("GrpcZipGroup"), topic)) {
            List<MessageView> got = V5.receiveAndAck(consumer, 1, Duration.ofSeconds(20));
            assertEquals(List.of(text.toString()), V5.bodies(got), proxyLog());
        }
    }
}
