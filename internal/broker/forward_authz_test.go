package broker

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/partition"
	"github.com/cairn-io/cairn/internal/security"
)

// writers allows WRITE on a topic to the principals listed for it, from any host, and
// records who it was asked about.
type writers struct {
	enabled bool
	allowed map[string][]security.Principal
	mu      sync.Mutex
	asked   []Requester
}

func (w *writers) AuthorizationEnabled() bool { return w.enabled }

func (w *writers) Authorize(p security.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	w.mu.Lock()
	w.asked = append(w.asked, Requester{p, host})
	w.mu.Unlock()
	if op != kmsg.ACLOperationWrite || rt != kmsg.ACLResourceTypeTopic {
		return false
	}
	for _, ok := range w.allowed[name] {
		if ok == p {
			return true
		}
	}
	return false
}

// The requester crosses the wire intact (v2), and a request without one is still v1, as a
// broker of the previous release sends and reads it.
func TestForwardRequesterRoundTrip(t *testing.T) {
	req := forwardRequest{corr: 4, acks: 1, timeoutMs: 30_000, partition: 2, topic: "orders", records: []byte("batch"),
		requester: &Requester{Principal: "User:alice", Host: "2001:db8::1"}}
	b := mustEncodeForward(t, req)
	if b[0] != forwardVersion {
		t.Fatalf("with a requester: version %d, want %d", b[0], forwardVersion)
	}
	got, err := decodeForwardRequest(b)
	if err != nil || !reflect.DeepEqual(got, req) {
		t.Fatalf("round trip: %+v %v, want %+v", got, err, req)
	}
	// A truncated requester is refused, not read as part of the records.
	for _, n := range []int{21 + len(req.topic), 21 + len(req.topic) + 1, 21 + len(req.topic) + 2 + 5, 21 + len(req.topic) + 2 + 10 + 1 + 3} {
		if _, err := decodeForwardRequest(b[:n]); err == nil {
			t.Errorf("truncated to %d bytes: accepted", n)
		}
	}

	req.requester = nil
	old := mustEncodeForward(t, req)
	if old[0] != forwardVersionAnonymous {
		t.Fatalf("without a requester: version %d, want 1", old[0])
	}
	got, err = decodeForwardRequest(old)
	if err != nil || !reflect.DeepEqual(got, req) {
		t.Fatalf("v1 round trip: %+v %v", got, err)
	}
	if r := forwardedRequester(got); r != (Requester{Principal: security.Anonymous}) {
		t.Fatalf("a v1 request is taken to be from %+v, want ANONYMOUS from no host", r)
	}

	long := forwardRequest{topic: "t", requester: &Requester{Principal: "User:x", Host: string(make([]byte, 256))}}
	if _, err := encodeForwardRequest(long); err == nil {
		t.Fatal("a host too long for its length byte was encoded")
	}
}

// The leader checks WRITE for the forwarded requester itself: a denied produce is answered
// TOPIC_AUTHORIZATION_FAILED and never reaches the partition, an allowed one does, a v1
// request counts as ANONYMOUS, and with authorization off nothing is checked.
func TestLeaderRechecksForwardedProduce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	authz := &writers{enabled: true, allowed: map[string][]security.Principal{"orders": {"User:alice"}, "public": {security.Anonymous}}}
	f := &forwarder{pending: map[uint64]chan partition.ProduceResult{}, sem: make(chan struct{}, maxForwardInflight),
		queues: map[int32]chan forwardRequest{}, ctx: ctx, authz: authz}
	appended := make(chan forwardRequest, 8)
	f.start = func(req forwardRequest) (partition.ProduceResult, func(context.Context) partition.ProduceResult) {
		appended <- req
		return partition.ProduceResult{BaseOffset: 7}, nil
	}
	replies := make(chan partition.ProduceResult, 8)
	f.send = func(_ int32, _ uint8, payload []byte) error {
		_, res, err := decodeForwardResponse(payload)
		if err != nil {
			t.Error(err)
		}
		replies <- res
		return nil
	}
	send := func(corr uint64, topic string, r *Requester) partition.ProduceResult {
		t.Helper()
		f.handle(2, msgForwardRequest, mustEncodeForward(t, forwardRequest{corr: corr, acks: 1, timeoutMs: 1000, topic: topic, records: []byte{1}, requester: r}))
		select {
		case res := <-replies:
			return res
		case <-time.After(10 * time.Second):
			t.Fatal("no answer to the forwarded produce")
			return partition.ProduceResult{}
		}
	}
	for _, c := range []struct {
		name      string
		topic     string
		requester *Requester
		allowed   bool
	}{
		{"allowed principal", "orders", &Requester{"User:alice", "10.0.0.1"}, true},
		{"other principal", "orders", &Requester{"User:mallory", "10.0.0.1"}, false},
		{"v1 without requester", "orders", nil, false},
		{"v1 where ANONYMOUS may write", "public", nil, true},
	} {
		res := send(uint64(len(appended)+10), c.topic, c.requester)
		if c.allowed {
			if res.Err != nil || res.BaseOffset != 7 || len(appended) != 1 {
				t.Fatalf("%s: %+v with %d appended, want it appended", c.name, res, len(appended))
			}
			<-appended
			continue
		}
		if res.Err != kerr.TopicAuthorizationFailed || res.BaseOffset != -1 || len(appended) != 0 {
			t.Fatalf("%s: %+v with %d appended, want TOPIC_AUTHORIZATION_FAILED and nothing appended", c.name, res, len(appended))
		}
	}

	authz.enabled = false
	authz.mu.Lock()
	authz.asked = nil
	authz.mu.Unlock()
	if res := send(99, "orders", &Requester{"User:mallory", "10.0.0.1"}); res.Err != nil || len(appended) != 1 {
		t.Fatalf("with authorization off: %+v, want it appended", res)
	}
	authz.mu.Lock()
	defer authz.mu.Unlock()
	if len(authz.asked) != 0 {
		t.Fatalf("with authorization off the authorizer was asked %v", authz.asked)
	}
}

// A follower forwards the client as the requester while authorization is on, and the v1
// message, without one, while it is off.
func TestFollowerForwardsTheRequesterWhenAuthorizing(t *testing.T) {
	client := Requester{Principal: "User:alice", Host: "10.1.2.3"}
	if r := requesterToForward(&writers{enabled: true}, client); r == nil || *r != client {
		t.Fatalf("authorization on: forwards %+v, want %+v", r, client)
	}
	if r := requesterToForward(&writers{}, client); r != nil {
		t.Fatalf("authorization off: forwards %+v, want none", r)
	}
}
