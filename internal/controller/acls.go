package controller

import (
	"encoding/json"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/security"
)

// Kafka ACLs, replicated with the rest of the metadata so that every broker authorizes
// from the same set. An ACL is a value: creating one that exists changes nothing (Kafka
// answers success), and the set keeps creation order so that DescribeAcls answers the same
// on every broker. Deletion is by filter, as DeleteAcls asks; the result names what each
// filter removed, decided at apply time, so that a client is told exactly what went.

// MaxACLsPerCommand bounds one CreateACLs or DeleteACLs, so that one command (one Raft
// entry) stays small.
const MaxACLsPerCommand = 1000

// CreateACLs adds ACLs. Each must pass security.ValidateACL; the proposer checks them one
// by one to answer each creation, so an invalid one here rejects the whole command.
type CreateACLs struct {
	ACLs []security.ACL `json:"acls"`
}

// DeleteACLs removes every ACL any of Filters matches. Result.DeletedACLs holds, for each
// filter in order, the ACLs it matched (an ACL two filters match is listed under both, as
// Kafka does).
type DeleteACLs struct {
	Filters []security.ACLFilter `json:"filters"`
}

func (CreateACLs) op() string { return "create_acls" }
func (DeleteACLs) op() string { return "delete_acls" }

// The commands carry Kafka's numeric codes, not the names security.ACL marshals to: every
// int8 a decoder accepts encodes back to the same bytes, where a zero or unknown code
// would encode to "UNKNOWN", which no decoder accepts, and an entry that one replica wrote
// could not be read back. Apply refuses the codes that are not valid.

type wireACL struct {
	ResourceType int8   `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  int8   `json:"pattern_type"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    int8   `json:"operation"`
	Permission   int8   `json:"permission"`
}

type wireFilter struct {
	ResourceType int8    `json:"resource_type"`
	ResourceName *string `json:"resource_name,omitempty"`
	PatternType  int8    `json:"pattern_type"`
	Principal    *string `json:"principal,omitempty"`
	Host         *string `json:"host,omitempty"`
	Operation    int8    `json:"operation"`
	Permission   int8    `json:"permission"`
}

// MarshalJSON encodes the ACLs with numeric codes.
func (c CreateACLs) MarshalJSON() ([]byte, error) {
	w := struct {
		ACLs []wireACL `json:"acls"`
	}{ACLs: make([]wireACL, len(c.ACLs))}
	for i, a := range c.ACLs {
		w.ACLs[i] = wireACL{int8(a.ResourceType), a.ResourceName, int8(a.PatternType), a.Principal, a.Host, int8(a.Operation), int8(a.Permission)}
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes what MarshalJSON encodes, refusing unknown fields.
func (c *CreateACLs) UnmarshalJSON(b []byte) error {
	var w struct {
		ACLs []wireACL `json:"acls"`
	}
	if err := strictUnmarshal(b, &w); err != nil {
		return err
	}
	c.ACLs = make([]security.ACL, len(w.ACLs))
	for i, a := range w.ACLs {
		c.ACLs[i] = security.ACL{ResourceType: kmsg.ACLResourceType(a.ResourceType), ResourceName: a.ResourceName,
			PatternType: kmsg.ACLResourcePatternType(a.PatternType), Principal: a.Principal, Host: a.Host,
			Operation: kmsg.ACLOperation(a.Operation), Permission: kmsg.ACLPermissionType(a.Permission)}
	}
	return nil
}

// MarshalJSON encodes the filters with numeric codes.
func (c DeleteACLs) MarshalJSON() ([]byte, error) {
	w := struct {
		Filters []wireFilter `json:"filters"`
	}{Filters: make([]wireFilter, len(c.Filters))}
	for i, f := range c.Filters {
		w.Filters[i] = wireFilter{int8(f.ResourceType), f.ResourceName, int8(f.PatternType), f.Principal, f.Host, int8(f.Operation), int8(f.Permission)}
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes what MarshalJSON encodes, refusing unknown fields.
func (c *DeleteACLs) UnmarshalJSON(b []byte) error {
	var w struct {
		Filters []wireFilter `json:"filters"`
	}
	if err := strictUnmarshal(b, &w); err != nil {
		return err
	}
	c.Filters = make([]security.ACLFilter, len(w.Filters))
	for i, f := range w.Filters {
		c.Filters[i] = security.ACLFilter{ResourceType: kmsg.ACLResourceType(f.ResourceType), ResourceName: f.ResourceName,
			PatternType: kmsg.ACLResourcePatternType(f.PatternType), Principal: f.Principal, Host: f.Host,
			Operation: kmsg.ACLOperation(f.Operation), Permission: kmsg.ACLPermissionType(f.Permission)}
	}
	return nil
}

func (s *State) createACLs(c *CreateACLs) *applyErr {
	if len(c.ACLs) == 0 || len(c.ACLs) > MaxACLsPerCommand {
		return reject(kerr.InvalidRequest, "a create_acls command carries 1 to %d ACLs, not %d", MaxACLsPerCommand, len(c.ACLs))
	}
	for _, a := range c.ACLs {
		if err := security.ValidateACL(a); err != nil {
			return reject(kerr.InvalidRequest, "%v", err)
		}
	}
	for _, a := range c.ACLs {
		if _, dup := s.aclSet[a]; dup {
			continue
		}
		s.aclSet[a] = struct{}{}
		s.acls = append(s.acls, a)
	}
	return nil
}

func (s *State) deleteACLs(c *DeleteACLs, res *Result) *applyErr {
	if len(c.Filters) == 0 || len(c.Filters) > MaxACLsPerCommand {
		return reject(kerr.InvalidRequest, "a delete_acls command carries 1 to %d filters, not %d", MaxACLsPerCommand, len(c.Filters))
	}
	for _, f := range c.Filters {
		if err := security.ValidateFilter(f); err != nil {
			return reject(kerr.InvalidRequest, "%v", err)
		}
	}
	res.DeletedACLs = make([][]security.ACL, len(c.Filters))
	gone := map[security.ACL]bool{}
	for i, f := range c.Filters {
		for _, a := range s.acls {
			if f.Matches(a) {
				res.DeletedACLs[i] = append(res.DeletedACLs[i], a)
				gone[a] = true
			}
		}
	}
	s.recordDeletion(res.Index, res.DeletedACLs)
	if len(gone) == 0 {
		return nil
	}
	kept := s.acls[:0:0]
	for _, a := range s.acls {
		if gone[a] {
			delete(s.aclSet, a)
			continue
		}
		kept = append(kept, a)
	}
	s.acls = kept
	return nil
}

// recentDeletions is how many DeleteACLs results a replica remembers for DeletedACLsAt.
const recentDeletions = 256

// recordDeletion remembers what the delete_acls at index removed. A proposal forwarded to
// the controller leader comes back with its index but not its result; every replica
// computed the same result when it applied the entry, so the proposer reads it from its
// own. It is memory only, outside snapshots: a replica restored past the index has none.
func (s *State) recordDeletion(index uint64, deleted [][]security.ACL) {
	if s.deletions == nil {
		s.deletions = map[uint64][][]security.ACL{}
	}
	s.deletions[index] = deleted
	s.deletionOrder = append(s.deletionOrder, index)
	if len(s.deletionOrder) > recentDeletions {
		delete(s.deletions, s.deletionOrder[0])
		s.deletionOrder = s.deletionOrder[1:]
	}
}

// DeletedACLsAt returns what the delete_acls applied at index removed, per filter, if this
// replica applied it recently.
func (s *State) DeletedACLsAt(index uint64) ([][]security.ACL, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d, ok := s.deletions[index]
	return d, ok
}

// ACLs returns every ACL, in creation order.
func (s *State) ACLs() []security.ACL {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]security.ACL(nil), s.acls...)
}

// AuthzGeneration changes whenever the ACLs or the cluster config change (or a snapshot
// is restored), so that a broker rebuilds its authorizer only then. It takes no lock: it is
// read on every authorized request.
func (s *State) AuthzGeneration() uint64 { return s.authzGen.Load() }

// changesAuthz reports whether a successfully applied cmd may change an authorization
// verdict: the ACLs, or the cluster config that holds super.users and the authorizer.
func changesAuthz(cmd Command) bool {
	switch cmd.(type) {
	case *CreateACLs, *DeleteACLs, *SetClusterConfig:
		return true
	}
	return false
}

// decodeACLs validates a snapshot's ACLs into the state's list and set.
func decodeACLs(acls []security.ACL) ([]security.ACL, map[security.ACL]struct{}, error) {
	set := make(map[security.ACL]struct{}, len(acls))
	for _, a := range acls {
		if err := security.ValidateACL(a); err != nil {
			return nil, nil, err
		}
		if _, dup := set[a]; dup {
			return nil, nil, fmt.Errorf("ACL %+v listed twice", a)
		}
		set[a] = struct{}{}
	}
	return append([]security.ACL(nil), acls...), set, nil
}
