package broker

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/partition"
	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/storage"
)

// replicaKey names a partition by topic id, so a topic re-created under the same name is
// another set of replicas.
type replicaKey struct {
	topic     controller.TopicID
	partition int32
}

// replica is one local partition replica and what it was opened with.
type replica struct {
	p        *partition.Partition
	name     string
	group    uint64
	replicas []int32
	cfg      config.TopicConfig
	racks    partition.Racks // the declared racks it was last given
	dir      string
}

// partitionDir names a partition's folder by topic name, partition and topic id, so a topic
// re-created under the same name never opens the files of the one it replaced.
func (b *Broker) partitionDir(name string, id controller.TopicID, p int32) string {
	return filepath.Join(b.cfg.DataDir, "topics", fmt.Sprintf("%s-%d-%x", name, p, id[:]))
}

// reconcileLoop follows the controller state: each change opens the replicas newly
// assigned here, closes and removes those no longer assigned, and applies config changes
// and the brokers' declared racks (min.insync.racks).
//
// Each round takes the next change's channel before reconcile reads the state, so a change
// applied while a reconcile runs (a second force recovery recorded while the first rebuilds
// its replica) wakes it again; taken after, the round would wait for yet another change,
// which a quiet cluster may never make. The first round also covers what changed between
// New's reconcile and the loop's start.
func (b *Broker) reconcileLoop() {
	for {
		ch := b.svc.Load().Changed()
		if err := b.reconcile(); err != nil {
			b.lg.Error("following the cluster metadata", "err", err)
		}
		select {
		case <-b.ctx.Done():
			return
		case <-ch:
		}
	}
}

// raftIDs maps node ids to Raft node ids (the same numbers; Raft reserves 0).
func raftIDs(ids []int32) []uint64 {
	out := make([]uint64, len(ids))
	for i, id := range ids {
		out[i] = uint64(id)
	}
	return out
}

// partitionRacks maps each broker the controller knows (live or not: a stopped broker's
// rack is still its rack) to the rack it declared, for min.insync.racks. It covers the
// whole cluster rather than a partition's assignment, so it stays right for voters that
// differ from the assignment.
func partitionRacks(brokers []controller.Broker) partition.Racks {
	racks := partition.Racks{}
	for _, br := range brokers {
		if br.Rack != "" {
			racks[uint64(br.ID)] = br.Rack
		}
	}
	return racks
}

// reconcile makes the local replicas match the controller state.
func (b *Broker) reconcile() error {
	b.reconcileMu.Lock()
	defer b.reconcileMu.Unlock()
	if b.closed.Load() {
		return nil
	}
	st := b.state()
	cluster := st.ClusterConfig()
	racks := partitionRacks(st.Brokers())
	want := map[replicaKey]bool{}
	var firstErr error
	var opens []replicaOpen
	topics := st.Topics()
	byName := make(map[string]*controller.Topic, len(topics))
	for i := range topics {
		byName[topics[i].Name] = &topics[i]
	}
	b.topics.Store(&byName)
	cc := config.ResolveCluster(cluster)
	b.followerFetching.Store(cc.FollowerFetching)
	b.learnerRate.Store(cc.LearnerRecoveryRate)
	b.warnRackShortfalls(st)
	for _, t := range topics {
		cfg := config.ResolveTopic(t.Configs, cluster)
		for p := range t.Assignment {
			// While a partition moves, its replicas are the assignment and the move's goal:
			// a replica being added opens (and joins) as soon as the move is recorded, and
			// one being removed keeps its data until the move is complete.
			if !containsID(t.Replicas(int32(p)), b.cfg.NodeID) {
				continue
			}
			key := replicaKey{t.ID, int32(p)}
			want[key] = true
			b.mu.RLock()
			r := b.replicas[key]
			b.mu.RUnlock()
			if r != nil && p < len(t.Groups) && r.group != t.Groups[p] {
				// The partition was force-recovered: the group this replica ran is gone.
				b.mu.Lock()
				delete(b.replicas, key)
				b.mu.Unlock()
				b.retireReplica(t, int32(p), r)
				r = nil
			}
			if r != nil {
				if r.cfg != cfg {
					r.p.SetConfig(cfg)
					r.cfg = cfg
				}
				if !maps.Equal(r.racks, racks) { // a broker re-registered with another rack
					r.p.SetRacks(racks)
					r.racks = racks
				}
				continue
			}
			if p >= len(t.Groups) {
				continue // not yet given a group id (an older state): nothing to run
			}
			opens = append(opens, replicaOpen{t: t, p: int32(p), cfg: cfg})
		}
	}
	if err := b.openReplicas(opens, racks); err != nil && firstErr == nil {
		firstErr = err
	}
	b.mu.Lock()
	var gone []*replica
	for key, r := range b.replicas {
		if !want[key] {
			gone = append(gone, r)
			delete(b.replicas, key)
		}
	}
	b.mu.Unlock()
	for _, r := range gone {
		b.lg.Info("removing replica", "topic", r.name, "partition", r.p.ID())
		if err := r.p.Delete(); err != nil {
			b.lg.Error("removing partition data", "topic", r.name, "partition", r.p.ID(), "err", err)
		}
	}
	if len(gone) > 0 {
		b.kickRoles()
	}
	return firstErr
}

// replicaOpeners is how many replicas reconcile opens at once. Opening is a few small
// reads, an fdatasync or two and some CPU: one at a time, a broker restarting with tens of
// thousands of replicas spent most of its start waiting on the disk one file at a time.
const replicaOpeners = 8

// replicaOpen is a replica reconcile found missing: partition p of t, to open with cfg.
type replicaOpen struct {
	t   controller.Topic
	p   int32
	cfg config.TopicConfig
}

// openReplicas opens the replicas of opens, replicaOpeners at a time, and registers each
// as soon as it is open (so a replica serves, and its leadership is published, without
// waiting for the rest). A replica that fails to open is logged and skipped, as the next
// reconcile retries it; the first such error is returned.
func (b *Broker) openReplicas(opens []replicaOpen, racks partition.Racks) error {
	work := make(chan replicaOpen)
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	for range min(replicaOpeners, len(opens)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range work {
				r, err := b.openReplica(o.t, o.p, o.cfg, racks)
				if err != nil {
					b.lg.Error("opening replica", "topic", o.t.Name, "partition", o.p, "err", err)
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
					continue
				}
				b.mu.Lock()
				b.replicas[replicaKey{o.t.ID, o.p}] = r
				b.mu.Unlock()
				b.kickRoles()
			}
		}()
	}
	for _, o := range opens {
		work <- o
	}
	close(work)
	wg.Wait()
	return firstErr
}

func (b *Broker) openReplica(t controller.Topic, p int32, cfg config.TopicConfig, racks partition.Racks) (*replica, error) {
	dir := b.replicaDir(t, p)
	if err := b.rebuildFromBase(t, p, dir); err != nil {
		return nil, err
	}
	ls, err := raft.Open(storage.Options{FS: b.fs, Dir: dir, SegmentBytes: cfg.SegmentBytes, SegmentMs: cfg.SegmentMs})
	if err != nil {
		return nil, err
	}
	reps := slices.Clone(t.Assignment[p])
	// Only the replicas a partition is created with bootstrap its group
	// (raft.GroupConfig.Bootstrap: the same first entries on each). A replica a move adds,
	// and any replica that opens with no data once a move has completed, joins: it learns
	// the configuration from the leader's log. Were a fresh replica of the original set to
	// bootstrap after the group had moved away and back, it could elect itself with the
	// other fresh ones.
	join := !containsID(reps, b.cfg.NodeID) || (int(p) < len(t.Moved) && t.Moved[p])
	part, err := partition.Open(partition.Options{Topic: t.Name, Partition: p, Storage: ls, Host: b.host,
		Group: t.Groups[p], Self: uint64(b.cfg.NodeID), Replicas: raftIDs(reps), Join: join, Config: cfg, Racks: racks, Logger: b.lg,
		ReplicaLagMax: b.cfg.ReplicaLagMax, OnRoleChange: b.kickRoles})
	if err != nil {
		ls.Close()
		return nil, err
	}
	return &replica{p: part, name: t.Name, group: t.Groups[p], replicas: reps, cfg: cfg, racks: racks, dir: dir}, nil
}

// removeOrphans deletes partition folders that no local replica owns: what a crash left
// behind between a topic's deletion and the removal of its files.
func (b *Broker) removeOrphans() error {
	dir := filepath.Join(b.cfg.DataDir, "topics")
	names, err := b.fs.ReadDir(dir)
	if err != nil {
		return err
	}
	owned := map[string]bool{}
	b.mu.RLock()
	for _, r := range b.replicas {
		owned[filepath.Base(r.dir)] = true
	}
	b.mu.RUnlock()
	for _, n := range names {
		if owned[n] {
			continue
		}
		b.lg.Warn("removing partition data no replica owns", "folder", n)
		if err := b.fs.RemoveAll(filepath.Join(dir, n)); err != nil {
			return err
		}
	}
	return nil
}
