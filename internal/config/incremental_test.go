package config

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func sp(s string) *string { return &s }

func TestApplyIncremental(t *testing.T) {
	tests := []struct {
		name     string
		current  map[string]string
		ops      []Op
		validate func(string, string) (string, error)
		want     map[string]string
		err      string
	}{
		{name: "set canonicalises", current: nil,
			ops:      []Op{{Name: "retention.ms", Op: OpSet, Value: sp(" 0042 ")}},
			validate: ValidateTopic, want: map[string]string{"retention.ms": "42"}},
		{name: "set replaces and keeps others", current: map[string]string{"retention.ms": "1", "flush.ms": "5"},
			ops:      []Op{{Name: "retention.ms", Op: OpSet, Value: sp("2")}},
			validate: ValidateTopic, want: map[string]string{"retention.ms": "2", "flush.ms": "5"}},
		{name: "delete reverts to default", current: map[string]string{"retention.ms": "1", "flush.ms": "5"},
			ops:      []Op{{Name: "retention.ms", Op: OpDelete}},
			validate: ValidateTopic, want: map[string]string{"flush.ms": "5"}},
		{name: "delete of an unset property is a no-op", current: map[string]string{},
			ops:      []Op{{Name: "segment.ms", Op: OpDelete}},
			validate: ValidateTopic, want: map[string]string{}},
		{name: "delete of an unset list property", current: nil,
			ops:      []Op{{Name: "write_caching_default", Op: OpDelete}, {Name: "log.cleanup.policy", Op: OpDelete}},
			validate: ValidateCluster, want: map[string]string{}},
		{name: "delete of an unknown name", current: map[string]string{},
			ops:      []Op{{Name: "retention.msx", Op: OpDelete}},
			validate: ValidateTopic, err: "unknown topic property"},
		{name: "delete of a refused name", current: map[string]string{},
			ops:      []Op{{Name: "preallocate", Op: OpDelete}},
			validate: ValidateTopic, err: "does not enforce"},
		{name: "delete of a node property", current: map[string]string{},
			ops:      []Op{{Name: "advertised.kafka.addr", Op: OpDelete}},
			validate: ValidateCluster, err: "node property"},
		{name: "delete of a stale entry is allowed", current: map[string]string{"old.thing": "1", "flush.ms": "5"},
			ops:      []Op{{Name: "old.thing", Op: OpDelete}},
			validate: ValidateTopic, want: map[string]string{"flush.ms": "5"}},
		{name: "append to a list starts from the default", current: nil,
			ops:      []Op{{Name: "cleanup.policy", Op: OpAppend, Value: sp("delete")}},
			validate: ValidateTopic, want: map[string]string{"cleanup.policy": "delete"}},
		{name: "append compact gives the canonical pair", current: map[string]string{"cleanup.policy": "delete"},
			ops:      []Op{{Name: "cleanup.policy", Op: OpAppend, Value: sp("compact")}},
			validate: ValidateTopic, want: map[string]string{"cleanup.policy": "compact,delete"}},
		{name: "subtract delete from the pair", current: map[string]string{"log.cleanup.policy": "compact,delete"},
			ops:      []Op{{Name: "log.cleanup.policy", Op: OpSubtract, Value: sp("delete")}},
			validate: ValidateCluster, want: map[string]string{"log.cleanup.policy": "compact"}},
		{name: "subtract the last item leaves an invalid empty list", current: map[string]string{"cleanup.policy": "delete"},
			ops:      []Op{{Name: "cleanup.policy", Op: OpSubtract, Value: sp("delete")}},
			validate: ValidateTopic, err: "at least one policy"},
		{name: "subtract an absent item", current: map[string]string{"log.cleanup.policy": "delete"},
			ops:      []Op{{Name: "log.cleanup.policy", Op: OpSubtract, Value: sp("compact")}},
			validate: ValidateCluster, want: map[string]string{"log.cleanup.policy": "delete"}},
		{name: "append to a non-list", current: nil,
			ops:      []Op{{Name: "retention.ms", Op: OpAppend, Value: sp("1")}},
			validate: ValidateTopic, err: "APPEND is only valid for list properties; retention.ms is a long"},
		{name: "subtract from a non-list", current: nil,
			ops:      []Op{{Name: "write_caching_default", Op: OpSubtract, Value: sp("true")}},
			validate: ValidateCluster, err: "SUBTRACT is only valid for list properties; write_caching_default is an enum"},
		{name: "append to an unknown name", current: nil,
			ops:      []Op{{Name: "nope", Op: OpAppend, Value: sp("1")}},
			validate: ValidateTopic, err: "unknown topic property"},
		{name: "append to a list of another scope", current: nil,
			ops:      []Op{{Name: "log.cleanup.policy", Op: OpAppend, Value: sp("delete")}},
			validate: ValidateTopic, err: "is a cluster property"},
		{name: "append to a read-only list", current: nil,
			ops:      []Op{{Name: "seeds", Op: OpAppend, Value: sp("a:1")}},
			validate: ValidateCluster, err: "set it with cairn start --seeds"},
		{name: "append empty item", current: nil,
			ops:      []Op{{Name: "cleanup.policy", Op: OpAppend, Value: sp("delete,,delete")}},
			validate: ValidateTopic, err: "empty item"},
		{name: "append nil value", current: nil,
			ops:      []Op{{Name: "cleanup.policy", Op: OpAppend}},
			validate: ValidateTopic, err: "has no value"},
		{name: "set nil value", current: nil,
			ops:      []Op{{Name: "retention.ms", Op: OpSet}},
			validate: ValidateTopic, err: "has no value"},
		{name: "set invalid", current: nil,
			ops:      []Op{{Name: "retention.ms", Op: OpSet, Value: sp("0")}},
			validate: ValidateTopic, err: "out of range"},
		{name: "set refused", current: nil,
			ops:      []Op{{Name: "segment.index.bytes", Op: OpSet, Value: sp("2")}},
			validate: ValidateTopic, err: "segment.index.bytes is a Kafka topic property that Cairn does not enforce"},
		{name: "set min.insync.racks", current: map[string]string{"min.insync.replicas": "2"},
			ops:      []Op{{Name: "min.insync.racks", Op: OpSet, Value: sp(" 2 ")}},
			validate: ValidateTopic, want: map[string]string{"min.insync.replicas": "2", "min.insync.racks": "2"}},
		{name: "set min.insync.racks out of range", current: map[string]string{"min.insync.racks": "2"},
			ops:      []Op{{Name: "min.insync.racks", Op: OpSet, Value: sp("0")}},
			validate: ValidateTopic, err: "invalid value \"0\" for min.insync.racks: out of range; valid values: >= 1"},
		{name: "set node property", current: nil,
			ops:      []Op{{Name: "node.id", Op: OpSet, Value: sp("2")}},
			validate: ValidateCluster, err: "node.id is a node property; set it with cairn start --node-id"},
		{name: "unknown operation", current: nil,
			ops:      []Op{{Name: "retention.ms", Op: 9, Value: sp("2")}},
			validate: ValidateTopic, err: "unknown IncrementalAlterConfigs operation 9"},
		{name: "duplicate name", current: nil,
			ops:      []Op{{Name: "retention.ms", Op: OpSet, Value: sp("2")}, {Name: "retention.ms", Op: OpDelete}},
			validate: ValidateTopic, err: "more than one operation"},
		{name: "all or nothing", current: map[string]string{"flush.ms": "5"},
			ops: []Op{
				{Name: "retention.ms", Op: OpSet, Value: sp("2")},
				{Name: "flush.ms", Op: OpDelete},
				{Name: "segment.bytes", Op: OpSet, Value: sp("1")},
			},
			validate: ValidateTopic, err: "segment.bytes"},
		{name: "several ops", current: map[string]string{"flush.ms": "5", "retention.bytes": "9"},
			ops: []Op{
				{Name: "retention.ms", Op: OpSet, Value: sp("2")},
				{Name: "flush.ms", Op: OpDelete},
				{Name: "write.caching", Op: OpSet, Value: sp("TRUE")},
			},
			validate: ValidateTopic, want: map[string]string{"retention.ms": "2", "write.caching": "true", "retention.bytes": "9"}},
		{name: "cluster scope", current: map[string]string{"num.partitions": "3"},
			ops: []Op{
				{Name: "write_caching_default", Op: OpSet, Value: sp("Disabled")},
				{Name: "num.partitions", Op: OpDelete},
			},
			validate: Validator(ScopeCluster), want: map[string]string{"write_caching_default": "disabled"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := maps.Clone(tt.current)
			got, err := ApplyIncremental(tt.current, tt.ops, tt.validate)
			if !maps.Equal(tt.current, before) {
				t.Fatalf("input modified: %v, was %v", tt.current, before)
			}
			if tt.err != "" {
				var ce *Error
				if !errors.As(err, &ce) || !strings.Contains(ce.Msg, tt.err) {
					t.Fatalf("err = %v, want *Error containing %q", err, tt.err)
				}
				if got != nil {
					t.Fatalf("got map %v with an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestApplyIncrementalListOps(t *testing.T) {
	// seeds is the one list with more than one legal item; drive APPEND/SUBTRACT through it
	// with a node-scope validator.
	cur := map[string]string{"seeds": "a:1,b:2"}
	got, err := ApplyIncremental(cur, []Op{{Name: "seeds", Op: OpAppend, Value: sp("b:2, c:3")}}, ValidateNode)
	if err != nil || got["seeds"] != "a:1,b:2,c:3" {
		t.Fatalf("append: %v %v", got, err)
	}
	got, err = ApplyIncremental(got, []Op{{Name: "seeds", Op: OpSubtract, Value: sp("a:1,c:3,z:9")}}, ValidateNode)
	if err != nil || got["seeds"] != "b:2" {
		t.Fatalf("subtract: %v %v", got, err)
	}
	got, err = ApplyIncremental(got, []Op{{Name: "seeds", Op: OpSubtract, Value: sp("b:2")}}, ValidateNode)
	if err != nil || got["seeds"] != "" {
		t.Fatalf("subtract to empty: %v %v", got, err)
	}
	got, err = ApplyIncremental(nil, []Op{{Name: "seeds", Op: OpAppend, Value: sp("x:1")}}, ValidateNode)
	if err != nil || got["seeds"] != "x:1" {
		t.Fatalf("append to default: %v %v", got, err)
	}
	if cur["seeds"] != "a:1,b:2" {
		t.Fatalf("input modified: %v", cur)
	}
}
