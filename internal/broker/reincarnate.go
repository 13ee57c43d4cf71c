package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/storage"
)

// A force-recovered partition (controller/recover.go) runs under a new Raft group id, in a
// folder named after it, so that the data of each incarnation is told apart by its name
// alone: the base's broker forces its replica of the old group to be the only voter and
// renames its folder to the new name (the rename is the commit point: before it, a crash
// repeats the forcing, which is idempotent while the new group has not started; after it,
// the new folder is opened as any replica's). Every other folder of the partition is an
// old incarnation's: the other survivors delete theirs and rejoin from the base, and a
// dead replica that comes back finds its folder an orphan (removeOrphans).

// replicaDir is the folder of partition p's current incarnation.
func (b *Broker) replicaDir(t controller.Topic, p int32) string {
	dir := b.partitionDir(t.Name, t.ID, p)
	if _, ok := t.Recovered[p]; ok {
		dir += fmt.Sprintf("-g%d", t.Groups[p])
	}
	return dir
}

// retireReplica stops a local replica whose group a force recovery replaced: the base's is
// closed with its data kept, for rebuildFromBase; any other's data is deleted.
func (b *Broker) retireReplica(t controller.Topic, p int32, r *replica) {
	if rec, ok := t.Recovered[p]; ok && rec.Base == b.cfg.NodeID && rec.FromGroup == r.group {
		b.lg.Warn("force recovery: rebuilding the partition from this replica", "topic", t.Name, "partition", p, "old_group", r.group, "group", t.Groups[p])
		if err := r.p.Close(); err != nil {
			b.lg.Error("closing the replica to rebuild from", "topic", t.Name, "partition", p, "err", err)
		}
		return
	}
	b.lg.Warn("force recovery: dropping this replica of the old group; it rejoins from the base", "topic", t.Name, "partition", p, "old_group", r.group)
	if err := r.p.Delete(); err != nil {
		b.lg.Error("removing partition data", "topic", t.Name, "partition", p, "err", err)
	}
}

// rebuildFromBase makes dir, the folder of a force-recovered partition's new group, out of
// this broker's replica of the old group when this broker is the recovery's base and dir
// does not exist yet.
func (b *Broker) rebuildFromBase(t controller.Topic, p int32, dir string) error {
	rec, ok := t.Recovered[p]
	if !ok || rec.Base != b.cfg.NodeID {
		return nil
	}
	if _, err := b.fs.Stat(dir); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	plain := b.partitionDir(t.Name, t.ID, p)
	var old string
	for _, cand := range []string{fmt.Sprintf("%s-g%d", plain, rec.FromGroup), plain} {
		if _, err := b.fs.Stat(filepath.Join(cand, raft.StateFileName)); err == nil {
			old = cand
			break
		}
	}
	if old == "" {
		return fmt.Errorf("force recovery of %s-%d: this broker is the base but holds no data of group %d", t.Name, p, rec.FromGroup)
	}
	ls, err := raft.Open(storage.Options{FS: b.fs, Dir: old})
	if err != nil {
		return err
	}
	fv, err := ls.ForceSoleVoter(uint64(b.cfg.NodeID))
	if cerr := ls.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("force recovery of %s-%d: %w", t.Name, p, err)
	}
	if err := b.fs.Rename(old, dir); err != nil {
		return err
	}
	if err := b.fs.SyncDir(filepath.Dir(dir)); err != nil {
		return err
	}
	b.lg.Warn("force recovery: this replica is now the partition's only voter", "topic", t.Name, "partition", p,
		"group", t.Groups[p], "index", fv.Index, "term", fv.Term)
	return nil
}
