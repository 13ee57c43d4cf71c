package partition

import "context"

// AppendForTest appends batch to the partition's log through Raft, past Produce's
// validation, and waits until it is committed and applied here. It is for tests of other
// packages only (the Kafka layer's read_committed tests write transactional batches and
// markers with it while transactional produce is not served): nothing checks the batch,
// its producer or its sequence, and the producer table does not learn of it.
func (p *Partition) AppendForTest(ctx context.Context, batch []byte) error {
	_, _, err := p.host.Propose(ctx, p.group, batch)
	return err
}
