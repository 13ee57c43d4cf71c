package kafka

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// respondFunc produces a response once whatever it waits on is done; nil sends nothing.
type respondFunc = func(ctx context.Context) kmsg.Response

// api is one served API: the versions we speak and its handler. The handler runs in the
// connection's reader, in request order; its respondFunc runs in the writer.
type api struct {
	min, max int16
	handle   func(s *Server, ctx context.Context, req kmsg.Request) respondFunc
}

// apis lists exactly the APIs that work; ApiVersions advertises this table and nothing else.
// Produce advertises v0 as its minimum so older librdkafka keeps compression on; batches
// in the pre-v2 formats (which only Produce v0-v2 can carry) are refused per partition.
var apis map[int16]api

// init builds the table, since ApiVersions' own handler reads it.
func init() {
	apis = map[int16]api{
		0:  {0, 11, handleProduce},
		1:  {4, 12, handleFetch},
		2:  {1, 8, handleListOffsets},
		3:  {0, 12, handleMetadata},
		8:  {0, 8, handleOffsetCommit},
		9:  {0, 8, handleOffsetFetch},
		10: {0, 4, handleFindCoordinator},
		11: {0, 9, handleJoinGroup},
		12: {0, 4, handleHeartbeat},
		13: {0, 5, handleLeaveGroup},
		14: {0, 5, handleSyncGroup},
		15: {0, 5, handleDescribeGroups},
		16: {0, 4, handleListGroups},
		17: {0, 1, handleSASLHandshake},
		18: {0, 4, handleApiVersions},
		19: {0, 7, handleCreateTopics},
		20: {0, 6, handleDeleteTopics},
		21: {0, 2, handleDeleteRecords},
		22: {0, 4, handleInitProducerID},
		23: {0, 4, handleOffsetForLeaderEpoch},
		24: {0, 3, handleAddPartitionsToTxn},
		25: {0, 3, handleAddOffsetsToTxn},
		26: {0, 3, handleEndTxn},
		28: {0, 3, handleTxnOffsetCommit},
		29: {0, 3, handleDescribeACLs},
		30: {0, 3, handleCreateACLs},
		31: {0, 3, handleDeleteACLs},
		32: {0, 4, handleDescribeConfigs},
		33: {0, 2, handleAlterConfigs},
		36: {0, 2, handleSASLAuthenticate},
		37: {0, 3, handleCreatePartitions},
		42: {0, 2, handleDeleteGroups},
		43: {0, 2, handleElectLeaders},
		44: {0, 1, handleIncrementalAlterConfigs},
		45: {0, 1, handleAlterPartitionAssignments},
		46: {0, 0, handleListPartitionReassignments},
		47: {0, 0, handleOffsetDelete},
		50: {0, 0, handleDescribeUserSCRAMCredentials},
		51: {0, 0, handleAlterUserSCRAMCredentials},
		60: {0, 1, handleDescribeCluster},
		61: {0, 0, handleDescribeProducers},
		65: {0, 0, handleDescribeTransactions},
		66: {0, 1, handleListTransactions},
	}
}

func apiVersionKeys() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(apis))
	for k, a := range apis {
		v := kmsg.NewApiVersionsResponseApiKey()
		v.ApiKey, v.MinVersion, v.MaxVersion = k, a.min, a.max
		keys = append(keys, v)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].ApiKey < keys[j].ApiKey })
	return keys
}

func handleApiVersions(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = apiVersionKeys()
	return func(context.Context) kmsg.Response { return resp }
}

func unsupportedApiVersions() kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = apiVersionKeys()
	return resp
}

func respond(resp kmsg.Response) respondFunc {
	return func(context.Context) kmsg.Response { return resp }
}

func errCode(err *kerr.Error) int16 {
	if err == nil {
		return 0
	}
	return err.Code
}

func strPtr(s string) *string { return &s }

// errMsg is a response's optional error message: nil when there is no error.
func errMsg(err *kerr.Error, msg string) *string {
	if err == nil {
		return nil
	}
	if msg == "" {
		msg = err.Message
	}
	return &msg
}
