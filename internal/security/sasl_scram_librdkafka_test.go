package security

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// librdkafkaFinal builds the client-final message librdkafka before 2.6.1 sends for
// serverFirst: r= its own nonce then the server's whole nonce, and a proof over that
// message. It returns the message and the server signature the client expects.
func librdkafkaFinal(t *testing.T, mechanism, password, clientNonce, clientBare, serverFirst string) (string, string) {
	t.Helper()
	h, err := hashFor(mechanism)
	if err != nil {
		t.Fatal(err)
	}
	attrs := map[string]string{}
	for _, f := range strings.Split(serverFirst, ",") {
		k, v, _ := strings.Cut(f, "=")
		attrs[k] = v
	}
	salt, err := base64.StdEncoding.DecodeString(attrs["s"])
	if err != nil {
		t.Fatal(err)
	}
	iters, _ := strconv.Atoi(attrs["i"])
	salted, err := pbkdf2.Key(h, password, salt, iters, h().Size())
	if err != nil {
		t.Fatal(err)
	}
	clientKey := mac(h, salted, []byte("Client Key"))
	sum := h()
	sum.Write(clientKey)
	storedKey := sum.Sum(nil)
	withoutProof := "c=biws,r=" + clientNonce + attrs["r"]
	authMessage := []byte(clientBare + "," + serverFirst + "," + withoutProof)
	proof := mac(h, storedKey, authMessage)
	for i := range proof {
		proof[i] ^= clientKey[i]
	}
	serverSig := mac(h, mac(h, salted, []byte("Server Key")), authMessage)
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof), "v=" + base64.StdEncoding.EncodeToString(serverSig)
}

// kcat, confluent-kafka-python and every librdkafka before 2.6.1 authenticate with the
// doubled nonce: the right password is accepted (with the server signature the client
// checks), a wrong one and an unknown user are refused as wrong credentials.
func TestScramAcceptsLibrdkafkaDoubledNonce(t *testing.T) {
	const clientNonce = "-.jvZ@aipBX_Z|<<T>@FZKPly-\\U@;TEw="
	for _, mech := range []string{ScramSHA256, ScramSHA512} {
		store := storeWith(t, "app", "s3cret", mech)
		for _, tc := range []struct {
			user, password string
			wantReason     string // "" accepted
		}{
			{"app", "s3cret", ""},
			{"app", "wrong", "wrong password"},
			{"nobody", "s3cret", "unknown user"},
		} {
			e, _ := NewExchange(mech, store)
			bare := "n=" + tc.user + ",r=" + clientNonce
			sFirst, err := e.Step([]byte("n,," + bare))
			if err != nil {
				t.Fatal(err)
			}
			final, wantSig := librdkafkaFinal(t, mech, tc.password, clientNonce, bare, string(sFirst))
			reply, err := e.Step([]byte(final))
			if tc.wantReason == "" {
				if err != nil || !e.Done() || e.Principal() != UserPrincipal("app") {
					t.Fatalf("%s: got %v, done %v, principal %q", mech, err, e.Done(), e.Principal())
				}
				if !hmac.Equal(reply, []byte(wantSig)) {
					t.Fatalf("%s: server-final %q, want %q", mech, reply, wantSig)
				}
				continue
			}
			var ae *AuthError
			if !errors.As(err, &ae) || ae.Reason != tc.wantReason || e.Done() {
				t.Fatalf("%s %s/%s: got %v, done %v; want %s", mech, tc.user, tc.password, err, e.Done(), tc.wantReason)
			}
		}
	}
}

// Only the exact doubled form is accepted beside the standard one: any other prefix, and
// a doubled nonce whose channel binding or proof is malformed, are refused.
func TestScramLibrdkafkaFormIsExact(t *testing.T) {
	const clientNonce = "abcdefghijklmnopqrstuvwxyz012345"
	store := storeWith(t, "app", "s3cret", ScramSHA512)
	bare := "n=app,r=" + clientNonce
	for name, mutate := range map[string]func(string) string{
		"another prefix":   func(m string) string { return strings.Replace(m, "r="+clientNonce, "r=x"+clientNonce[1:], 1) },
		"channel binding":  func(m string) string { return strings.Replace(m, "c=biws", "c=eSws", 1) },
		"proof not base64": func(m string) string { return m[:strings.LastIndex(m, ",p=")] + ",p=!!" },
		"no proof":         func(m string) string { return m[:strings.LastIndex(m, ",p=")] },
	} {
		e, _ := NewExchange(ScramSHA512, store)
		sFirst, err := e.Step([]byte("n,," + bare))
		if err != nil {
			t.Fatal(err)
		}
		final, _ := librdkafkaFinal(t, ScramSHA512, "s3cret", clientNonce, bare, string(sFirst))
		if _, err := e.Step([]byte(mutate(final))); !errors.Is(err, ErrInvalidSASL) || e.Done() {
			t.Fatalf("%s: got %v, done %v; want an invalid SASL message", name, err, e.Done())
		}
	}
}

// FuzzScramLibrdkafkaFinal reaches the doubled-nonce path, which a fuzzer cannot find on
// its own (the server nonce is random): any channel binding and any rest after the
// doubled nonce, proof included, must be refused without a panic.
func FuzzScramLibrdkafkaFinal(f *testing.F) {
	const clientNonce = "abcdefghijklmnopqrstuvwxyz012345"
	store := storeWith(f, "app", "s3cret", ScramSHA512)
	f.Add("biws", ",p=AAAA")
	f.Add("biws", ",p="+strings.Repeat("A", 88))
	f.Add("", "")
	f.Add("biws", ",e=x,p=,p=AAAA")
	f.Fuzz(func(t *testing.T, cbind, rest string) {
		e, _ := NewExchange(ScramSHA512, store)
		sFirst, err := e.Step([]byte("n,,n=app,r=" + clientNonce))
		if err != nil {
			t.Fatal(err)
		}
		nonce, _, _ := strings.Cut(strings.TrimPrefix(string(sFirst), "r="), ",")
		_, err = e.Step([]byte("c=" + cbind + ",r=" + clientNonce + nonce + rest))
		checkErr(t, err)
		if err == nil || e.Done() {
			t.Fatalf("c=%q rest %q authenticated without the password", cbind, rest)
		}
	})
}
