package interop

import (
	"context"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// txListener decides a transaction by the message body: local holds the
// answer at send time (UNKNOW when absent), onCheck the answer to the
// broker's check-back (UNKNOW when absent).
type txListener struct {
	local   map[string]primitive.LocalTransactionState
	onCheck map[string]primitive.LocalTransactionState
	mu      sync.Mutex
	checked map[string]string // body -> transaction id the check-back named
}

func newTxListener() *txListener {
	return &txListener{
		local:   map[string]primitive.LocalTransactionState{},
		onCheck: map[string]primitive.LocalTransactionState{},
		checked: map[string]string{},
	}
}

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	if state, ok := l.local[string(m.Body)]; ok {
		return state
	}
	return primitive.UnkonwnState
}

func (l *txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	body := string(m.Body)
	l.mu.Lock()
	l.checked[body] = m.TransactionId
	l.mu.Unlock()
	if state, ok := l.onCheck[body]; ok {
		return state
	}
	return primitive.UnkonwnState
}

func (l *txListener) checkedID(body string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id, ok := l.checked[body]
	return id, ok
}

func newTxProducer(t *testing.T, s *Ferrocket, l *txListener) rocketmq.TransactionProducer {
	t.Helper()
	p, err := rocketmq.NewTransactionProducer(l,
		producer.WithNameServer(primitive.NamesrvAddr{s.NamesrvAddr()}),
		producer.WithGroupName(uniqueName("GoTxPG")),
		producer.WithInstanceName(uniqueName("go-tx-producer")),
		producer.WithRetry(2))
	if err != nil {
		t.Fatalf("new transaction producer: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("transaction producer start: %v", err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// TestTransaction: half messages, END_TRANSACTION commit and rollback, and
// the broker's check-back (CHECK_TRANSACTION_STATE) of a transaction left
// UNKNOW. Checks run every second here.
func TestTransaction(t *testing.T) {
	s := startFerrocket(t, "transactionCheckInterval=1000", "transactionTimeOut=1000")
	t.Run("UnknownThenCommittedByCheck", func(t *testing.T) { t.Parallel(); testTxChecked(t, s) })
	t.Run("CommitAndRollback", func(t *testing.T) { t.Parallel(); testTxCommitRollback(t, s) })
}

func testTxChecked(t *testing.T, s *Ferrocket) {
	topic := s.CreateTopic(t, uniqueName("GoTxCheckT"), 2)
	l := newTxListener()
	l.onCheck["tx-checked"] = primitive.CommitMessageState
	p := newTxProducer(t, s, l)
	res, err := p.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte("tx-checked")))
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("send in transaction: %v %v", res, err)
	}
	if res.State != primitive.UnkonwnState {
		t.Fatalf("local state %v, want UNKNOW", res.State)
	}
	received := newBodies()
	newPushConsumer(t, s, uniqueName("GoTxCheckCG"), topic, all, collect(received))
	// Not visible while the transaction is open; then the check commits it.
	waitFor(t, "the broker's check-back", func() bool {
		_, ok := l.checkedID("tx-checked")
		return ok
	})
	got := received.waitCount(t, 1)
	time.Sleep(time.Second)
	assertSameSet(t, "committed bodies", []string{"tx-checked"}, received.snapshot())
	if got[0] != "tx-checked" {
		t.Fatalf("got %v", got)
	}
	// The Go client names the checked transaction by the message's unique
	// key (internal/client.go, the CHECK_TRANSACTION_STATE handler): the
	// send's message id.
	if id, _ := l.checkedID("tx-checked"); id != res.MsgID {
		t.Fatalf("check-back named transaction %q, want the send's message id %q", id, res.MsgID)
	}
}

func testTxCommitRollback(t *testing.T, s *Ferrocket) {
	topic := s.CreateTopic(t, uniqueName("GoTxEndT"), 2)
	l := newTxListener()
	l.local["tx-commit"] = primitive.CommitMessageState
	l.local["tx-rollback"] = primitive.RollbackMessageState
	// Should the broker check them anyway, it hears the same decision.
	l.onCheck["tx-commit"] = primitive.CommitMessageState
	l.onCheck["tx-rollback"] = primitive.RollbackMessageState
	p := newTxProducer(t, s, l)
	for _, body := range []string{"tx-commit", "tx-rollback"} {
		res, err := p.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte(body)))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %s in transaction: %v %v", body, res, err)
		}
		if res.State != l.local[body] {
			t.Fatalf("%s: local state %v, want %v", body, res.State, l.local[body])
		}
	}
	sendSync(t, newProducer(t, s), primitive.NewMessage(topic, []byte("plain")))
	received := newBodies()
	newPushConsumer(t, s, uniqueName("GoTxEndCG"), topic, all, collect(received))
	received.waitCount(t, 2)
	// Past a few check intervals: the rolled back one never shows up.
	time.Sleep(3 * time.Second)
	assertSameSet(t, "bodies", []string{"plain", "tx-commit"}, received.snapshot())
	for _, body := range []string{"tx-commit", "tx-rollback"} {
		if _, checked := l.checkedID(body); checked {
			t.Fatalf("%s was decided at once but the broker checked it back", body)
		}
	}
}
