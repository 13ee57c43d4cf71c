package group

import (
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/config"
)

// CommitRequest is an OffsetCommit, version differences already resolved by the caller.
type CommitRequest struct {
	Group      string
	MemberID   string
	InstanceID *string
	Generation int32 // -1 for a commit outside group management (v0, or simple consumers)
	// RetentionMs is OffsetCommit v2-v4's retention time; -1 uses offsets.retention.minutes.
	RetentionMs int64
	Topics      []CommitTopic
}

// CommitTopic is one topic of an OffsetCommit.
type CommitTopic struct {
	Topic      string
	Partitions []CommitPartition
}

// CommitPartition is one committed offset.
type CommitPartition struct {
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    *string
	TimestampMs int64 // OffsetCommit v1's commit timestamp; -1: now
}

// CommitWait returns, once the commit is settled, one error (nil for success) per
// partition, in request order.
type CommitWait func() [][]*kerr.Error

func commitErrors(req CommitRequest, err *kerr.Error) [][]*kerr.Error {
	out := make([][]*kerr.Error, len(req.Topics))
	for i, t := range req.Topics {
		out[i] = make([]*kerr.Error, len(t.Partitions))
		for j := range t.Partitions {
			out[i][j] = err
		}
	}
	return out
}

func settled(out [][]*kerr.Error) CommitWait { return func() [][]*kerr.Error { return out } }

// Commit handles an OffsetCommit. Validation and the append to __consumer_offsets happen at
// once, in request order; the returned function waits until the commit is as durable as an
// acks=-1 write (or fails, or offsets.commit.timeout.ms passes) and only then reports
// success. Partitions of topics that do not exist get UNKNOWN_TOPIC_OR_PARTITION and
// nothing is stored for them.
func (c *Coordinator) Commit(req CommitRequest) CommitWait {
	cfg := c.cfg()
	c.mu.Lock()
	defer c.mu.Unlock()
	shard, err := c.shardLocked(req.Group)
	if err != nil {
		return settled(commitErrors(req, err))
	}
	now := c.now()
	g := c.groups[req.Group]
	if g == nil {
		if req.Generation >= 0 {
			return settled(commitErrors(req, kerr.IllegalGeneration))
		}
		g = newGroup(req.Group, shard, now)
		c.groups[req.Group] = g
	}
	switch {
	case req.Generation < 0 && g.state == Empty:
		// A commit outside group management, allowed while the group has no members.
	default:
		if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
			return settled(commitErrors(req, err))
		}
		if req.Generation != g.generation {
			return settled(commitErrors(req, kerr.IllegalGeneration))
		}
		if g.state == CompletingRebalance {
			return settled(commitErrors(req, kerr.RebalanceInProgress))
		}
		g.members[req.MemberID].heartbeat = now
	}

	out, slots, recs := c.commitRecordsLocked(g, req, now, cfg.OffsetMetadataMaxBytes)
	if len(recs) == 0 {
		return settled(out)
	}
	for _, s := range slots {
		g.inflight[s.tp]++
	}
	done := make(chan *kerr.Error, 1)
	base := c.writeLocked(g.shard, recs, cfg, func(err *kerr.Error) {
		// The slots hold their log offsets by now: a successful write completes later,
		// under c.mu, after they were set below.
		for _, s := range slots {
			if g.inflight[s.tp]--; g.inflight[s.tp] <= 0 {
				delete(g.inflight, s.tp)
			}
			if err == nil && g.state != Dead {
				cur := g.offsets[s.tp]
				del, deleted := g.deletedAt[s.tp]
				if (cur == nil || cur.logOffset < s.c.logOffset) && (!deleted || del < s.c.logOffset) {
					cm := s.c
					g.offsets[s.tp] = &cm
				}
			}
			if g.inflight[s.tp] == 0 {
				delete(g.deletedAt, s.tp)
			}
		}
		done <- err
	})
	return c.commitWait(base, slots, out, done, func(err *kerr.Error) *kerr.Error { return err })
}

// commitWait places slots at their log offsets from base and returns the wait for done,
// which reports each slot's error through mapErr.
func (c *Coordinator) commitWait(base int64, slots []commitSlot, out [][]*kerr.Error, done <-chan *kerr.Error, mapErr func(*kerr.Error) *kerr.Error) CommitWait {
	for n := range slots {
		slots[n].c.logOffset = base + int64(n)
	}
	return func() [][]*kerr.Error {
		var err *kerr.Error
		select {
		case err = <-done:
		case <-c.ctx.Done():
			err = kerr.NotCoordinator
		}
		for _, s := range slots {
			out[s.i][s.j] = mapErr(err)
		}
		return out
	}
}

// commitSlot is one offset of a commit request about to be written: where it is in the
// request, and the offset it commits.
type commitSlot struct {
	i, j int
	tp   tp
	c    committed
}

// commitRecordsLocked checks each offset of a commit and builds the records of those that
// pass: out holds the errors of those that do not.
func (c *Coordinator) commitRecordsLocked(g *group, req CommitRequest, now time.Time, maxMetadata int32) ([][]*kerr.Error, []commitSlot, []kv) {
	out := commitErrors(req, nil)
	var slots []commitSlot
	var recs []kv
	for i, t := range req.Topics {
		count, ok := c.host.PartitionCount(t.Topic)
		for j, p := range t.Partitions {
			switch {
			case !ok || p.Partition < 0 || p.Partition >= count:
				out[i][j] = kerr.UnknownTopicOrPartition
				continue
			case p.Metadata != nil && len(*p.Metadata) > int(maxMetadata):
				out[i][j] = kerr.OffsetMetadataTooLarge
				continue
			}
			cm := committed{offset: p.Offset, leaderEpoch: p.LeaderEpoch, commitMs: now.UnixMilli(), expireMs: -1}
			if p.Metadata != nil {
				cm.metadata = *p.Metadata
			}
			if p.TimestampMs >= 0 {
				cm.commitMs = p.TimestampMs
			}
			if req.RetentionMs >= 0 {
				cm.expireMs = cm.commitMs + req.RetentionMs
			}
			k := tp{t.Topic, p.Partition}
			slots = append(slots, commitSlot{i, j, k, cm})
			recs = append(recs, kv{key: offsetKey(g.id, k), value: offsetValue(cm)})
		}
	}
	return out, slots, recs
}

// FetchTopic names partitions whose committed offsets are asked for.
type FetchTopic struct {
	Topic      string
	Partitions []int32
}

// FetchedOffset is one committed offset; Offset -1 means none. Err is
// UNSTABLE_OFFSET_COMMIT for a partition whose offset a transaction holds pending, when
// the fetch asked for stable offsets only.
type FetchedOffset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	Err         *kerr.Error
}

// FetchOffsets handles one group of an OffsetFetch. topics nil asks for every committed
// offset of the group. A group or partition with no commit gets offset -1 and no error.
func (c *Coordinator) FetchOffsets(groupID string, topics []FetchTopic, requireStable bool) ([]FetchedOffset, *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.shardLocked(groupID); err != nil {
		return nil, err
	}
	g := c.groups[groupID]
	var out []FetchedOffset
	if topics == nil {
		if g == nil {
			return nil, nil
		}
		for k, o := range g.offsets {
			out = append(out, FetchedOffset{Topic: k.topic, Partition: k.partition, Offset: o.offset, LeaderEpoch: o.leaderEpoch, Metadata: o.metadata})
		}
		if requireStable {
			for k := range g.pendingPartitions() {
				if g.offsets[k] == nil {
					out = append(out, FetchedOffset{Topic: k.topic, Partition: k.partition, Offset: -1, LeaderEpoch: -1})
				}
			}
			for n := range out {
				if g.unstable(tp{out[n].Topic, out[n].Partition}) {
					out[n].Err = kerr.UnstableOffsetCommit
				}
			}
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].Topic != out[j].Topic {
				return out[i].Topic < out[j].Topic
			}
			return out[i].Partition < out[j].Partition
		})
		return out, nil
	}
	for _, t := range topics {
		for _, p := range t.Partitions {
			f := FetchedOffset{Topic: t.Topic, Partition: p, Offset: -1, LeaderEpoch: -1}
			if g != nil {
				if o := g.offsets[tp{t.Topic, p}]; o != nil {
					f.Offset, f.LeaderEpoch, f.Metadata = o.offset, o.leaderEpoch, o.metadata
				}
				if requireStable && g.unstable(tp{t.Topic, p}) {
					f.Err = kerr.UnstableOffsetCommit
				}
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// deleteOffsetsLocked removes offsets from memory and returns their tombstones; a commit
// still in flight for one of them is kept from resurrecting it once the tombstone's log
// offset is known (see markDeletedLocked).
func (g *group) deleteOffsetsLocked(tps []tp) []kv {
	var recs []kv
	for _, k := range tps {
		delete(g.offsets, k)
		recs = append(recs, kv{key: offsetKey(g.id, k)})
	}
	return recs
}

func (g *group) markDeleted(tps []tp, base int64) {
	if base < 0 {
		return
	}
	for n, k := range tps {
		if g.inflight[k] > 0 {
			g.deletedAt[k] = base + int64(n)
		}
	}
}

// allOffsetKeys lists the partitions with a committed or in-flight offset.
func (g *group) allOffsetKeys() []tp {
	seen := map[tp]bool{}
	var out []tp
	for k := range g.offsets {
		seen[k] = true
		out = append(out, k)
	}
	for k := range g.inflight {
		if !seen[k] {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].topic != out[j].topic {
			return out[i].topic < out[j].topic
		}
		return out[i].partition < out[j].partition
	})
	return out
}

// DeleteOffsets handles an OffsetDelete: it returns the request-level error and a wait
// that yields one error per partition once the tombstones are durable. Offsets of topics a
// member of a consumer-protocol group subscribes to are kept (GROUP_SUBSCRIBED_TO_TOPIC);
// a non-empty group of another protocol type keeps all of them (NON_EMPTY_GROUP).
func (c *Coordinator) DeleteOffsets(groupID string, topics []FetchTopic) (*kerr.Error, CommitWait) {
	cfg := c.cfg()
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.shardLocked(groupID); err != nil {
		return err, nil
	}
	g := c.groups[groupID]
	if g == nil || g.state == Dead {
		return kerr.GroupIDNotFound, nil
	}
	var subscribed map[string]bool
	if g.state != Empty {
		subs, ok := g.subscribedTopics()
		if !ok && g.protocolType != "consumer" {
			return kerr.NonEmptyGroup, nil
		}
		if !ok {
			subs = nil // unreadable subscriptions: treat every topic as subscribed
		}
		subscribed = subs
		if subscribed == nil {
			subscribed = map[string]bool{}
			for _, t := range topics {
				subscribed[t.Topic] = true
			}
		}
	}
	out := make([][]*kerr.Error, len(topics))
	var del []tp
	type pos struct{ i, j int }
	var where []pos
	for i, t := range topics {
		out[i] = make([]*kerr.Error, len(t.Partitions))
		count, exists := c.host.PartitionCount(t.Topic)
		for j, p := range t.Partitions {
			switch {
			case !exists || p < 0 || p >= count:
				out[i][j] = kerr.UnknownTopicOrPartition
			case subscribed[t.Topic]:
				out[i][j] = kerr.GroupSubscribedToTopic
			default:
				del = append(del, tp{t.Topic, p})
				where = append(where, pos{i, j})
			}
		}
	}
	if len(del) == 0 {
		return nil, settled(out)
	}
	recs := g.deleteOffsetsLocked(del)
	done := make(chan *kerr.Error, 1)
	base := c.writeLocked(g.shard, recs, cfg, func(err *kerr.Error) { done <- err })
	g.markDeleted(del, base)
	return nil, func() [][]*kerr.Error {
		var err *kerr.Error
		select {
		case err = <-done:
		case <-c.ctx.Done():
			err = kerr.NotCoordinator
		}
		for _, w := range where {
			out[w.i][w.j] = err
		}
		return out
	}
}

// DeleteGroups handles a DeleteGroups: each group must exist and be Empty. Its offsets and
// metadata are tombstoned; the wait yields one error per group once that is durable.
func (c *Coordinator) DeleteGroups(ids []string) func() []*kerr.Error {
	cfg := c.cfg()
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*kerr.Error, len(ids))
	type pendingDelete struct {
		i    int
		done chan *kerr.Error
	}
	var waits []pendingDelete
	now := c.now()
	for i, id := range ids {
		if _, err := c.shardLocked(id); err != nil {
			out[i] = err
			continue
		}
		g := c.groups[id]
		switch {
		case g == nil || g.state == Dead:
			out[i] = kerr.GroupIDNotFound
			continue
		case g.state != Empty || len(g.members) > 0:
			out[i] = kerr.NonEmptyGroup
			continue
		}
		keys := g.allOffsetKeys()
		recs := append(g.deleteOffsetsLocked(keys), kv{key: groupKey(id)})
		g.pending = map[string]time.Time{}
		g.transition(Dead, now)
		delete(c.groups, id)
		done := make(chan *kerr.Error, 1)
		c.writeLocked(g.shard, recs, cfg, func(err *kerr.Error) { done <- err })
		c.lg.Info("group deleted", "group", id, "offsets", len(keys))
		waits = append(waits, pendingDelete{i, done})
	}
	return func() []*kerr.Error {
		for _, w := range waits {
			select {
			case out[w.i] = <-w.done:
			case <-c.ctx.Done():
				out[w.i] = kerr.NotCoordinator
			}
		}
		return out
	}
}

// expireLocked deletes the committed offsets of empty groups once offsets.retention.minutes
// have passed since the group became empty (or since the commit, for groups that never used
// group management, or at the commit's own expiry time when OffsetCommit v2-v4 set one), and
// deletes empty groups left with no offsets.
func (c *Coordinator) expireLocked(now time.Time, cfg config.ClusterConfig) {
	retention := time.Duration(cfg.OffsetsRetentionMinutes) * time.Minute
	nowMs := now.UnixMilli()
	for id, g := range c.groups {
		if g.state != Empty || len(g.members) > 0 || len(g.pending) > 0 || c.shards[g.shard] != shardActive {
			continue
		}
		var expired []tp
		for k, o := range g.offsets {
			if g.inflight[k] > 0 {
				continue
			}
			var gone bool
			switch {
			case o.expireMs >= 0:
				gone = nowMs >= o.expireMs
			case g.protocolType != "":
				gone = !now.Before(g.stateSince.Add(retention))
			default:
				gone = nowMs-o.commitMs >= retention.Milliseconds()
			}
			if gone {
				expired = append(expired, k)
			}
		}
		sort.Slice(expired, func(i, j int) bool {
			if expired[i].topic != expired[j].topic {
				return expired[i].topic < expired[j].topic
			}
			return expired[i].partition < expired[j].partition
		})
		recs := g.deleteOffsetsLocked(expired)
		dead := len(g.offsets) == 0 && len(g.inflight) == 0
		if dead {
			recs = append(recs, kv{key: groupKey(id)})
			g.transition(Dead, now)
			delete(c.groups, id)
		}
		if len(recs) == 0 {
			continue
		}
		c.lg.Info("expired offsets", "group", id, "offsets", len(expired), "group_deleted", dead)
		base := c.writeLocked(g.shard, recs, cfg, func(err *kerr.Error) {
			if err != nil {
				c.lg.Warn("writing expiry tombstones failed; the offsets return on the next load", "group", id, "err", err.Message)
			}
		})
		g.markDeleted(expired, base)
	}
}

// DeleteTopicOffsets removes every group's committed offsets for a topic that was deleted,
// with tombstones, as Kafka does, so that a topic created again under the same name does
// not inherit them. Groups left empty with no offsets go at the next expiry check.
func (c *Coordinator) DeleteTopicOffsets(topic string) {
	cfg := c.cfg()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	for _, g := range c.groups {
		var tps []tp
		for _, k := range g.allOffsetKeys() {
			if k.topic == topic {
				tps = append(tps, k)
			}
		}
		if len(tps) == 0 {
			continue
		}
		recs := g.deleteOffsetsLocked(tps)
		id := g.id
		base := c.writeLocked(g.shard, recs, cfg, func(err *kerr.Error) {
			if err != nil {
				c.lg.Warn("writing tombstones for a deleted topic's offsets failed", "group", id, "topic", topic, "err", err.Message)
			}
		})
		g.markDeleted(tps, base)
		c.lg.Info("deleted offsets of a deleted topic", "group", id, "topic", topic, "offsets", len(tps))
	}
}
