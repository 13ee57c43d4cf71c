package broker

import (
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"github.com/cairn-io/cairn/internal/rpc"
)

// Only the leader driving a move knows how far its learners are, but an operator asks any
// broker (ListPartitionReassignments, GET /v1/partitions/reconfigurations). So a broker
// that drives moves tells every other, every moveProgressEvery, how each is going
// (msgMoveProgress); a report older than moveProgressTTL is forgotten (its sender stopped
// leading the group, or stopped). Brokers of an earlier release drop the message type and
// count it.

const msgMoveProgress = rpc.MsgMoveProgress // partition leader → every broker: how its moves go

const (
	moveProgressEvery   = time.Second
	moveProgressTTL     = 5 * time.Second
	moveProgressVersion = 1
	maxMoveProgress     = 1 << 16 // entries one message may carry
	maxMoveWaiting      = 512     // bytes of a Waiting reason that travel
)

type moveReport struct {
	group    uint64
	progress MoveProgress
}

// remoteMoves holds the move reports heard from other brokers.
type remoteMoves struct {
	mu      sync.Mutex
	byGroup map[uint64]MoveProgress
}

func (rm *remoteMoves) receive(from int32, payload []byte) error {
	list, err := decodeMoveProgress(payload)
	if err != nil {
		return err
	}
	now := time.Now()
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if rm.byGroup == nil {
		rm.byGroup = map[uint64]MoveProgress{}
	}
	for _, r := range list {
		r.progress.Updated = now
		r.progress.From = from
		rm.byGroup[r.group] = r.progress
	}
	return nil
}

func (rm *remoteMoves) get(g uint64) (MoveProgress, bool) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	pr, ok := rm.byGroup[g]
	if !ok || time.Since(pr.Updated) > moveProgressTTL {
		delete(rm.byGroup, g)
		return MoveProgress{}, false
	}
	return pr, true
}

// MoveProgress returns how the move of a partition group is going, as the leader driving
// it last said (this broker, or the report it sent here).
func (b *Broker) MoveProgress(g uint64) (MoveProgress, bool) {
	if pr, ok := b.moveProgress(g); ok {
		pr.From = b.cfg.NodeID
		return pr, true
	}
	return b.moves.remote.get(g)
}

// reportedProgress is MoveProgress for ReassignmentInfo: nil when no driver reported.
func (b *Broker) reportedProgress(g uint64) *MoveProgress {
	pr, ok := b.MoveProgress(g)
	if !ok {
		return nil
	}
	return &pr
}

// sendMoveProgress tells every live broker how the moves driven here are going.
func (b *Broker) sendMoveProgress() {
	b.moves.mu.Lock()
	list := make([]moveReport, 0, len(b.moves.runs))
	for g, run := range b.moves.runs {
		list = append(list, moveReport{group: g, progress: run.progress})
	}
	b.moves.mu.Unlock()
	if len(list) == 0 {
		return
	}
	payload := encodeMoveProgress(list)
	for _, br := range b.state().LiveBrokers() {
		if br.ID != b.cfg.NodeID {
			_ = b.transport.Send(br.ID, msgMoveProgress, payload) // lost: the next report repeats it
		}
	}
}

var errBadMoveProgress = errors.New("malformed move progress")

func encodeMoveProgress(list []moveReport) []byte {
	buf := []byte{moveProgressVersion}
	buf = binary.AppendUvarint(buf, uint64(len(list)))
	str := func(s string, limit int) {
		if len(s) > limit {
			s = s[:limit]
		}
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	for _, r := range list {
		buf = binary.AppendUvarint(buf, r.group)
		str(r.progress.Phase, 64)
		str(r.progress.Waiting, maxMoveWaiting)
		buf = binary.AppendUvarint(buf, uint64(max(r.progress.BytesMoved, 0)))
		buf = binary.AppendUvarint(buf, uint64(max(r.progress.BytesLeft, 0)))
	}
	return buf
}

func decodeMoveProgress(b []byte) ([]moveReport, error) {
	if len(b) < 1 || b[0] != moveProgressVersion {
		return nil, errBadMoveProgress
	}
	b = b[1:]
	next := func(limit uint64) (uint64, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 || v > limit {
			return 0, errBadMoveProgress
		}
		b = b[n:]
		return v, nil
	}
	str := func(limit uint64) (string, error) {
		n, err := next(limit)
		if err != nil || n > uint64(len(b)) {
			return "", errBadMoveProgress
		}
		s := string(b[:n])
		b = b[n:]
		return s, nil
	}
	n, err := next(maxMoveProgress)
	if err != nil || n > uint64(len(b)) {
		return nil, errBadMoveProgress
	}
	list := make([]moveReport, 0, n)
	for range n {
		var r moveReport
		if r.group, err = next(1<<63 - 1); err != nil {
			return nil, err
		}
		if r.progress.Phase, err = str(64); err != nil {
			return nil, err
		}
		if r.progress.Waiting, err = str(maxMoveWaiting); err != nil {
			return nil, err
		}
		moved, err := next(1 << 62)
		if err != nil {
			return nil, err
		}
		left, err := next(1 << 62)
		if err != nil {
			return nil, err
		}
		r.progress.BytesMoved, r.progress.BytesLeft = int64(moved), int64(left)
		list = append(list, r)
	}
	if len(b) != 0 {
		return nil, errBadMoveProgress
	}
	return list, nil
}
