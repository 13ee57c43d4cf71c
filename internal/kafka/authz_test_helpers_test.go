package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/broker"
)

// startDenyTableBroker is startBroker with a denyTable as the server's authorizer, and a
// client connected to it.
func startDenyTableBroker(t *testing.T) (string, *broker.Broker, *tableAuthorizer, *kgo.Client) {
	t.Helper()
	table := newTableAuthorizer()
	_, b, addr := serveTestBroker(t, quickGroups, table)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return addr, b, table, cl
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
