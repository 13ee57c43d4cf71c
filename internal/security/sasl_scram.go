package security

import (
	"strings"
	"unicode/utf8"

	"github.com/xdg-go/scram"
)

// scramExchange is SCRAM (RFC 5802) on xdg-go/scram's server conversation: client-first,
// server-first, client-final, server-final. The library checks the nonce, the channel
// binding header and the proof; what it leaves to its caller is done here: bounds,
// Kafka's extensions, the authorization id, and keeping unknown users indistinguishable
// from wrong passwords.
type scramExchange struct {
	mechanism string
	store     CredentialStore
	keyLen    int
	conv      *scram.ServerConversation
	hash      scram.HashGeneratorFcn

	// What the Kafka nonce rule (sasl_scram_nonce.go) needs to check a client-final
	// message itself: the messages so far and the credential the proof is checked against.
	gs2Header, clientFirstBare, serverFirst, serverNonce string
	cred                                                 scram.StoredCredentials

	step      int // messages consumed
	failed    bool
	unknown   bool // the user has no credential: a decoy stands in
	user      string
	principal Principal
}

// newScramExchange makes an exchange of mechanism on hash h; nonce, when set, replaces
// the random server nonce (tests with the RFCs' fixed nonces).
func newScramExchange(mechanism string, h scram.HashGeneratorFcn, store CredentialStore, nonce scram.NonceGeneratorFcn) *scramExchange {
	e := &scramExchange{mechanism: mechanism, store: store, keyLen: h().Size(), hash: h}
	srv, _ := h.NewServer(e.lookup) // NewServer cannot fail
	if nonce != nil {
		srv = srv.WithNonceGenerator(nonce)
	}
	e.conv = srv.NewConversation()
	return e
}

func (e *scramExchange) Mechanism() string    { return e.mechanism }
func (e *scramExchange) Done() bool           { return e.principal != "" }
func (e *scramExchange) User() string         { return e.user }
func (e *scramExchange) Principal() Principal { return e.principal }

// lookup is the library's credential callback. It never fails: an unknown user gets a
// decoy, so the exchange goes on to fail at the proof, as a wrong password does.
func (e *scramExchange) lookup(user string) (scram.StoredCredentials, error) {
	var cred ScramCredential
	ok := false
	if e.store != nil {
		cred, ok = e.store.ScramCredential(user, e.mechanism)
	}
	if !ok || cred.Mechanism != e.mechanism {
		e.unknown = true
		cred = decoyCredential(e.mechanism, user)
		cred.StoredKey, cred.ServerKey = cred.StoredKey[:e.keyLen], cred.ServerKey[:e.keyLen]
	}
	e.cred = scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(cred.Salt), Iters: cred.Iterations},
		StoredKey:  cred.StoredKey,
		ServerKey:  cred.ServerKey,
	}
	return e.cred, nil
}

func (e *scramExchange) Step(msg []byte) ([]byte, error) {
	if e.failed {
		return nil, invalidf("%s exchange already failed", e.mechanism)
	}
	reply, err := e.step1(msg)
	if err != nil {
		e.failed = true
	}
	return reply, err
}

func (e *scramExchange) step1(msg []byte) ([]byte, error) {
	if len(msg) > MaxSASLMessageBytes {
		return nil, invalidf("%s client message of %d bytes exceeds %d", e.mechanism, len(msg), MaxSASLMessageBytes)
	}
	if !utf8.Valid(msg) {
		return nil, invalidf("%s client message is not UTF-8", e.mechanism)
	}
	e.step++
	switch e.step {
	case 1:
		return e.clientFirst(string(msg))
	case 2:
		return e.clientFinal(string(msg))
	}
	return nil, invalidf("%s exchange already complete", e.mechanism)
}

func (e *scramExchange) clientFirst(msg string) ([]byte, error) {
	fields := strings.Split(msg, ",")
	if len(fields) < 4 || !strings.HasPrefix(fields[2], "n=") || !strings.HasPrefix(fields[3], "r=") {
		if strings.HasPrefix(msg, "c=") {
			return nil, invalidf("%s client-final message sent before client-first", e.mechanism)
		}
		return nil, invalidf("%s client-first message is not gs2-header,n=user,r=nonce", e.mechanism)
	}
	if strings.HasPrefix(fields[0], "p=") {
		return nil, invalidf("channel binding (SCRAM-PLUS) is not served")
	}
	if len(fields[3]) == len("r=") {
		return nil, invalidf("%s client-first message has an empty nonce", e.mechanism)
	}
	// Kafka carries SCRAM extensions (RFC 5802 §5.1) after the nonce; the only one it
	// defines asks for delegation-token authentication.
	for _, ext := range fields[4:] {
		key, _, _ := strings.Cut(ext, "=")
		if key == "tokenauth" {
			return nil, invalidf("delegation tokens (tokenauth) are not served; authenticate with a user's password")
		}
		return nil, invalidf("SCRAM extension %q is not served", key)
	}
	reply, err := e.conv.Step(msg)
	if err != nil {
		return nil, invalidf("%s client-first message: %v", e.mechanism, err)
	}
	e.user = e.conv.Username()
	if e.user == "" {
		return nil, invalidf("%s client-first message has an empty user", e.mechanism)
	}
	if a := e.conv.AuthzID(); a != "" && a != e.user {
		return nil, invalidf("authorization id %q differs from user %q: a client can only act as itself", a, e.user)
	}
	e.remember(fields, msg, reply)
	return []byte(reply), nil
}

func (e *scramExchange) clientFinal(msg string) ([]byte, error) {
	if strings.HasPrefix(msg, "n,") || strings.HasPrefix(msg, "y,") {
		return nil, invalidf("%s client-first message sent twice", e.mechanism)
	}
	if e.nonceHasPrefix(msg) {
		return e.clientFinalWithPrefixedNonce(msg)
	}
	reply, err := e.conv.Step(msg)
	if err != nil {
		if reply == scram.ErrInvalidProof {
			if e.unknown {
				return nil, &AuthError{Reason: "unknown user"}
			}
			return nil, &AuthError{Reason: "wrong password"}
		}
		return nil, invalidf("%s client-final message: %v", e.mechanism, err)
	}
	if !e.conv.Valid() {
		return nil, invalidf("%s conversation ended without a verdict", e.mechanism) // not reached
	}
	e.principal = UserPrincipal(e.user)
	return []byte(reply), nil
}
