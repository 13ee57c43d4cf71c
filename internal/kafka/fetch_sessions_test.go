package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// franz-go opens a fetch session and consumes through incremental fetches: every record of
// 40 partitions arrives once, in order, with the session cached; with sessions off on the
// client, none is.
func TestFetchSessionsServeFranzGo(t *testing.T) {
	for _, sessions := range []bool{true, false} {
		t.Run(fmt.Sprint("client sessions ", sessions), func(t *testing.T) {
			s, _, addr := serveTestBroker(t, quickGroups, nil)
			createTopic(t, addr, "many", 40, 2000)
			opts := []kgo.Opt{}
			if !sessions {
				opts = append(opts, kgo.DisableFetchSessions())
			}
			cl := consumer(t, addr, "many", opts...)
			got := consumed(t, cl, 2000, 20*time.Second)
			if len(got) != 2000 {
				t.Fatalf("consumed %d of 2000", len(got))
			}
			prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("many"))
			if err != nil {
				t.Fatal(err)
			}
			defer prod.Close()
			produce(t, prod, "many", 2000, 500) // read through the session's incremental fetches
			if more := consumed(t, cl, 500, 20*time.Second); len(more) != 500 {
				t.Fatalf("consumed %d of the next 500", len(more))
			}
			n, parts, _ := s.FetchSessionStats()
			if sessions && (n != 1 || parts == 0) {
				t.Fatalf("%d sessions of %d partitions cached, want franz-go's one", n, parts)
			}
			if !sessions && n != 0 {
				t.Fatalf("%d sessions cached for a client that declines them", n)
			}
		})
	}
}

// The protocol, request by request: a full fetch of epoch 0 opens a session and answers
// every partition; an incremental fetch names nothing and answers only the partition that
// got a record; a replayed epoch and an unknown id are refused, and a closed session is gone.
func TestFetchSessionProtocol(t *testing.T) {
	_, _, addr := serveTestBroker(t, nil, nil)
	createTopic(t, addr, "s", 3, 0)
	raw, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("s"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	fetch := func(id, epoch int32, parts ...int32) *kmsg.FetchResponse {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = 12, -1, 1<<20, 0
		req.SessionID, req.SessionEpoch = id, epoch
		if len(parts) > 0 {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "s"
			for _, p := range parts {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, 1<<20, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		return fetchWith(t, raw, req)
	}
	answered := func(resp *kmsg.FetchResponse) []string {
		var out []string
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				out = append(out, fmt.Sprintf("%s/%d:%d", rt.Topic, p.Partition, len(p.RecordBatches)))
			}
		}
		return out
	}

	// Every partition led and answering first: an error in the opening answer is answered
	// again in the next (as in Kafka), which this test does not want to see.
	waitUntil(t, "every partition to answer a sessionless fetch", 10*time.Second, func() bool {
		for _, rt := range fetch(0, -1, 0, 1, 2).Topics {
			for _, p := range rt.Partitions {
				if p.ErrorCode != 0 {
					return false
				}
			}
		}
		return true
	})
	full := fetch(0, 0, 0, 1, 2)
	if full.ErrorCode != 0 || full.SessionID <= 0 || len(answered(full)) != 3 {
		t.Fatalf("opening fetch: %v, session %d, %v", kerr.ErrorForCode(full.ErrorCode), full.SessionID, answered(full))
	}
	id := full.SessionID
	if inc := fetch(id, 1); inc.ErrorCode != 0 || inc.SessionID != id || len(inc.Topics) != 0 {
		t.Fatalf("incremental with nothing new: %v, session %d, %v", kerr.ErrorForCode(inc.ErrorCode), inc.SessionID, answered(inc))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := raw.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	inc := fetch(id, 2)
	if got := answered(inc); len(got) != 1 || got[0] == "s/1:0" || inc.Topics[0].Partitions[0].Partition != 1 ||
		inc.Topics[0].Partitions[0].HighWatermark != 1 {
		t.Fatalf("incremental after a record on partition 1: %v", got)
	}
	if replay := fetch(id, 2); replay.ErrorCode != kerr.InvalidFetchSessionEpoch.Code || len(replay.Topics) != 0 {
		t.Fatalf("a replayed epoch: %v", kerr.ErrorForCode(replay.ErrorCode))
	}
	if unknown := fetch(id+1, 1, 0); unknown.ErrorCode != kerr.FetchSessionIDNotFound.Code || len(unknown.Topics) != 0 {
		t.Fatalf("an unknown session: %v", kerr.ErrorForCode(unknown.ErrorCode))
	}
	// The refusals did not cost the session its place.
	if inc := fetch(id, 3); inc.ErrorCode != 0 || inc.SessionID != id {
		t.Fatalf("the session after the refusals: %v, session %d", kerr.ErrorForCode(inc.ErrorCode), inc.SessionID)
	}
	// Closing it answers sessionless; the id is then unknown.
	if closed := fetch(id, -1, 0); closed.ErrorCode != 0 || closed.SessionID != 0 || len(answered(closed)) != 1 {
		t.Fatalf("closing: %v, session %d", kerr.ErrorForCode(closed.ErrorCode), closed.SessionID)
	}
	if gone := fetch(id, 4); gone.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("a closed session: %v", kerr.ErrorForCode(gone.ErrorCode))
	}
}
