package partition

import (
	"fmt"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/raft/rafttest"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

// Script commands of follower fetching (follower.go), for testdata/follower_fetch.txt:
// what a consumer's Fetch and ListOffsets get from each replica.
func init() {
	// fetch H [offset=N] [rack=R] [follower-read] [epoch=E] [last-epoch=E] [max-bytes=N]: a
	// consumer's fetch of t-0 at offset N (default 0) from host H's replica, sending rack
	// R, with follower fetching on (follower-read) or off, and its current leader epoch E
	// (default -1: unchecked); it prints the records' offsets, or the redirect, or the
	// error, with the high watermark and log start the consumer is told.
	replicaCommands["fetch"] = func(s *replicaScript, td *datadriven.TestData) string {
		id := s.hostBeside(td, "follower-read")
		req := FetchRequest{CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, MaxBytes: 1 << 20, FollowerRead: td.HasArg("follower-read")}
		td.MaybeScanArgs(s.t, "offset", &req.Offset)
		td.MaybeScanArgs(s.t, "rack", &req.ClientRack)
		td.MaybeScanArgs(s.t, "epoch", &req.CurrentLeaderEpoch)
		td.MaybeScanArgs(s.t, "last-epoch", &req.LastFetchedEpoch)
		td.MaybeScanArgs(s.t, "max-bytes", &req.MaxBytes)
		res := s.part(id).ServeFetch(req)
		defer res.Release()
		return fmt.Sprintf("%d: %s; hw=%d log-start=%d", id, s.fetched(&res), res.HighWatermark, res.LogStart)
	}
	// list-offsets H [follower-read] [epoch=E]: ListOffsets latest and earliest from host
	// H's replica, with follower fetching on or off.
	replicaCommands["list-offsets"] = func(s *replicaScript, td *datadriven.TestData) string {
		id := s.hostBeside(td, "follower-read")
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
				off, _, err = p.FollowerListOffset(c.ts, epoch, false)
			} else if err = p.CheckEpoch(epoch); err == nil {
				off, _, err = p.ListOffset(c.ts, false)
			}
			if err != nil {
				out += fmt.Sprintf(" %s %s", c.name, err.Message)
			} else {
				out += fmt.Sprintf(" %s=%d", c.name, off)
			}
		}
		return out
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
