package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/rpc"
)

// The rpc message types of this package, from the table of internal/rpc/types.go. Every
// payload starts with msgVersion; the layouts are in the encode functions below.
//
// New registers the whole block the table keeps for this package (rpc.ClusterBlockFirst to
// rpc.ClusterBlockLast), not only these: a number of the block that this release does not
// know, sent by a newer broker during a rolling upgrade, reaches handle, which refuses it as
// malformed (counted in DroppedMessages and logged) instead of the registry dropping it.
const (
	MsgJoinRequest     = rpc.MsgJoinRequest     // joiner → any broker: add me to group 0
	MsgJoinResponse    = rpc.MsgJoinResponse    // broker → joiner: added, or who the leader is
	MsgProposeRequest  = rpc.MsgProposeRequest  // any broker → controller leader: propose this command
	MsgProposeResponse = rpc.MsgProposeResponse // leader → proposer: applied at index, with its result
	MsgHeartbeat       = rpc.MsgBrokerHeartbeat // any broker → controller leader: I am alive
)

const msgVersion = 1

// Limits on decoded fields: an rpc message is bounded anyway, these only keep garbage small.
const (
	maxAddr    = 1024
	maxMsgText = 4096
	maxCommand = 8 << 20
)

// Status of a join or propose response.
const (
	statusOK        uint8 = 0 // done: joined, or proposed and applied at Index
	statusNotLeader uint8 = 1 // the receiver does not lead group 0; Leader is its guess (-1: none)
	statusRetry     uint8 = 2 // the leader could not finish in time; the outcome is unknown
	statusRejected  uint8 = 3 // refused before proposing (the command does not decode)
)

var errBadMessage = errors.New("cluster: malformed message")

type joinRequest struct {
	RPCAddr string // where the joiner listens, so the leader can answer and replicate to it
}

type joinResponse struct {
	Status     uint8
	Leader     int32
	LeaderAddr string
	Msg        string
	// Voters and Learners are group 0's configuration once the joiner is in it (statusOK).
	// The joiner bootstraps with it: the founders' configuration is in no log entry, so the
	// log alone cannot tell a new replica who the voters are.
	Voters, Learners []uint64
}

type proposeRequest struct {
	Corr    uint64
	RPCAddr string // the proposer's address, so the leader can answer a broker it has not met
	Command []byte // controller.EncodeCommand
}

type proposeResponse struct {
	Corr   uint64
	Status uint8
	Leader int32
	Index  uint64
	Code   int16 // Kafka error code of the result (0: success)
	Msg    string
	PIDs   *controller.ProducerIDBlock
}

type heartbeat struct {
	Incarnation uint64
	RPCAddr     string
}

// ---- encoding ----

type writer struct{ b []byte }

func newWriter() *writer       { return &writer{b: []byte{msgVersion}} }
func (w *writer) u8(v uint8)   { w.b = append(w.b, v) }
func (w *writer) u64(v uint64) { w.b = binary.BigEndian.AppendUint64(w.b, v) }
func (w *writer) i32(v int32)  { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *writer) i64(v int64)  { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }
func (w *writer) i16(v int16)  { w.b = binary.BigEndian.AppendUint16(w.b, uint16(v)) }
func (w *writer) bytes(v []byte) {
	w.b = binary.AppendUvarint(w.b, uint64(len(v)))
	w.b = append(w.b, v...)
}
func (w *writer) ids(v []uint64) {
	w.b = binary.AppendUvarint(w.b, uint64(len(v)))
	for _, id := range v {
		w.u64(id)
	}
}
func (w *writer) str(v string) { w.bytes([]byte(v)) }
func (w *writer) boolean(v bool) {
	if v {
		w.u8(1)
	} else {
		w.u8(0)
	}
}

// join request: v | addr
func (m joinRequest) encode() []byte {
	w := newWriter()
	w.str(m.RPCAddr)
	return w.b
}

// join response: v | status u8 | leader i32 | leaderAddr | msg | voters | learners, where a
// list of ids is count:uvarint | count × id:u64
func (m joinResponse) encode() []byte {
	w := newWriter()
	w.u8(m.Status)
	w.i32(m.Leader)
	w.str(m.LeaderAddr)
	w.str(m.Msg)
	w.ids(m.Voters)
	w.ids(m.Learners)
	return w.b
}

// propose request: v | corr u64 | addr | command
func (m proposeRequest) encode() []byte {
	w := newWriter()
	w.u64(m.Corr)
	w.str(m.RPCAddr)
	w.bytes(m.Command)
	return w.b
}

// propose response: v | corr u64 | status u8 | leader i32 | index u64 | code i16 | msg |
// hasPIDs u8 [ broker i32 | first i64 | size i32 ]
func (m proposeResponse) encode() []byte {
	w := newWriter()
	w.u64(m.Corr)
	w.u8(m.Status)
	w.i32(m.Leader)
	w.u64(m.Index)
	w.i16(m.Code)
	w.str(m.Msg)
	w.boolean(m.PIDs != nil)
	if m.PIDs != nil {
		w.i32(m.PIDs.Broker)
		w.i64(m.PIDs.First)
		w.i32(m.PIDs.Size)
	}
	return w.b
}

// heartbeat: v | incarnation u64 | addr
func (m heartbeat) encode() []byte {
	w := newWriter()
	w.u64(m.Incarnation)
	w.str(m.RPCAddr)
	return w.b
}

// ---- decoding ----

type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", errBadMessage, what)
	}
}

func (r *reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail(what)
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8(what string) uint8 {
	if v := r.take(1, what); v != nil {
		return v[0]
	}
	return 0
}

func (r *reader) u64(what string) uint64 {
	if v := r.take(8, what); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (r *reader) i32(what string) int32 {
	if v := r.take(4, what); v != nil {
		return int32(binary.BigEndian.Uint32(v))
	}
	return 0
}

func (r *reader) i16(what string) int16 {
	if v := r.take(2, what); v != nil {
		return int16(binary.BigEndian.Uint16(v))
	}
	return 0
}

// uvarint reads a length in its shortest encoding: one value, one encoding.
func (r *reader) uvarint() (uint64, bool) {
	n, k := binary.Uvarint(r.b)
	if k <= 0 || k != len(binary.AppendUvarint(nil, n)) {
		return 0, false
	}
	r.b = r.b[k:]
	return n, true
}

func (r *reader) bytes(max int, what string) []byte {
	if r.err != nil {
		return nil
	}
	n, ok := r.uvarint()
	if !ok || n > uint64(max) {
		r.fail(what + " length")
		return nil
	}
	v := r.take(int(n), what)
	if v == nil {
		return nil
	}
	return append([]byte{}, v...) // the caller may keep it; the rpc payload is not ours to pin
}

// maxIDs bounds a list of node ids.
const maxIDs = 1 << 16

func (r *reader) ids(what string) []uint64 {
	if r.err != nil {
		return nil
	}
	n, ok := r.uvarint()
	if !ok || n > maxIDs || n*8 > uint64(len(r.b)) {
		r.fail(what + " count")
		return nil
	}
	var out []uint64
	for range n {
		id := r.u64(what)
		if id == 0 || id > math.MaxInt32 {
			r.fail(what)
			return nil
		}
		out = append(out, id)
	}
	return out
}

func (r *reader) str(max int, what string) string { return string(r.bytes(max, what)) }

func (r *reader) boolean(what string) bool {
	switch r.u8(what) {
	case 0:
		return false
	case 1:
		return true
	}
	r.fail(what)
	return false
}

// finish reports the first error, or trailing bytes.
func (r *reader) finish() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail(fmt.Sprintf("%d trailing bytes", len(r.b)))
	}
	return r.err
}

func newReader(payload []byte) *reader {
	r := &reader{b: payload}
	if v := r.u8("version"); r.err == nil && v != msgVersion {
		r.fail(fmt.Sprintf("version %d", v))
	}
	return r
}

func checkStatus(r *reader, s uint8) {
	if s > statusRejected {
		r.fail(fmt.Sprintf("status %d", s))
	}
}

func decodeJoinRequest(p []byte) (joinRequest, error) {
	r := newReader(p)
	m := joinRequest{RPCAddr: r.str(maxAddr, "address")}
	if m.RPCAddr == "" {
		r.fail("empty address")
	}
	return m, r.finish()
}

func decodeJoinResponse(p []byte) (joinResponse, error) {
	r := newReader(p)
	m := joinResponse{Status: r.u8("status")}
	checkStatus(r, m.Status)
	m.Leader = r.i32("leader")
	m.LeaderAddr = r.str(maxAddr, "leader address")
	m.Msg = r.str(maxMsgText, "message")
	m.Voters = r.ids("voters")
	m.Learners = r.ids("learners")
	if r.err == nil && m.Status == statusOK && len(m.Voters) == 0 {
		r.fail("joined a group without voters")
	}
	return m, r.finish()
}

func decodeProposeRequest(p []byte) (proposeRequest, error) {
	r := newReader(p)
	m := proposeRequest{Corr: r.u64("correlation id")}
	m.RPCAddr = r.str(maxAddr, "address")
	m.Command = r.bytes(maxCommand, "command")
	if r.err == nil && len(m.Command) == 0 {
		r.fail("empty command")
	}
	return m, r.finish()
}

func decodeProposeResponse(p []byte) (proposeResponse, error) {
	r := newReader(p)
	m := proposeResponse{Corr: r.u64("correlation id"), Status: r.u8("status")}
	checkStatus(r, m.Status)
	m.Leader = r.i32("leader")
	m.Index = r.u64("index")
	m.Code = r.i16("error code")
	m.Msg = r.str(maxMsgText, "message")
	if r.boolean("producer id flag") {
		b := &controller.ProducerIDBlock{Broker: r.i32("pid broker")}
		first := r.u64("pid first")
		b.Size = r.i32("pid size")
		if first > math.MaxInt64 || b.Size < 0 {
			r.fail("producer id block")
		}
		b.First = int64(first)
		m.PIDs = b
	}
	if r.err == nil && m.Status == statusOK && m.Index == 0 {
		r.fail("applied at index 0")
	}
	return m, r.finish()
}

func decodeHeartbeat(p []byte) (heartbeat, error) {
	r := newReader(p)
	m := heartbeat{Incarnation: r.u64("incarnation")}
	m.RPCAddr = r.str(maxAddr, "address")
	return m, r.finish()
}

// decodeMessage decodes a payload of one of this package's message types; an unknown type
// is an error. It never panics.
func decodeMessage(t uint8, p []byte) (any, error) {
	switch t {
	case MsgJoinRequest:
		return decodeJoinRequest(p)
	case MsgJoinResponse:
		return decodeJoinResponse(p)
	case MsgProposeRequest:
		return decodeProposeRequest(p)
	case MsgProposeResponse:
		return decodeProposeResponse(p)
	case MsgHeartbeat:
		return decodeHeartbeat(p)
	}
	return nil, fmt.Errorf("%w: unknown type %d", errBadMessage, t)
}
