package kafka

import (
	"context"
	"hash/fnv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/security"
)

// hashAuthorizer refuses about half of all checks, chosen by a hash of the check, so that
// one request mixes allowed and refused resources the same way on every run.
type hashAuthorizer struct{}

func (hashAuthorizer) AuthorizationEnabled() bool { return true }

func (hashAuthorizer) Authorize(_ security.Principal, _ string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	h := fnv.New32a()
	h.Write([]byte{byte(op), byte(rt)})
	h.Write([]byte(name))
	return h.Sum32()%2 == 0
}

// FuzzRefusedFrames feeds arbitrary group and admin frames to a server whose authorizer
// refuses some of what each names: answers that mix refusals and results must never
// panic the broker or fail to encode.
func FuzzRefusedFrames(f *testing.F) {
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group = "g"
	for _, topic := range []string{"a", "b", "c", "a"} {
		ct := kmsg.NewOffsetCommitRequestTopic()
		ct.Topic = topic
		ct.Partitions = append(ct.Partitions, kmsg.NewOffsetCommitRequestTopicPartition(), kmsg.NewOffsetCommitRequestTopicPartition())
		commit.Topics = append(commit.Topics, ct)
	}
	f.Add(frame(commit, 8))
	f.Add(frame(commit, 1))
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = "g"
	for _, g := range []string{"g", "h", "i"} {
		fg := kmsg.NewOffsetFetchRequestGroup()
		fg.Group = g
		ft := kmsg.NewOffsetFetchRequestGroupTopic()
		ft.Topic, ft.Partitions = "a", []int32{0, 1}
		fg.Topics = append(fg.Topics, ft)
		fetch.Groups = append(fetch.Groups, fg)
		t := kmsg.NewOffsetFetchRequestTopic()
		t.Topic, t.Partitions = g, []int32{0}
		fetch.Topics = append(fetch.Topics, t)
	}
	f.Add(frame(fetch, 8))
	f.Add(frame(fetch, 7))
	f.Add(frame(fetch, 1))
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g", "h", "i", "g"}
	f.Add(frame(del, 2))
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "h"
	for _, topic := range []string{"a", "b"} {
		ot := kmsg.NewOffsetDeleteRequestTopic()
		ot.Topic = topic
		ot.Partitions = append(ot.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
		od.Topics = append(od.Topics, ot)
	}
	f.Add(frame(od, 0))
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"g", "h", "i"}
	f.Add(frame(fc, 4))
	f.Add(frame(kmsg.NewPtrDescribeGroupsRequest(), 5))
	create := kmsg.NewPtrCreateTopicsRequest()
	for _, topic := range []string{"a", "b", "c"} {
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 1, 1
		create.Topics = append(create.Topics, ct)
	}
	f.Add(frame(create, 7))
	dt := kmsg.NewPtrDeleteTopicsRequest()
	for _, topic := range []string{"a", "b", "zz"} {
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr(topic)
		dt.Topics = append(dt.Topics, t)
	}
	dt.Topics = append(dt.Topics, kmsg.NewDeleteTopicsRequestTopic())
	f.Add(frame(dt, 6))
	scram := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	sd := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	sd.Name = "u"
	scram.Deletions = append(scram.Deletions, sd, sd)
	f.Add(frame(scram, 0))
	elect := kmsg.NewPtrElectLeadersRequest()
	et := kmsg.NewElectLeadersRequestTopic()
	et.Topic, et.Partitions = "a", []int32{0, 1}
	elect.Topics = append(elect.Topics, et)
	f.Add(frame(elect, 2))
	f.Add(frame(kmsg.NewPtrAlterPartitionAssignmentsRequest(), 0))
	f.Add(frame(kmsg.NewPtrListGroupsRequest(), 4))
	s := newTestServer(f)
	s.SetAuthorizer(hashAuthorizer{})
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
