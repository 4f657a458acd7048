package interop

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestPullConsumerPoll: the Go client's pull consumer in subscribe mode
// (rebalanced queues, Poll and ACK) reads every message once, and ACKs
// commit the offsets it reached (seen with admin consumer progress after
// its shutdown persists them).
func TestPullConsumerPoll(t *testing.T) {
	s := startFerrocket(t)
	topic := s.CreateTopic(t, uniqueName("GoPollT"), 2)
	group := uniqueName("GoPollCG")
	p := newProducer(t, s)
	var sent []string
	for i := 0; i < 8; i++ {
		body := fmt.Sprintf("poll-%d", i)
		sendSync(t, p, primitive.NewMessage(topic, []byte(body)))
		sent = append(sent, body)
	}
	c, err := rocketmq.NewPullConsumer(consumerOptions(s, group)...)
	if err != nil {
		t.Fatalf("new pull consumer: %v", err)
	}
	if err := c.Subscribe(topic, all); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("pull consumer start: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = c.Shutdown()
		}
	})
	var got []string
	deadline := time.Now().Add(receiveTimeout)
	for len(got) < len(sent) && time.Now().Before(deadline) {
		cr, err := c.Poll(context.Background(), time.Second)
		if errors.Is(err, consumer.ErrNoNewMsg) {
			continue
		}
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		for _, m := range cr.GetMsgList() {
			got = append(got, string(m.Body))
		}
		c.ACK(context.Background(), cr, consumer.ConsumeSuccess)
	}
	assertSameSet(t, "polled bodies", sent, got)
	if err := c.Shutdown(); err != nil {
		t.Fatalf("pull consumer shutdown: %v", err)
	}
	stopped = true
	adminHas(t, s, []string{"consumer", "progress", "-g", group}, topic, "Consume Diff Total: 0")
}
