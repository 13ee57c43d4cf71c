package security

import (
	"strings"
	"testing"
)

// FuzzScramPrefixedNonce reaches the path for librdkafka's client-final nonce (anything
// before the whole server nonce), which a fuzzer cannot find alone since the server nonce
// is random: any channel binding, prefix and rest, proof included, must be refused
// without a panic.
func FuzzScramPrefixedNonce(f *testing.F) {
	const clientNonce = "abcdefghijklmnopqrstuvwxyz012345"
	store := storeWith(f, "app", "s3cret", ScramSHA512)
	f.Add("biws", clientNonce, ",p=AAAA")
	f.Add("biws", clientNonce, ",p="+strings.Repeat("A", 88))
	f.Add("", "x", "")
	f.Add("biws", "", ",e=x,p=,p=AAAA")
	f.Fuzz(func(t *testing.T, cbind, prefix, rest string) {
		e, _ := NewExchange(ScramSHA512, store)
		sFirst, err := e.Step([]byte("n,,n=app,r=" + clientNonce))
		if err != nil {
			t.Fatal(err)
		}
		nonce, _, _ := strings.Cut(strings.TrimPrefix(string(sFirst), "r="), ",")
		_, err = e.Step([]byte("c=" + cbind + ",r=" + prefix + nonce + rest))
		checkErr(t, err)
		if err == nil || e.Done() {
			t.Fatalf("c=%q prefix %q rest %q authenticated without the password", cbind, prefix, rest)
		}
	})
}
