package config

import "strings"

// Compacts reports whether the topic's cleanup.policy includes compact: compaction keeps
// the latest record of each key, and every produced record must have a key.
func (c TopicConfig) Compacts() bool { return hasPolicy(c.CleanupPolicy, "compact") }

// Deletes reports whether the topic's cleanup.policy includes delete: retention.ms and
// retention.bytes remove old segments.
func (c TopicConfig) Deletes() bool { return hasPolicy(c.CleanupPolicy, "delete") }

func hasPolicy(policy, want string) bool {
	for p := range strings.SplitSeq(policy, ",") {
		if strings.EqualFold(strings.TrimSpace(p), want) {
			return true
		}
	}
	return false
}
