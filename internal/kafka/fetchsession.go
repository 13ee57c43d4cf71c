package kafka

// Fetch sessions (KIP-227): a consumer that fetches many partitions names them once, in a
// full fetch that opens a session, and then sends only what changed (an offset moved, a
// partition added or forgotten); the broker answers only the partitions that have
// something to say. The rules are Kafka's (FetchSession.scala):
//
//   - (id 0, epoch -1) is a plain full fetch, no session; (id, -1) closes the session id
//     first. (any id, 0) is a full fetch that opens a session (closing id's first); the
//     answer carries the new id, or 0 when the cache has no room (the client then
//     fetches without a session). Any other epoch is an incremental fetch of session id,
//     which must be the session's next epoch: else INVALID_FETCH_SESSION_EPOCH, and an
//     unknown id is FETCH_SESSION_ID_NOT_FOUND, both top-level with no partitions.
//   - An incremental fetch updates the partitions it names (offset, max bytes, epochs),
//     adds those the session lacks, removes its forgotten topics' partitions, and reads
//     every partition of the session. A session left empty is closed and the answer is
//     sessionless (id 0).
//   - Its answer holds a partition only if it has records, an error, a preferred read
//     replica or a diverging epoch, or its high watermark or log start moved since the
//     session last answered it; an error forgets the high watermark, so the partition is
//     answered again once it clears. Partitions that returned records move to the end of
//     the session, so that a size limit does not starve the later ones.
//   - The epoch advances when the request is admitted, so a duplicate of it is refused.
//   - Not from Kafka: an incremental fetch reads only the partitions that may have
//     something to say (fetchContext.toRead): named by the request, moved since last read
//     (Partition.Version), last answered with an error or with records left unread, and
//     every one at least once a second. The answer is the one reading them all would give,
//     but for changes no boundary shows (a replica deleted or replaced), answered within
//     a second, at a fraction of the cost for consumers of many quiet partitions.
//
// Deviation: a session belongs to the principal that opened it; another principal naming
// its id gets FETCH_SESSION_ID_NOT_FOUND (Kafka checks only the id, and authorises every
// partition each time, as this broker also does).
//
// Memory: at most maxSlots sessions (max.incremental.fetch.session.cache.slots, Kafka's
// default 1000; 0 serves no sessions) and maxSessionPartitions partitions in all. A new
// session takes the least recently used one's place if that one has been idle for
// sessionEvictAfter, else the smallest one's if the new one is larger; else it is not
// opened, as Kafka does.

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/security"
)

const (
	// sessionEvictAfter is how long a session must be idle before any new one may take its
	// slot (Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS).
	sessionEvictAfter = 2 * time.Minute
	// maxSessionPartitions bounds the partitions all sessions cache (about 100 bytes each).
	maxSessionPartitions = 500_000
	// DefaultFetchSessionSlots is Kafka's max.incremental.fetch.session.cache.slots.
	DefaultFetchSessionSlots = 1000
)

// Session epochs, as Kafka's FetchMetadata names them.
const (
	finalEpoch   int32 = -1
	initialEpoch int32 = 0
)

type topicPartition struct {
	topic     string
	partition int32
}

// sessionPartition is what a session remembers of one partition: the request's fields,
// and what it last answered.
type sessionPartition struct {
	tp                 topicPartition
	fetchOffset        int64
	maxBytes           int32
	currentLeaderEpoch int32
	lastFetchedEpoch   int32
	// highWatermark and logStart are as last answered; -1 forces an answer.
	highWatermark, logStart int64
	// part and version are the replica as last read and its Version then: an incremental
	// fetch reads the partition again only once it has moved (see fetchContext.toRead).
	part    versioned
	version uint64
}

type fetchSession struct {
	id        int32
	epoch     int32 // the epoch of the next incremental fetch
	principal security.Principal
	parts     []*sessionPartition // in fetch order
	index     map[topicPartition]*sessionPartition
	lastUsed  time.Time
	// lastFull is when every partition was last read: at least every fullReadEvery, so that
	// what moves no boundary (a replica deleted or replaced, a leadership learnt late) is
	// answered within that time.
	lastFull time.Time
}

// fetchPartition is one partition of a request, or of a session's fetch.
type fetchPartition struct {
	tp                 topicPartition
	fetchOffset        int64
	maxBytes           int32
	currentLeaderEpoch int32
	lastFetchedEpoch   int32
}

// fetchAnswer is what a read of one partition found, for the session's filter.
type fetchAnswer struct {
	records       bool
	errored       bool
	redirected    bool // a preferred read replica or a diverging epoch
	highWatermark int64
	logStart      int64
}

// fetchSessions is the broker's session cache.
type fetchSessions struct {
	mu         sync.Mutex
	maxSlots   int
	maxParts   int
	partitions int
	byID       map[int32]*fetchSession
	now        func() time.Time
	newID      func() int32
	evictions  uint64
}

func newFetchSessions(slots int) *fetchSessions {
	return &fetchSessions{maxSlots: slots, maxParts: maxSessionPartitions, byID: map[int32]*fetchSession{},
		now: time.Now, newID: func() int32 { return rand.Int32N(1<<31-1) + 1 }}
}

// fetchContext is how one request uses the cache.
type fetchContext struct {
	errCode int16 // top-level: FETCH_SESSION_ID_NOT_FOUND or INVALID_FETCH_SESSION_EPOCH
	// open: a full fetch that opens a session once it is answered.
	open bool
	// session is set for an incremental fetch.
	session *fetchSession
	// parts are what to read: the request's (full) or the session's (incremental).
	parts []fetchPartition
	// last are, for an incremental fetch, what the session knew of each part at admission
	// (copied, so that the long poll reads them without the cache's lock).
	last []answeredBefore
	// full: read every part (the session's lastFull is old); named: the request named the
	// part, or added it.
	full  bool
	named []bool
	// reading are the parts read so far, with the version each had when first read, and
	// readIdx the parts of the latest read in order (toRead).
	reading  map[int]uint64
	readIdx  []int
	lookedUp []versioned
}

type answeredBefore struct {
	highWatermark, logStart int64
	part                    versioned
	version                 uint64
}

// versioned is a replica as a session sees it: *partition.Partition, whose Version moves
// with its boundaries.
type versioned interface{ Version() uint64 }

// fullReadEvery bounds how long an incremental fetch may skip a partition that did not move.
const fullReadEvery = time.Second

// begin admits a request: id and epoch as sent, its partitions, and the forgotten ones.
func (c *fetchSessions) begin(p security.Principal, id, epoch int32, parts []fetchPartition, forgotten []topicPartition) fetchContext {
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch == finalEpoch || epoch == initialEpoch {
		if id != 0 {
			if s := c.byID[id]; s != nil && s.principal == p {
				c.removeLocked(s)
			}
		}
		return fetchContext{open: epoch == initialEpoch && c.maxSlots > 0, parts: parts}
	}
	s := c.byID[id]
	if s == nil || s.principal != p {
		return fetchContext{errCode: kerr.FetchSessionIDNotFound.Code}
	}
	if epoch != s.epoch {
		return fetchContext{errCode: kerr.InvalidFetchSessionEpoch.Code}
	}
	s.epoch = nextEpoch(s.epoch)
	s.lastUsed = c.now()
	named := map[topicPartition]bool{}
	for _, fp := range parts {
		named[fp.tp] = true
		sp := s.index[fp.tp]
		if sp == nil {
			sp = &sessionPartition{tp: fp.tp, highWatermark: -1, logStart: -1}
			s.index[fp.tp] = sp
			s.parts = append(s.parts, sp)
			c.partitions++
		}
		sp.fetchOffset, sp.maxBytes, sp.currentLeaderEpoch, sp.lastFetchedEpoch = fp.fetchOffset, fp.maxBytes, fp.currentLeaderEpoch, fp.lastFetchedEpoch
	}
	if len(forgotten) > 0 {
		kept := s.parts[:0]
		for _, sp := range s.parts {
			if containsTP(forgotten, sp.tp) {
				delete(s.index, sp.tp)
				c.partitions--
				continue
			}
			kept = append(kept, sp)
		}
		clear(s.parts[len(kept):])
		s.parts = kept
	}
	if len(s.parts) == 0 {
		c.removeLocked(s)
		return fetchContext{}
	}
	ctx := fetchContext{session: s, parts: make([]fetchPartition, len(s.parts)), last: make([]answeredBefore, len(s.parts)),
		named: make([]bool, len(s.parts)), full: c.now().Sub(s.lastFull) >= fullReadEvery}
	for i, sp := range s.parts {
		ctx.parts[i] = fetchPartition{tp: sp.tp, fetchOffset: sp.fetchOffset, maxBytes: sp.maxBytes,
			currentLeaderEpoch: sp.currentLeaderEpoch, lastFetchedEpoch: sp.lastFetchedEpoch}
		ctx.last[i] = answeredBefore{highWatermark: sp.highWatermark, logStart: sp.logStart, part: sp.part, version: sp.version}
		ctx.named[i] = named[sp.tp]
	}
	return ctx
}

func containsTP(tps []topicPartition, tp topicPartition) bool {
	for _, t := range tps {
		if t == tp {
			return true
		}
	}
	return false
}

func nextEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// toRead chooses the parts of an incremental fetch to read now, in order, and returns them
// with their indexes into ctx.parts (readIdx): a part named by the request, one whose last
// answer was an error or left records unread (its fetch offset below the high watermark
// answered), one whose replica is not known or has moved (Version) since it was last
// read, every part when a full read is due, and every part already read during this
// request's long poll (its answer must not drop out). lookup finds a replica.
func (ctx *fetchContext) toRead(lookup func(topicPartition) versioned) []fetchPartition {
	if ctx.reading == nil {
		ctx.reading = map[int]uint64{}
		ctx.lookedUp = make([]versioned, len(ctx.parts))
	}
	ctx.readIdx = ctx.readIdx[:0]
	out := make([]fetchPartition, 0, len(ctx.parts))
	for i, fp := range ctx.parts {
		if _, ok := ctx.reading[i]; !ok {
			last := ctx.last[i]
			part := last.part
			if part == nil || ctx.full {
				if ctx.lookedUp[i] == nil {
					ctx.lookedUp[i] = lookup(fp.tp)
				}
				part = ctx.lookedUp[i]
			}
			var v uint64
			if part != nil {
				v = part.Version()
			}
			if !ctx.full && !ctx.named[i] && part != nil && part == last.part && v == last.version &&
				last.highWatermark >= 0 && fp.fetchOffset >= last.highWatermark {
				continue // nothing moved: nothing to say
			}
			ctx.reading[i] = v
			ctx.lookedUp[i] = part
		}
		ctx.readIdx = append(ctx.readIdx, i)
		out = append(out, fp)
	}
	return out
}

// mustAnswer reports whether an incremental answer holds a partition the session has.
func (ctx fetchContext) mustAnswer(i int, a fetchAnswer) bool {
	if ctx.session == nil {
		return true
	}
	last := ctx.last[i]
	return a.records || a.errored || a.redirected || a.highWatermark != last.highWatermark || a.logStart != last.logStart
}

// end records what was answered (answers in ctx.parts' order, answered[i] whether the
// answer held it) and returns the session id to answer with: the incremental session's,
// a newly opened one's, or 0.
func (c *fetchSessions) end(p security.Principal, ctx fetchContext, answers []fetchAnswer, answered []bool) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case ctx.session != nil:
		s := ctx.session
		if c.byID[s.id] != s { // evicted meanwhile: the client finds out on its next fetch
			return s.id
		}
		var moved []*sessionPartition
		for i, a := range answers {
			sp := s.index[ctx.parts[i].tp]
			if sp == nil {
				continue
			}
			if v, read := ctx.reading[i]; read {
				sp.part, sp.version = ctx.lookedUp[i], v
			}
			if !answered[i] {
				continue
			}
			sp.highWatermark, sp.logStart = a.highWatermark, a.logStart
			if a.errored {
				sp.highWatermark = -1
			}
			if a.records {
				moved = append(moved, sp)
			}
		}
		if ctx.full {
			s.lastFull = c.now()
		}
		if len(moved) > 0 && len(moved) < len(s.parts) {
			rest := make([]*sessionPartition, 0, len(s.parts))
			for _, sp := range s.parts {
				if !containsPart(moved, sp) {
					rest = append(rest, sp)
				}
			}
			s.parts = append(rest, moved...)
		}
		return s.id
	case ctx.open:
		if len(ctx.parts) == 0 || !c.makeRoomLocked(len(ctx.parts)) {
			return 0
		}
		s := &fetchSession{id: c.unusedIDLocked(), epoch: 1, principal: p, index: make(map[topicPartition]*sessionPartition, len(ctx.parts)),
			lastUsed: c.now()}
		for i, fp := range ctx.parts {
			if s.index[fp.tp] != nil {
				continue // named twice: the later is read again, the first kept
			}
			sp := &sessionPartition{tp: fp.tp, fetchOffset: fp.fetchOffset, maxBytes: fp.maxBytes, currentLeaderEpoch: fp.currentLeaderEpoch,
				lastFetchedEpoch: fp.lastFetchedEpoch, highWatermark: answers[i].highWatermark, logStart: answers[i].logStart}
			if answers[i].errored {
				sp.highWatermark = -1
			}
			s.index[fp.tp] = sp
			s.parts = append(s.parts, sp)
		}
		c.byID[s.id] = s
		c.partitions += len(s.parts)
		return s.id
	}
	return 0
}

func containsPart(ps []*sessionPartition, p *sessionPartition) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

func (c *fetchSessions) unusedIDLocked() int32 {
	for {
		if id := c.newID(); c.byID[id] == nil {
			return id
		}
	}
}

// makeRoomLocked frees a slot (and partitions) for a session of n partitions, evicting as
// the package comment says, and reports whether there is room.
func (c *fetchSessions) makeRoomLocked(n int) bool {
	if n > c.maxParts {
		return false
	}
	for len(c.byID) >= c.maxSlots || c.partitions+n > c.maxParts {
		victim := c.victimLocked(n)
		if victim == nil {
			return false
		}
		c.removeLocked(victim)
		c.evictions++
	}
	return true
}

// victimLocked is the session a new one of n partitions may replace, or nil.
func (c *fetchSessions) victimLocked(n int) *fetchSession {
	var lru, smallest *fetchSession
	for _, s := range c.byID {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) || (s.lastUsed.Equal(lru.lastUsed) && s.id < lru.id) {
			lru = s
		}
		if smallest == nil || len(s.parts) < len(smallest.parts) || (len(s.parts) == len(smallest.parts) && s.id < smallest.id) {
			smallest = s
		}
	}
	switch {
	case lru == nil:
		return nil
	case c.now().Sub(lru.lastUsed) >= sessionEvictAfter:
		return lru
	case n > len(smallest.parts):
		return smallest
	}
	return nil
}

func (c *fetchSessions) removeLocked(s *fetchSession) {
	delete(c.byID, s.id)
	c.partitions -= len(s.parts)
}

// stats are the cache's size and evictions, for the metrics.
func (c *fetchSessions) stats() (sessions, partitions int, evictions uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byID), c.partitions, c.evictions
}
