package security

import (
	"bytes"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"hash"
	"testing"
)

// A credential computed from a salted password, as kadm and Kafka's tools send it, is the
// one DeriveScramCredential computes from the password: a user created either way logs in.
func TestScramCredentialFromSaltedMatchesDerived(t *testing.T) {
	salt := []byte("a fixed salt of some length")
	for mech, h := range map[string]func() hash.Hash{ScramSHA256: sha256.New, ScramSHA512: sha512.New} {
		want, err := DeriveScramCredential(mech, "alice", "pencil", 4096, salt)
		if err != nil {
			t.Fatal(err)
		}
		salted, err := pbkdf2.Key(h, "pencil", salt, 4096, h().Size())
		if err != nil {
			t.Fatal(err)
		}
		got, err := ScramCredentialFromSalted(mech, 4096, salt, salted)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.StoredKey, want.StoredKey) || !bytes.Equal(got.ServerKey, want.ServerKey) || !bytes.Equal(got.Salt, salt) || got.Iterations != 4096 || got.Mechanism != mech {
			t.Fatalf("%s: got %+v, want %+v", mech, got, want)
		}
		if n, _ := ScramKeySize(mech); len(got.StoredKey) != n || len(got.ServerKey) != n {
			t.Fatalf("%s: key sizes %d/%d, want %d", mech, len(got.StoredKey), len(got.ServerKey), n)
		}
	}
}

func TestScramCredentialFromSaltedRefuses(t *testing.T) {
	ok := make([]byte, 32)
	for name, c := range map[string]struct {
		mech  string
		iters int
		salt  []byte
		sp    []byte
	}{
		"unknown mechanism": {"SCRAM-SHA-1", 4096, []byte("s"), ok},
		"too few":           {ScramSHA256, 4095, []byte("s"), ok},
		"too many":          {ScramSHA256, 16385, []byte("s"), ok},
		"empty salt":        {ScramSHA256, 4096, nil, ok},
		"short password":    {ScramSHA256, 4096, []byte("s"), ok[:31]},
		"512 wants 64":      {ScramSHA512, 4096, []byte("s"), ok},
	} {
		if _, err := ScramCredentialFromSalted(c.mech, c.iters, c.salt, c.sp); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
