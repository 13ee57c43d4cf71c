package kafka

import (
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/security"
)

// serveTestBroker runs a broker and its Kafka server in-process on a loopback port, with
// the cluster overrides set and authz (when not nil) as the server's authorizer; both stop
// with the test. It is the one set-up the package's client tests share.
func serveTestBroker(t testing.TB, overrides map[string]string, authz Authorizer) (*Server, *broker.Broker, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lg := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := broker.New(broker.Config{DataDir: t.TempDir(), KafkaAddr: ln.Addr().String(), Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	if overrides != nil {
		if err := b.SetClusterConfig(overrides); err != nil {
			b.Close()
			t.Fatal(err)
		}
	}
	s := NewServer(b, lg, nil)
	if authz != nil {
		s.SetAuthorizer(authz)
	}
	go s.Serve(ln)
	t.Cleanup(func() {
		s.Close()
		b.Close()
	})
	return s, b, ln.Addr().String()
}

// quickGroups are group settings that keep client tests quick.
var quickGroups = map[string]string{"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000"}

// aclCheck is one question an Authorizer is asked; a name of "*" in a denial stands for
// every resource of the type.
type aclCheck struct {
	op   kmsg.ACLOperation
	rt   kmsg.ACLResourceType
	name string
}

// tableAuthorizer is a fake Authorizer that allows everything but the checks it is told to
// deny, whoever asks, and records who asked, so tests can see the principal and host that
// reach it: enough to drive each handler's check without the real ACL store.
type tableAuthorizer struct {
	mu     sync.Mutex
	denied map[aclCheck]bool
	asked  []askedCheck
}

type askedCheck struct {
	principal security.Principal
	host      string
	aclCheck
}

func newTableAuthorizer() *tableAuthorizer { return &tableAuthorizer{denied: map[aclCheck]bool{}} }

func (a *tableAuthorizer) AuthorizationEnabled() bool { return true }

func (a *tableAuthorizer) Authorize(p security.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := aclCheck{op, rt, name}
	a.asked = append(a.asked, askedCheck{p, host, c})
	return !a.denied[c] && !a.denied[aclCheck{op, rt, "*"}]
}

func (a *tableAuthorizer) denyAll(checks ...aclCheck) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range checks {
		a.denied[c] = true
	}
}

func (a *tableAuthorizer) deny(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) {
	a.denyAll(aclCheck{op, rt, name})
}

// allowAll forgets every denial, so a test can look at what a refused request left.
func (a *tableAuthorizer) allowAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.denied = map[aclCheck]bool{}
}

func (a *tableAuthorizer) wasAsked(c aclCheck) (askedCheck, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, got := range a.asked {
		if got.aclCheck == c {
			return got, true
		}
	}
	return askedCheck{}, false
}
