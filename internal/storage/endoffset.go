package storage

// maxRecentEnds bounds the in-memory map from Raft index to Kafka end offset. Commit and
// majority trail the log end by at most a few thousand entries in practice; older indexes
// are answered from the files.
const maxRecentEnds = 1 << 14

// noteRecentLocked records the end offset of the entry just appended at index. Caller
// holds mu for writing.
func (l *Log) noteRecentLocked(index uint64, end int64) {
	if n := len(l.recentEnds); n == 0 || l.recentBase+uint64(n) != index {
		l.recentBase = index
		l.recentEnds = l.recentEnds[:0]
	} else if n == maxRecentEnds {
		keep := copy(l.recentEnds, l.recentEnds[n/2:])
		l.recentEnds = l.recentEnds[:keep]
		l.recentBase += uint64(n - keep)
	}
	l.recentEnds = append(l.recentEnds, end)
}

// dropRecentLocked forgets the entries at and above fromIndex (a suffix truncation).
func (l *Log) dropRecentLocked(fromIndex uint64) {
	switch {
	case len(l.recentEnds) == 0:
	case fromIndex <= l.recentBase:
		l.recentEnds = l.recentEnds[:0]
	case fromIndex < l.recentBase+uint64(len(l.recentEnds)):
		l.recentEnds = l.recentEnds[:fromIndex-l.recentBase]
	}
}

// EndOffsetAt returns the Kafka offset just past the entry at Raft index: the offset the
// next data entry after it starts at. It answers for FirstIndex-1 (the log start's base)
// through LastIndex; ErrCompacted below, ErrUnavailable above. Raft boundaries (commit,
// majority replicated) are Raft indexes; this maps them to the offsets clients see.
func (l *Log) EndOffsetAt(index uint64) (int64, error) {
	l.mu.RLock()
	if err := l.readable(); err != nil {
		l.mu.RUnlock()
		return 0, err
	}
	first, last := l.firstIndex(), l.lastIndex()
	switch {
	case index > last:
		l.mu.RUnlock()
		return 0, ErrUnavailable
	case index == last:
		end := l.logEndOffset()
		l.mu.RUnlock()
		return end, nil
	case index+1 < first:
		l.mu.RUnlock()
		return 0, ErrCompacted
	case index+1 == first:
		base := l.segs[0].baseOffset
		l.mu.RUnlock()
		return base, nil
	case index >= l.recentBase && index < l.recentBase+uint64(len(l.recentEnds)):
		end := l.recentEnds[index-l.recentBase]
		l.mu.RUnlock()
		return end, nil
	}
	l.mu.RUnlock()
	ents, err := l.Entries(index, index+1, 1)
	if err != nil {
		return 0, err
	}
	if len(ents) == 0 || ents[0].Index != index {
		return 0, ErrUnavailable // truncated meanwhile
	}
	return ents[0].BaseOffset + int64(ents[0].Records), nil
}
