package security

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// librdkafkaFinal is the client-final message librdkafka builds for serverFirst: its
// nonce repeated before the server's (r=cnonce+cnonce+snonce), and a proof computed over
// that message, as rdkafka_sasl_scram.c computes it.
func librdkafkaFinal(t *testing.T, password, clientFirstBare, cnonce, serverFirst string) (final, serverSig string) {
	t.Helper()
	attrs := map[string]string{}
	for _, f := range strings.Split(serverFirst, ",") {
		attrs[f[:1]] = f[2:]
	}
	salt, _ := base64.StdEncoding.DecodeString(attrs["s"])
	iters, _ := strconv.Atoi(attrs["i"])
	salted, err := pbkdf2.Key(sha512.New, password, salt, iters, sha512.Size)
	if err != nil {
		t.Fatal(err)
	}
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(sha512.New, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	stored := sha512.Sum512(clientKey)
	withoutProof := "c=biws,r=" + cnonce + attrs["r"]
	auth := clientFirstBare + "," + serverFirst + "," + withoutProof
	proof := mac(stored[:], auth)
	for i := range proof {
		proof[i] ^= clientKey[i]
	}
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof),
		"v=" + base64.StdEncoding.EncodeToString(mac(mac(salted, "Server Key"), auth))
}

// librdkafka's client-final nonce (its own nonce before the whole server nonce) is
// accepted as Kafka accepts it, with the right server signature; the same message with a
// wrong password, or for an unknown user, still fails as such.
func TestScramLibrdkafkaRepeatedNonce(t *testing.T) {
	store := storeWith(t, "alice", "s3cret", ScramSHA512)
	const cnonce = "BQamr9weh|k5So~{6EKX.:Sb9`{<8t8a" // librdkafka's alphabet: '-' to '~'
	for _, c := range []struct {
		user, password string
		want           error
	}{
		{"alice", "s3cret", nil},
		{"alice", "wrong", ErrAuthenticationFailed},
		{"mallory", "s3cret", ErrAuthenticationFailed},
	} {
		e, err := NewExchange(ScramSHA512, store)
		if err != nil {
			t.Fatal(err)
		}
		bare := "n=" + c.user + ",r=" + cnonce
		first, err := e.Step([]byte("n,," + bare))
		if err != nil {
			t.Fatal(err)
		}
		final, wantSig := librdkafkaFinal(t, c.password, bare, cnonce, string(first))
		got, err := e.Step([]byte(final))
		if !errors.Is(err, c.want) {
			t.Fatalf("%s/%s: %v, want %v", c.user, c.password, err, c.want)
		}
		if c.want == nil && (string(got) != wantSig || !e.Done() || e.Principal() != UserPrincipal("alice")) {
			t.Fatalf("server-final %q (want %q), done %v, principal %q", got, wantSig, e.Done(), e.Principal())
		}
		if c.want != nil && e.Done() {
			t.Fatalf("%s/%s: done after a failed proof", c.user, c.password)
		}
	}
}

// A prefixed nonce does not loosen the other checks: channel binding must match the
// client-first header, the proof must be whole, and the nonce must end with the server's.
func TestScramPrefixedNonceRefusals(t *testing.T) {
	store := storeWith(t, "alice", "s3cret", ScramSHA512)
	const cnonce = "abcdefghijklmnopqrstuvwxyz012345"
	for name, mutate := range map[string]func(string) string{
		"binding":     func(f string) string { return strings.Replace(f, "c=biws", "c=eSws", 1) },
		"short-proof": func(f string) string { return f[:strings.LastIndex(f, ",p=")] + ",p=AAAA" },
		"no-proof":    func(f string) string { return f[:strings.LastIndex(f, ",p=")] },
		"suffix":      func(f string) string { return strings.Replace(f, ",p=", "X,p=", 1) },
	} {
		e, _ := NewExchange(ScramSHA512, store)
		bare := "n=alice,r=" + cnonce
		first, err := e.Step([]byte("n,," + bare))
		if err != nil {
			t.Fatal(err)
		}
		final, _ := librdkafkaFinal(t, "s3cret", bare, cnonce, string(first))
		if _, err := e.Step([]byte(mutate(final))); !errors.Is(err, ErrInvalidSASL) || e.Done() {
			t.Errorf("%s: %v (done %v), want an invalid SASL message", name, err, e.Done())
		}
	}
}
