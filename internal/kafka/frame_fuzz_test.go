package kafka

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/storage"
)

func newTestServer(t testing.TB) *Server {
	b, err := broker.New(broker.Config{DataDir: "/data", KafkaAddr: "127.0.0.1:9092", FS: storage.NewMemFS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return NewServer(b, nil, nil)
}

// frame encodes a request the way a client would, without the size prefix.
func frame(req kmsg.Request, version int16) []byte {
	req.SetVersion(version)
	out := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	out = binary.BigEndian.AppendUint16(out, uint16(version))
	out = binary.BigEndian.AppendUint32(out, 7)
	out = binary.BigEndian.AppendUint16(out, 4)
	out = append(out, "fuzz"...)
	if req.IsFlexible() {
		out = append(out, 0)
	}
	return req.AppendTo(out)
}

// FuzzHandleFrame feeds arbitrary request frames to the decoder and handlers: a frame may be
// refused (the connection would close) but must never panic the broker.
func FuzzHandleFrame(f *testing.F) {
	meta := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr("fuzzed")
	meta.Topics = append(meta.Topics, t)
	f.Add(frame(meta, 12))
	f.Add(frame(meta, 1))
	f.Add(frame(kmsg.NewPtrApiVersionsRequest(), 3))
	f.Add(frame(kmsg.NewPtrApiVersionsRequest(), 99))
	f.Add(frame(kmsg.NewPtrFetchRequest(), 12))
	f.Add(frame(rackFetch("fuzzed", "r1"), 11))
	f.Add(frame(rackFetch("fuzzed", strings.Repeat("r", 256)), 12))
	f.Add(frame(kmsg.NewPtrProduceRequest(), 9))
	f.Add(frame(kmsg.NewPtrDescribeConfigsRequest(), 4))
	f.Add(frame(kmsg.NewPtrIncrementalAlterConfigsRequest(), 1))
	alter := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	at := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	at.Topic = "fuzzed"
	ap := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	ap.Replicas = []int32{1, 2}
	at.Partitions = append(at.Partitions, ap, kmsg.NewAlterPartitionAssignmentsRequestTopicPartition())
	alter.Topics = append(alter.Topics, at)
	f.Add(frame(alter, 0))
	f.Add(frame(alter, 1))
	f.Add(frame(kmsg.NewPtrListPartitionReassignmentsRequest(), 0))
	f.Add([]byte{0, 0, 0})
	s := newTestServer(f)
	f.Fuzz(func(t *testing.T, fr []byte) {
		slot, err := s.handleFrame(context.Background(), fr)
		if err != nil || slot.respond == nil {
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // long-polls and acks=-1 waits end at once
		if resp := slot.respond(ctx); resp != nil {
			resp.AppendTo(nil)
		}
	})
}
