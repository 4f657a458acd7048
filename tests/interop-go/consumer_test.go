package interop

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestPushConsumer: concurrent push consumers with a tag subscription,
// broadcasting, retry after ConsumeRetryLater, and a delay level.
func TestPushConsumer(t *testing.T) {
	s := startFerrocket(t)
	t.Run("TagSubscription", func(t *testing.T) { t.Parallel(); testTagSubscription(t, s) })
	t.Run("Broadcasting", func(t *testing.T) { t.Parallel(); testBroadcasting(t, s) })
	t.Run("RetryLater", func(t *testing.T) { t.Parallel(); testRetryLater(t, s) })
	t.Run("DelayLevel", func(t *testing.T) { t.Parallel(); testDelayLevel(t, s) })
	t.Run("DeliverAt", func(t *testing.T) { t.Parallel(); testDeliverAt(t, s) })
}

// collect is a handler that adds every body to b.
func collect(b *bodies) func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	return func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			b.add(string(m.Body))
		}
		return consumer.ConsumeSuccess, nil
	}
}

func testTagSubscription(t *testing.T, s *Ferrocket) {
	topic := s.CreateTopic(t, uniqueName("GoTagT"), 4)
	p := newProducer(t, s)
	var wanted []string
	for i := 0; i < 12; i++ {
		tag := "Tag" + string("ABC"[i%3])
		body := fmt.Sprintf("%s-%d", tag, i)
		sendSync(t, p, primitive.NewMessage(topic, []byte(body)).WithTag(tag))
		if tag != "TagC" {
			wanted = append(wanted, body)
		}
	}
	received := newBodies()
	newPushConsumer(t, s, uniqueName("GoTagCG"), topic,
		consumer.MessageSelector{Type: consumer.TAG, Expression: "TagA || TagB"}, collect(received))
	received.waitCount(t, len(wanted))
	// Give a wrongly delivered TagC message a moment to show up.
	time.Sleep(time.Second)
	assertSameSet(t, "TagA || TagB bodies", wanted, received.snapshot())
}

func testBroadcasting(t *testing.T, s *Ferrocket) {
	topic := s.CreateTopic(t, uniqueName("GoBcastT"), 4)
	group := uniqueName("GoBcastCG")
	p := newProducer(t, s)
	var sent []string
	for i := 0; i < 8; i++ {
		body := fmt.Sprintf("bcast-%d", i)
		sendSync(t, p, primitive.NewMessage(topic, []byte(body)))
		sent = append(sent, body)
	}
	// Two clients (instances) of one group: each gets everything.
	first, second := newBodies(), newBodies()
	for _, b := range []*bodies{first, second} {
		newPushConsumer(t, s, group, topic, all, collect(b),
			consumer.WithConsumerModel(consumer.BroadCasting))
	}
	first.waitCount(t, len(sent))
	second.waitCount(t, len(sent))
	time.Sleep(500 * time.Millisecond)
	assertSameSet(t, "first client's bodies", sent, first.snapshot())
	assertSameSet(t, "second client's bodies", sent, second.snapshot())
}

// testRetryLater: ConsumeRetryLater sends the message back
// (CONSUMER_SEND_MSG_BACK with the delay level the handler chose); it
// comes again through the group's retry topic with ReconsumeTimes 1.
func testRetryLater(t *testing.T, s *Ferrocket) {
	topic := s.CreateTopic(t, uniqueName("GoRetryT"), 2)
	p := newProducer(t, s)
	sent := map[string]string{}
	for i := 0; i < 3; i++ {
		body := fmt.Sprintf("retry-%d", i)
		sent[sendSync(t, p, primitive.NewMessage(topic, []byte(body))).MsgID] = body
	}
	// The group's retry topic exists before the consumer starts, as for a
	// group that has consumed before. A new group's retry topic is created
	// by its first heartbeat (on Apache's broker too), but the Go client
	// looks routes up before that heartbeat and then only every 30 s
	// (_PullNameServerInterval, internal/client.go:47, not an option), so
	// without it the retry would wait up to 30 s for the route.
	group := uniqueName("GoRetryCG")
	s.CreateTopic(t, "%RETRY%"+group, 1)
	var mu sync.Mutex
	deliveries := map[string][]int32{} // msg id -> reconsume times of each delivery
	redelivered := map[string]string{}
	again := newBodies()
	newPushConsumer(t, s, group, topic, all,
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			m := msgs[0]
			mu.Lock()
			defer mu.Unlock()
			deliveries[m.MsgId] = append(deliveries[m.MsgId], m.ReconsumeTimes)
			if len(deliveries[m.MsgId]) == 1 {
				if cc, ok := primitive.GetConcurrentlyCtx(ctx); ok {
					cc.DelayLevelWhenNextConsume = 1 // 1 s, not the default 10 s
				}
				return consumer.ConsumeRetryLater, nil
			}
			if _, seen := redelivered[m.MsgId]; !seen {
				redelivered[m.MsgId] = string(m.Body)
				again.add(string(m.Body))
			}
			return consumer.ConsumeSuccess, nil
		},
		consumer.WithConsumeMessageBatchMaxSize(1))
	again.waitCount(t, len(sent))
	mu.Lock()
	defer mu.Unlock()
	// The same messages (ids, bodies) came a second time, counted as a retry.
	assertSameMap(t, "redelivered ids to bodies", sent, redelivered)
	for id := range sent {
		if d := deliveries[id]; len(d) < 2 || d[0] != 0 || d[1] != 1 {
			t.Fatalf("deliveries of %s had reconsume times %v, want [0 1]", id, d)
		}
	}
}

func testDelayLevel(t *testing.T, s *Ferrocket) {
	topic := s.CreateTopic(t, uniqueName("GoDelayT"), 2)
	p := newProducer(t, s)
	var mu sync.Mutex
	receivedAt := map[string]time.Time{}
	received := newBodies()
	newPushConsumer(t, s, uniqueName("GoDelayCG"), topic, all,
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				if _, seen := receivedAt[string(m.Body)]; !seen {
					receivedAt[string(m.Body)] = time.Now()
					received.add(string(m.Body))
				}
			}
			return consumer.ConsumeSuccess, nil
		})
	sentAt := time.Now()
	sendSync(t, p, primitive.NewMessage(topic, []byte("delayed")).WithDelayTimeLevel(2))
	sendSync(t, p, primitive.NewMessage(topic, []byte("immediate")))
	received.waitCount(t, 2)
	mu.Lock()
	defer mu.Unlock()
	delay := receivedAt["delayed"].Sub(sentAt)
	if delay < 4500*time.Millisecond || delay > 20*time.Second {
		t.Fatalf("delivered after %v; level 2 is 5 s", delay)
	}
	if !receivedAt["immediate"].Before(receivedAt["delayed"]) {
		t.Fatalf("the undelayed message came after the delayed one: %v", receivedAt)
	}
}

// testDeliverAt: WithDelayTimestamp (the TIMER_DELIVER_MS property, a
// RocketMQ 5 timer message) is delivered when due, not before.
func testDeliverAt(t *testing.T, s *Ferrocket) {
	topic := s.CreateTopic(t, uniqueName("GoTimerT"), 2)
	p := newProducer(t, s)
	var mu sync.Mutex
	receivedAt := map[string]time.Time{}
	received := newBodies()
	newPushConsumer(t, s, uniqueName("GoTimerCG"), topic, all,
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				if _, seen := receivedAt[string(m.Body)]; !seen {
					receivedAt[string(m.Body)] = time.Now()
					received.add(string(m.Body))
				}
			}
			return consumer.ConsumeSuccess, nil
		})
	due := time.Now().Add(3 * time.Second)
	sendSync(t, p, primitive.NewMessage(topic, []byte("timed")).WithDelayTimestamp(due))
	received.waitCount(t, 1)
	mu.Lock()
	defer mu.Unlock()
	// The timer wheel's tick is a second at most; allow that early and 15 s late.
	if at := receivedAt["timed"]; at.Before(due.Add(-time.Second)) || at.After(due.Add(15*time.Second)) {
		t.Fatalf("delivered at %v, due at %v", at.Format(time.StampMilli), due.Format(time.StampMilli))
	}
}

// TestSQLFilter: a SQL92 subscription gets exactly the matching messages
// (the broker needs enablePropertyFilter=true, as Apache's).
func TestSQLFilter(t *testing.T) {
	s := startFerrocket(t, "enablePropertyFilter=true")
	topic := s.CreateTopic(t, uniqueName("GoSqlT"), 4)
	p := newProducer(t, s)
	var wanted []string
	for i := 0; i < 12; i++ {
		colour := map[bool]string{true: "red", false: "blue"}[i%2 == 0]
		body := fmt.Sprintf("sql-%d-%s", i, colour)
		msg := primitive.NewMessage(topic, []byte(body)).WithTag("TagQ")
		msg.WithProperty("n", fmt.Sprint(i))
		msg.WithProperty("colour", colour)
		sendSync(t, p, msg)
		if i >= 3 && i <= 9 && colour == "red" {
			wanted = append(wanted, body)
		}
	}
	received := newBodies()
	newPushConsumer(t, s, uniqueName("GoSqlCG"), topic,
		consumer.MessageSelector{Type: consumer.SQL92, Expression: "n BETWEEN 3 AND 9 AND colour = 'red'"},
		collect(received))
	received.waitCount(t, len(wanted))
	time.Sleep(time.Second) // a wrongly matched message has a moment to show up
	assertSameSet(t, "SQL92-matched bodies", wanted, received.snapshot())
}
