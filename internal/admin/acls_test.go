package admin

import (
	"strings"
	"testing"
)

// ACLs are created from JSON, listed by filter and deleted by filter; bad input is a JSON
// error with a 400 and changes nothing.
func TestACLEndpoints(t *testing.T) {
	b, srv := newTestAdmin(t, 1, "")
	u := srv.URL + "/v1/security/acls"
	code, body := do(t, "POST", u, `{"acls":[
		{"resource_type":"topic","resource_name":"orders","pattern_type":"literal","principal":"User:alice","host":"*","operation":"read","permission":"allow"},
		{"resource_type":"TOPIC","resource_name":"pay-","pattern_type":"PREFIXED","principal":"User:bob","host":"10.0.0.1","operation":"WRITE","permission":"DENY"}]}`)
	if code != 200 {
		t.Fatalf("create: %d %s", code, body)
	}
	if len(b.ACLs()) != 2 {
		t.Fatalf("stored %+v", b.ACLs())
	}
	code, body = do(t, "GET", u+"?resource_type=topic&resource_name=pay-x&pattern_type=match", "")
	want := `[{"resource_type":"TOPIC","resource_name":"pay-","pattern_type":"PREFIXED","principal":"User:bob","host":"10.0.0.1","operation":"WRITE","permission":"DENY"}]` + "\n"
	if code != 200 || body != want {
		t.Fatalf("list match: %d %s", code, body)
	}
	if code, body = do(t, "GET", u, ""); code != 200 || strings.Count(body, "resource_type") != 2 {
		t.Fatalf("list all: %d %s", code, body)
	}
	for name, c := range map[string]struct {
		method, query, body string
	}{
		"bad json":          {"POST", "", `{`},
		"unknown field":     {"POST", "", `{"acls":[],"x":1}`},
		"no acls":           {"POST", "", `{"acls":[]}`},
		"principal no type": {"POST", "", `{"acls":[{"resource_type":"topic","resource_name":"t","pattern_type":"literal","principal":"alice","host":"*","operation":"read","permission":"allow"}]}`},
		"pattern any":       {"POST", "", `{"acls":[{"resource_type":"topic","resource_name":"t","pattern_type":"any","principal":"User:a","host":"*","operation":"read","permission":"allow"}]}`},
		"unknown type":      {"POST", "", `{"acls":[{"resource_type":"galaxy","resource_name":"t","pattern_type":"literal","principal":"User:a","host":"*","operation":"read","permission":"allow"}]}`},
		"bad filter type":   {"GET", "?resource_type=galaxy", ""},
		"unknown parameter": {"GET", "?colour=red", ""},
		"delete no filter":  {"DELETE", "", ""},
		"delete bad op":     {"DELETE", "?operation=fly", ""},
	} {
		code, body := do(t, c.method, u+c.query, c.body)
		if code != 400 || !strings.Contains(body, `"message"`) {
			t.Errorf("%s: %d %s, want 400 with a message", name, code, body)
		}
	}
	if len(b.ACLs()) != 2 {
		t.Fatalf("bad input changed the ACLs: %+v", b.ACLs())
	}
	code, body = do(t, "DELETE", u+"?principal=User:alice", "")
	if code != 200 || !strings.Contains(body, `"User:alice"`) || strings.Contains(body, "User:bob") {
		t.Fatalf("delete: %d %s", code, body)
	}
	if acls := b.ACLs(); len(acls) != 1 || acls[0].Principal != "User:bob" {
		t.Fatalf("after delete: %+v", acls)
	}
}
