package interop

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// receiveTimeout bounds every wait for deliveries.
const receiveTimeout = 30 * time.Second

var nameSeq atomic.Int64

// uniqueName gives each test's topics, groups and client instances names
// of their own.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s_%d_%d", prefix, time.Now().UnixNano()%1_000_000_000, nameSeq.Add(1))
}

// newProducer starts a producer with a group and instance name of its own,
// shut down when t is done.
func newProducer(t *testing.T, s *Ferrocket, opts ...producer.Option) rocketmq.Producer {
	t.Helper()
	all := append([]producer.Option{
		producer.WithNameServer(primitive.NamesrvAddr{s.NamesrvAddr()}),
		producer.WithGroupName(uniqueName("GoPG")),
		// Each client its own instance: the Go client shares one connection
		// set (and one rebalance loop) per instance name.
		producer.WithInstanceName(uniqueName("go-producer")),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(5 * time.Second),
	}, opts...)
	p, err := rocketmq.NewProducer(all...)
	if err != nil {
		t.Fatalf("new producer: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("producer start: %v", err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// consumerOptions are the options every push consumer here gets: its own
// group (unless given) and instance, the test server, reading from the
// first offset (a new group's position, as the messages are sent before
// the consumer starts).
func consumerOptions(s *Ferrocket, group string, opts ...consumer.Option) []consumer.Option {
	return append([]consumer.Option{
		consumer.WithNameServer(primitive.NamesrvAddr{s.NamesrvAddr()}),
		consumer.WithGroupName(group),
		consumer.WithInstance(uniqueName("go-consumer")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}, opts...)
}

// newPushConsumer subscribes to topic with selector and starts the
// consumer (shut down when t is done).
func newPushConsumer(t *testing.T, s *Ferrocket, group, topic string, selector consumer.MessageSelector,
	handler func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error),
	opts ...consumer.Option) rocketmq.PushConsumer {
	t.Helper()
	c, err := rocketmq.NewPushConsumer(consumerOptions(s, group, opts...)...)
	if err != nil {
		t.Fatalf("new push consumer: %v", err)
	}
	if err := c.Subscribe(topic, selector, handler); err != nil {
		t.Fatalf("subscribe %s: %v", topic, err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("push consumer start: %v", err)
	}
	t.Cleanup(func() { _ = c.Shutdown() })
	return c
}

var all = consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}

// sendSync sends msg and fails t unless the broker answered SEND_OK.
func sendSync(t *testing.T, p rocketmq.Producer, msg *primitive.Message) *primitive.SendResult {
	t.Helper()
	res, err := p.SendSync(context.Background(), msg)
	if err != nil {
		t.Fatalf("send to %s: %v", msg.Topic, err)
	}
	if res.Status != primitive.SendOK {
		t.Fatalf("send to %s: status %v (%s)", msg.Topic, res.Status, res)
	}
	return res
}

// bodies collects received message bodies (safe for concurrent handlers).
type bodies struct {
	mu     sync.Mutex
	got    []string
	notify chan struct{}
}

func newBodies() *bodies { return &bodies{notify: make(chan struct{}, 1)} }

func (b *bodies) add(body string) {
	b.mu.Lock()
	b.got = append(b.got, body)
	b.mu.Unlock()
	select {
	case b.notify <- struct{}{}:
	default:
	}
}

func (b *bodies) snapshot() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.got...)
}

// waitCount waits until at least n bodies arrived; fails t otherwise.
func (b *bodies) waitCount(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.After(receiveTimeout)
	for {
		got := b.snapshot()
		if len(got) >= n {
			return got
		}
		select {
		case <-b.notify:
		case <-deadline:
			t.Fatalf("received %d of %d messages within %v: %v", len(got), n, receiveTimeout, got)
		}
	}
}

// sorted returns a sorted copy.
func sorted(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
}

// assertSameSet fails t unless got holds exactly want's elements, each once.
func assertSameSet(t *testing.T, what string, want, got []string) {
	t.Helper()
	w, g := sorted(want), sorted(got)
	if strings.Join(w, "\n") != strings.Join(g, "\n") {
		t.Fatalf("%s: want %d %v, got %d %v", what, len(w), w, len(g), g)
	}
}

// waitFor polls cond until it holds; fails t with what after the timeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(receiveTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", receiveTimeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readAll reads topic back from its first offset with a push consumer of
// a new group until want messages arrived, then waits a moment more so
// that an extra (duplicate or unexpected) delivery shows; returns them all.
func readAll(t *testing.T, s *Ferrocket, topic string, want int) []*primitive.MessageExt {
	t.Helper()
	var mu sync.Mutex
	var got []*primitive.MessageExt
	received := newBodies()
	newPushConsumer(t, s, uniqueName("GoReadCG"), topic, all,
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			got = append(got, msgs...)
			mu.Unlock()
			for _, m := range msgs {
				received.add(string(m.Body))
			}
			return consumer.ConsumeSuccess, nil
		})
	received.waitCount(t, want)
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != want {
		t.Fatalf("read %d messages back from %s, want %d: %v", len(got), topic, want, received.snapshot())
	}
	out := append([]*primitive.MessageExt(nil), got...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Queue.QueueId != out[j].Queue.QueueId {
			return out[i].Queue.QueueId < out[j].Queue.QueueId
		}
		return out[i].QueueOffset < out[j].QueueOffset
	})
	return out
}

// idsToBodies maps each message's id (the client's unique key) to its body.
func idsToBodies(msgs []*primitive.MessageExt) map[string]string {
	out := make(map[string]string, len(msgs))
	for _, m := range msgs {
		out[m.MsgId] = string(m.Body)
	}
	return out
}
