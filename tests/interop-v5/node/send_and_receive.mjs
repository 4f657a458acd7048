// The RocketMQ 5 Node.js client (npm rocketmq-client-nodejs) against a v5
// endpoint: a SimpleConsumer pops once (a new group starts at the queues'
// ends), a Producer sends COUNT messages, the consumer receives and acks
// them. Prints the received bodies as a sorted JSON array.
//
//   node send_and_receive.mjs ENDPOINT TOPIC GROUP COUNT
import { Producer, SimpleConsumer } from 'rocketmq-client-nodejs';

const [endpoint, topic, group, count] = process.argv.slice(2);
const n = Number(count);
const consumer = new SimpleConsumer({
  consumerGroup: group,
  endpoints: endpoint,
  subscriptions: new Map().set(topic, '*'),
  awaitDuration: 5000,
});
await consumer.startup();
await consumer.receive(16, 15000);
const producer = new Producer({ endpoints: endpoint });
await producer.startup();
for (let i = 0; i < n; i++) {
  await producer.send({ topic, tag: 'node', keys: [`node-key-${i}`], body: Buffer.from(`node-${i}`) });
}
const got = [];
const deadline = Date.now() + 30000;
while (got.length < n && Date.now() < deadline) {
  for (const message of await consumer.receive(16, 15000)) {
    got.push(message.body.toString());
    await consumer.ack(message);
  }
}
console.log(JSON.stringify(got.sort()));
// The client's shared logger closes with the first shutdown and then
// throws on the second's log line: not this test's concern.
for (const client of [producer, consumer]) {
  try {
    await client.shutdown();
  } catch (error) {
    console.error(`shutdown: ${error.message}`);
  }
}
process.exit(0);
