package controller

import (
	"fmt"
	"slices"
	"sort"
	"unicode"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/security"
)

// SCRAM users: the credentials SASL checks a client's proof against (RFC 5802 §3), one per
// user and mechanism, replicated with the rest of the metadata so that every broker
// authenticates the same users. A credential is the salt, the iteration count, StoredKey
// and ServerKey: enough to verify a proof, not enough to log in. No command carries a
// password, so none reaches the log, a snapshot or a follower.

// Bounds of what a credential may hold. Kafka has no bound on names; these keep one
// command, and the state a broker keeps in memory, small.
const (
	MaxUserNameLength = 256
	MaxSaltLength     = 1024
)

// UpsertScramCredential creates or replaces user's credential for Credential.Mechanism
// (AlterUserScramCredentials' upsertion, after the broker turned the salted password into
// keys).
type UpsertScramCredential struct {
	User       string                   `json:"user"`
	Credential security.ScramCredential `json:"credential"`
}

// DeleteScramCredential removes user's credential for Mechanism; it is RESOURCE_NOT_FOUND
// when there is none.
type DeleteScramCredential struct {
	User      string `json:"user"`
	Mechanism string `json:"mechanism"`
}

func (UpsertScramCredential) op() string { return "upsert_scram_credential" }
func (DeleteScramCredential) op() string { return "delete_scram_credential" }

// User is a SCRAM user and its credentials, by mechanism.
type User struct {
	Name        string                     `json:"name"`
	Credentials []security.ScramCredential `json:"credentials"`
}

// checkUserName refuses a name SCRAM could carry but an operator could not read back: empty,
// too long, not UTF-8 (JSON would rewrite it, and replicas would disagree on the bytes) or
// with control characters.
func checkUserName(name string) *applyErr {
	switch {
	case name == "":
		return reject(kerr.UnacceptableCredential, "Username must not be empty")
	case len(name) > MaxUserNameLength:
		return reject(kerr.UnacceptableCredential, "user name is longer than %d bytes", MaxUserNameLength)
	case !utf8.ValidString(name):
		return reject(kerr.UnacceptableCredential, "user name is not valid UTF-8")
	case slices.ContainsFunc([]rune(name), unicode.IsControl):
		return reject(kerr.UnacceptableCredential, "user name has control characters")
	}
	return nil
}

func checkMechanism(mechanism string) (int, *applyErr) {
	n, err := security.ScramKeySize(mechanism)
	if err != nil {
		return 0, reject(kerr.UnsupportedSaslMechanism, "%v", err)
	}
	return n, nil
}

// checkCredential validates a stored credential: a mechanism this build serves, Kafka's
// iteration bounds, a salt, and keys as long as the mechanism's hash.
func checkCredential(c security.ScramCredential) *applyErr {
	n, e := checkMechanism(c.Mechanism)
	if e != nil {
		return e
	}
	if err := security.CheckIterations(c.Iterations); err != nil {
		return reject(kerr.UnacceptableCredential, "%v", err)
	}
	if len(c.Salt) == 0 {
		return reject(kerr.UnacceptableCredential, "empty salt")
	}
	if len(c.Salt) > MaxSaltLength {
		return reject(kerr.UnacceptableCredential, "salt is longer than %d bytes", MaxSaltLength)
	}
	if len(c.StoredKey) != n || len(c.ServerKey) != n {
		return reject(kerr.UnacceptableCredential, "%s keys must be %d bytes, got %d and %d", c.Mechanism, n, len(c.StoredKey), len(c.ServerKey))
	}
	return nil
}

func cloneCredential(c security.ScramCredential) security.ScramCredential {
	c.Salt, c.StoredKey, c.ServerKey = slices.Clone(c.Salt), slices.Clone(c.StoredKey), slices.Clone(c.ServerKey)
	return c
}

func (s *State) upsertScramCredential(c *UpsertScramCredential) *applyErr {
	if e := checkUserName(c.User); e != nil {
		return e
	}
	if e := checkCredential(c.Credential); e != nil {
		return e
	}
	m := s.users[c.User]
	if m == nil {
		m = map[string]security.ScramCredential{}
		s.users[c.User] = m
	}
	m[c.Credential.Mechanism] = cloneCredential(c.Credential)
	return nil
}

func (s *State) deleteScramCredential(c *DeleteScramCredential) *applyErr {
	if e := checkUserName(c.User); e != nil {
		return e
	}
	if _, e := checkMechanism(c.Mechanism); e != nil {
		return e
	}
	m := s.users[c.User]
	if _, ok := m[c.Mechanism]; !ok {
		return reject(kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
	}
	delete(m, c.Mechanism)
	if len(m) == 0 {
		delete(s.users, c.User)
	}
	return nil
}

// ScramCredential returns user's credential for mechanism. It is what every SASL SCRAM
// exchange asks, so it takes only the read lock and copies three short slices.
func (s *State) ScramCredential(user, mechanism string) (security.ScramCredential, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.users[user][mechanism]
	if !ok {
		return security.ScramCredential{}, false
	}
	return cloneCredential(c), true
}

// Users returns every SCRAM user, by name, each with its credentials by mechanism.
func (s *State) Users() []User {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.userList()
}

func (s *State) userList() []User {
	out := make([]User, 0, len(s.users))
	for name, m := range s.users {
		u := User{Name: name, Credentials: make([]security.ScramCredential, 0, len(m))}
		for _, c := range m {
			u.Credentials = append(u.Credentials, cloneCredential(c))
		}
		sort.Slice(u.Credentials, func(i, j int) bool { return u.Credentials[i].Mechanism < u.Credentials[j].Mechanism })
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// decodeUsers validates a snapshot's users into the state's map.
func decodeUsers(users []User) (map[string]map[string]security.ScramCredential, error) {
	out := make(map[string]map[string]security.ScramCredential, len(users))
	for _, u := range users {
		if e := checkUserName(u.Name); e != nil {
			return nil, fmt.Errorf("user %q: %s", u.Name, e.msg)
		}
		if _, dup := out[u.Name]; dup {
			return nil, fmt.Errorf("user %q listed twice", u.Name)
		}
		if len(u.Credentials) == 0 {
			return nil, fmt.Errorf("user %q has no credential", u.Name)
		}
		m := make(map[string]security.ScramCredential, len(u.Credentials))
		for _, c := range u.Credentials {
			if e := checkCredential(c); e != nil {
				return nil, fmt.Errorf("user %q: %s", u.Name, e.msg)
			}
			if _, dup := m[c.Mechanism]; dup {
				return nil, fmt.Errorf("user %q has two %s credentials", u.Name, c.Mechanism)
			}
			m[c.Mechanism] = cloneCredential(c)
		}
		out[u.Name] = m
	}
	return out, nil
}
