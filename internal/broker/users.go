package broker

import (
	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/security"
)

// SCRAM users, as the controller replicates them. Every broker serves the credentials from
// its own applied replica of the state, so an authentication needs no round trip; a change
// is proposed from any broker and answered once this broker's replica applied it.

var _ security.CredentialStore = (*Broker)(nil)

// ScramCredential implements security.CredentialStore from the applied controller state.
// It is called on every SASL authentication: a read lock and a map lookup.
func (b *Broker) ScramCredential(user, mechanism string) (security.ScramCredential, bool) {
	return b.state().ScramCredential(user, mechanism)
}

// ScramUsers lists every SCRAM user with its credentials, by name.
func (b *Broker) ScramUsers() []controller.User { return b.state().Users() }

// UpsertScramCredential creates or replaces user's credential for cred.Mechanism. The
// controller validates it (mechanism, iterations, salt, key lengths, the name).
func (b *Broker) UpsertScramCredential(user string, cred security.ScramCredential) *Error {
	_, err := b.propose(controller.UpsertScramCredential{User: user, Credential: cred})
	return err
}

// DeleteScramCredential removes user's credential for mechanism; RESOURCE_NOT_FOUND when
// it has none.
func (b *Broker) DeleteScramCredential(user, mechanism string) *Error {
	_, err := b.propose(controller.DeleteScramCredential{User: user, Mechanism: mechanism})
	return err
}
