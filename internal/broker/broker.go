// Package broker wires one Cairn node together: its inter-broker transport, its multi-raft
// host, its controller service (the cluster metadata, internal/cluster), the partition
// replicas the metadata assigns to it, the leadership table Metadata answers from, and the
// group coordinator. It routes work to local replicas. It moves leadership, only ever by
// Raft leadership transfer: on request from any broker (leadership_transfer.go), off a
// broker in maintenance (maintenance.go) and back to preferred replicas (the leader
// balancer, balancer.go, on the controller leader). On the controller leader it also drives
// decommissions: moves off a draining broker, then its removal from the controller group
// (decommission.go). Every inter-broker message reaches its
// part through one rpc.Registry, on which each part registers its own message types (the
// numbers are internal/rpc's table) when it is created. It must not speak the Kafka wire
// protocol (that is internal/kafka), implement partition semantics (internal/partition) or
// decide metadata itself (internal/controller validates and places).
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/cluster"
	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/group"
	"github.com/cairn-io/cairn/internal/partition"
	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/raftrpc"
	"github.com/cairn-io/cairn/internal/rpc"
	"github.com/cairn-io/cairn/internal/storage"
	"github.com/cairn-io/cairn/internal/txn"
)

// Config is a node's static configuration, from `cairn start` flags, YAML or environment.
type Config struct {
	NodeID              int32
	DataDir             string
	KafkaAddr           string
	AdvertisedKafkaAddr string
	// Listeners are the advertised addresses of the named Kafka listeners, in the order
	// configured; nil is one PLAINTEXT listener on AdvertisedKafkaAddr. When set, the first
	// one's address stands as AdvertisedKafkaAddr for whatever names one address per broker
	// (the admin API's broker list, builds that predate listeners).
	Listeners []ListenerAddr
	// ListenerValues are the listener and ssl.* node properties as set at start (names as
	// in the registry), for DescribeConfigs; the broker does not interpret them.
	ListenerValues map[string]string
	// RPCAddr is where the inter-broker transport listens, and what peers dial unless
	// AdvertisedRPCAddr is set; "" picks a free loopback port (tests).
	RPCAddr string
	// AdvertisedRPCAddr, when set, is the address this broker registers for peers to dial
	// (a proxy, a NAT or a name in front of RPCAddr); the transport still listens on RPCAddr.
	AdvertisedRPCAddr string
	AdminAddr         string
	Rack              string
	Seeds             []string
	FS                storage.FS
	Logger            *slog.Logger
	// TickInterval is the Raft tick (default 100ms): elections take 10 ticks or more.
	TickInterval time.Duration
	// DisableForwarding stops this broker forwarding produce requests for partitions it
	// does not lead; they are answered NOT_LEADER_OR_FOLLOWER instead.
	DisableForwarding bool
	// ReplicaLagMax is replica.lag.time.max.ms, the ISR's lag window of the partitions this
	// broker leads; 0 is partition.DefaultReplicaLagMax.
	ReplicaLagMax time.Duration
	// TestHoldMoves is the file of the move test gate (moves_gate.go), "" for none: only
	// `cairn start --test-hold-moves` sets it.
	TestHoldMoves string
	// RPCTLS, when set, puts the inter-broker transport under mutual TLS (rpc.TLSConfig).
	RPCTLS *rpc.TLSConfig
	// OtherNodeValues are node properties set at start that other parts act on (TLS files,
	// the admin API's security), reported by DescribeConfigs as set.
	OtherNodeValues map[string]string
}

// rpcClusterName is the deployment name every broker presents in the rpc handshake (see
// internal/cluster): the Kafka cluster id lives in the controller state.
const rpcClusterName = "cairn"

// Error is a failure with the Kafka error code it is answered with.
type Error struct {
	Code *kerr.Error
	Msg  string
}

func (e *Error) Error() string { return e.Code.Message + ": " + e.Msg }

func errorf(code *kerr.Error, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// BrokerInfo describes a broker in the cluster, with the address of its first listener
// (or its one PLAINTEXT listener); On gives the address on another listener.
type BrokerInfo struct {
	NodeID int32
	Host   string
	Port   int32
	Rack   string

	reg controller.Broker
}

// TopicInfo describes a topic.
type TopicInfo struct {
	Name              string
	ID                [16]byte
	Partitions        int32
	ReplicationFactor int16
	Internal          bool
}

func topicInfo(t controller.Topic) TopicInfo {
	return TopicInfo{Name: t.Name, ID: t.ID, Partitions: t.Partitions(), ReplicationFactor: t.RF, Internal: t.Internal()}
}

// Broker is one running node.
type Broker struct {
	cfg Config
	fs  storage.FS
	lg  *slog.Logger

	transport *rpc.Transport
	messages  *rpc.Registry // the transport's handler: every part's message types
	host      *raft.Host
	svc       atomic.Pointer[cluster.Service]
	leaders   *leaderTable
	fwd       *forwarder
	// stateQueries are this broker's questions to others about their replicas (recover.go).
	stateQueries stateQueries
	// markerCalls wait for other brokers' answers to the transaction markers this broker's
	// coordinator sends; markerSem bounds the markers written here for others (txnmarkers.go).
	markerCalls calls[partition.ProduceResult]
	markerSem   chan struct{}
	// verifyCalls wait for coordinators' answers to this broker's transactional produce
	// verifications (txnproduce.go).
	verifyCalls calls[*kerr.Error]
	// viewCalls wait for other brokers' node views, for the console (nodeview.go).
	viewCalls calls[NodeView]

	txns       *txn.Coordinator
	txnShardMu sync.Mutex
	txnShards  map[int32]int32 // __transaction_state partitions served, at their leader epoch
	moves      *mover
	// authz is the authorizer built from the applied ACLs and cluster config (authorize.go).
	authz atomic.Pointer[authzCache]

	// topics is the controller state's topics as of the last reconcile, by name: the
	// request paths read it instead of copying topics out of the state on every request.
	topics atomic.Pointer[map[string]*controller.Topic]
	// followerFetching is replica.selector.class as of the last reconcile: the rack-aware
	// selector (KIP-392). The Fetch path reads it rather than resolving the cluster config.
	followerFetching atomic.Bool
	// learnerRate is learner.recovery.rate as of the last reconcile: the host reads it to
	// pace catch-up traffic to learners.
	learnerRate atomic.Int64

	mu       sync.RWMutex
	replicas map[replicaKey]*replica // the local partition replicas
	groups   *group.Coordinator      // set once at start

	shardMu sync.Mutex
	shards  map[int32]bool // __consumer_offsets partitions the coordinator serves

	reconcileMu sync.Mutex // one reconcile at a time
	// rackShort is, under reconcileMu, the topics last warned of as short of their
	// min.insync.racks, with what was said (see warnRackShortfalls).
	rackShort map[string]string

	balancer balancerState // the leader balancer's rounds on this broker (balancer.go)

	pidMu   sync.Mutex // producer ids from the controller's blocks
	pidNext int64
	pidEnd  int64

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool
	// retentionKick wakes the retention loop when its interval changes at run time.
	retentionKick chan struct{}
	// roleKick wakes the leadership loop when a local replica's role may have changed.
	roleKick chan struct{}
}

// New starts the node: its transport, its Raft host and its controller service (forming or
// joining the cluster, which can wait for the seeds), then opens the replicas assigned to it.
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
	registered := registeredListeners(cfg.Listeners)
	if len(cfg.Listeners) > 0 {
		cfg.AdvertisedKafkaAddr = cfg.Listeners[0].Addr
	}
	if cfg.NodeID == 0 {
		cfg.NodeID = 1 // the default of --node-id; raft reserves 0
	}
	if cfg.NodeID < 0 {
		return nil, fmt.Errorf("node id %d: ids start at 1", cfg.NodeID)
	}
	if cfg.RPCAddr == "" {
		cfg.RPCAddr = "127.0.0.1:0"
	}
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = 100 * time.Millisecond
	}
	b := &Broker{cfg: cfg, fs: cfg.FS, lg: cfg.Logger, replicas: map[replicaKey]*replica{}, shards: map[int32]bool{},
		retentionKick: make(chan struct{}, 1), roleKick: make(chan struct{}, 1)}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.learnerRate.Store(config.ResolveCluster(nil).LearnerRecoveryRate) // until the first reconcile
	b.leaders = newLeaderTable()
	b.moves = newMover()
	if err := b.fs.MkdirAll(filepath.Join(cfg.DataDir, "topics"), 0o755); err != nil {
		return nil, fmt.Errorf("creating data folder: %w", err)
	}
	// The folder's entry must be durable before replicas are created in it.
	if err := b.fs.SyncDir(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("syncing data folder: %w", err)
	}

	// One registry routes every inbound message. Each part registers its own types when it
	// exists: the host and this package's below, the controller service in cluster.New.
	reg := rpc.NewRegistry(cfg.Logger.With("node", cfg.NodeID))
	tr, err := rpc.New(rpc.Options{
		NodeID: cfg.NodeID, ClusterID: rpcClusterName, ListenAddr: cfg.RPCAddr, Logger: cfg.Logger,
		Handler: reg.Dispatch, TLS: cfg.RPCTLS,
	})
	if err != nil {
		return nil, fmt.Errorf("inter-broker transport: %w", err)
	}
	b.transport, b.messages = tr, reg
	b.host, _ = raftrpc.NewHost(tr, raft.HostOptions{NodeID: uint64(cfg.NodeID), TickInterval: cfg.TickInterval,
		LearnerRate: b.learnerRate.Load, Logger: raft.ErrorLogger(cfg.Logger)})
	b.fwd = newForwarder(b)
	b.markerSem = make(chan struct{}, maxMarkerInflight)
	b.txnShards = map[int32]int32{}
	if err := b.registerMessages(reg); err != nil {
		b.host.Close()
		tr.Close()
		return nil, fmt.Errorf("inter-broker messages: %w", err)
	}
	if err := tr.Start(); err != nil {
		b.host.Close()
		return nil, fmt.Errorf("inter-broker transport: listening on %s: %w", cfg.RPCAddr, err)
	}
	rpcAddr := cfg.RPCAddr
	if strings.HasSuffix(rpcAddr, ":0") {
		rpcAddr = tr.Addr().String()
	}
	b.cfg.RPCAddr = rpcAddr
	if cfg.AdvertisedRPCAddr != "" {
		rpcAddr = cfg.AdvertisedRPCAddr
	} else {
		b.cfg.AdvertisedRPCAddr = rpcAddr
	}

	svc, err := cluster.New(cluster.Options{
		NodeID: cfg.NodeID, Dir: filepath.Join(cfg.DataDir, "controller"), FS: cfg.FS,
		Host: b.host, Transport: tr, Registry: reg, Seeds: cfg.Seeds,
		KafkaAddr: cfg.AdvertisedKafkaAddr, RPCAddr: rpcAddr, Rack: cfg.Rack, Logger: cfg.Logger, Listeners: registered,
	})
	if err == nil {
		// Stored before Run: the handlers may reach the state while the broker joins.
		b.svc.Store(svc)
		if err = svc.Run(b.ctx); err != nil {
			svc.Close()
		}
	}
	if err != nil {
		b.host.Close()
		tr.Close()
		return nil, fmt.Errorf("joining the cluster: %w", err)
	}
	if err := b.reconcile(); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.removeOrphans(); err != nil {
		b.Close()
		return nil, fmt.Errorf("cleaning the data folder: %w", err)
	}
	b.startGroups()
	b.startTxns()
	b.spawn(b.reconcileLoop)
	b.spawn(b.leadershipLoop)
	b.spawn(b.retentionLoop)
	b.spawn(b.moveLoop)
	b.spawn(b.maintenanceLoop)
	b.spawn(b.balancerLoop)
	b.spawn(b.decommissionLoop)
	return b, nil
}

// registerMessages routes this node's inter-broker message types other than the controller
// service's (cluster.New registers those): raft's to the host, this package's to the
// leadership table and the forwarder.
func (b *Broker) registerMessages(reg *rpc.Registry) error {
	return errors.Join(
		raftrpc.Register(reg, b.host, nil),
		reg.Register(func(from int32, _ uint8, payload []byte) { b.leaders.receive(from, payload, b.lg) }, msgLeaders),
		reg.Register(b.fwd.handle, msgForwardRequest, msgForwardResponse),
		reg.Register(func(from int32, _ uint8, payload []byte) {
			if err := b.moves.remote.receive(from, payload); err != nil {
				b.lg.Warn("dropping a malformed move progress report", "from", from, "err", err)
			}
		}, msgMoveProgress),
		reg.Register(b.handleTransferLeader, msgTransferLeader),
		reg.Register(b.handleReplicaStateRequest, msgReplicaStateRequest),
		reg.Register(b.handleReplicaStateResponse, msgReplicaStateResponse),
		reg.Register(b.handleTxnMarker, msgTxnMarkerRequest, msgTxnMarkerResponse),
		reg.Register(b.handleTxnVerify, msgTxnVerifyRequest, msgTxnVerifyResponse),
		reg.Register(b.handleNodeView, msgNodeViewRequest, msgNodeViewResponse),
	)
}

func (b *Broker) spawn(f func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
}

func (b *Broker) state() *controller.State { return b.svc.Load().State() }

// Close moves leadership off this node where it can (a graceful shutdown), then stops the
// loops, closes every replica (flushing), the controller service, the host and the transport.
func (b *Broker) Close() error {
	if !b.closed.CompareAndSwap(false, true) {
		return nil
	}
	b.handOffLeadership()
	b.cancel()
	b.wg.Wait()
	if b.txns != nil {
		b.txns.Close() // before the partitions it writes to
	}
	if b.groups != nil {
		b.groups.Close() // before the partitions it writes to
	}
	b.mu.Lock()
	reps := b.replicas
	b.replicas = map[replicaKey]*replica{}
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.p.Close(); err != nil {
				b.lg.Error("closing partition", "topic", r.p.Topic(), "partition", r.p.ID(), "err", err)
			}
		}()
	}
	wg.Wait()
	if s := b.svc.Load(); s != nil {
		s.Close()
	}
	b.host.Close()
	b.transport.Close()
	return nil
}

// NodeID is this broker's id.
func (b *Broker) NodeID() int32 { return b.cfg.NodeID }

// RPCStats returns the inter-broker transport's per-peer counters.
func (b *Broker) RPCStats() rpc.Stats { return b.transport.Stats() }

// RaftStats is the raft host's counters and queue lengths: elections and the work waiting
// for its workers and flushers.
func (b *Broker) RaftStats() raft.HostStats { return b.host.Stats() }

// UnhandledRPCMessages counts the inter-broker messages received of a type no part of this
// node registers (a newer broker's, or one that came before its owner was created): dropped.
func (b *Broker) UnhandledRPCMessages() uint64 { return b.messages.Dropped() }

// RPCAddr is the address the inter-broker transport listens on.
func (b *Broker) RPCAddr() string { return b.cfg.RPCAddr }

// ClusterID is the cluster's id, made by the first controller leader.
func (b *Broker) ClusterID() string { return b.state().ClusterID() }

// ControllerID is the broker that leads the controller group, or -1 while none does.
func (b *Broker) ControllerID() int32 { return b.svc.Load().Leader() }

func brokerInfo(br controller.Broker) BrokerInfo {
	return brokerAt(br, br.KafkaAddr)
}

func brokerAt(br controller.Broker, addr string) BrokerInfo {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		host, portStr = addr, "9092"
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	port, _ := strconv.Atoi(portStr)
	return BrokerInfo{NodeID: br.ID, Host: host, Port: int32(port), Rack: br.Rack, reg: br}
}

// ClusterStatus is this broker's view of the cluster: its controller replica and every
// registered broker with the liveness that replica holds.
type ClusterStatus struct {
	NodeID     int32                    `json:"node_id"`
	Controller cluster.ControllerStatus `json:"controller"`
	Brokers    []controller.Broker      `json:"brokers"`
}

// ClusterStatus reports this broker's view of the cluster.
func (b *Broker) ClusterStatus() ClusterStatus {
	svc := b.svc.Load()
	return ClusterStatus{NodeID: b.cfg.NodeID, Controller: svc.ControllerStatus(), Brokers: svc.State().Brokers()}
}

// Brokers lists the live brokers of the cluster, by id.
func (b *Broker) Brokers() []BrokerInfo {
	var out []BrokerInfo
	for _, br := range b.state().LiveBrokers() {
		out = append(out, brokerInfo(br))
	}
	return out
}

// broker returns one registered broker, live or not.
func (b *Broker) broker(id int32) (BrokerInfo, bool) {
	br, ok := b.state().Broker(id)
	if !ok {
		return BrokerInfo{}, false
	}
	return brokerInfo(br), true
}

// topic returns a topic as of the last reconcile (it must not be modified).
func (b *Broker) topic(name string) (*controller.Topic, bool) {
	m := b.topics.Load()
	if m == nil {
		return nil, false
	}
	t, ok := (*m)[name]
	return t, ok
}

// Topics lists the topics, sorted by name.
func (b *Broker) Topics() []TopicInfo {
	m := b.topics.Load()
	if m == nil {
		return nil
	}
	out := make([]TopicInfo, 0, len(*m))
	for _, t := range *m {
		out = append(out, topicInfo(*t))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Topic describes one topic.
func (b *Broker) Topic(name string) (TopicInfo, bool) {
	t, ok := b.topic(name)
	if !ok {
		return TopicInfo{}, false
	}
	return topicInfo(*t), true
}

// Partition finds the local replica of a partition. A partition that exists but has no
// replica here answers NOT_LEADER_OR_FOLLOWER, as Kafka does for a broker that is not its
// leader.
func (b *Broker) Partition(name string, id int32) (*partition.Partition, *kerr.Error) {
	t, ok := b.topic(name)
	if !ok || id < 0 || id >= t.Partitions() {
		return nil, kerr.UnknownTopicOrPartition
	}
	b.mu.RLock()
	r := b.replicas[replicaKey{t.ID, id}]
	b.mu.RUnlock()
	if r == nil {
		return nil, kerr.NotLeaderForPartition
	}
	return r.p, nil
}

// Partitions returns every local replica, for metrics and the admin API.
func (b *Broker) Partitions() []*partition.Partition {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]*partition.Partition, 0, len(b.replicas))
	for _, r := range b.replicas {
		out = append(out, r.p)
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

// maxPartitionsPerTopic bounds what one CreateTopics or CreatePartitions can ask.
const maxPartitionsPerTopic = 10000

// metadataTimeout bounds one metadata change through the controller.
const metadataTimeout = 15 * time.Second

// propose sends a command to the controller and maps its outcome to a Kafka error. When it
// returns without error, the change is applied on this broker's replica of the state and
// the local replicas follow it.
func (b *Broker) propose(cmd controller.Command) (controller.Result, *Error) {
	ctx, cancel := context.WithTimeout(b.ctx, metadataTimeout)
	defer cancel()
	res, err := b.svc.Load().Propose(ctx, cmd)
	if err != nil {
		code := kerr.RequestTimedOut
		if errors.Is(err, cluster.ErrNoController) {
			code = kerr.NotController
		}
		return res, errorf(code, "the controller did not apply the change: %v", err)
	}
	if res.Err != nil {
		return res, &Error{Code: res.Err, Msg: res.Msg}
	}
	if err := b.reconcile(); err != nil {
		return res, errorf(kerr.KafkaStorageError, "opening local replicas: %v", err)
	}
	return res, nil
}

// TopicConfigOverrides returns a copy of the properties set on a topic, and of the
// cluster's.
func (b *Broker) TopicConfigOverrides(name string) (map[string]string, map[string]string, bool) {
	st := b.state()
	ov, ok := st.TopicConfig(name)
	if !ok {
		return nil, nil, false
	}
	return ov, st.ClusterConfig(), true
}

// ClusterConfigOverrides returns a copy of the cluster properties set at run time.
func (b *Broker) ClusterConfigOverrides() map[string]string { return b.state().ClusterConfig() }

// NodeConfigValues are the node properties as set at start, for DescribeConfigs.
func (b *Broker) NodeConfigValues() map[string]string {
	c := b.cfg
	v := map[string]string{
		"node.id":               strconv.Itoa(int(c.NodeID)),
		"data.dir":              c.DataDir,
		"kafka.addr":            c.KafkaAddr,
		"advertised.kafka.addr": c.AdvertisedKafkaAddr,
		"rpc.addr":              c.RPCAddr,
		"advertised.rpc.addr":   c.AdvertisedRPCAddr,
		"admin.addr":            c.AdminAddr,
		"rack":                  c.Rack,
		"produce.forwarding":    strconv.FormatBool(!c.DisableForwarding),
	}
	if len(c.Seeds) > 0 {
		v["seeds"] = strings.Join(c.Seeds, ",")
	}
	if c.ReplicaLagMax > 0 {
		v[config.NodeReplicaLagTimeMaxMs] = strconv.FormatInt(c.ReplicaLagMax.Milliseconds(), 10)
	}
	for k, x := range c.OtherNodeValues {
		if _, set := v[k]; !set {
			v[k] = x
		}
	}
	for k, val := range c.ListenerValues {
		v[k] = val
	}
	if len(c.Listeners) > 0 && c.ListenerValues[config.NodeListeners] != "" {
		// kafka.addr is not set alongside listeners: report it as not set.
		delete(v, config.NodeKafkaAddr)
		delete(v, config.NodeAdvertisedKafkaAddr)
	}
	return v
}

// SetTopicConfig replaces a topic's overrides with already validated values; every replica
// applies them when the change reaches it.
func (b *Broker) SetTopicConfig(name string, overrides map[string]string) *Error {
	if _, ok := b.state().Topic(name); !ok {
		return errorf(kerr.UnknownTopicOrPartition, "topic %q does not exist", name)
	}
	_, err := b.propose(controller.SetTopicConfig{Name: name, Overrides: overrides, Replace: true})
	return err
}

// ReplaceTopicConfigIf replaces a topic's overrides with already validated values, if they
// are still exactly expect (what the caller built them from); otherwise it changes nothing
// and returns an error for which IsConfigChanged holds, once this broker's replica shows
// the change that came between.
func (b *Broker) ReplaceTopicConfigIf(name string, expect, overrides map[string]string) *Error {
	if _, ok := b.state().Topic(name); !ok {
		return errorf(kerr.UnknownTopicOrPartition, "topic %q does not exist", name)
	}
	_, err := b.propose(controller.SetTopicConfig{Name: name, Overrides: overrides, Replace: true,
		IfUnchanged: true, Expect: expect})
	return err
}

// IsConfigChanged reports whether err is ReplaceTopicConfigIf's or
// ReplaceClusterConfigIf's refusal of a change built from overrides that have moved on.
func IsConfigChanged(err *Error) bool { return err != nil && err.Code == controller.ErrConfigChanged }

// SetClusterConfig replaces the cluster overrides with already validated values.
func (b *Broker) SetClusterConfig(overrides map[string]string) *Error {
	return b.setClusterConfig(controller.SetClusterConfig{Overrides: overrides, Replace: true})
}

// ReplaceClusterConfigIf is ReplaceTopicConfigIf for the cluster overrides.
func (b *Broker) ReplaceClusterConfigIf(expect, overrides map[string]string) *Error {
	return b.setClusterConfig(controller.SetClusterConfig{Overrides: overrides, Replace: true,
		IfUnchanged: true, Expect: expect})
}

func (b *Broker) setClusterConfig(cmd controller.SetClusterConfig) *Error {
	if _, err := b.propose(cmd); err != nil {
		return err
	}
	select {
	case b.retentionKick <- struct{}{}:
	default:
	}
	return nil
}

func (b *Broker) clusterConfig() config.ClusterConfig {
	return config.ResolveCluster(b.state().ClusterConfig())
}

// producerIDBlock is how many producer ids a broker takes from the controller at once.
const producerIDBlock = 1000

// AllocateProducerID hands out a producer id unique in the cluster and across restarts:
// ids come from blocks the controller hands each broker once.
func (b *Broker) AllocateProducerID() (int64, *Error) {
	b.pidMu.Lock()
	defer b.pidMu.Unlock()
	if b.pidNext >= b.pidEnd {
		res, err := b.propose(controller.AllocateProducerIDBlock{Broker: b.cfg.NodeID, Size: producerIDBlock})
		if err != nil {
			return -1, err
		}
		if res.ProducerIDs == nil {
			return -1, errorf(kerr.UnknownServerError, "the controller handed out no producer ids")
		}
		b.pidNext, b.pidEnd = res.ProducerIDs.First, res.ProducerIDs.First+int64(res.ProducerIDs.Size)
	}
	id := b.pidNext
	b.pidNext++
	return id, nil
}

func (b *Broker) retentionLoop() {
	for {
		interval := time.Duration(b.clusterConfig().RetentionCheckMs) * time.Millisecond
		t := time.NewTimer(interval)
		select {
		case <-b.ctx.Done():
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

func containsID(ids []int32, id int32) bool { return slices.Contains(ids, id) }
