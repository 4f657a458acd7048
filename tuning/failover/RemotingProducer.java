// Sends one message every PERIOD_MS with Apache RocketMQ's Java Remoting
// client (rocketmq-client 5.5.0, every setting at its default) and prints the
// wall-clock time (epoch ms) of each acknowledged send (SEND_OK) and of its
// start on stdout ("ACK START");
// a failed send prints "E <epoch ms> <reason>". Used by tuning/failover.sh:
//   java -cp REMOTING_CLASSPATH RemotingProducer.java NAMESRV TOPIC PERIOD_MS [POLL_MS]
// POLL_MS: setPollNameServerInterval (the client's route timer, 30 s by default).
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

public class RemotingProducer {
    public static void main(String[] args) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("failover-remoting-" + ProcessHandle.current().pid());
        producer.setNamesrvAddr(args[0]);
        if (args.length > 3) {
            producer.setPollNameServerInterval(Integer.parseInt(args[3]));
        }
        producer.start();
        String topic = args[1];
        long periodMs = Long.parseLong(args[2]);
        byte[] body = new byte[128];
        while (true) {
            long start = System.currentTimeMillis();
            try {
                SendResult result = producer.send(new Message(topic, body));
                long now = System.currentTimeMillis();
                if (result.getSendStatus() == SendStatus.SEND_OK) {
                    System.out.println(now + " " + start);
                } else {
                    System.out.println("E " + now + " " + result.getSendStatus());
                }
            } catch (Exception e) {
                String why = String.valueOf(e.getMessage()).replace('\n', ' ');
                System.out.println("E " + System.currentTimeMillis() + " " + why.substring(0, Math.min(200, why.length())));
            }
            System.out.flush();
            Thread.sleep(periodMs);
        }
    }
}
