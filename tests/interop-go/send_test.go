package interop

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

const sendCount = 10

// TestSend: sync, async, oneway and batch sends, read back whole.
func TestSend(t *testing.T) {
	s := startFerrocket(t)
	t.Run("Sync", func(t *testing.T) { t.Parallel(); testSyncSend(t, s) })
	t.Run("Async", func(t *testing.T) { t.Parallel(); testAsyncSend(t, s) })
	t.Run("Oneway", func(t *testing.T) { t.Parallel(); testOnewaySend(t, s) })
	t.Run("Batch", func(t *testing.T) { t.Parallel(); testBatchSend(t, s) })
	t.Run("CompressedBody", func(t *testing.T) { t.Parallel(); testCompressedBody(t, s) })
}

func testSyncSend(t *testing.T, s *Ferrocket) {
	topic := s.CreateTopic(t, uniqueName("GoSyncT"), 4)
	p := newProducer(t, s)
	sent := map[string]string{}
	for i := 0; i < sendCount; i++ {
		body := fmt.Sprintf("sync-%d", i)
		msg := primitive.NewMessage(topic, []byte(body)).WithTag("TagS").WithKeys([]string{fmt.Sprintf("key-%d", i)})
		res := sendSync(t, p, msg)
		if res.MsgID == "" || res.OffsetMsgID == "" {
			t.Fatalf("send result without ids: %s", res)
		}
		if res.MessageQueue == nil || res.MessageQueue.Topic != topic {
			t.Fatalf("send result names queue %v, want topic %s", res.MessageQueue, topic)
		}
		sent[res.MsgID] = body
	}
	read := readAll(t, s, topic, sendCount)
	assertSameMap(t, "ids to bodies", sent, idsToBodies(read))
	for _, m := range read {
		if m.GetTags() != "TagS" || !strings.HasPrefix(m.GetKeys(), "key-") {
			t.Fatalf("message %s: tags %q keys %q", m.MsgId, m.GetTags(), m.GetKeys())
		}
	}
}

func testAsyncSend(t *testing.T, s *Ferrocket) {
	topic := s.CreateTopic(t, uniqueName("GoAsyncT"), 4)
	p := newProducer(t, s)
	var mu sync.Mutex
	sent := map[string]string{}
	var failures []string
	var done sync.WaitGroup
	for i := 0; i < sendCount; i++ {
		body := fmt.Sprintf("async-%d", i)
		done.Add(1)
		err := p.SendAsync(context.Background(), func(_ context.Context, res *primitive.SendResult, err error) {
			defer done.Done()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				failures = append(failures, err.Error())
			case res.Status != primitive.SendOK:
				failures = append(failures, res.String())
			default:
				sent[res.MsgID] = body
			}
		}, primitive.NewMessage(topic, []byte(body)))
		if err != nil {
			done.Done()
			t.Fatalf("send async: %v", err)
		}
	}
	waitGroup(t, &done, "async send callbacks")
	mu.Lock()
	defer mu.Unlock()
	if len(failures) > 0 || len(sent) != sendCount {
		t.Fatalf("async sends: %d ok, failures %v", len(sent), failures)
	}
	assertSameMap(t, "ids to bodies", sent, idsToBodies(readAll(t, s, topic, sendCount)))
}

func testOnewaySend(t *testing.T, s *Ferrocket) {
	topic := s.CreateTopic(t, uniqueName("GoOnewayT"), 4)
	p := newProducer(t, s)
	var want []string
	for i := 0; i < sendCount; i++ {
		body := fmt.Sprintf("oneway-%d", i)
		if err := p.SendOneWay(context.Background(), primitive.NewMessage(topic, []byte(body))); err != nil {
			t.Fatalf("send oneway: %v", err)
		}
		want = append(want, body)
	}
	var got []string
	for _, m := range readAll(t, s, topic, sendCount) {
		got = append(got, string(m.Body))
	}
	assertSameSet(t, "oneway bodies", want, got)
}

func testBatchSend(t *testing.T, s *Ferrocket) {
	topic := s.CreateTopic(t, uniqueName("GoBatchT"), 4)
	p := newProducer(t, s)
	batch := make([]*primitive.Message, 0, sendCount)
	for i := 0; i < sendCount; i++ {
		batch = append(batch, primitive.NewMessage(topic, []byte(fmt.Sprintf("batch-%d", i))).
			WithTag("TagB").WithKeys([]string{fmt.Sprintf("bkey-%d", i)}))
	}
	res, err := p.SendSync(context.Background(), batch...)
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("send batch: %v %v", res, err)
	}
	// The Go client gives a batch's messages no unique key (UNIQ_KEY is set
	// only when !msg.Batch, producer/producer.go:511) and joins those empty
	// keys into MsgID (internal/client.go:743-747), so a batch is told
	// apart by the broker's answer: one offset message id per message,
	// comma-separated, in the batch's order (Java's broker does the same).
	ids := strings.Split(res.OffsetMsgID, ",")
	if len(ids) != sendCount {
		t.Fatalf("batch send result has %d offset ids, want %d: %s", len(ids), sendCount, res.OffsetMsgID)
	}
	read := readAll(t, s, topic, sendCount)
	want := map[string]string{}
	for i, id := range ids {
		want[id] = fmt.Sprintf("batch-%d", i)
	}
	got := map[string]string{}
	for _, m := range read {
		got[m.OffsetMsgId] = string(m.Body)
	}
	assertSameMap(t, "offset ids to bodies", want, got)
	// A batch goes to one queue, in order, at consecutive offsets.
	for i, m := range read {
		if m.Queue.QueueId != res.MessageQueue.QueueId || m.QueueOffset != res.QueueOffset+int64(i) ||
			string(m.Body) != fmt.Sprintf("batch-%d", i) || m.GetTags() != "TagB" {
			t.Fatalf("batch message %d: queue %d offset %d body %q tags %q; want queue %d offset %d",
				i, m.Queue.QueueId, m.QueueOffset, m.Body, m.GetTags(), res.MessageQueue.QueueId, res.QueueOffset+int64(i))
		}
	}
}

// testCompressedBody: a body over the client's 4 KiB threshold
// (WithCompressMsgBodyOverHowmuch) is sent zlib-compressed with the
// compressed flag set; it is stored so and read back whole.
func testCompressedBody(t *testing.T, s *Ferrocket) {
	topic := s.CreateTopic(t, uniqueName("GoZipT"), 4)
	var text strings.Builder
	for i := 0; text.Len() < 64*1024; i++ {
		fmt.Fprintf(&text, "line %d of a compressible body\n", i)
	}
	p := newProducer(t, s)
	res := sendSync(t, p, primitive.NewMessage(topic, []byte(text.String())))
	read := readAll(t, s, topic, 1)
	if string(read[0].Body) != text.String() {
		t.Fatalf("read back %d bytes, sent %d", len(read[0].Body), text.Len())
	}
	if read[0].MsgId != res.MsgID {
		t.Fatalf("read back id %s, sent %s", read[0].MsgId, res.MsgID)
	}
	// Stored compressed: the stored size is well under the body's.
	if read[0].StoreSize >= int32(text.Len()/2) {
		t.Fatalf("stored size %d for a %d byte compressible body: not compressed", read[0].StoreSize, text.Len())
	}
}

func assertSameMap(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: want %d %v, got %d %v", what, len(want), want, len(got), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: %s: want %q, got %q (all: %v)", what, k, v, got[k], got)
		}
	}
}

func waitGroup(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(receiveTimeout):
		t.Fatalf("timed out after %v waiting for %s", receiveTimeout, what)
	}
}
