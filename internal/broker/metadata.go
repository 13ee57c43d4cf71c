package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/cairn-io/cairn/internal/storage"
)

const metadataFile = "metadata.json"

// metadata is the node's durable view of the cluster. Every change is saved whole and
// atomically (temp file, fsync, rename, directory fsync) before it takes effect.
type metadata struct {
	Version            int                   `json:"version"`
	ClusterID          string                `json:"cluster_id"`
	Topics             map[string]*topicMeta `json:"topics"`
	Cluster            map[string]string     `json:"cluster_config"`
	NextProducerID     int64                 `json:"-"`
	ProducerIDBlockEnd int64                 `json:"producer_id_block_end"`
}

type topicMeta struct {
	Name              string            `json:"name"`
	ID                [16]byte          `json:"id"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Configs           map[string]string `json:"configs"`
}

func (t *topicMeta) info() TopicInfo {
	return TopicInfo{Name: t.Name, ID: t.ID, Partitions: t.Partitions, ReplicationFactor: t.ReplicationFactor, Internal: len(t.Name) > 2 && t.Name[:2] == "__"}
}

func newMetadata(clusterID string) *metadata {
	return &metadata{Version: 1, ClusterID: clusterID, Topics: map[string]*topicMeta{}, Cluster: map[string]string{}}
}

func (m *metadata) topicNames() []string {
	names := make([]string, 0, len(m.Topics))
	for n := range m.Topics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func loadMetadata(fs storage.FS, dir string) (*metadata, error) {
	f, err := fs.OpenFile(filepath.Join(dir, metadataFile), os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening metadata: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading metadata: %w", err)
	}
	m := newMetadata("")
	if err := json.Unmarshal(buf, m); err != nil {
		return nil, fmt.Errorf("metadata file %s is corrupt: %w", filepath.Join(dir, metadataFile), err)
	}
	for _, t := range m.Topics {
		if t.Configs == nil {
			t.Configs = map[string]string{}
		}
	}
	if m.Cluster == nil {
		m.Cluster = map[string]string{}
	}
	// Ids handed out before a restart all lie below the durable block end.
	m.NextProducerID = m.ProducerIDBlockEnd
	return m, nil
}

func (m *metadata) save(fs storage.FS, dir string) error {
	buf, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, metadataFile+".tmp")
	f, err := fs.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fs.Rename(tmp, filepath.Join(dir, metadataFile)); err != nil {
		return err
	}
	return fs.SyncDir(dir)
}
