package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/storage"
)

// A one-broker cluster: every leadership's only voter is the broker itself, so maintenance
// moves nothing, keeps every leader, and says why; transfers are refused or trivially done.
func TestMaintenanceOnTheOnlyBroker(t *testing.T) {
	b := open(t, storage.NewMemFS())
	defer b.Close()
	if _, err := b.CreateTopic("orders", 2, 1, nil, false); err != nil {
		t.Fatal(err)
	}
	if err := b.SetMaintenance(2, true); err == nil || err.Code != kerr.BrokerIDNotRegistered {
		t.Fatalf("maintenance of an unknown broker: %v", err)
	}
	if _, ok := b.MaintenanceStatus(2); ok {
		t.Fatal("status of an unknown broker")
	}
	if err := b.SetMaintenance(1, true); err != nil {
		t.Fatal(err)
	}
	var st MaintenanceStatus
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, _ = b.MaintenanceStatus(1)
		if st.LeadersLeft == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // leaders of the new topic being published
	}
	if !st.Draining || !st.Finished || st.LeadersLeft != 3 || st.Failed != 3 || len(st.Errors) != 3 {
		t.Fatalf("status: %+v", st)
	}
	for _, e := range st.Errors {
		if !strings.Contains(e, "keeps its leader") {
			t.Errorf("error %q does not say the leader stays", e)
		}
	}
	for p := int32(0); p < 2; p++ {
		if part, _ := b.Partition("orders", p); !part.IsLeader() {
			t.Errorf("orders/%d lost its only leader", p)
		}
	}
	// Transfers: to itself, refused as in maintenance; to a non-replica; to nothing.
	if err := b.TransferLeadership("orders", 0, 1); err != nil {
		t.Errorf("transfer to the leader itself: %v", err)
	}
	if err := b.TransferLeadership("orders", 0, 2); err == nil || err.Code != kerr.InvalidReplicaAssignment {
		t.Errorf("transfer to a non-replica: %v", err)
	}
	if err := b.TransferLeadership("orders", 5, 1); err == nil || err.Code != kerr.UnknownTopicOrPartition {
		t.Errorf("transfer of an unknown partition: %v", err)
	}
	if err := b.TransferLeadership("nope", 0, 1); err == nil || err.Code != kerr.UnknownTopicOrPartition {
		t.Errorf("transfer of an unknown topic: %v", err)
	}
	if err := b.ElectPreferredLeader("orders", 1, time.Second); err == nil || err.Code != kerr.ElectionNotNeeded {
		t.Errorf("preferred election where the preferred replica leads: %v", err)
	}
	if got := b.BrokerSummaries(); len(got) != 1 || !got[0].Maintenance || got[0].Leaders != 2 || got[0].Replicas < 2 {
		t.Errorf("broker list: %+v", got)
	}
	if err := b.SetMaintenance(1, false); err != nil {
		t.Fatal(err)
	}
	if st, _ := b.MaintenanceStatus(1); st.Draining || st.Finished {
		t.Errorf("status after maintenance ends: %+v", st)
	}
	bal := b.LeaderBalancerStatus()
	if !bal.Enabled || bal.IntervalSeconds != 30 || bal.Leaders["1"] != 2 || bal.Imbalance["1"] != 0 {
		t.Errorf("balancer status: %+v", bal)
	}
}
