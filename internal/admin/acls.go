package admin

// Kafka ACLs (issue 15), the same set DescribeAcls/CreateAcls/DeleteAcls serve:
//
//	GET    /v1/security/acls[?filter]   the ACLs the filter matches (all without one)
//	POST   /v1/security/acls            {"acls":[{resource_type, resource_name, pattern_type,
//	                                     principal, host, operation, permission}, ...]}
//	DELETE /v1/security/acls?filter     removes what the filter matches; answers it
//
// A filter is the query parameters resource_type, resource_name, pattern_type (any, match,
// literal, prefixed; any by default), principal, host, operation and permission, with
// Kafka's filter semantics (security.ACLFilter); enum values take Kafka's names in any
// case ("topic", "TRANSACTIONAL_ID"). DELETE needs at least one parameter, so that a
// forgotten filter does not remove every ACL. A POST is all or nothing: one invalid ACL
// refuses the whole body, naming it.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/security"
)

const maxACLBody = 1 << 20

// CreateACLsRequest is the body of POST /v1/security/acls.
type CreateACLsRequest struct {
	ACLs []security.ACL `json:"acls"`
}

// aclFilterOf parses the filter query parameters.
func aclFilterOf(q url.Values) (security.ACLFilter, error) {
	f := security.MatchAll()
	for key := range q {
		switch key {
		case "resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission":
		default:
			return f, fmt.Errorf("unknown filter parameter %q", key)
		}
	}
	var err error
	if v := q.Get("resource_type"); v != "" {
		if f.ResourceType, err = kmsg.ParseACLResourceType(v); err != nil {
			return f, fmt.Errorf("resource_type %q is not one of any, topic, group, cluster, transactional_id", v)
		}
	}
	if v := q.Get("pattern_type"); v != "" {
		if f.PatternType, err = kmsg.ParseACLResourcePatternType(v); err != nil {
			return f, fmt.Errorf("pattern_type %q is not one of any, match, literal, prefixed", v)
		}
	}
	if v := q.Get("operation"); v != "" {
		if f.Operation, err = kmsg.ParseACLOperation(v); err != nil {
			return f, fmt.Errorf("operation %q is not a Kafka ACL operation", v)
		}
	}
	if v := q.Get("permission"); v != "" {
		if f.Permission, err = kmsg.ParseACLPermissionType(v); err != nil {
			return f, fmt.Errorf("permission %q is not one of any, allow, deny", v)
		}
	}
	if q.Has("resource_name") {
		v := q.Get("resource_name")
		f.ResourceName = &v
	}
	if q.Has("principal") {
		v := q.Get("principal")
		f.Principal = &v
	}
	if q.Has("host") {
		v := q.Get("host")
		f.Host = &v
	}
	return f, security.ValidateFilter(f)
}

func (s *Server) handleListACLs(w http.ResponseWriter, r *http.Request) {
	f, err := aclFilterOf(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	out := s.b.DescribeACLs(f)
	if out == nil {
		out = []security.ACL{}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleCreateACLs(w http.ResponseWriter, r *http.Request) {
	var req CreateACLsRequest
	d := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxACLBody))
	d.DisallowUnknownFields()
	if err := d.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "body: %v", err)
		return
	}
	if len(req.ACLs) == 0 {
		writeError(w, http.StatusBadRequest, "acls must not be empty")
		return
	}
	for i, a := range req.ACLs {
		if err := security.ValidateACL(a); err != nil {
			writeError(w, http.StatusBadRequest, "acls[%d]: %v", i, err)
			return
		}
	}
	if e := s.b.CreateACLs(req.ACLs); e != nil {
		brokerError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, req.ACLs)
}

func (s *Server) handleDeleteACLs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if len(q) == 0 {
		writeError(w, http.StatusBadRequest, "a filter is required (for example ?resource_type=topic&resource_name=orders); ?resource_type=any deletes every ACL")
		return
	}
	f, err := aclFilterOf(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	deleted, e := s.b.DeleteACLs([]security.ACLFilter{f})
	if e != nil {
		brokerError(w, e)
		return
	}
	out := []security.ACL{}
	if len(deleted) == 1 && deleted[0] != nil {
		out = deleted[0]
	}
	writeJSON(w, http.StatusOK, out)
}
