package partition

import "context"

// AppendForTest appends batch to the partition's log through Raft, past Produce's
// validation, and waits until it is committed, applied here and visible to Fetch, so a
// test's next read sees it. It is for tests of other packages only (the Kafka layer's
// read_committed tests write transactional batches and markers with it): nothing checks
// the batch, its producer or its sequence, and the producer table does not learn of it.
func (p *Partition) AppendForTest(ctx context.Context, batch []byte) error {
	index, _, err := p.host.Propose(ctx, p.group, batch)
	if err != nil {
		return err
	}
	end := p.endOffset(index)
	// Each Raft round ends in a refresh, which reads applied, visible and stable together.
	return p.waitFor(ctx, func(b *Boundaries) bool { return p.applied >= index && b.LastVisible >= end })
}
