package broker

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

func TestNodeViewWire(t *testing.T) {
	v := NodeView{Broker: 2, Answered: true,
		Replicas: []ReplicaView{{Topic: "t", Partition: 1, IsLeader: true, LogEnd: 10, Flushed: 9, MajorityReplicated: 9, Committed: 9, LastVisible: 8}},
		Groups: []GroupView{{Group: "g", State: "Stable", ProtocolType: "consumer", Protocol: "range",
			Members: []GroupMemberView{{MemberID: "m", ClientID: "c", Assigned: []TopicPartition{{"t", 1}}}},
			Offsets: []CommittedOffset{{"t", 1, 5}}}}}
	resp, err := decodeNodeViewResponse(encodeNodeView(7, v))
	if err != nil || resp.Corr != 7 || !reflect.DeepEqual(resp.View, v) {
		t.Fatalf("round trip: %+v %v", resp, err)
	}
	for _, bad := range []string{"", "{", `{"v":2,"corr":1}`, `{"v":0}`, `[1]`} {
		if _, err := decodeNodeViewRequest([]byte(bad)); err == nil {
			t.Errorf("request %q decoded", bad)
		}
		if _, err := decodeNodeViewResponse([]byte(bad)); err == nil {
			t.Errorf("response %q decoded", bad)
		}
	}
}

// A view too large for one message is cut to fit, and says so.
func TestNodeViewTruncatesToFit(t *testing.T) {
	v := NodeView{Broker: 1, Answered: true}
	for i := range 40000 {
		v.Replicas = append(v.Replicas, ReplicaView{Topic: fmt.Sprintf("a-rather-long-topic-name-%06d", i), Partition: int32(i)})
	}
	buf := encodeNodeView(1, v)
	if len(buf) > nodeViewMaxBytes {
		t.Fatalf("encoded %d bytes, over %d", len(buf), nodeViewMaxBytes)
	}
	resp, err := decodeNodeViewResponse(buf)
	if err != nil || !resp.View.Truncated || len(resp.View.Replicas) == 0 || len(resp.View.Replicas) >= len(v.Replicas) {
		t.Fatalf("truncated=%v replicas=%d err=%v", resp.View.Truncated, len(resp.View.Replicas), err)
	}
}

func FuzzDecodeNodeView(f *testing.F) {
	req, _ := json.Marshal(nodeViewRequest{V: nodeViewVersion, Corr: 3, Query: NodeViewQuery{Topics: []string{"t"}, Groups: true}})
	f.Add(req)
	f.Add(encodeNodeView(4, NodeView{Broker: 1, Answered: true, Replicas: []ReplicaView{{Topic: "t"}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := decodeNodeViewRequest(b); err == nil {
			again, _ := json.Marshal(r)
			if _, err := decodeNodeViewRequest(again); err != nil {
				t.Fatalf("request re-encoding: %v", err)
			}
		}
		if r, err := decodeNodeViewResponse(b); err == nil {
			if _, err := decodeNodeViewResponse(encodeNodeView(r.Corr, r.View)); err != nil {
				t.Fatalf("response re-encoding: %v", err)
			}
		}
	})
}
