package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/cairn-io/cairn/test/chaos/faults"
	"github.com/cairn-io/cairn/test/chaos/history"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// parseRacks reads --racks: nil for "", else one non-empty rack per broker. When --brokers
// was given too, the counts must agree.
func parseRacks(list string, brokers int, brokersSet bool) ([]string, error) {
	if list == "" {
		return nil, nil
	}
	racks := strings.Split(list, ",")
	for i, r := range racks {
		if racks[i] = strings.TrimSpace(r); racks[i] == "" {
			return nil, fmt.Errorf("--racks %q gives broker %d no rack", list, i+1)
		}
	}
	if brokersSet && len(racks) != brokers {
		return nil, fmt.Errorf("--racks names %d racks for --brokers %d", len(racks), brokers)
	}
	return racks, nil
}

// parseLinkDelay reads --link-delay in,cross; "" is no delay.
func parseLinkDelay(s string) (in, cross time.Duration, err error) {
	if s == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(s, ",")
	if !ok {
		return 0, 0, fmt.Errorf("--link-delay %q: want two delays, in a rack and across racks (e.g. 0.2ms,2ms)", s)
	}
	if in, err = time.ParseDuration(strings.TrimSpace(a)); err == nil {
		cross, err = time.ParseDuration(strings.TrimSpace(b))
	}
	if err == nil && (in < 0 || cross < 0) {
		err = fmt.Errorf("a delay is negative")
	}
	if err != nil {
		return 0, 0, fmt.Errorf("--link-delay %q: want two non-negative durations such as 0.2ms,2ms (%v)", s, err)
	}
	return in, cross, nil
}

// rackFault takes one rack, drawn from rng, down at once by one of rackSubFaults, also
// drawn: every broker of it is killed, paused, cut off from the other racks (both ways) or
// powered down. It is lossy only as a power cut of those brokers is: under write caching,
// when they are more than a minority. The brokers of a session with rack faults run with
// --simulate-power-loss, so a kill is a power cut too (the other faults' schedule keeps
// kills to a minority under write caching for the same reason).
func rackFault(ctx context.Context, cl *faults.Cluster, rec *history.Recorder, cfg config, rng *rand.Rand) error {
	racks := cl.Racks()
	rack := racks[rng.IntN(len(racks))]
	sub := rackSubFaults[rng.IntN(len(rackSubFaults))]
	ids := cl.RackMembers(rack)
	lossy := (sub == "power" || sub == "kill") && cfg.mode == history.WriteCaching && len(ids) > (cfg.brokers-1)/2
	name := fmt.Sprintf("rack %s %s %v", sub, rack, ids)
	fmt.Printf("chaos: %s: %s\n", time.Now().Format("15:04:05.000"), name)
	if err := inject(ctx, cl, rec, rng, sub, name, ids, lossy, func() error { return cl.IsolateRack(rack) }); err != nil {
		return fmt.Errorf("fault %s: %w", name, err)
	}
	return nil
}

// replicaSelector and rackAwareSelector are Kafka's switch for follower fetching (KIP-392),
// which Cairn accepts unchanged.
const (
	replicaSelector   = "replica.selector.class"
	rackAwareSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
)

// rackConsumerOpts make a consumer in rack that reads from its rack's replica. The short
// recheck brings franz-go back to a preferred replica soon after a fault moved it to the
// leader (its default is 30 minutes, longer than most sessions).
func rackConsumerOpts(rack string) []kgo.Opt {
	return []kgo.Opt{kgo.Rack(rack), kgo.RecheckPreferredReplicaInterval(5 * time.Second)}
}

// setClusterConfig sets a cluster-wide broker property, as an operator would with
// kafka-configs --entity-default.
func setClusterConfig(ctx context.Context, adm *kadm.Client, name, value string) error {
	resp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: kadm.StringPtr(value)}})
	if err == nil {
		for _, r := range resp {
			if r.Err != nil {
				err = fmt.Errorf("%w (%s)", r.Err, r.ErrMessage)
				break
			}
		}
	}
	if err != nil {
		return fmt.Errorf("setting %s=%s: %w", name, value, err)
	}
	return nil
}
