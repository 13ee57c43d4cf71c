package e2e

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAdvertisedApisAnswer: every API version range the broker advertises is served: an
// empty request of each advertised API at its lowest and highest advertised version gets
// a response that decodes at that version.
func TestAdvertisedApisAnswer(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	rc := dialRaw(t, b.KafkaAddr)
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "cairn-e2e", "1"
	r, err := rc.roundTrip(av)
	if err != nil {
		t.Fatalf("ApiVersions v3: %v", err)
	}
	for _, k := range r.(*kmsg.ApiVersionsResponse).ApiKeys {
		for _, v := range []int16{k.MinVersion, k.MaxVersion} {
			req := kmsg.RequestForKey(k.ApiKey)
			if req == nil {
				t.Errorf("the broker advertises api key %d, unknown to kmsg", k.ApiKey)
				continue
			}
			if v > req.MaxVersion() {
				t.Logf("%s v%d is newer than this kmsg knows (v%d); asking v%d", kmsg.NameForKey(k.ApiKey), v, req.MaxVersion(), req.MaxVersion())
				v = req.MaxVersion()
			}
			req.SetVersion(v)
			switch q := req.(type) {
			case *kmsg.ProduceRequest:
				q.Acks, q.TimeoutMillis = -1, 1000
			case *kmsg.FetchRequest:
				q.MaxWaitMillis, q.ReplicaID = 10, -1
			case *kmsg.CreateTopicsRequest:
				q.TimeoutMillis = 1000
			case *kmsg.DeleteTopicsRequest:
				q.TimeoutMillis = 1000
			}
			c := dialRaw(t, b.KafkaAddr)
			if _, err := c.roundTrip(req); err != nil {
				t.Errorf("%s v%d (advertised v%d-v%d), empty request: %v", kmsg.NameForKey(k.ApiKey), v, k.MinVersion, k.MaxVersion, err)
			}
		}
	}
}

// TestVersionSweep: Produce v3-v11, Fetch v4-v12, ListOffsets v1-v8 and Metadata v0-v12 each
// do their job at every version, on raw connections at exactly that version.
func TestVersionSweep(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic = "sweep"
	createTopic(t, b.Admin(t), topic, 2, nil)
	rc := dialRaw(t, b.KafkaAddr)

	for v := int16(3); v <= 11; v++ {
		r, err := rc.roundTrip(produceRequest(v, -1, topic, 1, simpleBatch(fmt.Sprintf("v%d", v), 1)))
		if err != nil {
			t.Fatalf("Produce v%d: %v", v, err)
		}
		p, err := producePartitionResponse(r)
		if err != nil {
			t.Fatalf("Produce v%d: %v", v, err)
		}
		if p.ErrorCode != 0 || p.BaseOffset != int64(v-3) {
			t.Errorf("Produce v%d: %s base offset %d, want NONE base offset %d", v, kerrName(p.ErrorCode), p.BaseOffset, v-3)
		}
	}
	const n = 9 // records in partition 1

	for v := int16(4); v <= 12; v++ {
		req := kmsg.NewPtrFetchRequest()
		req.Version = v
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 100, 1, 1<<20
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = 1, 2, 1<<20, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r, err := rc.roundTrip(req)
		if err != nil {
			t.Fatalf("Fetch v%d: %v", v, err)
		}
		fr := r.(*kmsg.FetchResponse)
		if fr.ErrorCode != 0 || len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
			t.Errorf("Fetch v%d: top-level %s, topics %+v", v, kerrName(fr.ErrorCode), fr.Topics)
			continue
		}
		fp := fr.Topics[0].Partitions[0]
		if fp.ErrorCode != 0 || fp.HighWatermark != n {
			t.Errorf("Fetch v%d: %s high watermark %d, want NONE %d", v, kerrName(fp.ErrorCode), fp.HighWatermark, n)
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(fp.RecordBatches); err != nil || rb.FirstOffset != 2 {
			t.Errorf("Fetch v%d at offset 2: first batch base offset %d (%v), want 2", v, rb.FirstOffset, err)
		}
	}

	for v := int16(1); v <= 8; v++ {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = v
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 1, -2, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r, err := rc.roundTrip(req)
		if err != nil {
			t.Fatalf("ListOffsets v%d: %v", v, err)
		}
		lr := r.(*kmsg.ListOffsetsResponse)
		if len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 {
			t.Errorf("ListOffsets v%d: %+v", v, lr.Topics)
			continue
		}
		if p := lr.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 0 {
			t.Errorf("ListOffsets v%d earliest: %s offset %d, want NONE 0", v, kerrName(p.ErrorCode), p.Offset)
		}
		req.Topics[0].Partitions[0].Timestamp = -1
		r, err = rc.roundTrip(req)
		if err != nil {
			t.Fatalf("ListOffsets v%d: %v", v, err)
		}
		if p := r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != n {
			t.Errorf("ListOffsets v%d latest: %s offset %d, want NONE %d", v, kerrName(p.ErrorCode), p.Offset, n)
		}
	}

	for v := int16(0); v <= 12; v++ {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		r, err := rc.roundTrip(req)
		if err != nil {
			t.Fatalf("Metadata v%d: %v", v, err)
		}
		mr := r.(*kmsg.MetadataResponse)
		if len(mr.Brokers) != 1 || mr.Brokers[0].NodeID != 1 || fmt.Sprintf("%s:%d", mr.Brokers[0].Host, mr.Brokers[0].Port) != b.KafkaAddr {
			t.Errorf("Metadata v%d brokers: %+v, want node 1 at %s", v, mr.Brokers, b.KafkaAddr)
		}
		if len(mr.Topics) != 1 || mr.Topics[0].ErrorCode != 0 || len(mr.Topics[0].Partitions) != 2 {
			t.Errorf("Metadata v%d topics: %+v, want %s with 2 partitions", v, mr.Topics, topic)
			continue
		}
		for _, p := range mr.Topics[0].Partitions {
			if p.ErrorCode != 0 || p.Leader != 1 || len(p.Replicas) != 1 || len(p.ISR) != 1 {
				t.Errorf("Metadata v%d %s[%d]: %+v", v, topic, p.Partition, p)
			}
		}
		if v >= 1 && mr.ControllerID != 1 {
			t.Errorf("Metadata v%d controller id %d, want 1", v, mr.ControllerID)
		}
	}
}
