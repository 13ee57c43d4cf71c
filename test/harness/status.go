package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrNoReplica is returned by PartitionStatus when the broker has no replica of the
// partition.
var ErrNoReplica = errors.New("harness: no replica on that broker")

// PartitionStatus is a broker's admin view of one partition (GET /v1/partitions/{t}/{p}).
type PartitionStatus struct {
	Leader             int32   `json:"leader"`
	LeaderEpoch        int32   `json:"leader_epoch"`
	IsLeader           bool    `json:"is_leader"`
	Replicas           []int32 `json:"replicas"`
	ISR                []int32 `json:"isr"`
	LogStart           int64   `json:"log_start_offset"`
	LogEnd             int64   `json:"log_end_offset"`
	Flushed            int64   `json:"flushed_offset"`
	MajorityReplicated int64   `json:"majority_replicated_offset"`
	Committed          int64   `json:"committed_offset"`
	LastVisible        int64   `json:"last_visible_offset"`
	WriteCaching       *bool   `json:"write_caching"`
	// ISRRacks are the distinct declared racks the ISR spans (leader only), sorted.
	ISRRacks []string `json:"isr_racks"`
	// MinInsyncReplicas is the effective min.insync.replicas (capped at the replicas);
	// MinInsyncRacks the topic's min.insync.racks (1: off).
	MinInsyncReplicas int `json:"min_insync_replicas"`
	MinInsyncRacks    int `json:"min_insync_racks"`
}

// PartitionStatus asks the broker's admin API for its view of topic/partition.
func (b *Broker) PartitionStatus(ctx context.Context, topic string, partition int32) (PartitionStatus, error) {
	return b.PartitionStatusWith(ctx, http.DefaultClient, topic, partition)
}

// PartitionStatusWith is PartitionStatus through hc, whose transport may authenticate
// the request to an admin API that wants credentials.
func (b *Broker) PartitionStatusWith(ctx context.Context, hc *http.Client, topic string, partition int32) (PartitionStatus, error) {
	var st PartitionStatus
	path := fmt.Sprintf("/v1/partitions/%s/%d", topic, partition)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.AdminAddr+path, nil)
	if err != nil {
		return st, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return st, ErrNoReplica
	case resp.StatusCode != http.StatusOK:
		return st, fmt.Errorf("broker %d: admin API %s: HTTP %d: %s", b.ID, path, resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("broker %d: admin API %s: %v in %s", b.ID, path, err, raw)
	}
	return st, nil
}

// WaitListed waits until every broker of bs runs and lists n brokers in its metadata, or
// ctx ends. A broker is ready once its own registration is applied; a cluster has formed
// once every broker knows every other (placement counts the live brokers it knows). A
// broker that is not running fails the wait: a suite that started them all has lost one.
func WaitListed(ctx context.Context, n int, bs ...*Broker) error {
	return waitListed(ctx, n, false, bs)
}

// WaitListedSkippingDown is WaitListed for a cluster some of whose brokers a fault
// schedule may have down: it waits only for the brokers that are running when their turn
// comes.
func WaitListedSkippingDown(ctx context.Context, n int, bs ...*Broker) error {
	return waitListed(ctx, n, true, bs)
}

func waitListed(ctx context.Context, n int, skipDown bool, bs []*Broker) error {
	for _, b := range bs {
		if !b.Running() {
			if skipDown {
				continue
			}
			return fmt.Errorf("broker %d is not running, so it cannot list all %d brokers; views:\n%s", b.ID, n, ClusterViews(bs...))
		}
		var last error
		for {
			// A fresh client each time: its first request goes to its seed, so the answer
			// is b's own view (a reused client may ask any broker it has learned of).
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.KafkaAddr), kgo.ClientID("cairn-harness"))
			if err != nil {
				return err
			}
			md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
			cl.Close()
			if err == nil && len(md.Brokers) == n {
				break
			}
			if err != nil {
				last = err
			} else {
				last = fmt.Errorf("lists %d brokers", len(md.Brokers))
			}
			select {
			case <-ctx.Done():
				// Every broker's own controller view says which replica lags, or which
				// liveness verdict is missing.
				return fmt.Errorf("broker %d does not list all %d brokers: %v; views:\n%s", b.ID, n, last, ClusterViews(bs...))
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// ClusterViews returns each running broker's /v1/cluster answer, one line per broker.
func ClusterViews(bs ...*Broker) string {
	var sb strings.Builder
	hc := &http.Client{Timeout: 2 * time.Second}
	for _, b := range bs {
		if !b.Running() {
			fmt.Fprintf(&sb, "broker %d: not running\n", b.ID)
			continue
		}
		resp, err := hc.Get("http://" + b.AdminAddr + "/v1/cluster")
		if err != nil {
			fmt.Fprintf(&sb, "broker %d: %v\n", b.ID, err)
			continue
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Fprintf(&sb, "broker %d: %s\n", b.ID, strings.TrimSpace(string(raw)))
	}
	return sb.String()
}
