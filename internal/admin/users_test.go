package admin

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/cairn-io/cairn/internal/security"
)

func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Users are created from a password, listed without keys, and deleted; bad input is a
// JSON error with a 4xx status and changes nothing.
func TestUsersEndpoints(t *testing.T) {
	b, srv := newTestAdmin(t, 1, "")
	u := srv.URL + "/v1/security/users"
	code, body := do(t, "POST", u, `{"name":"alice","password":"s3cret","mechanism":"SCRAM-SHA-256","iterations":8192}`)
	if code != 200 {
		t.Fatalf("create: %d %s", code, body)
	}
	cred, ok := b.ScramCredential("alice", security.ScramSHA256)
	want, _ := security.DeriveScramCredential(security.ScramSHA256, "alice", "s3cret", 8192, cred.Salt)
	if !ok || string(cred.StoredKey) != string(want.StoredKey) {
		t.Fatal("the stored credential is not the password's")
	}
	if code, body = do(t, "POST", u, `{"name":"alice","password":"other"}`); code != 200 { // SCRAM-SHA-512 by default
		t.Fatalf("create 512: %d %s", code, body)
	}
	code, body = do(t, "GET", u, "")
	if code != 200 || body != `[{"name":"alice","credentials":[{"mechanism":"SCRAM-SHA-256","iterations":8192},{"mechanism":"SCRAM-SHA-512","iterations":4096}]}]`+"\n" {
		t.Fatalf("list: %d %s", code, body)
	}
	for name, c := range map[string]struct {
		method, path, body string
		want               int
	}{
		"bad json":       {"POST", "", `{`, 400},
		"unknown field":  {"POST", "", `{"name":"x","password":"p","salt":"x"}`, 400},
		"no name":        {"POST", "", `{"password":"p"}`, 400},
		"no password":    {"POST", "", `{"name":"x"}`, 400},
		"bad mechanism":  {"POST", "", `{"name":"x","password":"p","mechanism":"PLAIN"}`, 400},
		"few iterations": {"POST", "", `{"name":"x","password":"p","iterations":10}`, 400},
		"unknown user":   {"DELETE", "/nobody", ``, 404},
		"unknown mech":   {"DELETE", "/alice?mechanism=SCRAM-SHA-1", ``, 400},
	} {
		code, body := do(t, c.method, u+c.path, c.body)
		if code != c.want || !strings.Contains(body, `"message"`) {
			t.Errorf("%s: %d %s, want %d with a message", name, code, body, c.want)
		}
	}
	if len(b.ScramUsers()) != 1 {
		t.Fatalf("bad requests changed the users: %+v", b.ScramUsers())
	}
	if code, body = do(t, "DELETE", u+"/alice?mechanism=SCRAM-SHA-256", ""); code != 200 {
		t.Fatalf("delete one: %d %s", code, body)
	}
	if code, _ = do(t, "DELETE", u+"/alice?mechanism=SCRAM-SHA-256", ""); code != 404 {
		t.Fatalf("delete again: %d", code)
	}
	if code, body = do(t, "DELETE", u+"/alice", ""); code != 200 {
		t.Fatalf("delete all: %d %s", code, body)
	}
	if code, body = do(t, "GET", u, ""); body != "[]\n" {
		t.Fatalf("list after delete: %d %s", code, body)
	}
}
