package security

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/xdg-go/scram"
)

// mapStore is a CredentialStore over a map keyed by user and mechanism.
type mapStore map[[2]string]ScramCredential

func (m mapStore) ScramCredential(user, mechanism string) (ScramCredential, bool) {
	c, ok := m[[2]string{user, mechanism}]
	return c, ok
}

func storeWith(t testing.TB, user, password string, mechanisms ...string) mapStore {
	t.Helper()
	m := mapStore{}
	for _, mech := range mechanisms {
		c, err := DeriveScramCredential(mech, user, password, DefaultScramIterations, nil)
		if err != nil {
			t.Fatal(err)
		}
		m[[2]string{user, mech}] = c
	}
	return m
}

func mustB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rfcVector is a SCRAM exchange as an RFC prints it, with its fixed nonces.
type rfcVector struct {
	mechanism      string
	hash           scram.HashGeneratorFcn
	salt           string
	serverNonce    string // the part the server appends
	clientFirst    string
	serverFirst    string
	clientFinal    string
	serverFinal    string
	user, password string
	iterations     int
}

func runVector(t *testing.T, v rfcVector) {
	client, err := v.hash.NewClient(v.user, v.password, "")
	if err != nil {
		t.Fatal(err)
	}
	sc := client.GetStoredCredentials(scram.KeyFactors{Salt: string(mustB64(t, v.salt)), Iters: v.iterations})
	store := mapStore{{v.user, v.mechanism}: {Mechanism: v.mechanism, Iterations: v.iterations,
		Salt: mustB64(t, v.salt), StoredKey: sc.StoredKey, ServerKey: sc.ServerKey}}
	e := newScramExchange(v.mechanism, v.hash, store, func() string { return v.serverNonce })
	got, err := e.Step([]byte(v.clientFirst))
	if err != nil || string(got) != v.serverFirst {
		t.Fatalf("server-first = %q, %v; want %q", got, err, v.serverFirst)
	}
	if e.Done() {
		t.Fatal("done after client-first")
	}
	got, err = e.Step([]byte(v.clientFinal))
	if err != nil || string(got) != v.serverFinal {
		t.Fatalf("server-final = %q, %v; want %q", got, err, v.serverFinal)
	}
	if !e.Done() || e.Principal() != UserPrincipal(v.user) {
		t.Fatalf("done %v principal %q", e.Done(), e.Principal())
	}
}

// RFC 5802 §5: SCRAM-SHA-1. Cairn does not offer SHA-1; the vector proves the library's
// server conversation, as Cairn drives it, computes what the RFC says.
func TestScramRFC5802Vector(t *testing.T) {
	runVector(t, rfcVector{
		mechanism: "SCRAM-SHA-1", hash: scram.SHA1, user: "user", password: "pencil", iterations: 4096,
		salt:        "QSXCR+Q6sek8bf92",
		serverNonce: "3rfcNHYJY1ZVvWVs7j",
		clientFirst: "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
		serverFirst: "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
		clientFinal: "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
		serverFinal: "v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
	})
}

// RFC 7677 §3: SCRAM-SHA-256, through the mechanism Cairn serves.
func TestScramRFC7677Vector(t *testing.T) {
	runVector(t, rfcVector{
		mechanism: ScramSHA256, hash: scram.SHA256, user: "user", password: "pencil", iterations: 4096,
		salt:        "W22ZaJ0SNY7soEsUEjb6gQ==",
		serverNonce: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
		clientFirst: "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
		serverFirst: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
		clientFinal: "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
		serverFinal: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
	})
}

// drive runs a client session (franz-go's) against a server exchange to its end.
func drive(t *testing.T, m sasl.Mechanism, e Exchange) error {
	t.Helper()
	sess, msg, err := m.Authenticate(context.Background(), "broker:9092")
	if err != nil {
		t.Fatal(err)
	}
	for {
		reply, err := e.Step(msg)
		if err != nil {
			return err
		}
		done, next, err := sess.Challenge(reply)
		if err != nil {
			t.Fatalf("client refused the server's answer: %v", err)
		}
		if done {
			if !e.Done() {
				t.Fatal("client done, server not")
			}
			return nil
		}
		msg = next
	}
}

func TestScramAgainstFranzGo(t *testing.T) {
	for _, mech := range []string{ScramSHA256, ScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			store := storeWith(t, "alice", "s3cret", mech)
			auth := kscram.Auth{User: "alice", Pass: "s3cret"}
			client := auth.AsSha512Mechanism()
			if mech == ScramSHA256 {
				client = auth.AsSha256Mechanism()
			}
			e, err := NewExchange(mech, store)
			if err != nil {
				t.Fatal(err)
			}
			if err := drive(t, client, e); err != nil {
				t.Fatal(err)
			}
			if e.Principal() != "User:alice" {
				t.Fatalf("principal %q", e.Principal())
			}

			auth.Pass = "wrong"
			client = auth.AsSha512Mechanism()
			if mech == ScramSHA256 {
				client = auth.AsSha256Mechanism()
			}
			e, _ = NewExchange(mech, store)
			errWrong := drive(t, client, e)
			var ae *AuthError
			if !errors.As(errWrong, &ae) || ae.Reason != "wrong password" {
				t.Fatalf("wrong password: %v", errWrong)
			}
			auth.User = "mallory"
			client = auth.AsSha512Mechanism()
			if mech == ScramSHA256 {
				client = auth.AsSha256Mechanism()
			}
			e, _ = NewExchange(mech, store)
			errUnknown := drive(t, client, e)
			if !errors.As(errUnknown, &ae) || ae.Reason != "unknown user" {
				t.Fatalf("unknown user: %v", errUnknown)
			}
			if errWrong.Error() != errUnknown.Error() {
				t.Fatalf("a client can tell an unknown user (%q) from a wrong password (%q)", errUnknown, errWrong)
			}
		})
	}
}

// xdg's own client, with a user name that needs SCRAM's escaping and an authzid equal to
// the user.
func TestScramSHA512AgainstXdgClient(t *testing.T) {
	store := storeWith(t, "bob,=x", "pa55", ScramSHA512)
	client, err := scram.SHA512.NewClient("bob,=x", "pa55", "bob,=x")
	if err != nil {
		t.Fatal(err)
	}
	conv := client.NewConversation()
	e, _ := NewExchange(ScramSHA512, store)
	first, _ := conv.Step("")
	sFirst, err := e.Step([]byte(first))
	if err != nil {
		t.Fatal(err)
	}
	final, err := conv.Step(string(sFirst))
	if err != nil {
		t.Fatal(err)
	}
	sFinal, err := e.Step([]byte(final))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conv.Step(string(sFinal)); err != nil || !conv.Valid() {
		t.Fatalf("client did not verify the server: %v", err)
	}
	if e.Principal() != "User:bob,=x" {
		t.Fatalf("principal %q", e.Principal())
	}
}

// An unknown user gets a server-first message that looks like a real one, with the same
// salt at each attempt, so the first step tells nothing either.
func TestScramUnknownUserGetsStableDecoy(t *testing.T) {
	first := func() string {
		e, _ := NewExchange(ScramSHA256, mapStore{})
		r, err := e.Step([]byte("n,,n=ghost,r=abc"))
		if err != nil {
			t.Fatal(err)
		}
		_, rest, _ := strings.Cut(string(r), ",s=")
		return rest
	}
	if a, b := first(), first(); a != b || !strings.HasSuffix(a, ",i=4096") {
		t.Fatalf("decoy salts %q and %q", a, b)
	}
}

func TestScramRefusals(t *testing.T) {
	store := storeWith(t, "alice", "s3cret", ScramSHA256)
	cases := []struct {
		name string
		msgs []string
		want string
	}{
		{"final first", []string{"c=biws,r=abc,p=AAAA"}, "client-final message sent before client-first"},
		{"garbage", []string{"hello"}, "is not gs2-header"},
		{"empty", []string{""}, "is not gs2-header"},
		{"empty nonce", []string{"n,,n=alice,r="}, "empty nonce"},
		{"empty user", []string{"n,,n=,r=abc"}, "empty user"},
		{"tokenauth", []string{"n,,n=alice,r=abc,tokenauth=true"}, "delegation tokens"},
		{"other extension", []string{"n,,n=alice,r=abc,foo=bar"}, `extension "foo"`},
		{"channel binding", []string{"p=tls-unique,,n=alice,r=abc"}, "channel binding"},
		{"other authzid", []string{"n,a=root,n=alice,r=abc"}, "authorization id"},
		{"oversized", []string{"n,,n=alice,r=" + strings.Repeat("x", MaxSASLMessageBytes)}, "exceeds"},
		{"not utf8", []string{"n,,n=\xff,r=abc"}, "not UTF-8"},
		{"first twice", []string{"n,,n=alice,r=abc", "n,,n=alice,r=abc"}, "client-first message sent twice"},
		{"nonce mismatch", []string{"n,,n=alice,r=abc", "c=biws,r=abcdef,p=AAAA"}, "nonce"},
		{"bad proof base64", []string{"n,,n=alice,r=abc", "c=biws,r=abc,p=!!"}, "client-final message"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, _ := NewExchange(ScramSHA256, store)
			var err error
			for _, m := range c.msgs {
				if _, err = e.Step([]byte(m)); err != nil {
					break
				}
			}
			if !errors.Is(err, ErrInvalidSASL) || errors.Is(err, ErrAuthenticationFailed) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an invalid-SASL error containing %q", err, c.want)
			}
			if _, err := e.Step([]byte("n,,n=alice,r=abc")); err == nil {
				t.Fatal("a failed exchange went on")
			}
		})
	}
}

// A nonce that does not match, when the rest of the message (and its proof) is right for
// the nonce the client chose: the server must still refuse.
func TestScramNonceMismatchWithValidProof(t *testing.T) {
	store := storeWith(t, "alice", "s3cret", ScramSHA256)
	client, _ := scram.SHA256.NewClient("alice", "s3cret", "")
	conv := client.NewConversation()
	e, _ := NewExchange(ScramSHA256, store)
	first, _ := conv.Step("")
	sFirst, err := e.Step([]byte(first))
	if err != nil {
		t.Fatal(err)
	}
	// The client computes its proof over a server-first whose server nonce was changed.
	forged := strings.Replace(string(sFirst), ",s=", "X,s=", 1)
	final, err := conv.Step(forged)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Step([]byte(final)); !errors.Is(err, ErrInvalidSASL) || !strings.Contains(err.Error(), "nonce") {
		t.Fatalf("got %v", err)
	}
}

func TestPlain(t *testing.T) {
	store := storeWith(t, "alice", "s3cret", ScramSHA512)
	run := func(msg string) (Exchange, error) {
		e, _ := NewExchange(Plain, store)
		_, err := e.Step([]byte(msg))
		return e, err
	}
	for _, ok := range []string{"\x00alice\x00s3cret", "alice\x00alice\x00s3cret"} {
		e, err := run(ok)
		if err != nil || !e.Done() || e.Principal() != "User:alice" {
			t.Fatalf("%q: %v %q", ok, err, e.Principal())
		}
		if _, err := e.Step([]byte(ok)); !errors.Is(err, ErrInvalidSASL) {
			t.Fatalf("second PLAIN message: %v", err)
		}
	}
	_, errWrong := run("\x00alice\x00nope")
	_, errUnknown := run("\x00ghost\x00s3cret")
	if !errors.Is(errWrong, ErrAuthenticationFailed) || !errors.Is(errUnknown, ErrAuthenticationFailed) || errWrong.Error() != errUnknown.Error() {
		t.Fatalf("wrong password %v, unknown user %v", errWrong, errUnknown)
	}
	for _, bad := range []string{"", "alice", "alice\x00s3cret", "\x00\x00s3cret", "\x00alice\x00", "a\x00b\x00c\x00d",
		"bob\x00alice\x00s3cret", "\x00" + strings.Repeat("a", MaxSASLMessageBytes) + "\x00x"} {
		if _, err := run(bad); !errors.Is(err, ErrInvalidSASL) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
	// The same user through a SHA-256-only credential.
	store = storeWith(t, "carol", "pw", ScramSHA256)
	e, _ := NewExchange(Plain, store)
	if _, err := e.Step([]byte("\x00carol\x00pw")); err != nil || !e.Done() {
		t.Fatal(err)
	}
}

func TestVerifyPassword(t *testing.T) {
	for _, mech := range []string{ScramSHA256, ScramSHA512} {
		c, err := DeriveScramCredential(mech, "u", "correct horse", 4096, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !VerifyPassword(c, "correct horse") || VerifyPassword(c, "correct horsf") || VerifyPassword(c, "") {
			t.Fatalf("%s: verdicts wrong", mech)
		}
		c.Iterations = 1 << 30
		if VerifyPassword(c, "correct horse") {
			t.Fatalf("%s: out-of-range iterations verified", mech)
		}
	}
	if VerifyPassword(ScramCredential{Mechanism: "MD5"}, "x") {
		t.Fatal("unknown mechanism verified")
	}
}

func TestNewExchangeUnknownMechanism(t *testing.T) {
	if _, err := NewExchange("GSSAPI", mapStore{}); !errors.Is(err, ErrUnknownMechanism) {
		t.Fatalf("got %v", err)
	}
}
