package broker

import (
	"encoding/json"
	"errors"
	"fmt"
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
	buf, err := storage.ReadFile(fs, filepath.Join(dir, metadataFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
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
	return storage.WriteFileAtomic(fs, filepath.Join(dir, metadataFile), buf)
}
