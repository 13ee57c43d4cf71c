package config

import "testing"

func TestCleanupPolicyPredicates(t *testing.T) {
	for _, tc := range []struct {
		policy           string
		compacts, delete bool
	}{
		{"delete", false, true}, {"compact", true, false}, {"compact,delete", true, true},
	} {
		c := ResolveTopic(map[string]string{TopicCleanupPolicy: tc.policy}, nil)
		if c.CleanupPolicy != tc.policy || c.Compacts() != tc.compacts || c.Deletes() != tc.delete {
			t.Errorf("%q: %+v compacts %v deletes %v", tc.policy, c, c.Compacts(), c.Deletes())
		}
	}
	c := ResolveTopic(map[string]string{TopicDeleteRetentionMs: "5"}, map[string]string{ClusterLogCleanerDeleteRetentionMs: "7", ClusterLogCleanupPolicy: "delete,compact"})
	if c.DeleteRetentionMs != 5 || c.CleanupPolicy != "compact,delete" {
		t.Errorf("%+v", c)
	}
	if c := ResolveTopic(nil, map[string]string{ClusterLogCleanerDeleteRetentionMs: "7"}); c.DeleteRetentionMs != 7 {
		t.Errorf("cluster default: %+v", c)
	}
}
