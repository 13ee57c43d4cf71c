package security

import "strings"

// Principal is an authenticated identity in Kafka's form, "Type:name", as ACLs name it:
// "User:alice" for a SASL user or a certificate's mapped name, "User:ANONYMOUS" for a client
// of a listener without authentication.
type Principal string

// Anonymous is the principal of a connection on a listener that authenticates no one
// (PLAINTEXT, or SSL without a client certificate), as in Kafka.
const Anonymous Principal = "User:ANONYMOUS"

// UserPrincipal is the principal of user name.
func UserPrincipal(name string) Principal { return Principal("User:" + name) }

// Name returns the part after the type ("alice" for "User:alice").
func (p Principal) Name() string {
	if _, name, ok := strings.Cut(string(p), ":"); ok {
		return name
	}
	return string(p)
}
