package security

import (
	"crypto/hmac"
	"errors"
	"fmt"
)

// ScramKeySize is the length of a mechanism's StoredKey, ServerKey and salted password: the
// size of its hash (32 bytes for SCRAM-SHA-256, 64 for SCRAM-SHA-512).
func ScramKeySize(mechanism string) (int, error) {
	h, err := hashFor(mechanism)
	if err != nil {
		return 0, err
	}
	return h().Size(), nil
}

// ScramCredentialFromSalted computes the stored credential from a salted password
// (Hi(password, salt, iterations) of RFC 5802 §3), which is what AlterUserScramCredentials
// carries: the client did the expensive derivation, and the password itself never reaches
// the cluster. The salted password must be as long as the mechanism's hash, since that is
// what every client derives when it authenticates; anything else could never log in.
func ScramCredentialFromSalted(mechanism string, iterations int, salt, saltedPassword []byte) (ScramCredential, error) {
	h, err := hashFor(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	if err := CheckIterations(iterations); err != nil {
		return ScramCredential{}, err
	}
	if len(salt) == 0 {
		return ScramCredential{}, errors.New("empty salt")
	}
	if n := h().Size(); len(saltedPassword) != n {
		return ScramCredential{}, fmt.Errorf("salted password of %d bytes; %s needs %d", len(saltedPassword), mechanism, n)
	}
	mac := hmac.New(h, saltedPassword)
	mac.Write([]byte("Client Key"))
	clientKey := mac.Sum(nil)
	stored := h()
	stored.Write(clientKey)
	mac = hmac.New(h, saltedPassword)
	mac.Write([]byte("Server Key"))
	return ScramCredential{
		Mechanism:  mechanism,
		Iterations: iterations,
		Salt:       append([]byte(nil), salt...),
		StoredKey:  stored.Sum(nil),
		ServerKey:  mac.Sum(nil),
	}, nil
}
