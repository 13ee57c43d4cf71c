package raftrpc

import (
	"encoding/binary"
	"fmt"

	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/rpc"
)

// VisibleType is the rpc message type that carries a leader's visible reports
// (raft.VisibleReport) to a follower's host. They travel apart from the raft batch, under a
// type of their own, so that a broker of the previous release, which does not know them,
// drops and counts them (rpc.Registry) while its raft traffic is untouched.
const VisibleType = rpc.MsgRaftVisible

// visibleVersion is the version byte of the visible payload.
//
//	payload = version:uint8 (=1) | n:uvarint | n × (group:uvarint | term:uvarint | index:uvarint)
const visibleVersion = 1

// visibleSize bounds the encoded size of reports.
func visibleSize(reports []raft.VisibleReport) int {
	return 1 + binary.MaxVarintLen64 + len(reports)*3*binary.MaxVarintLen64
}

// EncodeVisible encodes reports into a fresh payload.
func EncodeVisible(reports []raft.VisibleReport) []byte {
	return appendVisible(make([]byte, 0, visibleSize(reports)), reports)
}

func appendVisible(buf []byte, reports []raft.VisibleReport) []byte {
	buf = append(buf, visibleVersion)
	buf = binary.AppendUvarint(buf, uint64(len(reports)))
	for _, r := range reports {
		buf = binary.AppendUvarint(buf, r.Group)
		buf = binary.AppendUvarint(buf, r.Term)
		buf = binary.AppendUvarint(buf, r.Index)
	}
	return buf
}

// DecodeVisible decodes a payload made by EncodeVisible. A payload that does not decode
// exactly (bad version, truncated field, trailing bytes) is an error, and none of it is
// returned.
func DecodeVisible(payload []byte) ([]raft.VisibleReport, error) {
	if len(payload) == 0 {
		return nil, errShort
	}
	if payload[0] != visibleVersion {
		return nil, fmt.Errorf("raftrpc: unsupported visible report version %d", payload[0])
	}
	r := reader{payload[1:]}
	n, err := r.count(3)
	if err != nil {
		return nil, err
	}
	reports := make([]raft.VisibleReport, 0, n)
	for range n {
		var v raft.VisibleReport
		if v.Group, err = r.uvarint(); err != nil {
			return nil, err
		}
		if v.Term, err = r.uvarint(); err != nil {
			return nil, err
		}
		if v.Index, err = r.uvarint(); err != nil {
			return nil, err
		}
		reports = append(reports, v)
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("raftrpc: %d trailing bytes after visible reports", len(r.b))
	}
	return reports, nil
}
