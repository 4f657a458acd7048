package org.ferrocket.interop;

import java.lang.reflect.Method;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;

/**
 * The few calls whose types moved between client versions (4.x has
 * `MessageModel` in rocketmq-common, 5.x in rocketmq-remoting), made
 * through reflection so one source compiles against both.
 */
public final class Compat {
    private Compat() {
    }

    /** `consumer.setMessageModel(MessageModel.BROADCASTING)`. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public static void broadcasting(DefaultMQPushConsumer consumer) throws ReflectiveOperationException {
        Method getter = DefaultMQPushConsumer.class.getMethod("getMessageModel");
        Class<? extends Enum> model = (Class<? extends Enum>) getter.getReturnType();
        Object value = Enum.valueOf(model, "BROADCASTING");
        DefaultMQPushConsumer.class.getMethod("setMessageModel", model).invoke(consumer, value);
        if (consumer.getMessageModel() != value) {
            throw new IllegalStateException("message model not set: " + consumer.getMessageModel());
        }
    }

    /** The client's version line: 4 or 5. */
    public static int clientMajor() {
        String version = System.getProperty("rocketmq.client.version", "4");
        return Integer.parseInt(version.substring(0, version.indexOf('.') < 0 ? version.length() : version.indexOf('.')));
    }
}
