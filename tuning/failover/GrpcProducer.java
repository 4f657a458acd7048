// Sends one message every PERIOD_MS with Apache RocketMQ's v5 gRPC client
// (rocketmq-client-java 5.2.0, every setting at its default, plaintext) and
// prints the wall-clock time (epoch ms) of each acknowledged send and of its
// start on stdout ("ACK START");
// a failed send prints "E <epoch ms> <reason>". Used by tuning/failover.sh:
//   java -cp GRPC_CLASSPATH GrpcProducer.java ENDPOINTS TOPIC PERIOD_MS
// ENDPOINTS is "host:port" or "host:port;host:port" (the client's syntax).
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.producer.Producer;

public class GrpcProducer {
    public static void main(String[] args) throws Exception {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration config = ClientConfiguration.newBuilder()
            .setEndpoints(args[0]).enableSsl(false).build();
        String topic = args[1];
        long periodMs = Long.parseLong(args[2]);
        Producer producer = provider.newProducerBuilder()
            .setClientConfiguration(config).setTopics(topic).build();
        byte[] body = new byte[128];
        while (true) {
            long start = System.currentTimeMillis();
            try {
                producer.send(provider.newMessageBuilder().setTopic(topic).setBody(body).build());
                System.out.println(System.currentTimeMillis() + " " + start);
            } catch (Exception e) {
                String why = String.valueOf(e.getMessage()).replace('\n', ' ');
                System.out.println("E " + System.currentTimeMillis() + " " + why.substring(0, Math.min(200, why.length())));
            }
            System.out.flush();
            Thread.sleep(periodMs);
        }
    }
}
