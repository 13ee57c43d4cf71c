package contract

import "github.com/cairn-io/cairn/internal/config"

// The Kafka properties a durability runbook sets that Cairn refuses (the registry says
// why), with what to set instead: the one place an operator migrating from Kafka reads
// both.
var durabilityInstead = []struct{ name, instead string }{
	{"flush.messages", "write.caching=false (the default) fsyncs on a majority before every acks=all success; with write.caching=true, bound the window with flush.ms and flush.bytes"},
	{"log.flush.interval.messages", "the cluster's write_caching_default, and log.flush.interval.ms / log.flush.interval.bytes for topics with write caching"},
	{"log.flush.scheduler.interval.ms", "flush.ms on the topic (log.flush.interval.ms for the cluster): each partition arms its own timer"},
	{"unclean.leader.election.enable", "nothing: a Raft leader always holds every committed entry; for a partition that lost its majority, `cairn cluster recover` is the explicit, audited way"},
	{"offsets.commit.required.acks", "nothing: offset commits are always written with acks=-1"},
}

// RefusedForDurability lists those properties with the registry's reason.
func RefusedForDurability() []Refused {
	var out []Refused
	for _, d := range durabilityInstead {
		why := "refused"
		if r, ok := config.LookupRefused(d.name); ok {
			why = r.Reason
		}
		out = append(out, Refused{Name: d.name, Why: why, Instead: d.instead})
	}
	return out
}
