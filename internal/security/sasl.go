package security

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/xdg-go/scram"
)

// Plain is the PLAIN mechanism's name (RFC 4616), as clients send it in SaslHandshake.
const Plain = "PLAIN"

// MaxSASLMessageBytes bounds one client message of an exchange. The largest legitimate
// one, a SCRAM client-final message, is a nonce and a proof: well under a KiB. Refusing
// more before parsing keeps an unauthenticated client from making the server hash or
// split megabytes.
const MaxSASLMessageBytes = 4096

// ErrAuthenticationFailed is the one verdict a client gets for a wrong password or an
// unknown user. The two are never told apart outside the server's log, so that the error
// cannot be used to find out which users exist.
var ErrAuthenticationFailed = errors.New("authentication failed: invalid username or password")

// ErrInvalidSASL reports a client message that is malformed, arrives out of order, is too
// large, or asks for something Cairn does not serve (delegation tokens, channel binding, an
// authorization id other than the user). It says the client is broken, not that its
// credentials are wrong.
var ErrInvalidSASL = errors.New("invalid SASL message")

// AuthError is an authentication failure with the reason the server's log gives. Its
// Error is the same for every reason; Reason is for operators only.
type AuthError struct {
	// Reason is "unknown user" or "wrong password".
	Reason string
}

func (e *AuthError) Error() string        { return ErrAuthenticationFailed.Error() }
func (e *AuthError) Is(target error) bool { return target == ErrAuthenticationFailed }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidSASL, fmt.Sprintf(format, args...))
}

// Exchange is the server's side of one SASL authentication. Step takes the client's
// messages one at a time and returns what to send back; once the exchange has succeeded
// Done is true and Principal names the client. The first error ends the exchange: every
// later Step returns an error too. An Exchange is used by one goroutine.
type Exchange interface {
	// Mechanism is the exchange's SASL mechanism.
	Mechanism() string
	// Step consumes one client message. The error, if any, wraps ErrAuthenticationFailed
	// or ErrInvalidSASL.
	Step(clientMsg []byte) (serverMsg []byte, err error)
	// Done reports whether the client has authenticated.
	Done() bool
	// User is the user name the client gave, once parsed ("" before): for logs.
	User() string
	// Principal is the authenticated principal; "" until Done.
	Principal() Principal
}

// Mechanisms lists the SASL mechanisms NewExchange serves.
func Mechanisms() []string { return []string{Plain, ScramSHA256, ScramSHA512} }

// NewExchange starts a server exchange of mechanism whose credentials come from store.
func NewExchange(mechanism string, store CredentialStore) (Exchange, error) {
	switch mechanism {
	case Plain:
		return &plainExchange{store: store}, nil
	case ScramSHA256, ScramSHA512:
		h, _ := hashFor(mechanism)
		return newScramExchange(mechanism, h, store, nil), nil
	}
	return nil, fmt.Errorf("%w %q (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", ErrUnknownMechanism, mechanism)
}

// VerifyPassword reports whether password is the one cred was derived from: it recomputes
// StoredKey from the credential's salt and iterations and compares in constant time. A
// credential with an iteration count outside Kafka's bounds never verifies, so a damaged
// record cannot make a check arbitrarily slow.
func VerifyPassword(cred ScramCredential, password string) bool {
	h, err := hashFor(cred.Mechanism)
	if err != nil || CheckIterations(cred.Iterations) != nil || len(cred.Salt) == 0 || password == "" {
		return false
	}
	c, err := h.NewClient("", password, "")
	if err != nil {
		return false
	}
	sc, err := c.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(cred.Salt), Iters: cred.Iterations})
	if err != nil {
		return false
	}
	return hmac.Equal(sc.StoredKey, cred.StoredKey)
}

// decoySecret keys the decoy credentials of unknown users. It is per process: within a
// process an unknown user always sees the same salt, as a real one does.
var decoySecret = func() []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("security: no randomness for decoy credentials: " + err.Error())
	}
	return b
}()

// decoyCredential stands in for the credential of a user that does not exist, so that an
// exchange for an unknown user costs the same and fails at the same step, with the same
// error, as one with a wrong password. Its salt is derived from the user's name (a real
// user's salt does not change between attempts either); its keys match no password.
func decoyCredential(mechanism, user string) ScramCredential {
	mac := hmac.New(sha256.New, decoySecret)
	mac.Write([]byte(mechanism + "\x00" + user))
	sum := mac.Sum(nil)
	keyLen := 32
	if mechanism == ScramSHA512 {
		keyLen = 64
	}
	key := make([]byte, keyLen)
	rand.Read(key)
	return ScramCredential{Mechanism: mechanism, Iterations: DefaultScramIterations, Salt: sum[:16], StoredKey: key, ServerKey: key}
}

// plainExchange is PLAIN (RFC 4616): one message, "authzid NUL user NUL password", checked
// against the user's SCRAM credential. It has no server message.
type plainExchange struct {
	store     CredentialStore
	user      string
	principal Principal
	ended     bool
}

func (e *plainExchange) Mechanism() string    { return Plain }
func (e *plainExchange) Done() bool           { return e.principal != "" }
func (e *plainExchange) User() string         { return e.user }
func (e *plainExchange) Principal() Principal { return e.principal }

func (e *plainExchange) Step(msg []byte) ([]byte, error) {
	if e.ended {
		return nil, invalidf("PLAIN exchange already ended")
	}
	e.ended = true
	if len(msg) > MaxSASLMessageBytes {
		return nil, invalidf("PLAIN message of %d bytes exceeds %d", len(msg), MaxSASLMessageBytes)
	}
	parts := strings.Split(string(msg), "\x00")
	if len(parts) != 3 {
		return nil, invalidf("PLAIN message is not authzid NUL user NUL password")
	}
	authzid, user, password := parts[0], parts[1], parts[2]
	if user == "" || password == "" {
		return nil, invalidf("PLAIN message has an empty user or password")
	}
	if !utf8.ValidString(user) || !utf8.ValidString(authzid) {
		return nil, invalidf("PLAIN user is not UTF-8")
	}
	e.user = user
	if authzid != "" && authzid != user {
		return nil, invalidf("authorization id %q differs from user %q: a client can only act as itself", authzid, user)
	}
	// Either stored mechanism holds the same password; SHA-512 is tried first only
	// because it is listed first, and a user with neither is checked against a decoy so
	// the answer takes as long as for a wrong password.
	var cred ScramCredential
	found := false
	if e.store != nil {
		for _, m := range []string{ScramSHA512, ScramSHA256} {
			if cred, found = e.store.ScramCredential(user, m); found {
				break
			}
		}
	}
	if !found {
		VerifyPassword(decoyCredential(ScramSHA256, user), password)
		return nil, &AuthError{Reason: "unknown user"}
	}
	if !VerifyPassword(cred, password) {
		return nil, &AuthError{Reason: "wrong password"}
	}
	e.principal = UserPrincipal(user)
	return nil, nil
}
