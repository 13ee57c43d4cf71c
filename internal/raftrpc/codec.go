package raftrpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/rpc"
)

// MsgType is the rpc message type that carries raft batches (its number is in the table of
// internal/rpc/types.go).
const MsgType = rpc.MsgRaft

// wireVersion is the version byte of the payload encoding.
const wireVersion = 2

// RPCID maps a raft node id to an rpc node id; ok is false if id is not representable.
func RPCID(id uint64) (int32, bool) {
	if id == 0 || id > math.MaxInt32 {
		return 0, false
	}
	return int32(id), true
}

// RaftID maps an rpc node id to a raft node id; ok is false if id is not a valid node id.
func RaftID(id int32) (uint64, bool) {
	if id <= 0 {
		return 0, false
	}
	return uint64(id), true
}

// EncodeBatch encodes b's messages, written reports and heartbeat (not From: the rpc frame
// carries the sender; not Visible: see EncodeVisible) into a fresh payload.
func EncodeBatch(b *raft.Batch) ([]byte, error) {
	return encodeBatch(b, 0)
}

// encodeBatch is EncodeBatch with room for spare more bytes after the payload, so that the
// visible reports that go with it share its allocation (Sender.send).
func encodeBatch(b *raft.Batch, spare int) ([]byte, error) {
	size := spare + 1 + binary.MaxVarintLen64*3 + len(b.Written)*3*binary.MaxVarintLen64
	if b.Heartbeat != nil {
		// Exactly: a listing holds thousands of groups on a busy host, every tick.
		for _, q := range b.Heartbeat.Quiesced {
			size += uvarintLen(q.Group) + uvarintLen(q.Term) + uvarintLen(q.Commit)
		}
	}
	sizes := make([]int, len(b.Messages))
	for i, m := range b.Messages {
		if m.Msg == nil {
			return nil, fmt.Errorf("raftrpc: nil message for group %d", m.Group)
		}
		sizes[i] = proto.Size(m.Msg)
		size += 2*binary.MaxVarintLen64 + sizes[i]
	}
	buf := make([]byte, 0, size)
	buf = append(buf, wireVersion)
	buf = binary.AppendUvarint(buf, uint64(len(b.Messages)))
	opts := proto.MarshalOptions{UseCachedSize: true} // sizes were just computed
	for i, m := range b.Messages {
		buf = binary.AppendUvarint(buf, m.Group)
		buf = binary.AppendUvarint(buf, uint64(sizes[i]))
		n := len(buf)
		var err error
		if buf, err = opts.MarshalAppend(buf, m.Msg); err != nil {
			return nil, fmt.Errorf("raftrpc: group %d: %w", m.Group, err)
		}
		if len(buf)-n != sizes[i] {
			return nil, fmt.Errorf("raftrpc: group %d: message changed while encoding", m.Group)
		}
	}
	buf = binary.AppendUvarint(buf, uint64(len(b.Written)))
	for _, w := range b.Written {
		buf = binary.AppendUvarint(buf, w.Group)
		buf = binary.AppendUvarint(buf, w.Term)
		buf = binary.AppendUvarint(buf, w.Index)
	}
	if b.Heartbeat == nil {
		return append(buf, 0), nil
	}
	buf = binary.AppendUvarint(buf, uint64(len(b.Heartbeat.Quiesced))+1)
	for _, q := range b.Heartbeat.Quiesced {
		buf = binary.AppendUvarint(buf, q.Group)
		buf = binary.AppendUvarint(buf, q.Term)
		buf = binary.AppendUvarint(buf, q.Commit)
	}
	return buf, nil
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

var errShort = errors.New("raftrpc: truncated payload")

type reader struct {
	b []byte
}

func (r *reader) uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		return 0, errShort
	}
	r.b = r.b[n:]
	return v, nil
}

// count reads an element count and checks that the rest of the payload could hold that
// many elements of at least min bytes each (so a corrupt count cannot make us allocate).
func (r *reader) count(min int) (int, error) {
	n, err := r.uvarint()
	if err != nil {
		return 0, err
	}
	if n > uint64(len(r.b)/min) {
		return 0, fmt.Errorf("raftrpc: count %d exceeds the %d bytes left", n, len(r.b))
	}
	return int(n), nil
}

// DecodeBatch decodes a payload made by EncodeBatch. The result's From is 0 (the caller
// knows the sender). The returned messages do not alias payload.
func DecodeBatch(payload []byte) (*raft.Batch, error) {
	return decodeBatch(payload, nil)
}

// decodeBatch is DecodeBatch with the heartbeat listing appended to quiesced (reused
// storage for a caller that does not keep the listing).
func decodeBatch(payload []byte, quiesced []raft.QuiescedGroup) (*raft.Batch, error) {
	if len(payload) == 0 {
		return nil, errShort
	}
	if payload[0] != wireVersion {
		return nil, fmt.Errorf("raftrpc: unsupported version %d", payload[0])
	}
	r := reader{payload[1:]}
	nmsg, err := r.count(2)
	if err != nil {
		return nil, err
	}
	b := &raft.Batch{}
	if nmsg > 0 {
		b.Messages = make([]raft.GroupMessage, 0, nmsg)
	}
	for range nmsg {
		group, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		n, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		if n > uint64(len(r.b)) {
			return nil, errShort
		}
		m := &pb.Message{}
		if err := proto.Unmarshal(r.b[:n], m); err != nil {
			return nil, fmt.Errorf("raftrpc: group %d: %w", group, err)
		}
		r.b = r.b[n:]
		b.Messages = append(b.Messages, raft.GroupMessage{Group: group, Msg: m})
	}
	nw, err := r.count(3)
	if err != nil {
		return nil, err
	}
	if nw > 0 {
		b.Written = make([]raft.WrittenReport, 0, nw)
	}
	for range nw {
		var w raft.WrittenReport
		if w.Group, err = r.uvarint(); err != nil {
			return nil, err
		}
		if w.Term, err = r.uvarint(); err != nil {
			return nil, err
		}
		if w.Index, err = r.uvarint(); err != nil {
			return nil, err
		}
		b.Written = append(b.Written, w)
	}
	hb, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	if hb > 0 {
		nq := hb - 1
		if nq > uint64(len(r.b)/3) {
			return nil, fmt.Errorf("raftrpc: count %d exceeds the %d bytes left", nq, len(r.b))
		}
		b.Heartbeat = &raft.HostHeartbeat{}
		if nq > 0 {
			if uint64(cap(quiesced)) >= nq {
				b.Heartbeat.Quiesced = quiesced[:0]
			} else {
				b.Heartbeat.Quiesced = make([]raft.QuiescedGroup, 0, nq)
			}
		}
	}
	for range max(int(hb)-1, 0) {
		var q raft.QuiescedGroup
		if q.Group, err = r.uvarint(); err != nil {
			return nil, err
		}
		if q.Term, err = r.uvarint(); err != nil {
			return nil, err
		}
		if q.Commit, err = r.uvarint(); err != nil {
			return nil, err
		}
		b.Heartbeat.Quiesced = append(b.Heartbeat.Quiesced, q)
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("raftrpc: %d trailing bytes", len(r.b))
	}
	return b, nil
}
