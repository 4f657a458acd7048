package interop

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestAdminSeesGoConsumer: the broker's views of a Go push consumer, as
// mqadmin shows them: its connection (language GO, its subscriptions), the
// running info the broker asks the client for (GET_CONSUMER_RUNNING_INFO,
// answered in the Go client's own JSON), and the offsets it commits when it
// shuts down (UPDATE_CONSUMER_OFFSET).
func TestAdminSeesGoConsumer(t *testing.T) {
	s := startFerrocket(t)
	topic := s.CreateTopic(t, uniqueName("GoAdminT"), 2)
	group := uniqueName("GoAdminCG")
	instance := uniqueName("go-admin-consumer")
	p := newProducer(t, s)
	var sent []string
	for i := 0; i < 4; i++ {
		body := fmt.Sprintf("admin-%d", i)
		sendSync(t, p, primitive.NewMessage(topic, []byte(body)))
		sent = append(sent, body)
	}
	received := newBodies()
	c := newPushConsumer(t, s, group, topic, all, collect(received), consumer.WithInstance(instance))
	received.waitCount(t, len(sent))
	assertSameSet(t, "bodies", sent, received.snapshot())

	adminHas(t, s, []string{"consumer", "connection", "-g", group},
		"@"+instance, " GO ", topic, "%RETRY%"+group, "CLUSTERING", "CONSUME_FROM_FIRST_OFFSET")
	adminHas(t, s, []string{"consumer", "status", "-g", group},
		"@"+instance, "PROP_CLIENT_VERSION", "PROP_CONSUME_TYPE", "subscribes "+topic+" *")

	// Shutting down commits the consumed offsets: every queue fully consumed.
	if err := c.Shutdown(); err != nil {
		t.Fatalf("consumer shutdown: %v", err)
	}
	out := adminHas(t, s, []string{"consumer", "progress", "-g", group}, "Consume Diff Total: 0")
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[0] == topic {
			rows++
			if f[3] != "2" || f[4] != "2" || f[5] != "0" {
				t.Fatalf("queue %s: broker offset %s, consumer offset %s, diff %s; want 2, 2, 0:\n%s",
					f[2], f[3], f[4], f[5], out)
			}
		}
	}
	if rows != 2 {
		t.Fatalf("progress lists %d queues of %s, want 2:\n%s", rows, topic, out)
	}
}

// adminHas runs `ferrocket admin ARGS` and fails t unless it succeeded and
// its output holds every one of want; returns the output.
func adminHas(t *testing.T, s *Ferrocket, args []string, want ...string) string {
	t.Helper()
	out, err := s.admin(args...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("admin %s: no %q in:\n%s", strings.Join(args, " "), w, out)
		}
	}
	return out
}
