package admin

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cairn-io/cairn/internal/security"
)

// FuzzAdminAuthorizationHeader: whatever Authorization header arrives, the admin API
// answers 200 only for the one right user and password, and 401 with a JSON message for
// everything else; it never panics and never serves an unauthenticated request.
func FuzzAdminAuthorizationHeader(f *testing.F) {
	for _, s := range []string{"", "Basic ", "Basic !!!", "Basic " + base64.StdEncoding.EncodeToString([]byte("dave:pw")),
		"Basic " + base64.StdEncoding.EncodeToString([]byte("dave:wrong")), "Basic " + base64.StdEncoding.EncodeToString([]byte(":")),
		"Basic " + base64.StdEncoding.EncodeToString([]byte("dave")), "Bearer x", "basic ZGF2ZTpwdw==", "Basic ZGF2ZTpwdw==\x00"} {
		f.Add(s)
	}
	b, s, acls := newAuthAdmin(f, AuthOptions{RequireAuthentication: true})
	acls.allow["User:dave DESCRIBE"] = true
	cred, err := security.DeriveScramCredential(security.ScramSHA256, "dave", "pw", 4096, nil)
	if err != nil {
		f.Fatal(err)
	}
	if e := b.UpsertScramCredential("dave", cred); e != nil {
		f.Fatal(e.Msg)
	}
	f.Fuzz(func(t *testing.T, header string) {
		req := httptest.NewRequest("GET", "/v1/cluster", nil)
		req.Header["Authorization"] = []string{header}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		user, password, ok := req.BasicAuth()
		right := ok && user == "dave" && password == "pw"
		switch {
		case right && w.Code != http.StatusOK:
			t.Fatalf("%q: the right credentials got %d", header, w.Code)
		case !right && w.Code != http.StatusUnauthorized:
			t.Fatalf("%q: %d, want 401", header, w.Code)
		case !right && w.Header().Get("Content-Type") != "application/json":
			t.Fatalf("%q: a 401 that is not JSON", header)
		}
	})
}
