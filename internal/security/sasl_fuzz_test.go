package security

import (
	"bytes"
	"errors"
	"testing"
)

// checkErr fails unless err is nil or one of the two kinds a client may be told.
func checkErr(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, ErrInvalidSASL) && !errors.Is(err, ErrAuthenticationFailed) {
		t.Fatalf("unclassified error %v", err)
	}
}

// FuzzPlain feeds garbage PLAIN messages: each is refused with a classified error (or,
// for the one right message, accepted) and nothing panics.
func FuzzPlain(f *testing.F) {
	store := storeWith(f, "alice", "s3cret", ScramSHA256)
	for _, s := range []string{"\x00alice\x00s3cret", "alice\x00alice\x00s3cret", "", "\x00\x00", "a\x00b\x00c\x00", "\xff\x00\xfe\x00x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		e, _ := NewExchange(Plain, store)
		_, err := e.Step(msg)
		checkErr(t, err)
		if err == nil && !bytes.HasSuffix(msg, []byte("\x00alice\x00s3cret")) {
			t.Fatalf("%q authenticated", msg)
		}
	})
}

// FuzzScram feeds one exchange a sequence of garbage or out-of-order frames (split at
// NUL): SCRAM-SHA-256 and -512 alike, a first message of any size included.
func FuzzScram(f *testing.F) {
	store := storeWith(f, "alice", "s3cret", ScramSHA256, ScramSHA512)
	for _, s := range []string{
		"n,,n=alice,r=abc",
		"n,,n=alice,r=abc\x00c=biws,r=abc,p=AAAA",
		"c=biws,r=abc,p=AAAA\x00n,,n=alice,r=abc",
		"n,,n=alice,r=abc,tokenauth=true",
		"p=tls-unique,,n=alice,r=abc",
		"n,a=alice,n=alice,r=a\x00c=biws,r=a,p=\x00c=biws",
		"y,,m=ext,n=alice,r=x",
		"n,,n=al=2Cice,r=x\x00c=,r=,p=",
	} {
		f.Add([]byte(s), false)
	}
	f.Add(bytes.Repeat([]byte("n,,n=alice,r="), 400), true)
	f.Fuzz(func(t *testing.T, msgs []byte, sha512 bool) {
		mech := ScramSHA256
		if sha512 {
			mech = ScramSHA512
		}
		e, _ := NewExchange(mech, store)
		for _, m := range bytes.Split(msgs, []byte{0}) {
			_, err := e.Step(m)
			checkErr(t, err)
			if err != nil {
				break
			}
		}
		if e.Done() {
			t.Fatalf("%q authenticated without the password", msgs)
		}
	})
}
