package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/test/harness"
)

const (
	movedTopic = "moved"
	loadTopic  = "load"
	// loadWarmup is `bench produce --warmup`: the move starts right after it, so that the
	// load's measured window is the move's.
	loadWarmup = 2 * time.Second
)

// moveResult is one move's figures.
type moveResult struct {
	From, To []int32
	// Seconds runs from the AlterPartitionReassignments call until ListPartitionReassignments
	// no longer lists the partition and Metadata names exactly To; CopiedSeconds until the
	// new replica's log end reached the leader's log end at the call.
	Seconds       float64 `json:"seconds"`
	CopiedSeconds float64 `json:"copied_seconds"`
	Bytes         int64   `json:"bytes"`
	MBPerS        float64 `json:"mb_per_s"`
	// CopyMBPerS is Bytes over CopiedSeconds: the catch-up's own rate, to set against the
	// learner catch-up bound.
	CopyMBPerS float64 `json:"copy_mb_per_s"`
	// AddedLogStart and AddedDiskBytes are the added replica's log start offset and the
	// bytes in its partition folder once the move is done: a whole-log copy starts at 0
	// and holds about Bytes.
	AddedLogStart  int64 `json:"added_log_start"`
	AddedDiskBytes int64 `json:"added_disk_bytes"`
	// LeaderDiskBytes is the same folder's size on the first replica of From (the leader
	// the partition was created with) at the call.
	LeaderDiskBytes int64 `json:"leader_disk_bytes"`
	// LoadFile and BaseFile are the `bench produce --json` summaries during the move and
	// during the same time without one.
	LoadFile string `json:"load_file"`
	BaseFile string `json:"base_file"`
	// Bound is the learner catch-up rate property's value during the move ("" where
	// --rate-property was not given), and Default whether that was its default.
	Bound   string `json:"bound,omitempty"`
	Default bool   `json:"bound_is_default,omitempty"`
	// LoadAvg is /proc/loadavg's 1-minute figure at the end of the move and at the end of
	// the run without one: the machine is shared, and other work shows in the latency.
	LoadAvg [2]float64 `json:"loadavg_1m"`
}

type runner struct {
	o     options
	cl    *cluster
	Size  int64        `json:"size_bytes"`
	Rate  int          `json:"load_records_per_s"`
	Disk  []string     `json:"disk_files"`
	Moves []moveResult `json:"moves"`
	// RateProperty is --rate-property.
	RateProperty string `json:"rate_property,omitempty"`
}

// measure runs the main pass: fill, disk, move 1,2,3 → 1,2,4 under load, the load alone
// for as long, disk again.
func (r *runner) measure(ctx context.Context) error {
	r.Size, r.Rate = r.o.size, r.o.rate
	if err := r.createTopics(ctx); err != nil {
		return err
	}
	if err := r.fill(ctx); err != nil {
		return err
	}
	if err := r.disk(ctx, "move-disk-0"); err != nil {
		return err
	}
	if r.o.rateProperty != "" {
		r.RateProperty = r.o.rateProperty
		if err := r.setRate(ctx, "0"); err != nil {
			return err
		}
	}
	if err := r.move(ctx, []int32{1, 2, 3}, []int32{1, 2, 4}, "move"); err != nil {
		return err
	}
	return r.disk(ctx, "move-disk-1")
}

// measureBounded moves the partition back to 1,2,3 (broker 3 now copies the whole log)
// with the rate property at its default (or --rate-bound), under the same load, then runs
// the load alone.
func (r *runner) measureBounded(ctx context.Context) error {
	if err := r.setRate(ctx, r.o.rateBound); err != nil {
		return err
	}
	if err := r.move(ctx, []int32{1, 2, 4}, []int32{1, 2, 3}, "move-bounded"); err != nil {
		return err
	}
	return r.disk(ctx, "move-disk-2")
}

// setRate sets the rate property cluster-wide to value, or back to its default for "".
func (r *runner) setRate(ctx context.Context, value string) error {
	alter := kadm.AlterConfig{Op: kadm.DeleteConfig, Name: r.o.rateProperty}
	if value != "" {
		alter = kadm.AlterConfig{Op: kadm.SetConfig, Name: r.o.rateProperty, Value: &value}
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resps, err := r.cl.adm.AlterBrokerConfigs(cctx, []kadm.AlterConfig{alter})
	if err == nil {
		for _, resp := range resps {
			if resp.Err != nil {
				err = fmt.Errorf("%v %s", resp.Err, resp.ErrMessage)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("setting %s to %q: %w", r.o.rateProperty, value, err)
	}
	return nil
}

// rate reads the rate property's value and whether it is the default (from one broker,
// which may lag the controller's commit by a moment: it is read just before a move, and
// the move's own bound is whatever the leader applies).
func (r *runner) rate(ctx context.Context) (string, bool, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resps, err := r.cl.adm.DescribeBrokerConfigs(cctx, 1)
	if err != nil {
		return "", false, err
	}
	for _, resp := range resps {
		for _, c := range resp.Configs {
			if c.Key == r.o.rateProperty {
				v := ""
				if c.Value != nil {
					v = *c.Value
				}
				return v, c.Source == kmsg.ConfigSourceDefaultConfig, nil
			}
		}
	}
	return "", false, fmt.Errorf("broker 1 does not describe %s", r.o.rateProperty)
}

func (r *runner) write() error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(r.o.out, "move.json"), append(raw, '\n'), 0o644)
}

// createTopics creates the moved partition on 1,2,3 (broker 1 its preferred leader) and
// the load topic's 8 partitions on 1,2,3 with their leaders spread.
func (r *runner) createTopics(ctx context.Context) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	add := func(topic string, assignments [][]int32) {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = topic, -1, -1
		for i, replicas := range assignments {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(i), replicas
			t.ReplicaAssignment = append(t.ReplicaAssignment, a)
		}
		req.Topics = append(req.Topics, t)
	}
	add(movedTopic, [][]int32{{1, 2, 3}})
	var load [][]int32
	for i := range 8 {
		load = append(load, []int32{int32(i%3 + 1), int32((i+1)%3 + 1), int32((i+2)%3 + 1)})
	}
	add(loadTopic, load)
	cctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	resp, err := req.RequestWith(cctx, r.cl.client)
	if err != nil {
		return fmt.Errorf("creating the topics: %w", err)
	}
	for _, t := range resp.Topics {
		if t.ErrorCode != 0 {
			msg := ""
			if t.ErrorMessage != nil {
				msg = *t.ErrorMessage
			}
			return fmt.Errorf("creating topic %s: error %d %s", t.Topic, t.ErrorCode, msg)
		}
	}
	return nil
}

// fill produces o.size bytes of incompressible 16 KiB records to the moved partition
// (acks=all), then waits until every replica has fsynced all of them.
func (r *runner) fill(ctx context.Context) error {
	start := time.Now()
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.cl.bs[0].KafkaAddr), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		// Every record holds the same bytes, which franz-go's default compression would
		// shrink to a few percent: the log must hold o.size bytes on disk.
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedBytes(64<<20), kgo.RecordDeliveryTimeout(2*time.Minute))
	if err != nil {
		return err
	}
	defer cl.Close()
	value := make([]byte, 16<<10)
	rand.Read(value)
	failed := make(chan error, 1) // the first failure; later ones are dropped
	for sent := int64(0); sent < r.o.size; sent += int64(len(value)) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		select {
		case err := <-failed:
			return fmt.Errorf("filling %s: %w", movedTopic, err)
		default:
		}
		cl.Produce(ctx, &kgo.Record{Topic: movedTopic, Partition: 0, Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case failed <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	select {
	case err := <-failed:
		return fmt.Errorf("filling %s: %w", movedTopic, err)
	default:
	}
	logf("filled %s/0 with %d bytes in %.1f s", movedTopic, r.o.size, time.Since(start).Seconds())
	end, err := r.logEnd(ctx, 1)
	if err != nil {
		return err
	}
	return r.waitFlushed(ctx, []int{1, 2, 3}, end)
}

func (r *runner) logEnd(ctx context.Context, id int) (int64, error) {
	st, err := r.cl.bs[id-1].PartitionStatus(ctx, movedTopic, 0)
	return st.LogEnd, err
}

// waitFlushed waits up to a minute until each broker of ids has fsynced the moved
// partition up to end.
func (r *runner) waitFlushed(ctx context.Context, ids []int, end int64) error {
	deadline := time.Now().Add(time.Minute)
	for _, id := range ids {
		for {
			st, err := r.cl.bs[id-1].PartitionStatus(ctx, movedTopic, 0)
			if err == nil && st.Flushed >= end {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("broker %d did not flush %s/0 to %d within a minute (%+v, %v)", id, movedTopic, end, st, err)
			}
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// disk runs `cairn bench disk` in the data folder for o.diskDuration into out/name.json.
func (r *runner) disk(ctx context.Context, name string) error {
	cmd := exec.CommandContext(ctx, r.o.binary, "bench", "disk", "--dir", r.o.dataDir, "--size", "8GiB",
		"--duration", r.o.diskDuration.String(), "--json")
	if err := runTo(cmd, filepath.Join(r.o.out, name+".json")); err != nil {
		return fmt.Errorf("bench disk: %w", err)
	}
	r.Disk = append(r.Disk, name+".json")
	return nil
}

// move moves the partition from → to under the load producer, stops the load when the
// move is done, then runs the load alone for as long as the loaded run measured.
func (r *runner) move(ctx context.Context, from, to []int32, name string) error {
	loadFile, baseFile := name+"-load.json", name+"-base.json"
	load, err := r.startLoad(ctx, r.o.maxMove+loadWarmup, filepath.Join(r.o.out, loadFile))
	if err != nil {
		return err
	}
	defer load.kill() // only if something below failed: a finished load was waited for
	if err := sleep(ctx, loadWarmup); err != nil {
		return err
	}
	var bound string
	var isDefault bool
	if r.o.rateProperty != "" {
		if bound, isDefault, err = r.rate(ctx); err != nil {
			return err
		}
	}
	res, err := r.moveAndWait(ctx, from, to)
	if err != nil {
		return err
	}
	res.Bound, res.Default = bound, isDefault
	res.LoadAvg[0] = loadAvg()
	if err := load.interrupt(); err != nil {
		return fmt.Errorf("the load during the move: %w", err)
	}
	measured, err := measuredSeconds(filepath.Join(r.o.out, loadFile))
	if err != nil {
		return err
	}
	base, err := r.startLoad(ctx, time.Duration(measured*float64(time.Second)), filepath.Join(r.o.out, baseFile))
	if err != nil {
		return err
	}
	defer base.kill()
	if err := base.wait(); err != nil {
		return fmt.Errorf("the load without a move: %w", err)
	}
	res.LoadAvg[1] = loadAvg()
	res.Bytes = r.o.size
	res.MBPerS = float64(res.Bytes) / 1e6 / res.Seconds
	res.CopyMBPerS = float64(res.Bytes) / 1e6 / res.CopiedSeconds
	res.LoadFile, res.BaseFile = loadFile, baseFile
	r.Moves = append(r.Moves, res)
	logf("moved %s/0 %v → %v: %.1f s (%.1f s to copy), %.1f MB/s", movedTopic, from, to, res.Seconds, res.CopiedSeconds, res.MBPerS)
	return nil
}

// moveAndWait asks for the move and waits until it is done (see moveResult.Seconds),
// noting when the new replica's log end reached the leader's at the call.
func (r *runner) moveAndWait(ctx context.Context, from, to []int32) (moveResult, error) {
	res := moveResult{From: from, To: to}
	var added int32
	for _, id := range to {
		if !slices.Contains(from, id) {
			added = id
		}
	}
	end, err := r.logEnd(ctx, int(from[0]))
	if err != nil {
		return res, err
	}
	if res.LeaderDiskBytes, err = partitionBytes(r.cl.bs[from[0]-1].DataDir, movedTopic, 0); err != nil {
		return res, err
	}
	start := time.Now()
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(movedTopic, 0, to)
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	resps, err := r.cl.adm.AlterPartitionAssignments(actx, req)
	cancel()
	if err != nil {
		return res, fmt.Errorf("AlterPartitionReassignments to %v: %w", to, err)
	}
	if p := resps[movedTopic][0]; p.Err != nil {
		return res, fmt.Errorf("AlterPartitionReassignments to %v: %v %s", to, p.Err, p.ErrMessage)
	}
	deadline := start.Add(r.o.maxMove)
	var last string
	for {
		if res.CopiedSeconds == 0 {
			if st, err := r.cl.bs[added-1].PartitionStatus(ctx, movedTopic, 0); err == nil && st.LogEnd >= end {
				res.CopiedSeconds = time.Since(start).Seconds()
			}
		}
		done, state := r.moved(ctx, to)
		if done {
			res.Seconds = time.Since(start).Seconds()
			if res.CopiedSeconds == 0 {
				res.CopiedSeconds = res.Seconds
			}
			st, err := r.cl.bs[added-1].PartitionStatus(ctx, movedTopic, 0)
			if err != nil {
				return res, fmt.Errorf("the added replica on broker %d: %w", added, err)
			}
			res.AddedLogStart = st.LogStart
			res.AddedDiskBytes, err = partitionBytes(r.cl.bs[added-1].DataDir, movedTopic, 0)
			return res, err
		}
		last = state
		if time.Now().After(deadline) {
			return res, fmt.Errorf("%s/0 did not move to %v within %v (last: %s)", movedTopic, to, r.o.maxMove, last)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return res, err
		}
	}
}

// moved reports whether ListPartitionReassignments no longer lists the moved partition
// and Metadata names exactly want as its replicas, and otherwise what it saw.
func (r *runner) moved(ctx context.Context, want []int32) (bool, string) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	listed, err := r.cl.adm.ListPartitionReassignments(cctx, kadm.TopicsSet{movedTopic: {0: {}}})
	if err != nil {
		return false, err.Error()
	}
	if p, ok := listed[movedTopic][0]; ok {
		return false, fmt.Sprintf("moving: replicas %v adding %v removing %v", p.Replicas, p.AddingReplicas, p.RemovingReplicas)
	}
	md, err := r.cl.adm.Metadata(cctx, movedTopic)
	if err != nil {
		return false, err.Error()
	}
	p, ok := md.Topics[movedTopic].Partitions[0]
	if !ok {
		return false, "no metadata"
	}
	got, w := slices.Clone(p.Replicas), slices.Clone(want)
	slices.Sort(got)
	slices.Sort(w)
	return slices.Equal(got, w), fmt.Sprintf("metadata replicas %v", p.Replicas)
}

// partitionBytes sums the sizes of the files in a broker's folder of topic's partition
// (internal/broker names it topics/<topic>-<partition>-<topic id>).
func partitionBytes(dataDir, topic string, partition int) (int64, error) {
	dirs, err := filepath.Glob(filepath.Join(dataDir, "topics", fmt.Sprintf("%s-%d-*", topic, partition)))
	if err != nil || len(dirs) != 1 {
		return 0, fmt.Errorf("%s/%d in %s: folders %v, %v", topic, partition, dataDir, dirs, err)
	}
	var n int64
	err = filepath.WalkDir(dirs[0], func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	return n, err
}

// loadRun is one `cairn bench produce` process.
type loadRun struct {
	cmd  *exec.Cmd
	out  *os.File
	done bool
}

// startLoad starts `cairn bench produce` at o.rate on the load topic (acks=all) for d
// after the warm-up, its JSON summary going to path.
func (r *runner) startLoad(ctx context.Context, d time.Duration, path string) (*loadRun, error) {
	cmd := exec.CommandContext(ctx, r.o.binary, "bench", "produce", "-b", r.cl.bootstrap(), "-t", loadTopic,
		"--acks", "all", "--rate", fmt.Sprint(r.o.rate), "--warmup", loadWarmup.String(),
		"--duration", d.Round(time.Millisecond).String(), "--json")
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	cmd.Stdout = f
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 30 * time.Second
	harness.DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	return &loadRun{cmd: cmd, out: f}, nil
}

func (l *loadRun) wait() error {
	l.done = true
	err := l.cmd.Wait()
	if cerr := l.out.Close(); err == nil {
		err = cerr
	}
	return err
}

// interrupt ends the load the way Ctrl-C does, so that it prints its summary.
func (l *loadRun) interrupt() error {
	if err := l.cmd.Process.Signal(syscall.SIGINT); err != nil {
		return err
	}
	return l.wait()
}

func (l *loadRun) kill() {
	if !l.done {
		l.cmd.Process.Kill()
		l.wait()
	}
}

// measuredSeconds reads duration_s, the measured window, from a bench summary.
func measuredSeconds(path string) (float64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var sum struct {
		DurationS float64 `json:"duration_s"`
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if sum.DurationS <= 0 {
		return 0, fmt.Errorf("%s measured no time: %s", path, raw)
	}
	return sum.DurationS, nil
}

// runTo runs cmd with its stdout going to path.
func runTo(cmd *exec.Cmd, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, os.Stderr
	harness.DieWithParent(cmd)
	return cmd.Run()
}

// loadAvg is the machine's 1-minute load average, 0 where /proc/loadavg is not there.
func loadAvg() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var one float64
	fmt.Sscanf(string(raw), "%f", &one)
	return one
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
