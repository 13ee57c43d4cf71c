// Command chaos runs a randomized fault-injection session against a real Cairn cluster and
// checks the recorded history against the durability contract (issue 5):
//
//	go run ./test/chaos --duration 60s --seed 7 --mode strict --faults kill,pause,partition,power
//	go run ./test/chaos --duration 60s --faults rack --racks r1,r2,r3 --min-insync-racks 2 --link-delay 0.2ms,2ms
//	go run ./test/chaos --duration 3m --brokers 5 --faults kill,pause,partition,move
//	go run ./test/chaos --duration 5m --brokers 5 --min-insync-racks 3 --faults recover,kill,partition
//	go run ./test/chaos --duration 5m --rate 300 --brokers 5 --security sasl_ssl --faults kill,pause,partition,power,move
//	go run ./test/chaos --duration 30m --seed 41 --rate 200 --mode txn --faults kill,pause,partition,power
//	go run ./test/chaos --duration 5m --producers 8 --partitions 8 --faults none
//
// It starts --brokers cairn processes behind link proxies (test/chaos/faults), runs
// idempotent franz-go producers and a consumer that record every operation
// (test/chaos/history), injects faults on a schedule drawn from --seed, then heals
// everything, reads every partition back and checks. It prints the seed and a summary line,
// and exits non-zero on any violation, keeping the history and the broker logs in --out.
//
// The rack fault takes a whole rack (--racks gives each broker's; by default each broker is
// a rack of its own) down at once: killed, paused, cut off from the other racks both ways,
// or powered down. It needs no rule of its own in the checker: it is the same faults on
// several brokers at once, and it is lossy only as a power cut of those brokers is.
//
// The move fault (move.go) moves a partition of the topic to another replica set (an RF
// change now and then), cancels a move under way, or moves a leadership, through kadm and
// the admin HTTP API by turns; moves run on while the other faults hit them, and a summary
// line counts how they ended. It is not lossy: the checker holds it to the mode's rule.
//
// The recover fault (recover.go) kills a majority of a partition's replicas' brokers for
// good, force-recovers the partition from the survivor through the admin API, brings the
// dead back on their old data (they must delete it, and never lead it) and moves the
// partition back to three replicas. It runs alone (no other fault is active during a step)
// and only where no acknowledged write can be lost: strict mode, every broker in a rack of
// its own, min.insync.racks 3 = RF, five brokers or more; the session refuses anything else.
// A summary line counts the recoveries, their may_lose and the failures.
//
// With --security sasl_ssl (security.go) the cluster has SASL_SSL listeners, inter-broker
// mutual TLS, SCRAM users, ACLs, authorization and an admin API behind basic auth, and
// every client of the session connects as a user of its own; any authentication or
// authorization error a client sees fails the session, whatever the checker finds.
//
// Modes:
//   - strict: acks=-1 on a strict topic; any mix of the chosen faults on any number of
//     brokers; no acknowledged write may be lost.
//   - write-caching: acks=-1 on a write-caching topic; power losses of a minority lose
//     nothing, of a majority (marked lossy) only a clean suffix per partition.
//   - acks1: acks=1; leader failover may lose writes, offsets may never be inconsistent.
//   - txn (txn.go): --producers transactional producers (acks=-1, a strict topic) commit
//     or abort (one in four, drawn from the seed) transactions of a few records over
//     several partitions, two read_committed consumers and a read_uncommitted one read
//     everything; strict's rules, and the transaction rules of history/txn.go: a committed
//     transaction is read whole and once, an aborted one never, nothing before its commit
//     was asked, an ambiguous one all or nothing, and the LSO never moves back.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cairn-io/cairn/test/chaos/faults"
	"github.com/cairn-io/cairn/test/chaos/history"
)

const topic = "chaos"

type config struct {
	duration   time.Duration
	seed       uint64
	mode       history.Mode
	faults     map[string]bool
	calm       bool // --faults none: no fault, and any leader change fails the session (elections.go)
	brokers    int
	partitions int
	producers  int
	rate       int
	out        string
	binary     string
	// racks is each broker's rack (broker id i at index i-1); nil: a rack of its own each.
	racks          []string
	minInsyncRacks int // the topic's min.insync.racks; 0 leaves it unset
	// linkIn and linkCross delay each inter-broker link inside a rack and across racks.
	linkIn, linkCross time.Duration
	// rackReads switches on follower fetching (KIP-392) and adds one consumer per rack that
	// reads from its own rack's replica, so the read checks cover followers' answers too.
	rackReads bool
	// moveTimeout bounds the window of each move fault (move.go).
	moveTimeout time.Duration
	// securityMode is --security: "" (none) or sasl_ssl; sec holds its material once the
	// session has made it (nil without --security: every client is plaintext).
	securityMode string
	sec          *security
}

// faultKinds are the faults --faults may name, in the order the schedule draws from.
var faultKinds = []string{"kill", "pause", "partition", "power", "rack", "move", "recover"}

// rackSubFaults are what a rack fault does to every broker of the rack.
var rackSubFaults = []string{"kill", "pause", "partition", "power"}

func main() {
	var (
		cfg       config
		mode      string
		faultList string
		rackList  string
		linkDelay string
	)
	flag.DurationVar(&cfg.duration, "duration", time.Minute, "how long faults are injected (the session also sets up, heals and checks)")
	flag.Uint64Var(&cfg.seed, "seed", 0, "seed of the fault schedule (0: from the clock; printed)")
	flag.StringVar(&mode, "mode", "strict", "strict, write-caching, acks1 or txn (transactional producers and read_committed consumers; see txn.go)")
	flag.StringVar(&faultList, "faults", "kill,pause,partition,power", "comma-separated faults, or none (a calm session: no fault, and any leader change during the load fails it): kill, pause, partition, power, rack (a whole rack at once), move (partition moves, cancels and leadership moves), recover (a partition's majority lost for good and force-recovered; needs --mode strict, --brokers 5+, --min-insync-racks 3, a rack per broker, no move)")
	flag.IntVar(&cfg.brokers, "brokers", 3, "number of brokers")
	flag.IntVar(&cfg.partitions, "partitions", 3, "partitions of the topic (replication factor = min(3, brokers))")
	flag.IntVar(&cfg.producers, "producers", 3, "idempotent producers")
	flag.IntVar(&cfg.rate, "rate", 0, "records per second per producer (0: as fast as the cluster takes them); long sessions need a rate, since the checker holds the history in memory")
	flag.StringVar(&cfg.out, "out", "", "folder for the history and logs (default: a new temporary folder; removed after a clean run)")
	flag.StringVar(&cfg.binary, "binary", "", "cairn binary to run (default: build ./cmd/cairn)")
	flag.StringVar(&rackList, "racks", "", "comma-separated rack of each broker, broker 1 first (default: a rack of its own each); sets --brokers when that is not given")
	flag.IntVar(&cfg.minInsyncRacks, "min-insync-racks", 0, "min.insync.racks of the topic (0: not set, the cluster default applies)")
	flag.StringVar(&linkDelay, "link-delay", "", "delay of each inter-broker link inside a rack and across racks, as in,cross (e.g. 0.2ms,2ms; default none)")
	flag.BoolVar(&cfg.rackReads, "rack-reads", false, "switch on follower fetching (replica.selector.class=RackAwareReplicaSelector) and add a consumer in each rack that reads from its rack's replica")
	flag.StringVar(&cfg.securityMode, "security", "", "sasl_ssl: brokers serve SASL_SSL (SCRAM-SHA-512) with the inter-broker transport under mutual TLS and authorization on, and every client of the session connects as a SCRAM user allowed by ACLs; any authentication or authorization error a client sees fails the session (default: none, plaintext)")
	flag.DurationVar(&cfg.moveTimeout, "move-timeout", 90*time.Second, "how long a move fault's window may stay open before the move counts as timed out")
	flag.Parse()
	var err error
	if cfg.mode, err = history.ParseMode(mode); err != nil {
		fail(err)
	}
	cfg.faults = map[string]bool{}
	for _, f := range strings.Split(faultList, ",") {
		switch f = strings.TrimSpace(f); {
		case slices.Contains(faultKinds, f):
			cfg.faults[f] = true
		case f == "":
		case f == "none" && !cfg.calm:
			cfg.calm = true
		default:
			fail(fmt.Errorf("unknown fault %q (want one of %s)", f, strings.Join(faultKinds, ", ")))
		}
	}
	brokersSet := false
	flag.Visit(func(f *flag.Flag) { brokersSet = brokersSet || f.Name == "brokers" })
	if cfg.racks, err = parseRacks(rackList, cfg.brokers, brokersSet); err != nil {
		fail(err)
	}
	if cfg.racks != nil {
		cfg.brokers = len(cfg.racks)
	}
	if cfg.mode == history.Txn && cfg.rackReads {
		fail(errors.New("--rack-reads is not supported with --mode txn (its consumers read leaders)"))
	}
	if cfg.rackReads && cfg.racks == nil {
		cfg.racks = faults.DefaultRacks(cfg.brokers)
	}
	if cfg.linkIn, cfg.linkCross, err = parseLinkDelay(linkDelay); err != nil {
		fail(err)
	}
	if cfg.minInsyncRacks < 0 {
		fail(errors.New("--min-insync-racks must not be negative"))
	}
	if len(cfg.faults) == 0 && !cfg.calm {
		fail(errors.New("--faults names no fault (none: a calm session, see elections.go)"))
	}
	if len(cfg.faults) > 0 && cfg.calm {
		fail(errors.New("--faults none does not go with other faults"))
	}
	if cfg.brokers < 1 || cfg.partitions < 1 || cfg.producers < 1 || cfg.duration <= 0 {
		fail(errors.New("--brokers, --partitions, --producers and --duration must be positive"))
	}
	if cfg.moveTimeout <= 0 {
		fail(errors.New("--move-timeout must be positive"))
	}
	if cfg.rate < 0 {
		fail(errors.New("--rate must not be negative"))
	}
	switch cfg.securityMode {
	case "", "none":
		cfg.securityMode = ""
	case "sasl_ssl":
	default:
		fail(fmt.Errorf("unknown --security %q (want sasl_ssl, or none)", cfg.securityMode))
	}
	if err := recoverConfigError(cfg); err != nil {
		fail(err)
	}
	if cfg.seed == 0 {
		cfg.seed = uint64(time.Now().UnixNano())
	}
	keep := cfg.out != ""
	if cfg.out == "" {
		if cfg.out, err = os.MkdirTemp("", "cairn-chaos-"); err != nil {
			fail(err)
		}
	}
	fmt.Printf("chaos: seed %d, mode %s, faults %s, %d brokers, duration %v, rate %d/s per producer (0: unthrottled), output %s\n",
		cfg.seed, cfg.mode, faultList, cfg.brokers, cfg.duration, cfg.rate, cfg.out)
	if cfg.securityMode != "" {
		fmt.Printf("chaos: security %s: clients on SASL_SSL with SCRAM-SHA-512 as users %s, %s and %s; inter-broker mutual TLS; authorization on\n",
			cfg.securityMode, adminUser, writerUser, readerUser)
	}
	if cfg.racks != nil || cfg.minInsyncRacks > 0 || linkDelay != "" {
		fmt.Printf("chaos: racks %v, min.insync.racks %d (0: not set), link delay %v in a rack, %v across, rack reads %v\n",
			cfg.racks, cfg.minInsyncRacks, cfg.linkIn, cfg.linkCross, cfg.rackReads)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, authErrs, err := run(ctx, cfg)
	if res != nil {
		fmt.Println("chaos:", res.Summary.String())
		for _, v := range res.Violations() {
			fmt.Println("  violation:", v)
		}
	}
	if authErrs != nil {
		fmt.Printf("chaos: security: %d authentication or authorization errors seen by clients\n", authErrs.count)
		for _, e := range authErrs.first {
			fmt.Println("  auth error:", e)
		}
	}
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "chaos: %v (seed %d; history and logs kept in %s)\n", err, cfg.seed, cfg.out)
		os.Exit(2)
	case !res.Valid():
		fmt.Fprintf(os.Stderr, "chaos: the history violates the %s contract (seed %d; history and logs kept in %s)\n", cfg.mode, cfg.seed, cfg.out)
		os.Exit(1)
	case authErrs != nil && authErrs.count > 0:
		fmt.Fprintf(os.Stderr, "chaos: clients saw %d authentication or authorization errors, which no fault may cause (seed %d; history and logs kept in %s)\n", authErrs.count, cfg.seed, cfg.out)
		os.Exit(1)
	}
	if !keep {
		os.RemoveAll(cfg.out)
	}
	fmt.Println("chaos: ok")
}

// configsString shows topic configs as name=value, sorted.
func configsString(configs map[string]*string) string {
	var kv []string
	for k, v := range configs {
		kv = append(kv, k+"="+*v)
	}
	slices.Sort(kv)
	return "{" + strings.Join(kv, " ") + "}"
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "chaos:", err)
	os.Exit(2)
}

// authReport is what a secured session's clients saw of authentication and authorization
// errors (authWatch).
type authReport struct {
	count int
	first []string
}

// run is one session: start, load, faults, heal, final read, check. With --security it
// also reports the authentication and authorization errors the clients saw.
func run(ctx context.Context, cfg config) (*history.Result, *authReport, error) {
	if cfg.securityMode != "" {
		var err error
		if cfg.sec, err = newSecurity(tlsDir(cfg.out)); err != nil {
			return nil, nil, fmt.Errorf("making the certificates: %w", err)
		}
		if cfg.mode == history.Txn {
			cfg.sec.txnIDs = txnIDPrefix
		}
	}
	res, err := runSession(ctx, cfg)
	if cfg.sec == nil {
		return res, nil, err
	}
	n, first := cfg.sec.watch.result()
	return res, &authReport{count: n, first: first}, err
}

// runSession is run's session itself.
func runSession(ctx context.Context, cfg config) (*history.Result, error) {
	// A rack fault may be a power cut of the rack, so it needs the power-loss flag too.
	power := cfg.faults["power"] || cfg.faults["rack"]
	opts := faults.Options{N: cfg.brokers, Binary: cfg.binary, LogDir: filepath.Join(cfg.out, "logs"),
		SimulatePowerLoss: power, LogLevel: "info", Racks: cfg.racks}
	if cfg.linkIn > 0 || cfg.linkCross > 0 {
		racks := cfg.racks
		if racks == nil { // a rack of its own each: every link crosses racks
			racks = faults.DefaultRacks(cfg.brokers)
		}
		opts.LinkDelay = faults.RackDelays(racks, cfg.linkIn, cfg.linkCross)
	}
	if cfg.sec != nil {
		cfg.sec.apply(&opts)
	}
	cl, err := faults.Start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("starting the cluster: %w", err)
	}
	defer cl.Close()
	if cfg.sec != nil {
		if err := cfg.sec.createUsers(ctx, cl); err != nil {
			return nil, err
		}
	}

	rf := int16(min(3, cfg.brokers))
	adm, err := cfg.sec.client(cl, adminUser)
	if err != nil {
		return nil, err
	}
	configs := map[string]*string{}
	if cfg.mode == history.WriteCaching {
		configs["write.caching"] = kadm.StringPtr("true")
	}
	if cfg.minInsyncRacks > 0 {
		configs["min.insync.racks"] = kadm.StringPtr(strconv.Itoa(cfg.minInsyncRacks))
	}
	if resp, err := kadm.NewClient(adm).CreateTopic(ctx, int32(cfg.partitions), rf, configs, topic); err != nil || resp.Err != nil {
		adm.Close()
		if err == nil {
			err = resp.Err
		}
		return nil, fmt.Errorf("creating the topic with %v: %w (%s)", configsString(configs), err, resp.ErrMessage)
	}
	if cfg.rackReads {
		if err := setClusterConfig(ctx, kadm.NewClient(adm), replicaSelector, rackAwareSelector); err != nil {
			adm.Close()
			return nil, err
		}
	}
	adm.Close()
	if cfg.sec != nil {
		if err := cfg.sec.authorize(ctx, cl); err != nil {
			return nil, err
		}
	}

	checkOpts := history.Options{Mode: cfg.mode, AllowSuffixLoss: cfg.mode == history.WriteCaching && power,
		ReadCommitted: txnReadCommitted()}
	if err := checkSessionContract(ctx, cl, cfg, checkOpts); err != nil {
		return nil, err
	}
	var leadersBefore map[int32]leaderState
	if cfg.calm {
		if leadersBefore, err = settledLeaders(ctx, cl, cfg.sec, cfg.partitions, time.Minute); err != nil {
			return nil, err
		}
	}

	rec, err := history.CreateFile(filepath.Join(cfg.out, "history.jsonl"))
	if err != nil {
		return nil, err
	}
	var mv *mover
	if cfg.faults["move"] {
		if mv, err = newMover(cl, rec, cfg); err != nil {
			rec.Close()
			return nil, err
		}
		defer mv.Close()
	}
	var rv *recoverer
	if cfg.faults["recover"] {
		if rv, err = newRecoverer(cl, rec, cfg); err != nil {
			rec.Close()
			return nil, err
		}
		defer rv.Close()
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var tw *txnWorkload // --mode txn: transactional producers and their consumers instead
	consumers := map[string][]kgo.Opt{}
	if cfg.mode == history.Txn {
		tw = startTxn(loadCtx, cfg, rec, cfg.sec, func(user string, opts ...kgo.Opt) (*kgo.Client, error) {
			return cfg.sec.client(cl, user, opts...)
		})
	} else {
		consumers["c0"] = nil
		for i := range cfg.producers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				produceLoop(loadCtx, cl, cfg.sec, rec, cfg.mode, fmt.Sprintf("p%d", i), cfg.rate)
			}()
		}
	}
	if cfg.rackReads {
		for _, rack := range cl.Racks() {
			consumers["c-"+rack] = rackConsumerOpts(rack)
		}
	}
	for process, opts := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			consumeLoop(loadCtx, cl, cfg.sec, rec, process, cfg.partitions, opts...)
		}()
	}

	var console consoleStats
	wg.Add(1)
	go func() {
		defer wg.Done()
		pollConsole(loadCtx, cl, cfg.sec.adminHTTP(10*time.Second), cfg.seed, &console)
	}()

	schedErr := schedule(ctx, cl, rec, cfg, mv, rv)
	// Heal everything, let the load run on a healthy cluster for a moment, then stop it.
	cl.HealAll()
	var down []int
	for id := 1; id <= cfg.brokers; id++ {
		if !cl.Broker(id).Running() {
			down = append(down, id)
		} else {
			_ = cl.Resume(id)
		}
	}
	if err := cl.StartAll(ctx, down...); err != nil && schedErr == nil {
		schedErr = fmt.Errorf("restarting brokers %v after the faults: %w", down, err)
	}
	if schedErr == nil {
		schedErr = cl.WaitFormed(ctx)
	}
	if mv != nil && schedErr == nil {
		// Moves still under way end on a healthy cluster, with the load running, before
		// the final read finds each partition where they left it.
		stats := mv.finish(ctx, cfg.moveTimeout+30*time.Second)
		fmt.Println("chaos:", stats.String())
		for _, name := range stats.timedOutNames {
			fmt.Println("  move timed out:", name)
		}
		if len(stats.StillMoving) > 0 {
			fmt.Printf("  warning: partitions %v still list a move %v after the faults healed\n", stats.StillMoving, cfg.moveTimeout+30*time.Second)
		}
	}
	if rv != nil {
		fmt.Println("chaos:", rv.stats.String())
		for _, f := range rv.stats.failures {
			fmt.Println("  recover failed:", f)
		}
	}
	sleepCtx(ctx, 3*time.Second)
	if tw != nil && schedErr == nil {
		// The consumers read on until they have caught up with every transaction's end.
		schedErr = tw.finish(ctx)
	}
	stopLoad()
	loadDone := make(chan struct{})
	go func() { wg.Wait(); tw.wait(); close(loadDone) }()
	if schedErr != nil {
		// A failed session may have left a partition that takes no acks=all write (a
		// recovery cut short leaves it on one replica, below min.insync.racks), and a
		// producer blocked on its full buffer would hold the exit for ever.
		select {
		case <-loadDone:
		case <-time.After(90 * time.Second):
			return nil, fmt.Errorf("%w (the load did not stop within 90 s; the history is cut short)", schedErr)
		}
	}
	<-loadDone
	var electionErr error
	if cfg.calm && schedErr == nil {
		after, err := leaderStates(ctx, cl, cfg.sec, cfg.partitions)
		if err != nil {
			schedErr = fmt.Errorf("reading the leaders after the load: %w", err)
		} else {
			electionErr = electionReport(leaderChanges(leadersBefore, after), cfg.partitions)
		}
	}
	if err := rec.Close(); err != nil && schedErr == nil {
		schedErr = err
	}
	if schedErr != nil {
		return nil, schedErr
	}
	final, err := finalRead(ctx, cl, cfg.sec, cfg.partitions)
	if err != nil {
		return nil, fmt.Errorf("final read: %w", err)
	}
	followerReaders := map[string]bool{}
	for process, opts := range consumers {
		followerReaders[process] = opts != nil
	}
	checkOpts.FollowerReaders = followerReaders
	res, err := history.CheckFile(filepath.Join(cfg.out, "history.jsonl"), final, checkOpts)
	if err == nil && tw != nil {
		err = txnSessionError(res)
	}
	fmt.Println("chaos:", console.String())
	if err == nil {
		err = consoleError(cl, &console)
	}
	if err == nil {
		err = electionErr
	}
	if err == nil && rv != nil && rv.stats.Failures > 0 {
		err = fmt.Errorf("%d recover steps failed", rv.stats.Failures)
	}
	return res, err
}

// produceLoop sends unique values from one goroutine (so the invocation order is the send
// order the checker expects) until ctx ends, then waits for every outcome.
func produceLoop(ctx context.Context, cl *faults.Cluster, sec *security, rec *history.Recorder, mode history.Mode, process string, rate int) {
	opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.RecordDeliveryTimeout(45 * time.Second),
		kgo.MaxBufferedRecords(64), kgo.ProducerLinger(2 * time.Millisecond)}
	if mode == history.Acks1 {
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	} else {
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	c, err := sec.client(cl, writerUser, opts...)
	if err != nil {
		return
	}
	defer c.Close()
	start := time.Now()
	for i := 0; ctx.Err() == nil; i++ {
		if rate > 0 {
			// Paced against the start, so a stall (a fault) is followed by a catch-up burst
			// rather than a permanently lower rate.
			sleepCtx(ctx, time.Until(start.Add(time.Duration(i)*time.Second/time.Duration(rate))))
			if ctx.Err() != nil {
				break
			}
		}
		r := &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%s-%07d", process, i))}
		id := history.InvokeProduce(rec, process, r)
		c.Produce(context.Background(), r, history.ProducePromise(rec, id))
	}
	flushCtx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_ = c.Flush(flushCtx)
}

// consumeLoop reads every partition from the start and records each poll as process.
func consumeLoop(ctx context.Context, cl *faults.Cluster, sec *security, rec *history.Recorder, process string, partitions int, extra ...kgo.Opt) {
	from := map[int32]kgo.Offset{}
	for p := range partitions {
		from[int32(p)] = kgo.NewOffset().AtStart()
	}
	opts := append([]kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}), kgo.FetchMaxWait(500 * time.Millisecond)}, extra...)
	c, err := sec.client(cl, readerUser, opts...)
	if err != nil {
		return
	}
	defer c.Close()
	for ctx.Err() == nil {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		sec.checkFetches(readerUser, process, fs)
		history.RecordFetches(rec, process, fs)
	}
}

// schedule injects faults drawn from the seed until the duration passes; mv injects the
// move faults (nil when --faults has no move) and rv the recover faults (nil without
// recover). Each fault is undone before the next is drawn, moves aside.
func schedule(ctx context.Context, cl *faults.Cluster, rec *history.Recorder, cfg config, mv *mover, rv *recoverer) error {
	rng := rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15))
	var kinds []string
	for _, k := range faultKinds {
		if cfg.faults[k] {
			kinds = append(kinds, k)
		}
	}
	n := cfg.brokers
	minority := (n - 1) / 2
	end := time.Now().Add(cfg.duration)
	if len(kinds) == 0 { // a calm session: the load alone
		sleepCtx(ctx, cfg.duration)
		return ctx.Err()
	}
	for time.Now().Before(end) && ctx.Err() == nil {
		sleepCtx(ctx, time.Duration(1000+rng.IntN(2000))*time.Millisecond)
		kind := kinds[rng.IntN(len(kinds))]
		if kind == "move" {
			if err := mv.fault(ctx); err != nil {
				return fmt.Errorf("move fault: %w", err)
			}
			continue
		}
		if kind == "recover" {
			if err := rv.fault(ctx); err != nil {
				return fmt.Errorf("recover fault: %w", err)
			}
			continue
		}
		if kind == "rack" {
			if err := rackFault(ctx, cl, rec, cfg, rng); err != nil {
				return err
			}
			continue
		}
		// How many brokers the fault hits: in strict mode any number; otherwise a
		// minority, except that write-caching sessions also cut power to a majority.
		count := 1
		switch {
		case cfg.mode == history.Strict || cfg.mode == history.Txn: // a strict topic both
			count = 1 + rng.IntN(n)
		case cfg.mode == history.WriteCaching && kind == "power":
			count = 1 + rng.IntN(n)
		default:
			count = max(1, min(minority, 1+rng.IntN(n)))
		}
		ids := rng.Perm(n)[:count]
		for i := range ids {
			ids[i]++
		}
		slices.Sort(ids)
		lossy := kind == "power" && cfg.mode == history.WriteCaching && count > minority
		name := fmt.Sprintf("%s %v", kind, ids)
		fmt.Printf("chaos: %s: %s\n", time.Now().Format("15:04:05.000"), name)
		isolate := func() error {
			var errs []error
			for _, id := range ids {
				errs = append(errs, cl.Isolate(id))
			}
			return errors.Join(errs...)
		}
		if err := inject(ctx, cl, rec, rng, kind, name, ids, lossy, isolate); err != nil {
			return fmt.Errorf("fault %s: %w", name, err)
		}
	}
	return nil
}

// inject applies fault kind (kill, pause, partition or power) to brokers ids, holds it for
// a time drawn from rng and undoes it, recording the fault marker as name (lossy: writes
// acknowledged before it may be lost) and, for a lossy kill or power cut, a restart marker
// once the brokers are up again (markRestart). Partition cuts with isolate and heals
// everything.
func inject(ctx context.Context, cl *faults.Cluster, rec *history.Recorder, rng *rand.Rand, kind, name string, ids []int, lossy bool, isolate func() error) error {
	if kind != "power" && kind != "kill" {
		rec.Fault(name, false)
	}
	var err error
	switch kind {
	case "kill":
		// Under --simulate-power-loss a kill -9 is a power cut, so its marker, like a power
		// cut's, goes in once they are all down.
		for _, id := range ids {
			if err = cl.Kill9(id); err != nil {
				break
			}
		}
		rec.Fault(name, lossy)
		sleepCtx(ctx, time.Duration(500+rng.IntN(2500))*time.Millisecond)
		began := time.Now()
		if serr := cl.StartAll(ctx, ids...); serr != nil && err == nil {
			err = serr
		}
		markRestart(cl, rec, name, lossy, ids, began)
	case "pause":
		for _, id := range ids {
			if err = cl.Pause(id); err != nil {
				break
			}
		}
		sleepCtx(ctx, time.Duration(500+rng.IntN(2500))*time.Millisecond)
		for _, id := range ids {
			if rerr := cl.Resume(id); rerr != nil && err == nil {
				err = rerr
			}
		}
	case "partition":
		err = isolate()
		sleepCtx(ctx, time.Duration(1000+rng.IntN(3000))*time.Millisecond)
		cl.HealAll()
	case "power":
		// A kill -9 of a broker running with --simulate-power-loss is its power cut.
		// The marker goes in once they are all down: a write acknowledged before it
		// may be lost (when the fault is lossy), none acknowledged after it can be.
		for _, id := range ids {
			if err = cl.Kill9(id); err != nil {
				break
			}
		}
		rec.Fault(name, lossy)
		if err == nil {
			sleepCtx(ctx, time.Duration(200+rng.IntN(1000))*time.Millisecond)
			began := time.Now()
			err = cl.StartAll(ctx, ids...)
			markRestart(cl, rec, name, lossy, ids, began)
		}
	default:
		err = fmt.Errorf("unknown fault %q", kind)
	}
	return err
}

// finalRead reads every partition from its log start to its end, through a healthy cluster.
func finalRead(ctx context.Context, cl *faults.Cluster, sec *security, partitions int) (history.Final, error) {
	// Reading back a long session takes minutes; the cap only stops a read that hangs.
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	adm, err := sec.client(cl, readerUser)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	k := kadm.NewClient(adm)
	var starts, ends kadm.ListedOffsets
	for {
		starts, err = k.ListStartOffsets(ctx, topic)
		sec.check(readerUser, "list start offsets", errors.Join(err, starts.Error()))
		if err == nil && starts.Error() == nil {
			ends, err = k.ListEndOffsets(ctx, topic)
			sec.check(readerUser, "list end offsets", errors.Join(err, ends.Error()))
			if err == nil && ends.Error() == nil {
				break
			}
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("listing offsets: %v", err)
		}
		sleepCtx(ctx, 500*time.Millisecond)
	}
	final := history.Final{}
	for p := range partitions {
		s, _ := starts.Lookup(topic, int32(p))
		e, _ := ends.Lookup(topic, int32(p))
		recs, err := readRange(ctx, cl, sec, int32(p), s.Offset, e.Offset)
		if err != nil {
			return nil, err
		}
		final[history.TP{Topic: topic, Partition: int32(p)}] = history.FinalPartition{LogStart: s.Offset, Records: recs}
	}
	return final, nil
}

// readRange reads [from, to) of partition p, keeping only what the checker needs of each
// record (a kgo.Record costs several times its value).
func readRange(ctx context.Context, cl *faults.Cluster, sec *security, p int32, from, to int64) ([]history.Record, error) {
	if from >= to {
		return nil, nil
	}
	// Control records (transaction markers) are kept only to see the read reach the end:
	// a transaction's last offset is its marker, which no producer wrote.
	c, err := sec.client(cl, readerUser, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(from)}}),
		kgo.FetchMaxWait(500*time.Millisecond), kgo.KeepControlRecords())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var out []history.Record
	last := int64(-1)
	for {
		fs := c.PollFetches(ctx)
		sec.checkFetches(readerUser, "final read", fs)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("partition %d: read %d records up to offset %d of %d", p, len(out), last, to)
		}
		for _, r := range fs.Records() {
			last = max(last, r.Offset)
			if r.Offset < to && !r.Attrs.IsControl() {
				out = append(out, history.RecordOf(r))
			}
		}
		if last >= to-1 {
			return out, nil
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
