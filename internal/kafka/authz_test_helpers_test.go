package kafka

import (
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/security"
)

// aclRule names one operation on one resource.
type aclRule struct {
	op   kmsg.ACLOperation
	rt   kmsg.ACLResourceType
	name string
}

// denyTable is a fake Authorizer that allows everything except the rules it is told to
// deny, whoever asks: enough to drive each handler's check without the real ACL store.
type denyTable struct {
	mu     sync.Mutex
	denied map[aclRule]bool
}

func (d *denyTable) AuthorizationEnabled() bool { return true }

func (d *denyTable) Authorize(_ security.Principal, _ string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.denied[aclRule{op, rt, name}]
}

func (d *denyTable) deny(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.denied[aclRule{op, rt, name}] = true
}

// allowAll forgets every denial, so a test can look at what a refused request left.
func (d *denyTable) allowAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.denied = map[aclRule]bool{}
}

// startDenyTableBroker is startBroker with a denyTable as the server's authorizer, and a
// client connected to it.
func startDenyTableBroker(t *testing.T) (string, *broker.Broker, *denyTable, *kgo.Client) {
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
	if err := b.SetClusterConfig(map[string]string{"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000"}); err != nil {
		t.Fatal(err)
	}
	s := NewServer(b, lg, nil)
	table := &denyTable{denied: map[aclRule]bool{}}
	s.SetAuthorizer(table)
	go s.Serve(ln)
	t.Cleanup(func() {
		s.Close()
		b.Close()
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return ln.Addr().String(), b, table, cl
}

const (
	opRead            = kmsg.ACLOperationRead
	opDescribe        = kmsg.ACLOperationDescribe
	opDelete          = kmsg.ACLOperationDelete
	opCreate          = kmsg.ACLOperationCreate
	opAlter           = kmsg.ACLOperationAlter
	opDescribeConfigs = kmsg.ACLOperationDescribeConfigs
	opAlterConfigs    = kmsg.ACLOperationAlterConfigs

	rtTopic   = kmsg.ACLResourceTypeTopic
	rtGroup   = kmsg.ACLResourceTypeGroup
	rtCluster = kmsg.ACLResourceTypeCluster
	rtTxnID   = kmsg.ACLResourceTypeTransactionalId
)
