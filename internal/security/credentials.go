package security

import (
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/xdg-go/scram"
)

// SCRAM mechanisms, as clients name them in SaslHandshake.
const (
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// Iteration bounds, Kafka's: fewer than 4096 iterations is refused (RFC 7677 asks for at
// least 4096) and more than 16384 too, since every authentication pays for them.
const (
	MinScramIterations     = 4096
	MaxScramIterations     = 16384
	DefaultScramIterations = 4096
)

// ScramCredential is what the cluster keeps of a SCRAM user's password for one mechanism
// (RFC 5802 §3): enough to verify a client's proof and to prove the server's identity, and
// not enough to log in as the user.
type ScramCredential struct {
	Mechanism  string `json:"mechanism"`
	Iterations int    `json:"iterations"`
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

// ErrUnknownMechanism reports a SASL mechanism this package does not serve.
var ErrUnknownMechanism = errors.New("unsupported SASL mechanism")

// hashFor returns the hash of a SCRAM mechanism.
func hashFor(mechanism string) (scram.HashGeneratorFcn, error) {
	switch mechanism {
	case ScramSHA256:
		return scram.SHA256, nil
	case ScramSHA512:
		return scram.SHA512, nil
	}
	return nil, fmt.Errorf("%w %q (SCRAM-SHA-256 or SCRAM-SHA-512)", ErrUnknownMechanism, mechanism)
}

// CheckIterations refuses an iteration count outside Kafka's bounds.
func CheckIterations(n int) error {
	if n < MinScramIterations || n > MaxScramIterations {
		return fmt.Errorf("iterations %d out of range [%d, %d]", n, MinScramIterations, MaxScramIterations)
	}
	return nil
}

// DeriveScramCredential computes the stored credential of password for mechanism, with a
// fresh random salt when salt is nil. The password is SASLprep-normalised first (RFC 4013),
// as clients do before they compute their proof.
func DeriveScramCredential(mechanism, user, password string, iterations int, salt []byte) (ScramCredential, error) {
	h, err := hashFor(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	if err := CheckIterations(iterations); err != nil {
		return ScramCredential{}, err
	}
	if password == "" {
		return ScramCredential{}, errors.New("empty password")
	}
	if salt == nil {
		salt = make([]byte, 32)
		if _, err := rand.Read(salt); err != nil {
			return ScramCredential{}, err
		}
	}
	client, err := h.NewClient(user, password, "")
	if err != nil {
		return ScramCredential{}, fmt.Errorf("password: %w", err)
	}
	sc, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iterations})
	if err != nil {
		return ScramCredential{}, err
	}
	return ScramCredential{Mechanism: mechanism, Iterations: iterations, Salt: salt, StoredKey: sc.StoredKey, ServerKey: sc.ServerKey}, nil
}

// CredentialStore finds a user's SCRAM credential for a mechanism. The broker implements it
// over the controller's replicated state; PLAIN checks a password against the same
// credentials, so a user exists once for every mechanism it has a credential for.
type CredentialStore interface {
	ScramCredential(user, mechanism string) (ScramCredential, bool)
}
