// Package broker wires one Cairn node together: it owns the node's metadata (topics,
// partition counts, topic and cluster configuration, producer-id blocks), opens and closes the
// local partitions, and routes work to them. It must not speak the Kafka wire protocol (that
// is internal/kafka) nor implement partition semantics (internal/partition). On a single node
// the metadata lives in a file in the data folder; the controller Raft group replaces it later.
package broker

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/group"
	"github.com/cairn-io/cairn/internal/partition"
	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/storage"
)

// Config is a node's static configuration, from `cairn start` flags, YAML or environment.
type Config struct {
	NodeID              int32
	DataDir             string
	KafkaAddr           string
	AdvertisedKafkaAddr string
	RPCAddr             string
	AdminAddr           string
	Rack                string
	Seeds               []string
	FS                  storage.FS
	Logger              *slog.Logger
}

// Error is a failure with the Kafka error code it is answered with.
type Error struct {
	Code *kerr.Error
	Msg  string
}

func (e *Error) Error() string { return e.Code.Message + ": " + e.Msg }

func errorf(code *kerr.Error, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// BrokerInfo describes a broker in the cluster.
type BrokerInfo struct {
	NodeID int32
	Host   string
	Port   int32
	Rack   string
}

// TopicInfo describes a topic.
type TopicInfo struct {
	Name              string
	ID                [16]byte
	Partitions        int32
	ReplicationFactor int16
	Internal          bool
}

type topic struct {
	info       TopicInfo
	partitions []*partition.Partition
}

// Broker is one running node.
type Broker struct {
	cfg Config
	fs  storage.FS
	lg  *slog.Logger

	// host runs the Raft group of every local partition replica.
	host *raft.Host

	mu        sync.RWMutex
	nextGroup uint64 // the last Raft group id handed to a partition (guarded by mu)
	meta      *metadata
	topics    map[string]*topic
	groups    *group.Coordinator // set once at start

	stop        chan struct{}
	done        chan struct{}
	loopStarted bool // the retention loop runs, and closes done when it stops
	// retentionKick wakes the retention loop when its interval changes at run time.
	retentionKick chan struct{}
}

// New loads the node's metadata and opens every local partition.
func New(cfg Config) (*Broker, error) {
	if cfg.FS == nil {
		cfg.FS = storage.OSFS()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.AdvertisedKafkaAddr == "" {
		cfg.AdvertisedKafkaAddr = cfg.KafkaAddr
	}
	if cfg.NodeID == 0 {
		cfg.NodeID = 1 // the default of --node-id; raft reserves 0
	}
	if cfg.NodeID < 0 {
		return nil, fmt.Errorf("node id %d: ids start at 1", cfg.NodeID)
	}
	b := &Broker{cfg: cfg, fs: cfg.FS, lg: cfg.Logger, topics: make(map[string]*topic), stop: make(chan struct{}), done: make(chan struct{}), retentionKick: make(chan struct{}, 1)}
	b.host = raft.NewHost(raft.HostOptions{NodeID: uint64(cfg.NodeID), Transport: noPeers{}})
	if err := b.fs.MkdirAll(filepath.Join(cfg.DataDir, "topics"), 0o755); err != nil {
		return nil, fmt.Errorf("creating data folder: %w", err)
	}
	m, err := loadMetadata(b.fs, cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if m == nil {
		m = newMetadata(randomClusterID())
		if err := m.save(b.fs, cfg.DataDir); err != nil {
			return nil, err
		}
	}
	b.meta = m
	if err := b.removeOrphans(); err != nil {
		return nil, fmt.Errorf("cleaning the data folder: %w", err)
	}
	for _, name := range m.topicNames() {
		if err := b.openTopic(m.Topics[name]); err != nil {
			b.Close()
			return nil, err
		}
	}
	if err := b.startGroups(); err != nil {
		b.Close()
		return nil, err
	}
	b.loopStarted = true
	go b.retentionLoop()
	return b, nil
}

func randomClusterID() string {
	var id [16]byte
	rand.Read(id[:])
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// partitionDir names a partition's folder by topic name, partition and topic id, so a topic
// re-created under the same name never opens the files of the one it replaced.
func (b *Broker) partitionDir(tm *topicMeta, p int32) string {
	return filepath.Join(b.cfg.DataDir, "topics", fmt.Sprintf("%s-%d-%x", tm.Name, p, tm.ID))
}

// removeOrphans deletes partition folders that no topic in the metadata owns: what a crash
// left behind between saving a topic deletion and removing its files.
func (b *Broker) removeOrphans() error {
	dir := filepath.Join(b.cfg.DataDir, "topics")
	names, err := b.fs.ReadDir(dir)
	if err != nil {
		return err
	}
	owned := map[string]bool{}
	for _, tm := range b.meta.Topics {
		for i := int32(0); i < tm.Partitions; i++ {
			owned[filepath.Base(b.partitionDir(tm, i))] = true
		}
	}
	for _, n := range names {
		if owned[n] {
			continue
		}
		b.lg.Warn("removing partition data no topic owns", "folder", n)
		if err := b.fs.RemoveAll(filepath.Join(dir, n)); err != nil {
			return err
		}
	}
	return nil
}

func (b *Broker) openPartitions(tm *topicMeta, from, to int32) ([]*partition.Partition, error) {
	cfg := config.ResolveTopic(tm.Configs, b.meta.Cluster)
	var ps []*partition.Partition
	for i := from; i < to; i++ {
		ls, err := raft.Open(storage.Options{FS: b.fs, Dir: b.partitionDir(tm, i), SegmentBytes: cfg.SegmentBytes, SegmentMs: cfg.SegmentMs})
		if err != nil {
			closeAll(ps)
			return nil, fmt.Errorf("opening %s-%d: %w", tm.Name, i, err)
		}
		b.nextGroup++
		p, err := partition.Open(partition.Options{Topic: tm.Name, Partition: i, Storage: ls, Host: b.host,
			Group: b.nextGroup, Self: uint64(b.cfg.NodeID), Config: cfg, Logger: b.lg})
		if err != nil {
			ls.Close()
			closeAll(ps)
			return nil, fmt.Errorf("opening %s-%d: %w", tm.Name, i, err)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

func closeAll(ps []*partition.Partition) {
	for _, p := range ps {
		p.Close()
	}
}

func (b *Broker) openTopic(tm *topicMeta) error {
	ps, err := b.openPartitions(tm, 0, tm.Partitions)
	if err != nil {
		return err
	}
	b.topics[tm.Name] = &topic{info: tm.info(), partitions: ps}
	return nil
}

// Close flushes and closes every partition.
func (b *Broker) Close() error {
	select {
	case <-b.stop:
		return nil
	default:
	}
	close(b.stop)
	if b.loopStarted {
		<-b.done // retention and compaction are done with the partitions
	}
	if b.groups != nil {
		b.groups.Close() // before the partitions it writes to
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var wg sync.WaitGroup
	for _, t := range b.topics {
		for _, p := range t.partitions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := p.Close(); err != nil {
					b.lg.Error("closing partition", "topic", p.Topic(), "partition", p.ID(), "err", err)
				}
			}()
		}
	}
	wg.Wait()
	b.host.Close()
	return nil
}

// noPeers is the Raft transport of a node without peers: every group has this node as its
// sole voter, so nothing is ever sent.
type noPeers struct{}

func (noPeers) Send(uint64, *raft.Batch) {}

// NodeID is this broker's id.
func (b *Broker) NodeID() int32 { return b.cfg.NodeID }

// ClusterID is the cluster's id, made on first start.
func (b *Broker) ClusterID() string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.meta.ClusterID
}

// ControllerID is the node that answers as controller.
func (b *Broker) ControllerID() int32 { return b.cfg.NodeID }

// Brokers lists the brokers of the cluster.
func (b *Broker) Brokers() []BrokerInfo {
	host, portStr, err := net.SplitHostPort(b.cfg.AdvertisedKafkaAddr)
	if err != nil {
		host, portStr = b.cfg.AdvertisedKafkaAddr, "9092"
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	port, _ := strconv.Atoi(portStr)
	return []BrokerInfo{{NodeID: b.cfg.NodeID, Host: host, Port: int32(port), Rack: b.cfg.Rack}}
}

// Topics lists the topics, sorted by name.
func (b *Broker) Topics() []TopicInfo {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]TopicInfo, 0, len(b.topics))
	for _, t := range b.topics {
		out = append(out, t.info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Topic describes one topic.
func (b *Broker) Topic(name string) (TopicInfo, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	t, ok := b.topics[name]
	if !ok {
		return TopicInfo{}, false
	}
	return t.info, true
}

// Partition finds a local partition.
func (b *Broker) Partition(name string, id int32) (*partition.Partition, *kerr.Error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	t, ok := b.topics[name]
	if !ok || id < 0 || id >= int32(len(t.partitions)) {
		return nil, kerr.UnknownTopicOrPartition
	}
	return t.partitions[id], nil
}

// Partitions returns every local partition, for metrics and the admin API.
func (b *Broker) Partitions() []*partition.Partition {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []*partition.Partition
	for _, t := range b.topics {
		out = append(out, t.partitions...)
	}
	return out
}

var legalTopicName = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

// ValidateTopicName applies Kafka's rules for topic names.
func ValidateTopicName(name string) *Error {
	switch {
	case name == "":
		return errorf(kerr.InvalidTopicException, "topic name is empty")
	case name == "." || name == "..":
		return errorf(kerr.InvalidTopicException, "topic name may not be %q", name)
	case len(name) > 249:
		return errorf(kerr.InvalidTopicException, "topic name is longer than 249 characters")
	case !legalTopicName.MatchString(name):
		return errorf(kerr.InvalidTopicException, "topic name %q has characters outside [a-zA-Z0-9._-]", name)
	}
	return nil
}

// CreateTopic creates a topic; partitions and rf of -1 take the cluster defaults.
func (b *Broker) CreateTopic(name string, partitions int32, rf int16, configs map[string]string, validateOnly bool) (TopicInfo, *Error) {
	if err := ValidateTopicName(name); err != nil {
		return TopicInfo{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.topics[name]; ok {
		return TopicInfo{}, errorf(kerr.TopicAlreadyExists, "topic %q already exists", name)
	}
	cc := config.ResolveCluster(b.meta.Cluster)
	if partitions == -1 {
		partitions = cc.NumPartitions
	}
	if rf == -1 {
		rf = cc.DefaultReplicationFactor
	}
	if partitions < 1 {
		return TopicInfo{}, errorf(kerr.InvalidPartitions, "partition count must be at least 1, got %d", partitions)
	}
	if partitions > maxPartitionsPerTopic {
		return TopicInfo{}, errorf(kerr.InvalidPartitions, "partition count %d is above the limit of %d", partitions, maxPartitionsPerTopic)
	}
	if rf < 1 {
		return TopicInfo{}, errorf(kerr.InvalidReplicationFactor, "replication factor must be at least 1, got %d", rf)
	}
	if live := int16(len(b.Brokers())); rf > live {
		return TopicInfo{}, errorf(kerr.InvalidReplicationFactor, "replication factor %d is larger than the %d available broker(s)", rf, live)
	}
	overrides := make(map[string]string, len(configs))
	for k, v := range configs {
		canon, err := config.ValidateTopic(k, v)
		if err != nil {
			return TopicInfo{}, errorf(kerr.InvalidConfig, "%s", err.Error())
		}
		overrides[k] = canon
	}
	tm := &topicMeta{Name: name, ID: newTopicID(), Partitions: partitions, ReplicationFactor: rf, Configs: overrides}
	if validateOnly {
		return tm.info(), nil
	}
	if err := b.addTopicLocked(tm); err != nil {
		b.lg.Error("creating topic", "topic", name, "err", err)
		return TopicInfo{}, errorf(kerr.KafkaStorageError, "creating topic: %v", err)
	}
	b.lg.Info("created topic", "topic", name, "partitions", partitions)
	return tm.info(), nil
}

// addTopicLocked opens a new topic's partitions and records it in the metadata; if the
// metadata cannot be saved, the partitions are removed again, so a failed create leaves
// nothing behind.
func (b *Broker) addTopicLocked(tm *topicMeta) error {
	if err := b.openTopic(tm); err != nil {
		return err
	}
	b.meta.Topics[tm.Name] = tm
	if err := b.meta.save(b.fs, b.cfg.DataDir); err != nil {
		delete(b.meta.Topics, tm.Name)
		t := b.topics[tm.Name]
		delete(b.topics, tm.Name)
		for _, p := range t.partitions {
			p.Delete()
		}
		return fmt.Errorf("saving metadata: %w", err)
	}
	return nil
}

// maxPartitionsPerTopic bounds what one CreateTopics or CreatePartitions can ask of a node.
const maxPartitionsPerTopic = 10000

func newTopicID() [16]byte {
	var id [16]byte
	rand.Read(id[:])
	return id
}

// AutoCreateTopic creates a topic with defaults when auto.create.topics.enable is on.
func (b *Broker) AutoCreateTopic(name string) (TopicInfo, *Error) {
	b.mu.RLock()
	enabled := config.ResolveCluster(b.meta.Cluster).AutoCreateTopics
	b.mu.RUnlock()
	if !enabled {
		return TopicInfo{}, errorf(kerr.UnknownTopicOrPartition, "topic %q does not exist and auto.create.topics.enable is off", name)
	}
	info, err := b.CreateTopic(name, -1, -1, nil, false)
	if err != nil && err.Code == kerr.TopicAlreadyExists {
		info, _ = b.Topic(name)
		return info, nil
	}
	return info, err
}

// DeleteTopic removes a topic and its data.
func (b *Broker) DeleteTopic(name string) *Error {
	if err := b.deleteTopic(name); err != nil {
		return err
	}
	// Synchronously and outside b.mu (see the lock order in groups.go): a topic created
	// again under this name must not have its first commits tombstoned by a late cleanup.
	if b.groups != nil {
		b.groups.DeleteTopicOffsets(name)
	}
	b.lg.Info("deleted topic", "topic", name)
	return nil
}

func (b *Broker) deleteTopic(name string) *Error {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.topics[name]
	if !ok {
		return errorf(kerr.UnknownTopicOrPartition, "topic %q does not exist", name)
	}
	if name == group.OffsetsTopic {
		return errorf(kerr.InvalidTopicException, "%s is an internal topic that holds consumer group state; it cannot be deleted", name)
	}
	tm := b.meta.Topics[name]
	delete(b.meta.Topics, name)
	if err := b.meta.save(b.fs, b.cfg.DataDir); err != nil {
		b.meta.Topics[name] = tm
		return errorf(kerr.KafkaStorageError, "saving metadata: %v", err)
	}
	delete(b.topics, name)
	for _, p := range t.partitions {
		if err := p.Delete(); err != nil {
			// The metadata no longer names these files; the next start removes them.
			b.lg.Error("removing partition data", "topic", name, "partition", p.ID(), "err", err)
		}
	}
	return nil
}

// CreatePartitions raises a topic's partition count; it may only grow.
func (b *Broker) CreatePartitions(name string, count int32, validateOnly bool) *Error {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.topics[name]
	if !ok {
		return errorf(kerr.UnknownTopicOrPartition, "topic %q does not exist", name)
	}
	cur := t.info.Partitions
	switch {
	case name == group.OffsetsTopic:
		return errorf(kerr.InvalidPartitions, "%s keeps the partition count it was created with: groups hash onto its partitions", name)
	case count < cur:
		return errorf(kerr.InvalidPartitions, "topic %q has %d partitions; the count may only increase", name, cur)
	case count == cur:
		return errorf(kerr.InvalidPartitions, "topic %q already has %d partitions", name, cur)
	case count > maxPartitionsPerTopic:
		return errorf(kerr.InvalidPartitions, "partition count %d is above the limit of %d", count, maxPartitionsPerTopic)
	}
	if validateOnly {
		return nil
	}
	tm := b.meta.Topics[name]
	ps, err := b.openPartitions(tm, cur, count)
	if err != nil {
		return errorf(kerr.KafkaStorageError, "creating partitions: %v", err)
	}
	tm.Partitions = count
	if err := b.meta.save(b.fs, b.cfg.DataDir); err != nil {
		tm.Partitions = cur
		for _, p := range ps {
			p.Delete()
		}
		return errorf(kerr.KafkaStorageError, "saving metadata: %v", err)
	}
	t.partitions = append(t.partitions, ps...)
	t.info.Partitions = count
	return nil
}

// TopicConfigOverrides returns a copy of the properties set on a topic.
func (b *Broker) TopicConfigOverrides(name string) (map[string]string, map[string]string, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	tm, ok := b.meta.Topics[name]
	if !ok {
		return nil, nil, false
	}
	return copyMap(tm.Configs), copyMap(b.meta.Cluster), true
}

// ClusterConfigOverrides returns a copy of the cluster properties set at run time.
func (b *Broker) ClusterConfigOverrides() map[string]string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return copyMap(b.meta.Cluster)
}

// NodeConfigValues are the node properties as set at start, for DescribeConfigs.
func (b *Broker) NodeConfigValues() map[string]string {
	c := b.cfg
	v := map[string]string{
		"node.id":               strconv.Itoa(int(c.NodeID)),
		"data.dir":              c.DataDir,
		"kafka.addr":            c.KafkaAddr,
		"advertised.kafka.addr": c.AdvertisedKafkaAddr,
		"rpc.addr":              c.RPCAddr,
		"admin.addr":            c.AdminAddr,
		"rack":                  c.Rack,
	}
	if len(c.Seeds) > 0 {
		v["seeds"] = strings.Join(c.Seeds, ",")
	}
	return v
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// SetTopicConfig replaces a topic's overrides with already validated values and applies
// them to its partitions at once.
func (b *Broker) SetTopicConfig(name string, overrides map[string]string) *Error {
	b.mu.Lock()
	defer b.mu.Unlock()
	tm, ok := b.meta.Topics[name]
	if !ok {
		return errorf(kerr.UnknownTopicOrPartition, "topic %q does not exist", name)
	}
	old := tm.Configs
	tm.Configs = copyMap(overrides)
	if err := b.meta.save(b.fs, b.cfg.DataDir); err != nil {
		tm.Configs = old
		return errorf(kerr.KafkaStorageError, "saving metadata: %v", err)
	}
	b.applyTopicConfigLocked(name)
	return nil
}

// SetClusterConfig replaces the cluster overrides with already validated values and applies
// them to every topic at once.
func (b *Broker) SetClusterConfig(overrides map[string]string) *Error {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.meta.Cluster
	b.meta.Cluster = copyMap(overrides)
	if err := b.meta.save(b.fs, b.cfg.DataDir); err != nil {
		b.meta.Cluster = old
		return errorf(kerr.KafkaStorageError, "saving metadata: %v", err)
	}
	for name := range b.topics {
		b.applyTopicConfigLocked(name)
	}
	select {
	case b.retentionKick <- struct{}{}:
	default:
	}
	return nil
}

func (b *Broker) applyTopicConfigLocked(name string) {
	cfg := config.ResolveTopic(b.meta.Topics[name].Configs, b.meta.Cluster)
	for _, p := range b.topics[name].partitions {
		p.SetConfig(cfg)
	}
}

// AllocateProducerID hands out a producer id unique across restarts: ids come from blocks
// whose end is made durable before any id in them is used.
func (b *Broker) AllocateProducerID() (int64, *Error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.meta.NextProducerID >= b.meta.ProducerIDBlockEnd {
		old := b.meta.ProducerIDBlockEnd
		b.meta.NextProducerID = old
		b.meta.ProducerIDBlockEnd = old + producerIDBlock
		if err := b.meta.save(b.fs, b.cfg.DataDir); err != nil {
			b.meta.ProducerIDBlockEnd = old
			return -1, errorf(kerr.KafkaStorageError, "saving producer id block: %v", err)
		}
	}
	id := b.meta.NextProducerID
	b.meta.NextProducerID++
	return id, nil
}

const producerIDBlock = 1000

func (b *Broker) retentionLoop() {
	defer close(b.done)
	for {
		b.mu.RLock()
		interval := time.Duration(config.ResolveCluster(b.meta.Cluster).RetentionCheckMs) * time.Millisecond
		b.mu.RUnlock()
		t := time.NewTimer(interval)
		select {
		case <-b.stop:
			t.Stop()
			return
		case <-b.retentionKick:
			// The interval changed: re-arm with the new one instead of waiting out the old.
			t.Stop()
			continue
		case <-t.C:
		}
		b.EnforceRetention()
	}
}

// EnforceRetention applies every topic's retention.ms and retention.bytes once, and runs
// a compaction round on every partition whose cleanup.policy includes compact.
func (b *Broker) EnforceRetention() {
	for _, p := range b.Partitions() {
		if err := p.EnforceRetention(); err != nil {
			b.lg.Error("retention", "topic", p.Topic(), "partition", p.ID(), "err", err)
		}
		if err := p.Compact(); err != nil {
			b.lg.Error("compaction", "topic", p.Topic(), "partition", p.ID(), "err", err)
		}
	}
}
