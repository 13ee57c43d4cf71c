package partition

import (
	"context"
	"fmt"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/raft/rafttest"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

// Script commands of follower fetching (follower.go), for testdata/follower_fetch.txt:
// what a consumer's Fetch and ListOffsets get from each replica.
func init() {
	// fetch H [offset=N] [rack=R] [follower-read] [epoch=E] [last-epoch=E] [max-bytes=N]
	// [read-committed]: a consumer's fetch of t-0 at offset N (default 0) from host H's
	// replica, sending rack R, with follower fetching on (follower-read) or off, and its
	// current leader epoch E (default -1: unchecked), read_committed or not; it prints the
	// records' offsets, or the redirect, or the error, with the high watermark and log
	// start the consumer is told, and under read_committed the last stable offset and the
	// aborted transactions (producer@first offset).
	replicaCommands["fetch"] = func(s *replicaScript, td *datadriven.TestData) string {
		id := s.hostBeside(td, "follower-read", "read-committed")
		req := FetchRequest{CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, MaxBytes: 1 << 20, FollowerRead: td.HasArg("follower-read"),
			ReadCommitted: td.HasArg("read-committed")}
		td.MaybeScanArgs(s.t, "offset", &req.Offset)
		td.MaybeScanArgs(s.t, "rack", &req.ClientRack)
		td.MaybeScanArgs(s.t, "epoch", &req.CurrentLeaderEpoch)
		td.MaybeScanArgs(s.t, "last-epoch", &req.LastFetchedEpoch)
		td.MaybeScanArgs(s.t, "max-bytes", &req.MaxBytes)
		res := s.part(id).ServeFetch(req)
		defer res.Release()
		out := fmt.Sprintf("%d: %s; hw=%d log-start=%d", id, s.fetched(&res), res.HighWatermark, res.LogStart)
		if req.ReadCommitted {
			out += fmt.Sprintf(" lso=%d", res.LastStable)
			for _, a := range res.Aborted {
				out += fmt.Sprintf(" aborted=%d@%d", a.ProducerID, a.FirstOffset)
			}
		}
		return out
	}
	// list-offsets H [follower-read] [epoch=E] [read-committed]: ListOffsets latest and
	// earliest from host H's replica, with follower fetching on or off, read_committed or
	// not.
	replicaCommands["list-offsets"] = func(s *replicaScript, td *datadriven.TestData) string {
		id := s.hostBeside(td, "follower-read", "read-committed")
		committed := td.HasArg("read-committed")
		epoch := int32(-1)
		td.MaybeScanArgs(s.t, "epoch", &epoch)
		p := s.part(id)
		out := fmt.Sprintf("%d:", id)
		for _, c := range []struct {
			name string
			ts   int64
		}{{"latest", ListLatest}, {"earliest", ListEarliest}} {
			var off int64
			var err *kerr.Error
			if td.HasArg("follower-read") {
				off, _, err = p.FollowerListOffset(c.ts, epoch, committed)
			} else if err = p.CheckEpoch(epoch); err == nil {
				off, _, err = p.ListOffset(c.ts, committed)
			}
			if err != nil {
				out += fmt.Sprintf(" %s %s", c.name, err.Message)
			} else {
				out += fmt.Sprintf(" %s=%d", c.name, off)
			}
		}
		return out
	}
	// append-txn H producer=PID [records=N] [commit|abort]: host H's replica (the leader)
	// appends, past Produce's validation as the transaction path will, a transactional
	// batch of N records (default 1) of producer PID (epoch 0), or PID's commit or abort
	// marker; it prints the offset. Host H's ready handling runs until the leader appended
	// it; nothing is delivered or fsynced.
	replicaCommands["append-txn"] = func(s *replicaScript, td *datadriven.TestData) string {
		id := s.hostBeside(td, "commit", "abort")
		var pid int64
		td.ScanArgs(s.t, "producer", &pid)
		var batch []byte
		switch {
		case td.HasArg("commit"):
			batch = marker(pid, recordbatch.ControlCommit)
		case td.HasArg("abort"):
			batch = marker(pid, recordbatch.ControlAbort)
		default:
			records := 1
			td.MaybeScanArgs(s.t, "records", &records)
			batch = txnBatch(pid, records, 1000)
		}
		p := s.part(id)
		var prop *raft.Proposal
		var err error
		s.d.ProcessWhile(id, func() {
			if prop, err = p.host.ProposeAsync(p.group, batch); err == nil {
				err = prop.Wait(context.Background(), raft.StageAppended)
			}
		})
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("%d: appended at offset %d", id, prop.BaseOffset())
	}
	// follow-log-start H offset=N: host H's replica moves its log start up to N, as the
	// broker has a follower follow its leader's (DeleteRecords, retention).
	replicaCommands["follow-log-start"] = func(s *replicaScript, td *datadriven.TestData) string {
		id := s.d.HostArg(td)
		var off int64
		td.ScanArgs(s.t, "offset", &off)
		if err := s.part(id).FollowLogStart(off); err != nil {
			return err.Error()
		}
		return fmt.Sprintf("%d: log start %d", id, s.part(id).Boundaries().LogStart)
	}
}

// hostBeside reads the one host a directive names among its flags.
func (s *replicaScript) hostBeside(td *datadriven.TestData, flags ...string) uint64 {
	args := rafttest.Positional(td, flags...)
	if len(args) != 1 {
		s.t.Fatalf("%s: %s H", td.Pos, td.Cmd)
	}
	return rafttest.ParseID(s.t, args[0])
}

// fetched describes a fetch result's answer: the offsets of its records, the replica it
// points to, or its error.
func (s *replicaScript) fetched(res *FetchResult) string {
	switch {
	case res.Err != nil:
		return res.Err.Message
	case res.PreferredReadReplica != 0:
		return fmt.Sprintf("read from %d", res.PreferredReadReplica)
	case res.Diverging != nil:
		return fmt.Sprintf("diverging at epoch %d end %d", res.Diverging.Epoch, res.Diverging.EndOffset)
	}
	raw := append([]byte(nil), res.Records...)
	for i := range res.Files.Len() {
		fr := res.Files.Range(i)
		buf := make([]byte, fr.Len)
		if _, err := fr.File.ReadAt(buf, fr.Pos); err != nil {
			s.t.Fatal(err)
		}
		raw = append(raw, buf...)
	}
	first, last := int64(-1), int64(-1)
	for len(raw) > 0 {
		h, ok := recordbatch.ParseHeader(raw)
		if !ok || h.Size() > int64(len(raw)) {
			s.t.Fatalf("fetch returned a torn batch")
		}
		if first < 0 {
			first = h.BaseOffset
		}
		last = h.BaseOffset + int64(h.LastOffsetDelta)
		raw = raw[h.Size():]
	}
	if first < 0 {
		return "no records"
	}
	return fmt.Sprintf("records %d-%d", first, last)
}
