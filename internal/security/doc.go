// Package security owns who a client is and what it may do: principals, SCRAM and PLAIN
// credentials and the server side of their SASL exchanges, and Kafka's ACL model with the
// authorizer that evaluates it (literal, prefixed and wildcard patterns, implied
// operations, hosts, deny over allow, super users).
//
// It is pure policy: it holds no sockets, no files and no replicated state. The credentials
// and ACLs it evaluates are stored in the controller's log (internal/controller) and handed
// to it; the Kafka layer (internal/kafka), the admin API and the broker's forwarding path
// ask it for verdicts. It must never import a package of Cairn above it, and must never see
// or keep a password beyond the call that derives or checks a credential.
package security
