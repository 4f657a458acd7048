package org.ferrocket.interop;

import static org.ferrocket.interop.Clients.body;
import static org.ferrocket.interop.Clients.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Request-reply: producer.request() waits for the reply a consumer sends
 * with MessageUtil.createReplyMessage (SEND_REPLY_MESSAGE_V2 to the
 * cluster's reply topic; the broker pushes it to the requester).
 */
@ExtendWith(FerrocketExtension.class)
class RequestReplyTest {
    @Test
    void requestGetsReply(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("ReqT"), 2);
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer replier = clients.producer();
            List<Throwable> replyFailures = new CopyOnWriteArrayList<>();
            DefaultMQPushConsumer consumer = clients.pushConsumer(Names.unique("ReqCG"));
            consumer.subscribe(topic, "*");
            consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                for (MessageExt request : messages) {
                    try {
                        Message reply = MessageUtil.createReplyMessage(request, bytes("reply to " + body(request)));
                        replier.send(reply);
                    } catch (Exception e) {
                        replyFailures.add(e);
                    }
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();

            DefaultMQProducer requester = clients.producer();
            for (int i = 0; i < 3; i++) {
                Message request = new Message(topic, bytes("ping-" + i));
                Message reply = requester.request(request, 20_000);
                assertNotNull(reply, "no reply; replier failures " + replyFailures);
                assertEquals("reply to ping-" + i, new String(reply.getBody(), StandardCharsets.UTF_8));
                assertEquals(request.getProperty(MessageConst.PROPERTY_CORRELATION_ID),
                    reply.getProperty(MessageConst.PROPERTY_CORRELATION_ID));
            }
            assertEquals(List.of(), replyFailures);
        }
    }
}
