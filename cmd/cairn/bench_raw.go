package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// `bench consume --raw`: consumers that send FetchRequests themselves and
// only walk the RecordBatch headers of the answers. franz-go's consumer
// decodes every record into a kgo.Record, which on a small machine costs more
// CPU than the broker spends serving the fetch, so a throughput measured
// through it is the client's; the raw mode leaves the broker as the limit. Its
// fetches go over its own connections (rawConn), read into reused buffers.

const (
	// rawFetchVersion is the newest Fetch that still names topics (v13
	// switched to topic IDs); the broker serves v4–v12.
	rawFetchVersion = 12
	// rawFetchMaxBytes bounds a whole response; large so that one round
	// trip carries many batches of every partition asked for.
	rawFetchMaxBytes = 50 << 20
	// rawFetchMaxWait only matters once no asked-for partition has data,
	// which a run that stops at the end offsets rarely meets.
	rawFetchMaxWait = 500 * time.Millisecond
	// rawRetryBackoff spaces out fetches that failed as a whole or returned
	// nothing but errors, so a broken broker is not hammered.
	rawRetryBackoff = 100 * time.Millisecond
)

// benchRawFlags are the flags only `bench consume` has.
type benchRawFlags struct {
	raw          bool
	partMaxBytes byteSize
}

func (f *benchRawFlags) register(fs *pflag.FlagSet) {
	f.partMaxBytes = 8 << 20
	fs.BoolVar(&f.raw, "raw", false, "send FetchRequests directly and count record batches without decoding records (the broker's cost only); not with --group")
	fs.Var(&f.partMaxBytes, "partition-max-bytes", "with --raw: the most bytes one fetch asks of a partition")
}

func (f *benchRawFlags) validate(cf *benchConsumeFlags) error {
	if !f.raw {
		return nil
	}
	if cf.group != "" {
		return errors.New("--raw cannot be used with --group: raw consumers fetch their assigned partitions directly and do not join a group")
	}
	if f.partMaxBytes <= 0 || f.partMaxBytes > 1<<30 {
		return fmt.Errorf("invalid --partition-max-bytes %d: want 1 to 1GiB", int64(f.partMaxBytes))
	}
	return nil
}

// batchWalk is what walkBatches found in a partition's record bytes.
type batchWalk struct {
	next    int64 // offset after the last complete batch; the fetch offset if none
	bytes   int64 // bytes of the complete batches counted
	records int64 // records in the counted batches, control batches left out
	batches int   // complete batches seen, counted or not
}

// walkBatches steps through the RecordBatches of one fetched partition using
// only the batch headers: no record is decoded and no CRC checked, because
// the point of the raw mode is to cost the client almost nothing. Batches
// that end before from (the fetch offset) are skipped; a batch that starts
// before from but ends at or after it is counted whole, so the records of a
// run that starts inside a batch are approximate by that one batch. A partial
// batch at the end (the broker cuts a response at the byte limits) is left
// for the next fetch.
func walkBatches(b []byte, from int64) (batchWalk, error) {
	w := batchWalk{next: from}
	for len(b) >= recordbatch.LengthEnd {
		size := recordbatch.Size(b)
		if size < recordbatch.HeaderSize {
			if int64(len(b)) < recordbatch.HeaderSize {
				break // too short to tell: a cut-off header
			}
			return w, fmt.Errorf("record batch at offset %d has length %d, shorter than a v2 header", recordbatch.BaseOffset(b), size-recordbatch.LengthEnd)
		}
		if size > int64(len(b)) {
			break
		}
		h, _ := recordbatch.ParseHeader(b)
		if h.Magic != recordbatch.Magic {
			return w, fmt.Errorf("record batch at offset %d has magic %d; only v2 batches are walked", h.BaseOffset, h.Magic)
		}
		if h.LastOffsetDelta < 0 || h.NumRecords < 0 {
			return w, fmt.Errorf("record batch at offset %d has lastOffsetDelta %d and %d records", h.BaseOffset, h.LastOffsetDelta, h.NumRecords)
		}
		last := h.BaseOffset + int64(h.LastOffsetDelta)
		w.batches++
		if last >= from {
			w.bytes += size
			if h.Attributes&recordbatch.AttrControl == 0 {
				w.records += int64(h.NumRecords)
			}
		}
		w.next = max(w.next, last+1)
		b = b[size:]
	}
	return w, nil
}

// rawVersions caps Fetch at rawFetchVersion, since the requests name topics.
func rawVersions() *kversion.Versions {
	v := kversion.Stable()
	v.SetMaxKeyVersion(1, rawFetchVersion)
	return v
}

// rawConsumer is one raw consumer: its client (for metadata and offsets), its
// own fetch connections, and its partitions' next fetch offsets.
type rawConsumer struct {
	cl      *kgo.Client
	adm     *kadm.Client
	offsets map[int32]int64
	leaders map[int32]int32
	addrs   map[int32]string // broker id → host:port, from the last metadata

	mu    sync.Mutex
	conns map[int32]*rawConn // by broker id
}

// rawConn is a raw consumer's fetch connection to one broker. Requests are
// encoded into, and responses read into, one buffer reused for every fetch, and
// the record bytes are walked where they landed: like `bench tcp`'s reader, the
// client allocates and copies nothing per fetch beyond the socket read itself.
// (franz-go's Request path reads each response into a new buffer, which on
// this machine cost more CPU than the broker spent serving the fetch.)
type rawConn struct {
	conn net.Conn
	buf  []byte
	corr int32
}

var rawFormatter = kmsg.NewRequestFormatter(kmsg.FormatterClientID("cairn-bench"))

// rawConnFor returns the consumer's connection to broker id, dialling it if needed.
func (rc *rawConsumer) rawConnFor(ctx context.Context, id int32) (*rawConn, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if c := rc.conns[id]; c != nil {
		return c, nil
	}
	addr, ok := rc.addrs[id]
	if !ok {
		return nil, fmt.Errorf("broker %d is not in the metadata", id)
	}
	d := net.Dialer{Timeout: defaultAdminTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if rc.conns == nil {
		rc.conns = map[int32]*rawConn{}
	}
	c := &rawConn{conn: conn}
	rc.conns[id] = c
	return c, nil
}

// dropConn closes and forgets the connection to broker id (after a failed fetch).
func (rc *rawConsumer) dropConn(id int32) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if c := rc.conns[id]; c != nil {
		c.conn.Close()
		delete(rc.conns, id)
	}
}

func (rc *rawConsumer) closeConns() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for id, c := range rc.conns {
		c.conn.Close()
		delete(rc.conns, id)
	}
}

// fetch sends req (at rawFetchVersion) and decodes the answer, whose record
// bytes alias c.buf until the next fetch on c.
func (c *rawConn) fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	req.Version = rawFetchVersion
	c.corr++
	c.buf = rawFormatter.AppendRequest(c.buf[:0], req, c.corr)
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c.conn.SetDeadline(time.Now().Add(rawFetchMaxWait + defaultAdminTimeout))
	if _, err := c.conn.Write(c.buf); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c.conn, size[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(size[:])))
	if n < 5 || n > rawFetchMaxBytes+1<<20 {
		return nil, fmt.Errorf("response of %d bytes to a fetch of at most %d", n, rawFetchMaxBytes)
	}
	if cap(c.buf) < n {
		c.buf = make([]byte, n)
	}
	body := c.buf[:n]
	if _, err := io.ReadFull(c.conn, body); err != nil {
		return nil, err
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != c.corr {
		return nil, fmt.Errorf("response to request %d, want %d", corr, c.corr)
	}
	// Fetch v12 is flexible: its response header ends with tagged fields.
	body = body[4:]
	tags, k := binary.Uvarint(body)
	if k <= 0 || tags != 0 {
		return nil, fmt.Errorf("response header with %d tagged fields (bad varint: %v); none expected", tags, k <= 0)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = rawFetchVersion
	if err := resp.ReadFrom(body[k:]); err != nil {
		return nil, fmt.Errorf("decoding the fetch response: %w", err)
	}
	return resp, nil
}

// newRawConsumers deals the partitions of offsets round-robin to the
// consumers, each starting at its partition's offset there.
func newRawConsumers(cmd *cobra.Command, cf *clientFlags, f *benchConsumeFlags, rf *benchRawFlags, topic string, offsets map[int32]int64) (*benchConsumers, error) {
	c := &benchConsumers{topic: topic, caughtUp: make(chan struct{}), rawPartMax: int32(rf.partMaxBytes)}
	parts := make([]int32, 0, len(offsets))
	for p := range offsets {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	n := min(f.consumers, len(parts))
	for i := range n {
		cl, err := cf.newClient(cmd, kgo.MaxVersions(rawVersions()))
		if err != nil {
			c.close()
			return nil, err
		}
		c.clients = append(c.clients, cl)
		rc := &rawConsumer{cl: cl, adm: kadm.NewClient(cl), offsets: map[int32]int64{}}
		for j := i; j < len(parts); j += n {
			rc.offsets[parts[j]] = offsets[parts[j]]
		}
		c.raw = append(c.raw, rc)
	}
	return c, nil
}

// fetchRaw is one raw consumer's loop: each round sends one FetchRequest to
// the leader of each of its partitions not yet read to their end, all at
// once, and waits for them all.
func (c *benchConsumers) fetchRaw(ctx context.Context, rc *rawConsumer) {
	for ctx.Err() == nil {
		if rc.leaders == nil {
			if err := rc.refreshLeaders(ctx, c.topic); err != nil {
				if ctx.Err() == nil {
					c.errs.add(fmt.Errorf("finding partition leaders: %w", err))
				}
				sleepCtx(ctx, rawRetryBackoff)
				continue
			}
		}
		byLeader := map[int32]map[int32]int64{}
		stale := false
		for p, o := range rc.offsets {
			if t := c.targets[p]; t != nil && t.done.Load() {
				continue
			}
			l := rc.leaders[p]
			if l < 0 {
				stale = true
				continue
			}
			if byLeader[l] == nil {
				byLeader[l] = map[int32]int64{}
			}
			byLeader[l][p] = o
		}
		if len(byLeader) == 0 && !stale {
			return
		}
		results := make([]rawFetchResult, 0, len(byLeader))
		var (
			wg sync.WaitGroup
			mu sync.Mutex
		)
		for leader, from := range byLeader {
			wg.Go(func() {
				r := c.fetchOnce(ctx, rc, leader, from)
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			})
		}
		wg.Wait()
		progressed, failed := false, false
		for _, r := range results {
			maps.Copy(rc.offsets, r.next)
			progressed = progressed || r.progressed
			stale = stale || r.refresh
			failed = failed || r.failed
		}
		if stale {
			rc.leaders = nil
		}
		if !progressed && (stale || failed) {
			sleepCtx(ctx, rawRetryBackoff)
		}
	}
}

// rawFetchResult is what one fetch did to its partitions.
type rawFetchResult struct {
	next       map[int32]int64 // new fetch offsets
	progressed bool            // some partition advanced
	refresh    bool            // the leaders should be looked up again
	failed     bool            // the fetch or a partition in it failed
}

// fetchOnce fetches the partitions of from (partition → fetch offset) from
// leader and counts the complete batches it got.
func (c *benchConsumers) fetchOnce(ctx context.Context, rc *rawConsumer, leader int32, from map[int32]int64) rawFetchResult {
	res := rawFetchResult{next: map[int32]int64{}}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(rawFetchMaxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = rawFetchMaxBytes
	req.SessionEpoch = -1 // no fetch session: every request is a full one
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = c.topic
	for p, o := range from {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p
		rp.FetchOffset = o
		rp.PartitionMaxBytes = c.rawPartMax
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)

	conn, err := rc.rawConnFor(ctx, leader)
	var resp *kmsg.FetchResponse
	if err == nil {
		resp, err = conn.fetch(ctx, req)
	}
	if err != nil {
		rc.dropConn(leader)
		if ctx.Err() == nil {
			c.errs.add(fmt.Errorf("fetch from broker %d: %w", leader, err))
		}
		res.refresh, res.failed = true, true
		return res
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		c.errs.add(fmt.Errorf("fetch from broker %d: %w", leader, err))
		res.refresh, res.failed = true, true
		return res
	}
	now := time.Since(c.base)
	var n, b int64
	for _, t := range resp.Topics {
		if t.Topic != c.topic {
			continue
		}
		for _, rp := range t.Partitions {
			off, asked := from[rp.Partition]
			if !asked {
				continue
			}
			switch err := kerr.ErrorForCode(rp.ErrorCode); {
			case err == nil:
			case errors.Is(err, kerr.OffsetOutOfRange):
				// Retention may have moved the log start past us:
				// go on from the new start if so, else retry (a
				// new leader may not have caught up yet).
				if start, lerr := rc.logStart(ctx, c.topic, rp.Partition); lerr == nil && start > off {
					res.next[rp.Partition] = start
				}
				res.refresh = true
				continue
			case errors.Is(err, kerr.NotLeaderForPartition), errors.Is(err, kerr.LeaderNotAvailable),
				errors.Is(err, kerr.FencedLeaderEpoch), errors.Is(err, kerr.UnknownLeaderEpoch),
				errors.Is(err, kerr.ReplicaNotAvailable):
				res.refresh = true
				continue
			default:
				c.errs.add(fmt.Errorf("partition %d: %w", rp.Partition, err))
				res.failed = true
				continue
			}
			w, werr := walkBatches(rp.RecordBatches, off)
			if werr != nil {
				c.errs.add(fmt.Errorf("partition %d: %w", rp.Partition, werr))
				res.failed = true
			} else if w.batches == 0 && len(rp.RecordBatches) > 0 {
				c.errs.add(fmt.Errorf("partition %d: the batch at offset %d is larger than --partition-max-bytes %d and the broker sent only part of it", rp.Partition, off, c.rawPartMax))
				res.failed = true
			}
			if w.next > off {
				res.progressed = true
				res.next[rp.Partition] = w.next
				if t := c.targets[rp.Partition]; t != nil && w.next >= t.end && !t.done.Swap(true) {
					if c.remaining.Add(-1) == 0 {
						close(c.caughtUp)
					}
				}
			}
			n += w.records
			b += w.bytes
		}
	}
	if b > 0 {
		c.records.Add(n)
		c.bytes.Add(b)
		c.lastNs.Store(int64(now))
	}
	return res
}

func (rc *rawConsumer) refreshLeaders(ctx context.Context, topic string) error {
	ctx, cancel := context.WithTimeout(ctx, defaultAdminTimeout)
	defer cancel()
	md, err := rc.adm.Metadata(ctx, topic)
	if err != nil {
		return err
	}
	addrs := map[int32]string{}
	for _, b := range md.Brokers {
		addrs[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	td, ok := md.Topics[topic]
	if !ok {
		return fmt.Errorf("topic %q not in the metadata", topic)
	}
	if td.Err != nil {
		return td.Err
	}
	leaders := map[int32]int32{}
	for p := range rc.offsets {
		pd, ok := td.Partitions[p]
		if !ok || pd.Err != nil {
			leaders[p] = -1
			continue
		}
		leaders[p] = pd.Leader
	}
	rc.leaders = leaders
	rc.mu.Lock()
	rc.addrs = addrs
	rc.mu.Unlock()
	return nil
}

func (rc *rawConsumer) logStart(ctx context.Context, topic string, p int32) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, defaultAdminTimeout)
	defer cancel()
	lo, err := rc.adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	o, ok := lo.Lookup(topic, p)
	if !ok {
		return 0, fmt.Errorf("partition %d not listed", p)
	}
	if o.Err != nil {
		return 0, o.Err
	}
	return o.Offset, nil
}
