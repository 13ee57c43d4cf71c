package admin

// SCRAM users (issue 15):
//
//	GET    /v1/security/users                   names, mechanisms and iterations; never keys
//	POST   /v1/security/users                   {"name","password","mechanism","iterations"}
//	DELETE /v1/security/users/{name}[?mechanism=SCRAM-SHA-512]
//
// POST derives the credential here (security.DeriveScramCredential) and proposes only
// the salt and keys: the password goes no further than this request. DELETE without a
// mechanism removes every credential of the user. With admin.auth=basic these
// endpoints need credentials like any other (auth.go).

import (
	"encoding/json"
	"net/http"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/security"
)

const maxUserBody = 64 << 10

// UserCredential is one mechanism of a user, as listed.
type UserCredential struct {
	Mechanism  string `json:"mechanism"`
	Iterations int    `json:"iterations"`
}

// UserSummary is one SCRAM user, as listed.
type UserSummary struct {
	Name        string           `json:"name"`
	Credentials []UserCredential `json:"credentials"`
}

// CreateUserRequest is the body of POST /v1/security/users.
type CreateUserRequest struct {
	Name       string `json:"name"`
	Password   string `json:"password"`
	Mechanism  string `json:"mechanism"`
	Iterations int    `json:"iterations,omitempty"`
}

func userStatus(err *broker.Error) int {
	switch err.Code {
	case kerr.ResourceNotFound:
		return http.StatusNotFound
	case kerr.UnacceptableCredential, kerr.UnsupportedSaslMechanism:
		return http.StatusBadRequest
	}
	return httpStatus(err)
}

func (s *Server) handleListUsers(w http.ResponseWriter, _ *http.Request) {
	out := []UserSummary{}
	for _, u := range s.b.ScramUsers() {
		us := UserSummary{Name: u.Name, Credentials: []UserCredential{}}
		for _, c := range u.Credentials {
			us.Credentials = append(us.Credentials, UserCredential{Mechanism: c.Mechanism, Iterations: c.Iterations})
		}
		out = append(out, us)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleCreateUser(w http.ResponseWriter, r *http.Request) {
	var req CreateUserRequest
	d := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxUserBody))
	d.DisallowUnknownFields()
	if err := d.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "body: %v", err)
		return
	}
	if req.Name == "" {
		writeError(w, http.StatusBadRequest, "name must not be empty")
		return
	}
	if req.Mechanism == "" {
		req.Mechanism = security.ScramSHA512
	}
	if req.Iterations == 0 {
		req.Iterations = security.DefaultScramIterations
	}
	cred, err := security.DeriveScramCredential(req.Mechanism, req.Name, req.Password, req.Iterations, nil)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if e := s.b.UpsertScramCredential(req.Name, cred); e != nil {
		writeError(w, userStatus(e), "%s", e.Msg)
		return
	}
	writeJSON(w, http.StatusOK, UserSummary{Name: req.Name, Credentials: []UserCredential{{Mechanism: cred.Mechanism, Iterations: cred.Iterations}}})
}

func (s *Server) handleDeleteUser(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	mechs := []string{r.URL.Query().Get("mechanism")}
	if mechs[0] == "" {
		mechs = nil
		for _, u := range s.b.ScramUsers() {
			if u.Name == name {
				for _, c := range u.Credentials {
					mechs = append(mechs, c.Mechanism)
				}
			}
		}
		if len(mechs) == 0 {
			writeError(w, http.StatusNotFound, "user %q has no SCRAM credential", name)
			return
		}
	}
	for _, m := range mechs {
		if e := s.b.DeleteScramCredential(name, m); e != nil {
			writeError(w, userStatus(e), "%s: %s", m, e.Msg)
			return
		}
	}
	writeJSON(w, http.StatusOK, struct{}{})
}
