package interop

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

const (
	orderQueues = 4
	orderCount  = 4
	orderSteps  = 10
)

// byOrderID sends a message to queue (order id % queue count), the order
// id taken from the message's "orderId" property: the Go client's way to
// Java's MessageQueueSelector with an argument.
type byOrderID struct{}

func (byOrderID) Select(msg *primitive.Message, mqs []*primitive.MessageQueue, _ string) *primitive.MessageQueue {
	id, err := strconv.Atoi(msg.GetProperty("orderId"))
	if err != nil || len(mqs) == 0 {
		return nil
	}
	want := id % len(mqs)
	for _, mq := range mqs {
		if mq.QueueId == want {
			return mq
		}
	}
	return nil
}

// TestOrderly: orderly send through a queue selector, and an orderly push
// consumer (LOCK_BATCH_MQ, one queue at a time) that must see each queue's
// messages in the order they were sent.
func TestOrderly(t *testing.T) {
	s := startFerrocket(t)
	topic := s.CreateTopic(t, uniqueName("GoOrderT"), orderQueues)
	p := newProducer(t, s, producer.WithQueueSelector(byOrderID{}))
	sent := map[int][]string{} // queue id -> bodies in send order
	for step := 0; step < orderSteps; step++ {
		for order := 0; order < orderCount; order++ {
			body := fmt.Sprintf("order-%d-step-%d", order, step)
			msg := primitive.NewMessage(topic, []byte(body)).WithTag("TagO")
			msg.WithProperty("orderId", strconv.Itoa(order))
			res := sendSync(t, p, msg)
			if res.MessageQueue.QueueId != order%orderQueues {
				t.Fatalf("order %d went to queue %d, want %d", order, res.MessageQueue.QueueId, order%orderQueues)
			}
			sent[res.MessageQueue.QueueId] = append(sent[res.MessageQueue.QueueId], body)
		}
	}

	var mu sync.Mutex
	received := map[int][]string{}
	count := newBodies()
	newPushConsumer(t, s, uniqueName("GoOrderCG"), topic, all,
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			if _, ok := primitive.GetOrderlyCtx(ctx); !ok {
				return consumer.SuspendCurrentQueueAMoment, fmt.Errorf("not called as an orderly consumer")
			}
			mu.Lock()
			for _, m := range msgs {
				received[m.Queue.QueueId] = append(received[m.Queue.QueueId], string(m.Body))
			}
			mu.Unlock()
			for _, m := range msgs {
				count.add(string(m.Body))
			}
			return consumer.ConsumeSuccess, nil
		},
		consumer.WithConsumerOrder(true),
		consumer.WithConsumeMessageBatchMaxSize(3))
	count.waitCount(t, orderCount*orderSteps)
	mu.Lock()
	defer mu.Unlock()
	// Each queue delivered exactly what was sent to it, in order.
	for q := 0; q < orderQueues; q++ {
		if fmt.Sprint(received[q]) != fmt.Sprint(sent[q]) {
			t.Fatalf("queue %d: sent %v, received %v", q, sent[q], received[q])
		}
	}
	if len(received) != len(sent) {
		t.Fatalf("received from queues %v, sent to %v", received, sent)
	}
}
