package interop

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestRequestReply: producer.Request is answered by a consumer that sends
// a reply made by consumer.CreateReplyMessage; the broker pushes the reply
// to the requesting client (PUSH_REPLY_MESSAGE_TO_CLIENT, code 326).
//
// Topics are not auto-created here: the reply goes to the cluster's reply
// topic, which the broker has from its start (as Apache's
// TopicConfigManager creates `<cluster>_REPLY_TOPIC`).
func TestRequestReply(t *testing.T) {
	s := startFerrocket(t, "autoCreateTopicEnable=false")
	topic := s.CreateTopic(t, uniqueName("GoRequestT"), 2)
	// The reply topic is routed from the start (a Go replier looks it up
	// by name; without a route it falls back on TBW102's).
	adminHas(t, s, []string{"topic", "route", "--topic", "DefaultCluster_REPLY_TOPIC"}, s.BrokerAddr())
	replier := newProducer(t, s)
	replyErrs := make(chan error, 4) // the outcome of each reply sent
	newPushConsumer(t, s, uniqueName("GoReplyCG"), topic, all,
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				if consumer.GetReplyToClient(m) == "" {
					continue // the warm-up message, not a request
				}
				body := []byte("reply to " + string(m.Body))
				reply, err := consumer.CreateReplyMessage(m, body)
				if err != nil {
					replyErrs <- err
					continue
				}
				// CreateReplyMessage reads the body as properties and leaves
				// the reply's body empty (consumer/message_util.go:45): set it.
				reply.Body = body
				started := time.Now()
				res, err := replier.SendSync(context.Background(), reply)
				if err == nil && res.Status != primitive.SendOK {
					err = fmt.Errorf("reply send status %v", res.Status)
				}
				if err != nil {
					err = fmt.Errorf("reply send after %v: %w", time.Since(started), err)
				}
				replyErrs <- err
			}
			return consumer.ConsumeSuccess, nil
		})
	requester := newProducer(t, s)
	// The broker pushes a reply to the channel the requester's heartbeat
	// registered (as Apache's ProducerManager.findChannel does). The Go
	// client sends its first heartbeat 1 s after it starts
	// (internal/client.go:473), and only to brokers it knows from a route
	// (internal/client.go:640): send once so it knows the broker, and give
	// that heartbeat time to arrive.
	sendSync(t, requester, primitive.NewMessage(topic, []byte("warm-up")))
	time.Sleep(2 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), receiveTimeout)
	defer cancel()
	reply, err := requester.Request(ctx, 15*time.Second, primitive.NewMessage(topic, []byte("ping")))
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	// The replier's own send of the reply succeeded too.
	select {
	case replyErr := <-replyErrs:
		if replyErr != nil {
			t.Fatalf("the replier failed: %v", replyErr)
		}
	case <-time.After(receiveTimeout):
		t.Fatalf("the replier's send did not return within %v", receiveTimeout)
	}
	if string(reply.Body) != "reply to ping" {
		t.Fatalf("reply body %q, want %q", reply.Body, "reply to ping")
	}
}
