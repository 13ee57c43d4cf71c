package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/rpc"
	"github.com/cairn-io/cairn/internal/storage"
)

// ControllerGroup is the Raft group id of the controller.
const ControllerGroup uint64 = 0

// Defaults of Options.
const (
	DefaultLivenessTimeout   = 3 * time.Second
	DefaultHeartbeatInterval = 500 * time.Millisecond
	DefaultRequestTimeout    = 2 * time.Second
)

// IncarnationFile is the file in Options.Dir that holds the last incarnation this broker
// registered with, so that a restart registers with a higher one.
const IncarnationFile = "incarnation"

// Errors of the service.
var (
	// ErrNoController: no controller leader was known before the context ended.
	ErrNoController = errors.New("cluster: no controller leader")
	ErrClosed       = errors.New("cluster: service closed")
	// errResultLost: the entry was applied here but its result was already evicted (more
	// than maxResults entries applied meanwhile). The proposal is not reported a success.
	errResultLost   = errors.New("cluster: result of the applied entry is no longer known")
	errNotLeader    = errors.New("cluster: the receiver does not lead the controller")
	errTimedOut     = errors.New("cluster: the controller did not answer in time")
	errUnknownState = errors.New("cluster: the controller could not finish the proposal in time")
)

// maxResults bounds the results of applied entries kept for their proposers: a proposer
// reads its result right after the apply, so only a burst of more entries than this in
// between loses one (errResultLost).
const maxResults = 4096

// maxInflight bounds the proposal and join requests the service works on at once for other
// brokers; beyond it they are answered with statusRetry.
const maxInflight = 256

// Options configures a Service.
type Options struct {
	NodeID int32
	// Dir is the folder of group 0's log and of IncarnationFile (normally <data-dir>/controller).
	Dir string
	// FS is the filesystem (nil: the real one).
	FS storage.FS
	// Host is the broker's shared multi-raft host; the service adds group 0 to it.
	Host *raft.Host
	// Transport is the broker's rpc transport, started before Run; the service sets the
	// peers it learns.
	Transport *rpc.Transport
	// Registry is the transport's message registry: New registers this package's block of
	// message types on it.
	Registry *rpc.Registry
	// Seeds are the RPC addresses of the founding brokers; empty forms a cluster of this
	// broker alone.
	Seeds []string
	// KafkaAddr, RPCAddr and Rack are what this broker registers: its advertised Kafka
	// address, the RPC address peers dial, its rack ("" for none).
	KafkaAddr, RPCAddr, Rack string
	// Listeners is the advertised address of each named Kafka listener, nil for a broker
	// whose one listener is PLAINTEXT on KafkaAddr.
	Listeners map[string]string
	Logger    *slog.Logger
	// LivenessTimeout is how long the leader waits without a broker's heartbeat before it
	// marks the broker not live (default 3s); HeartbeatInterval is how often brokers send
	// one (default 500ms).
	LivenessTimeout, HeartbeatInterval time.Duration
	// RequestTimeout bounds one attempt of a proposal, forwarded or local, and of a join,
	// before it is retried (default 2s).
	RequestTimeout time.Duration
}

// Service is one broker's controller service. Its methods are safe for concurrent use.
type Service struct {
	opts  Options
	fs    storage.FS
	log   *slog.Logger
	host  *raft.Host
	tr    *rpc.Transport
	ls    *raft.LogStorage
	state *controller.State
	self  uint64

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	corr     atomic.Uint64
	dropped  atomic.Uint64
	inflight atomic.Int32
	joinCh   chan joinResponse
	ran      atomic.Bool
	muted    atomic.Bool // tests: send no heartbeats

	mu          sync.Mutex // never held while calling into the host: its workers call apply
	closed      bool
	added       bool // group 0 is on the host
	fatal       error
	changed     chan struct{}
	results     map[uint64]controller.Result
	resultQ     []uint64
	pending     map[uint64]chan proposeResponse
	peers       map[int32]string // the address last given to the transport per peer
	fromState   map[int32]string // the address the state last named per broker
	joining     map[int32]bool
	incarnation uint64 // registered with; 0 until registered
	// Liveness, kept while leading: when each broker was last heard from in the current
	// leadership (cleared when it starts), and verdicts being proposed.
	leadTerm uint64
	seen     map[int32]heard
	verdicts map[int32]bool
}

// New opens group 0's log in opts.Dir, replays its committed entries into the state and
// registers this package's block of message types on opts.Registry (a registry holds one
// service: a second New on it fails). It adds nothing to the host and sends nothing;
// messages are dropped until Run has added group 0. Call Run next, and Close in the end.
func New(opts Options) (*Service, error) {
	switch {
	case opts.NodeID <= 0:
		return nil, fmt.Errorf("cluster: node id %d: must be positive", opts.NodeID)
	case opts.Host == nil || opts.Transport == nil || opts.Registry == nil:
		return nil, errors.New("cluster: a raft host, an rpc transport and its registry are required")
	case opts.Dir == "":
		return nil, errors.New("cluster: no directory for the controller log")
	case opts.KafkaAddr == "" || opts.RPCAddr == "":
		return nil, errors.New("cluster: the broker's Kafka and RPC addresses are required")
	}
	if opts.LivenessTimeout <= 0 {
		opts.LivenessTimeout = DefaultLivenessTimeout
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	fs := opts.FS
	if fs == nil {
		fs = storage.OSFS()
	}
	ls, err := raft.Open(storage.Options{FS: fs, Dir: opts.Dir})
	if err != nil {
		return nil, fmt.Errorf("cluster: opening the controller log: %w", err)
	}
	// A restart replays the committed entries, which also name the peers to dial: after a
	// whole-cluster restart nobody else can tell this broker where they are.
	ls.PersistCommitEagerly()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{
		opts: opts, fs: fs, log: opts.Logger.With("node", opts.NodeID, "component", "cluster"),
		host: opts.Host, tr: opts.Transport, ls: ls, state: controller.New(), self: uint64(opts.NodeID),
		ctx: ctx, cancel: cancel, joinCh: make(chan joinResponse, 1),
		changed: make(chan struct{}), results: map[uint64]controller.Result{},
		pending: map[uint64]chan proposeResponse{}, peers: map[int32]string{}, fromState: map[int32]string{},
		joining: map[int32]bool{}, seen: map[int32]heard{}, verdicts: map[int32]bool{},
	}
	err = s.replay()
	if err == nil {
		if err = opts.Registry.RegisterBlock(s.handle, rpc.ClusterBlockFirst, rpc.ClusterBlockLast); err != nil {
			err = fmt.Errorf("cluster: %w", err)
		}
	}
	if err != nil {
		cancel()
		ls.Close()
		return nil, err
	}
	return s, nil
}

// replay applies the locally committed entries. The host delivers only those above the last
// configuration change after a restart; the state skips what it has already applied.
func (s *Service) replay() error {
	_, _, commit := s.ls.HardState()
	first, _ := s.ls.FirstIndex()
	if first > 1 && commit >= first-1 {
		// Group 0's log is never trimmed; its state cannot be rebuilt without the prefix
		// (raft snapshots here carry no controller state).
		return fmt.Errorf("cluster: the controller log starts at index %d: its prefix is gone", first)
	}
	for lo := first; lo <= commit; {
		ents, err := s.ls.Entries(lo, commit+1, 4<<20)
		if err != nil {
			return fmt.Errorf("cluster: replaying the controller log at %d: %w", lo, err)
		}
		if len(ents) == 0 {
			break
		}
		for _, e := range ents {
			s.applyEntry(e)
		}
		lo = ents[len(ents)-1].GetIndex() + 1
	}
	return s.Err()
}

// fresh reports whether group 0 has never been started in this directory.
func (s *Service) fresh() bool {
	last, _ := s.ls.LastIndex()
	_, cs, _ := s.ls.InitialState()
	return last == 0 && len(cs.GetVoters()) == 0 && len(cs.GetLearners()) == 0
}

// Run forms or joins the cluster, adds group 0 to the host, and registers this broker with a
// new incarnation. It returns once the registration is applied locally, or ctx ends. Call it
// once.
func (s *Service) Run(ctx context.Context) error {
	if !s.ran.CompareAndSwap(false, true) {
		return errors.New("cluster: Run called twice")
	}
	fresh := s.fresh()
	s.syncPeers()
	var bootstrap *pb.ConfState
	campaign, join := false, false
	if _, cs, _ := s.ls.InitialState(); !fresh && slices.Equal(cs.GetVoters(), []uint64{s.self}) {
		campaign = true // the only voter: no one else can start the election
	}
	if fresh {
		switch {
		case len(s.opts.Seeds) == 0:
			bootstrap = &pb.ConfState{Voters: []uint64{s.self}}
			campaign = true
		case slices.Contains(s.opts.Seeds, s.opts.RPCAddr):
			ids, err := s.probeSeeds(ctx)
			if err != nil {
				return err
			}
			bootstrap = &pb.ConfState{Voters: ids}
			campaign = ids[0] == s.self // one founder starts the election rather than all at once
		default:
			cs, err := s.join(ctx)
			if err != nil {
				return err
			}
			bootstrap, join = cs, true
		}
	}
	if err := s.host.AddGroup(ControllerGroup, raft.GroupConfig{Storage: s.ls, Bootstrap: bootstrap, Apply: s.apply, Priority: true}); err != nil {
		return fmt.Errorf("cluster: adding group 0: %w", err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = s.host.RemoveGroup(ControllerGroup)
		return ErrClosed
	}
	s.added = true
	s.wg.Add(2)
	s.mu.Unlock()
	go s.peerLoop()
	go s.livenessLoop()
	s.log.Info("controller group started", "fresh", fresh, "bootstrap", bootstrap.GetVoters(), "joining", join)
	if campaign {
		if err := s.host.Campaign(ControllerGroup); err != nil {
			return err
		}
	}
	if err := s.ensureClusterID(ctx); err != nil {
		return err
	}
	return s.register(ctx)
}

// probeSeeds learns the node id of every seed, retrying until all answer, and returns the
// ids sorted.
func (s *Service) probeSeeds(ctx context.Context) ([]uint64, error) {
	seeds := slices.Compact(slices.Sorted(slices.Values(s.opts.Seeds)))
	ids := map[string]int32{s.opts.RPCAddr: s.opts.NodeID}
	for {
		for _, a := range seeds {
			if _, ok := ids[a]; ok {
				continue
			}
			pctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
			id, err := s.tr.Probe(pctx, a)
			cancel()
			if err != nil {
				s.log.Debug("seed did not answer a probe yet", "seed", a, "err", err)
				continue
			}
			ids[a] = id
		}
		if len(ids) == len(seeds) {
			break
		}
		if err := s.sleep(ctx, 100*time.Millisecond); err != nil {
			return nil, fmt.Errorf("cluster: probing seeds %v (answered: %v): %w", seeds, ids, err)
		}
	}
	var out []uint64
	byID := map[int32]string{}
	for a, id := range ids {
		if other, dup := byID[id]; dup {
			return nil, fmt.Errorf("cluster: seeds %s and %s are both node %d", a, other, id)
		}
		if id <= 0 {
			return nil, fmt.Errorf("cluster: seed %s has node id %d", a, id)
		}
		byID[id] = a
		s.setPeer(id, a)
		out = append(out, uint64(id))
	}
	slices.Sort(out)
	return out, nil
}

// join asks the seeds (then the leader they name) to add this broker to group 0 as a
// learner, until the leader confirms, and returns group 0's configuration to bootstrap with.
// Until then group 0 is not on the host: the leader's first messages are lost, and raft
// sends them again.
func (s *Service) join(ctx context.Context) (*pb.ConfState, error) {
	seedIDs := map[string]int32{}
	target := int32(-1)
	req := joinRequest{RPCAddr: s.opts.RPCAddr}.encode()
	retry := time.NewTicker(s.opts.RequestTimeout / 4)
	defer retry.Stop()
	for {
		if target > 0 {
			_ = s.tr.Send(target, MsgJoinRequest, req)
		} else {
			for _, a := range s.opts.Seeds {
				id, ok := seedIDs[a]
				if !ok {
					pctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
					var err error
					id, err = s.tr.Probe(pctx, a)
					cancel()
					if err != nil || id <= 0 || id == s.opts.NodeID {
						s.log.Debug("seed did not answer a probe yet", "seed", a, "id", id, "err", err)
						continue
					}
					seedIDs[a] = id
					s.setPeer(id, a)
				}
				_ = s.tr.Send(id, MsgJoinRequest, req)
			}
		}
		select {
		case r := <-s.joinCh:
			if r.Leader > 0 && r.LeaderAddr != "" {
				s.setPeer(r.Leader, r.LeaderAddr)
			}
			switch r.Status {
			case statusOK:
				if !slices.Contains(r.Learners, s.self) && !slices.Contains(r.Voters, s.self) {
					continue // a stale answer; ask again
				}
				s.log.Info("joined the controller group as a learner", "leader", r.Leader, "voters", r.Voters)
				return &pb.ConfState{Voters: r.Voters, Learners: r.Learners}, nil
			case statusNotLeader:
				target = -1
				if r.Leader > 0 && r.LeaderAddr != "" {
					target = r.Leader
				}
			}
		case <-retry.C:
			target = -1
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster: joining through seeds %v: %w", s.opts.Seeds, ctx.Err())
		case <-s.ctx.Done():
			return nil, ErrClosed
		}
	}
}

// isMember reports whether id is a voter or learner of group 0 as applied here.
func (s *Service) isMember(id uint64) bool {
	_, cs, err := s.ls.InitialState()
	if err != nil {
		return false
	}
	return slices.Contains(cs.GetVoters(), id) || slices.Contains(cs.GetLearners(), id) ||
		slices.Contains(cs.GetVotersOutgoing(), id) || slices.Contains(cs.GetLearnersNext(), id)
}

// ensureClusterID waits for the cluster id; the leader proposes one if the state has none
// (a rejection means another leader's was applied first).
func (s *Service) ensureClusterID(ctx context.Context) error {
	for s.state.ClusterID() == "" {
		ch := s.Changed()
		if s.Leader() == s.opts.NodeID {
			if _, err := s.Propose(ctx, controller.SetClusterID{ClusterID: newClusterID()}); err != nil {
				return fmt.Errorf("cluster: setting the cluster id: %w", err)
			}
			continue
		}
		tm := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ch:
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return fmt.Errorf("cluster: waiting for the cluster id: %w", ctx.Err())
		case <-s.ctx.Done():
			tm.Stop()
			return ErrClosed
		}
		tm.Stop()
	}
	return nil
}

// newClusterID returns 16 random bytes as 22 base64url characters, the form of Kafka's ids.
func newClusterID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// register proposes RegisterBroker with an incarnation above any this broker used, persisted
// before it is proposed.
func (s *Service) register(ctx context.Context) error {
	prev, err := s.readIncarnation()
	if err != nil {
		return err
	}
	if b, ok := s.state.Broker(s.opts.NodeID); ok {
		prev = max(prev, b.Incarnation)
	}
	inc := prev + 1
	for {
		if err := s.writeIncarnation(inc); err != nil {
			return err
		}
		res, err := s.Propose(ctx, controller.RegisterBroker{ID: s.opts.NodeID, KafkaAddr: s.opts.KafkaAddr,
			RPCAddr: s.opts.RPCAddr, Rack: s.opts.Rack, Incarnation: inc, Listeners: s.opts.Listeners})
		if err != nil {
			return fmt.Errorf("cluster: registering broker %d: %w", s.opts.NodeID, err)
		}
		b, ok := s.state.Broker(s.opts.NodeID)
		// A retried proposal whose first attempt was applied is refused as a duplicate.
		if res.Err == nil || ok && b.Incarnation == inc && b.RPCAddr == s.opts.RPCAddr && b.KafkaAddr == s.opts.KafkaAddr {
			s.mu.Lock()
			s.incarnation = inc
			s.mu.Unlock()
			s.log.Info("broker registered", "incarnation", inc, "cluster_id", s.state.ClusterID())
			return nil
		}
		if res.Err == kerr.DuplicateBrokerRegistration && ok && b.Incarnation >= inc {
			inc = b.Incarnation + 1 // the incarnation file was lost or rolled back
			continue
		}
		return fmt.Errorf("cluster: registering broker %d: %v: %s", s.opts.NodeID, res.Err, res.Msg)
	}
}

func (s *Service) incarnationPath() string { return filepath.Join(s.opts.Dir, IncarnationFile) }

func (s *Service) readIncarnation() (uint64, error) {
	b, err := storage.ReadFile(s.fs, s.incarnationPath())
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: reading the incarnation: %w", err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cluster: corrupt incarnation file %s: %w", s.incarnationPath(), err)
	}
	return v, nil
}

func (s *Service) writeIncarnation(v uint64) error {
	if err := storage.WriteFileAtomic(s.fs, s.incarnationPath(), []byte(strconv.FormatUint(v, 10)+"\n")); err != nil {
		return fmt.Errorf("cluster: writing the incarnation: %w", err)
	}
	return nil
}

// ControllerStatus is this broker's replica of the controller group as raft sees it; an
// operator compares it across brokers to find one whose view lags.
type ControllerStatus struct {
	Leader    int32   `json:"leader"`
	Role      string  `json:"role"`
	Term      uint64  `json:"term"`
	LastIndex uint64  `json:"last_index"`
	Committed uint64  `json:"committed_index"`
	Applied   uint64  `json:"applied_index"`
	Voters    []int32 `json:"voters"`
	Learners  []int32 `json:"learners"`
}

// ControllerStatus reports the local controller replica's raft position (zero before it
// is started).
func (s *Service) ControllerStatus() ControllerStatus {
	st, err := s.host.Status(ControllerGroup)
	if err != nil {
		return ControllerStatus{Role: "none"}
	}
	out := ControllerStatus{Leader: int32(st.Leader), Role: strings.ToLower(strings.TrimPrefix(st.State.String(), "State")), Term: st.Term,
		LastIndex: st.LogEnd, Committed: st.Committed, Applied: st.Applied}
	for _, v := range st.Voters {
		out.Voters = append(out.Voters, int32(v))
	}
	for _, v := range st.Learners {
		out.Learners = append(out.Learners, int32(v))
	}
	return out
}

// State returns the local replica of the controller state. Its read methods are safe for
// concurrent use; it must not be applied to.
func (s *Service) State() *controller.State { return s.state }

// Changed returns a channel that is closed at the next change of the applied state (then
// call Changed again for the one after). Like a broadcast, it wakes every waiter; a waiter
// should read the state after taking the channel, so that no change slips between.
func (s *Service) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Incarnation is the incarnation this broker registered with (0 before Run registers it).
func (s *Service) Incarnation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.incarnation
}

// Err reports a fatal error of the local replica: a committed entry this build cannot apply
// (a newer encoding version). The replica has stopped applying; the broker must be upgraded.
func (s *Service) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fatal
}

// Leader returns the id of the controller leader this replica knows, or -1.
func (s *Service) Leader() int32 {
	st, err := s.host.Status(ControllerGroup)
	if err != nil || st.Leader == 0 {
		return -1
	}
	return int32(st.Leader)
}

// DroppedMessages counts received messages of this package's types that were refused
// (malformed, or from an invalid node id).
func (s *Service) DroppedMessages() uint64 { return s.dropped.Load() }

// Close removes group 0 from the host, stops the service's goroutines and closes the log.
// Waiting proposals fail.
func (s *Service) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	added := s.added
	s.mu.Unlock()
	s.cancel()
	if added {
		// After RemoveGroup returns no worker applies entries and the log is unused.
		_ = s.host.RemoveGroup(ControllerGroup)
	}
	s.wg.Wait()
	if err := s.ls.Close(); err != nil {
		s.log.Warn("closing the controller log", "err", err)
	}
}

// sleep waits d, ctx or Close.
func (s *Service) sleep(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.ctx.Done():
		return ErrClosed
	}
}

// spawn runs f in a goroutine Close waits for, unless the service is closed or not running.
func (s *Service) spawn(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !s.added {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

// ---- applying ----

// apply is group 0's raft.ApplyFunc: it runs on a host worker, so it only applies and
// notifies.
func (s *Service) apply(_ uint64, ents []*pb.Entry) {
	changed := false
	for _, e := range ents {
		if s.applyEntry(e) {
			changed = true
		}
	}
	if changed {
		s.mu.Lock()
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
	}
}

// applyEntry applies one committed entry to the state; it reports whether the state moved.
// Raft's own entries (empty data, configuration changes) carry no command.
func (s *Service) applyEntry(e *pb.Entry) bool {
	if e.GetType() != pb.EntryNormal || len(e.GetData()) == 0 {
		return false
	}
	if s.Err() != nil {
		return false // applying on past an entry we could not apply would diverge
	}
	cmd, err := decodeEntry(e.GetData())
	if err != nil {
		// Every replica holds the same bytes: an empty payload makes every replica consume
		// the index as the same malformed command.
		s.log.Error("controller entry is not a command", "index", e.GetIndex(), "err", err)
		cmd = nil
	}
	res, err := s.state.Apply(e.GetIndex(), cmd)
	if errors.Is(err, controller.ErrUnsupportedVersion) {
		s.mu.Lock()
		s.fatal = fmt.Errorf("cluster: controller entry %d: %w", e.GetIndex(), err)
		s.mu.Unlock()
		s.log.Error("cannot apply a committed controller entry; this replica stops applying", "index", e.GetIndex(), "err", err)
		return false
	}
	if err != nil {
		s.log.Warn("malformed controller command applied as a rejection", "index", e.GetIndex(), "err", err)
	}
	if res.Skipped {
		return false
	}
	s.mu.Lock()
	s.results[res.Index] = res
	s.resultQ = append(s.resultQ, res.Index)
	if len(s.resultQ) > maxResults {
		delete(s.results, s.resultQ[0])
		s.resultQ = s.resultQ[1:]
	}
	s.mu.Unlock()
	return true
}

func (s *Service) result(index uint64) (controller.Result, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.results[index]
	return r, ok
}

// waitApplied waits until the local replica has applied index.
func (s *Service) waitApplied(ctx context.Context, index uint64) error {
	for {
		ch := s.Changed()
		if s.state.AppliedIndex() >= index {
			return nil
		}
		if err := s.Err(); err != nil {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("cluster: waiting for index %d to be applied here: %w", index, ctx.Err())
		case <-s.ctx.Done():
			return ErrClosed
		}
	}
}

// ---- peers ----

// setPeer gives the transport a peer's address, if it is new or changed.
func (s *Service) setPeer(id int32, addr string) {
	if id <= 0 || addr == "" || id == s.opts.NodeID {
		return
	}
	s.mu.Lock()
	if s.closed || s.peers[id] == addr {
		s.mu.Unlock()
		return
	}
	s.peers[id] = addr
	s.mu.Unlock()
	s.tr.SetPeer(id, addr)
}

func (s *Service) peerAddr(id int32) string {
	if id == s.opts.NodeID {
		return s.opts.RPCAddr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peers[id]
}

// syncPeers sets every registered broker's address whose registration changed. Only
// changes in the state count, so that an address a restarted broker announced in a request
// is not overwritten by its stale registration before the new one is applied.
func (s *Service) syncPeers() {
	for _, b := range s.state.Brokers() {
		s.mu.Lock()
		same := s.fromState[b.ID] == b.RPCAddr
		s.fromState[b.ID] = b.RPCAddr
		s.mu.Unlock()
		if !same {
			s.setPeer(b.ID, b.RPCAddr)
		}
	}
}

func (s *Service) peerLoop() {
	defer s.wg.Done()
	for {
		ch := s.Changed()
		s.syncPeers()
		select {
		case <-ch:
		case <-s.ctx.Done():
			return
		}
	}
}
