package config

// Node properties of inter-broker TLS and of the admin API's security (issue 15). They are
// kept apart from the listener properties: each is read once, at `cairn start`, by the
// component named in its EnforcedBy.
const (
	NodeRPCTLSEnabled        = "rpc.tls.enabled"
	NodeRPCTLSCertificate    = "rpc.tls.certificate.location"
	NodeRPCTLSKey            = "rpc.tls.key.location"
	NodeRPCTLSTruststore     = "rpc.tls.truststore.location"
	NodeAdminAuth            = "admin.auth"
	NodeAdminAuthProbesOpen  = "admin.auth.probes.open"
	NodeAdminTLSCertificate  = "admin.tls.certificate.location"
	NodeAdminTLSKey          = "admin.tls.key.location"
	NodeAdminTLSTruststore   = "admin.tls.truststore.location"
	NodeAdminTLSClientAuth   = "admin.tls.client.auth"
	AdminAuthNone            = "none"
	AdminAuthBasic           = "basic"
	adminClientAuthNone      = "none"
	adminClientAuthRequested = "requested"
	adminClientAuthRequired  = "required"
)

// RPCTLS is the inter-broker transport's TLS: one certificate and key, and one CA bundle
// that is both what verifies peers that dial in and what verifies the peers dialled.
type RPCTLS struct {
	Enabled               bool
	Cert, Key, Truststore string
}

// AdminSecurity is how the admin HTTP API authenticates and what it serves over.
type AdminSecurity struct {
	Auth       string // AdminAuthNone or AdminAuthBasic
	ProbesOpen bool   // /v1/status/ready and /metrics served without credentials
	// TLS is on when Cert is set. ClientAuth is none, requested or required; with a client
	// certificate the principal is "User:<its CN>".
	Cert, Key, Truststore, ClientAuth string
}

// TLSEnabled reports whether the admin API serves HTTPS.
func (a AdminSecurity) TLSEnabled() bool { return a.Cert != "" }

type nodeAdder func(name, flag string, s spec, def, defFrom, desc, enforcedBy string)

func securityNodeProperties(node nodeAdder) {
	node(NodeRPCTLSEnabled, "--rpc-tls-enabled", boolSpec(), "false", "",
		"Put every inter-broker connection (Raft, forwarding, joins, probes) under mutual TLS. Each side presents rpc.tls.certificate.location and must chain to rpc.tls.truststore.location; a broker without such a certificate, or with TLS off, is refused before any message. Every broker of a cluster must agree.",
		"rpc: TLS handshake before the hello, both directions")
	node(NodeRPCTLSCertificate, "--rpc-tls-certificate-location", pathSpec(), "", "",
		"PEM certificate (chain) this broker presents to its peers, as server and as client; reloaded when the file changes. Required with rpc.tls.enabled.",
		"tlsconf: reloaded at each new handshake")
	node(NodeRPCTLSKey, "--rpc-tls-key-location", pathSpec(), "", "",
		"PEM private key of rpc.tls.certificate.location. Required with rpc.tls.enabled.",
		"tlsconf: reloaded at each new handshake")
	node(NodeRPCTLSTruststore, "--rpc-tls-truststore-location", pathSpec(), "", "",
		"PEM CA bundle that names the cluster: a peer's certificate must chain to it, whether the peer dials in or is dialled. Required with rpc.tls.enabled.",
		"tlsconf: reloaded at each new handshake")
	node(NodeAdminAuth, "--admin-auth", enumSpec(AdminAuthNone, AdminAuthBasic), AdminAuthNone, "",
		"How the admin HTTP API authenticates: none serves everyone (as the principal User:ANONYMOUS, or the client certificate's); basic requires HTTP basic authentication against the SCRAM users (or a client certificate when admin.tls.client.auth asks for one) and answers 401 otherwise. Every request is then authorised: DESCRIBE on the cluster for GET, ALTER otherwise.",
		"admin: authentication and authorisation of each request")
	node(NodeAdminAuthProbesOpen, "--admin-auth-probes-open", boolSpec(), "true", "",
		"Serve GET /v1/status/ready and GET /metrics without credentials and without an ACL check, whatever admin.auth says, for load balancers, orchestrators and Prometheus; false puts them behind authentication like every other endpoint.",
		"admin: authentication")
	node(NodeAdminTLSCertificate, "--admin-tls-certificate-location", pathSpec(), "", "",
		"PEM certificate of the admin API: when set, the admin API serves HTTPS only (TLS 1.2 or later); reloaded when the file changes.",
		"admin: HTTPS listener")
	node(NodeAdminTLSKey, "--admin-tls-key-location", pathSpec(), "", "",
		"PEM private key of admin.tls.certificate.location; required with it.",
		"admin: HTTPS listener")
	node(NodeAdminTLSTruststore, "--admin-tls-truststore-location", pathSpec(), "", "",
		"PEM CA bundle that verifies the admin API's client certificates; required when admin.tls.client.auth is requested or required.",
		"admin: HTTPS listener")
	node(NodeAdminTLSClientAuth, "--admin-tls-client-auth", enumSpec(adminClientAuthNone, adminClientAuthRequested, adminClientAuthRequired), adminClientAuthNone, "",
		"Client certificates on the admin API: requested verifies one if given, required refuses a handshake without one. A verified certificate authenticates its holder as User:<common name>, with no password.",
		"admin: HTTPS listener and authentication")
}

// resolveSecurity reads the security node properties and checks that they fit together:
// a switch turned on without the files it needs is refused at start, with the reason,
// rather than found out at the first handshake.
func resolveSecurity(get func(string) string) (RPCTLS, AdminSecurity, error) {
	r := RPCTLS{Enabled: get(NodeRPCTLSEnabled) == "true", Cert: get(NodeRPCTLSCertificate),
		Key: get(NodeRPCTLSKey), Truststore: get(NodeRPCTLSTruststore)}
	if r.Enabled {
		for _, need := range []struct{ name, v string }{{NodeRPCTLSCertificate, r.Cert}, {NodeRPCTLSKey, r.Key}, {NodeRPCTLSTruststore, r.Truststore}} {
			if need.v == "" {
				return r, AdminSecurity{}, &Error{Msg: NodeRPCTLSEnabled + " is true but " + need.name +
					" is not set: mutual TLS between brokers needs this broker's certificate, its key and the cluster's CA bundle"}
			}
		}
	}
	a := AdminSecurity{Auth: get(NodeAdminAuth), ProbesOpen: get(NodeAdminAuthProbesOpen) == "true",
		Cert: get(NodeAdminTLSCertificate), Key: get(NodeAdminTLSKey), Truststore: get(NodeAdminTLSTruststore),
		ClientAuth: get(NodeAdminTLSClientAuth)}
	switch {
	case (a.Cert == "") != (a.Key == ""):
		return r, a, &Error{Msg: NodeAdminTLSCertificate + " and " + NodeAdminTLSKey + " must be set together (HTTPS on the admin API needs both)"}
	case a.ClientAuth != adminClientAuthNone && a.Cert == "":
		return r, a, &Error{Msg: NodeAdminTLSClientAuth + "=" + a.ClientAuth + " needs HTTPS on the admin API: set " + NodeAdminTLSCertificate + " and " + NodeAdminTLSKey}
	case a.ClientAuth != adminClientAuthNone && a.Truststore == "":
		return r, a, &Error{Msg: NodeAdminTLSClientAuth + "=" + a.ClientAuth + " needs " + NodeAdminTLSTruststore + ", the CA bundle that verifies client certificates"}
	}
	return r, a, nil
}
