package controller

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/security"
)

// testCredential is a well-formed credential for mechanism whose bytes are all seed.
func testCredential(mechanism string, seed byte) security.ScramCredential {
	n, _ := security.ScramKeySize(mechanism)
	return security.ScramCredential{
		Mechanism:  mechanism,
		Iterations: 4096,
		Salt:       bytes.Repeat([]byte{seed}, 4),
		StoredKey:  bytes.Repeat([]byte{seed}, n),
		ServerKey:  bytes.Repeat([]byte{seed + 1}, n),
	}
}

func credJSON(mechanism string, seed byte) string {
	b, _ := json.Marshal(testCredential(mechanism, seed))
	return string(b)
}

func TestScramCredentials(t *testing.T) {
	h := newHarness(t)
	a256, a512 := testCredential(security.ScramSHA256, 1), testCredential(security.ScramSHA512, 2)
	h.ok(UpsertScramCredential{User: "alice", Credential: a256})
	h.ok(UpsertScramCredential{User: "alice", Credential: a512})
	got, ok := h.s.ScramCredential("alice", security.ScramSHA256)
	eq(t, ok, true)
	eq(t, got, a256)
	if _, ok := h.s.ScramCredential("alice", "PLAIN"); ok {
		t.Fatal("a credential for an unknown mechanism")
	}
	if _, ok := h.s.ScramCredential("bob", security.ScramSHA256); ok {
		t.Fatal("a credential for an unknown user")
	}

	// An upsert replaces: a rotated password.
	rotated := testCredential(security.ScramSHA256, 9)
	rotated.Iterations = 8192
	h.ok(UpsertScramCredential{User: "alice", Credential: rotated})
	got, _ = h.s.ScramCredential("alice", security.ScramSHA256)
	eq(t, got, rotated)
	eq(t, h.s.Users(), []User{{Name: "alice", Credentials: []security.ScramCredential{rotated, a512}}})

	// Deleting one mechanism keeps the other; deleting the last removes the user.
	h.ok(DeleteScramCredential{User: "alice", Mechanism: security.ScramSHA256})
	if _, ok := h.s.ScramCredential("alice", security.ScramSHA256); ok {
		t.Fatal("deleted credential still served")
	}
	eq(t, h.s.Users(), []User{{Name: "alice", Credentials: []security.ScramCredential{a512}}})
	res := h.apply(DeleteScramCredential{User: "alice", Mechanism: security.ScramSHA256})
	eq(t, res.Err, kerr.ResourceNotFound)
	h.ok(DeleteScramCredential{User: "alice", Mechanism: security.ScramSHA512})
	eq(t, h.s.Users(), []User{})

	// What a reader gets is a copy: changing it changes nothing stored.
	h.ok(UpsertScramCredential{User: "carol", Credential: a256})
	c, _ := h.s.ScramCredential("carol", security.ScramSHA256)
	c.StoredKey[0] ^= 0xff
	c2, _ := h.s.ScramCredential("carol", security.ScramSHA256)
	eq(t, c2, a256)
}

func TestScramCredentialsRefused(t *testing.T) {
	ok256 := testCredential(security.ScramSHA256, 1)
	with := func(f func(*security.ScramCredential)) security.ScramCredential {
		c := testCredential(security.ScramSHA256, 1)
		f(&c)
		return c
	}
	cases := map[string]struct {
		cmd  Command
		want *kerr.Error
	}{
		"empty user":        {UpsertScramCredential{User: "", Credential: ok256}, kerr.UnacceptableCredential},
		"long user":         {UpsertScramCredential{User: strings.Repeat("u", MaxUserNameLength+1), Credential: ok256}, kerr.UnacceptableCredential},
		"control character": {UpsertScramCredential{User: "a\nb", Credential: ok256}, kerr.UnacceptableCredential},
		"unknown mechanism": {UpsertScramCredential{User: "u", Credential: with(func(c *security.ScramCredential) { c.Mechanism = "SCRAM-SHA-1" })}, kerr.UnsupportedSaslMechanism},
		"no mechanism":      {UpsertScramCredential{User: "u", Credential: with(func(c *security.ScramCredential) { c.Mechanism = "" })}, kerr.UnsupportedSaslMechanism},
		"too few":           {UpsertScramCredential{User: "u", Credential: with(func(c *security.ScramCredential) { c.Iterations = 4095 })}, kerr.UnacceptableCredential},
		"too many":          {UpsertScramCredential{User: "u", Credential: with(func(c *security.ScramCredential) { c.Iterations = 16385 })}, kerr.UnacceptableCredential},
		"empty salt":        {UpsertScramCredential{User: "u", Credential: with(func(c *security.ScramCredential) { c.Salt = nil })}, kerr.UnacceptableCredential},
		"long salt":         {UpsertScramCredential{User: "u", Credential: with(func(c *security.ScramCredential) { c.Salt = make([]byte, MaxSaltLength+1) })}, kerr.UnacceptableCredential},
		"short stored key":  {UpsertScramCredential{User: "u", Credential: with(func(c *security.ScramCredential) { c.StoredKey = c.StoredKey[:31] })}, kerr.UnacceptableCredential},
		"512-long keys":     {UpsertScramCredential{User: "u", Credential: with(func(c *security.ScramCredential) { c.ServerKey = make([]byte, 64) })}, kerr.UnacceptableCredential},
		"delete unknown":    {DeleteScramCredential{User: "u", Mechanism: security.ScramSHA256}, kerr.ResourceNotFound},
		"delete bad mech":   {DeleteScramCredential{User: "u", Mechanism: "PLAIN"}, kerr.UnsupportedSaslMechanism},
		"delete no user":    {DeleteScramCredential{User: "", Mechanism: security.ScramSHA256}, kerr.UnacceptableCredential},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			before, _ := h.s.Snapshot()
			res := h.apply(c.cmd)
			if res.Err != c.want {
				t.Fatalf("got %v (%s), want %v", res.Err, res.Msg, c.want)
			}
			// Refused changes nothing but the applied index.
			after, _ := h.s.Snapshot()
			eq(t, strings.Replace(string(after), `"applied":2`, `"applied":1`, 1), string(before))
		})
	}
}

// JSON cannot carry a name that is not UTF-8 (encoding rewrites it), but a name reaching
// the check some other way is refused, not stored.
func TestUserNameNotUTF8(t *testing.T) {
	if e := checkUserName("a\xff"); e == nil || e.code != kerr.UnacceptableCredential {
		t.Fatalf("got %v", e)
	}
}

// The credential commands came with version 5: an older build stops at them rather than
// skipping them, and the snapshot of a state with users never carries a password.
func TestScramCommandEncoding(t *testing.T) {
	b := mustEncode(t, DeleteScramCredential{User: "alice", Mechanism: security.ScramSHA256})
	eq(t, string(b), `{"v":5,"op":"delete_scram_credential","body":{"user":"alice","mechanism":"SCRAM-SHA-256"}}`)
	if _, err := DecodeCommand([]byte(`{"v":4,"op":"delete_scram_credential","body":{"user":"alice","mechanism":"SCRAM-SHA-256"}}`)); err == nil {
		t.Fatal("a version-5 command in a version-4 envelope was read")
	}
	cred, err := security.DeriveScramCredential(security.ScramSHA512, "alice", "correct horse battery", 4096, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	h.ok(UpsertScramCredential{User: "alice", Credential: cred})
	snap, _ := h.s.Snapshot()
	if bytes.Contains(snap, []byte("correct horse")) {
		t.Fatalf("snapshot carries the password: %s", snap)
	}
	r, err := DecodeSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := r.ScramCredential("alice", security.ScramSHA512)
	eq(t, got, cred)
}
