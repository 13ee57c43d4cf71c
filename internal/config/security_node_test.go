package config

import (
	"strings"
	"testing"
)

func init() {
	for name, cases := range map[string][]vcase{
		NodeRPCTLSEnabled:       {ok("true", "true"), ok("FALSE", "false"), bad("yes", "not a boolean")},
		NodeRPCTLSCertificate:   {ok("", ""), ok("/etc/cairn/rpc.pem", "/etc/cairn/rpc.pem"), bad("a\nb", "control characters")},
		NodeRPCTLSKey:           {ok("/etc/cairn/rpc-key.pem", "/etc/cairn/rpc-key.pem"), bad("a\x00b", "control characters")},
		NodeRPCTLSTruststore:    {ok(" /etc/cairn/ca.pem ", "/etc/cairn/ca.pem"), bad("\t", "control characters")},
		NodeAdminAuth:           {ok("none", "none"), ok("Basic", "basic"), bad("digest", "valid values: none, basic")},
		NodeAdminAuthProbesOpen: {ok("true", "true"), ok("false", "false"), bad("open", "not a boolean")},
		NodeAdminTLSCertificate: {ok("", ""), ok("a.pem", "a.pem"), bad("a\x01", "control characters")},
		NodeAdminTLSKey:         {ok("k.pem", "k.pem"), bad("k\x7f", "control characters")},
		NodeAdminTLSTruststore:  {ok("ca.pem", "ca.pem"), bad("c\na", "control characters")},
		NodeAdminTLSClientAuth:  {ok("none", "none"), ok("requested", "requested"), ok("REQUIRED", "required"), bad("want", "not one of the allowed values")},
	} {
		validationCases[name] = cases
	}
}

// A switch turned on without what it needs is refused at start, naming what is missing.
func TestResolveNodeSecurityNeedsItsFiles(t *testing.T) {
	for _, c := range []struct {
		values map[string]string
		want   string // "" for accepted
	}{
		{map[string]string{NodeRPCTLSEnabled: "true"}, "rpc.tls.enabled is true but rpc.tls.certificate.location is not set"},
		{map[string]string{NodeRPCTLSEnabled: "true", NodeRPCTLSCertificate: "c", NodeRPCTLSKey: "k"}, "rpc.tls.truststore.location is not set"},
		{map[string]string{NodeRPCTLSEnabled: "true", NodeRPCTLSCertificate: "c", NodeRPCTLSKey: "k", NodeRPCTLSTruststore: "ca"}, ""},
		// Files without the switch are accepted and unused, so a switch can be flipped alone.
		{map[string]string{NodeRPCTLSCertificate: "c"}, ""},
		{map[string]string{NodeAdminTLSCertificate: "c"}, "must be set together"},
		{map[string]string{NodeAdminTLSClientAuth: "required"}, "needs HTTPS on the admin API"},
		{map[string]string{NodeAdminTLSClientAuth: "requested", NodeAdminTLSCertificate: "c", NodeAdminTLSKey: "k"}, "needs admin.tls.truststore.location"},
		{map[string]string{NodeAdminTLSClientAuth: "required", NodeAdminTLSCertificate: "c", NodeAdminTLSKey: "k", NodeAdminTLSTruststore: "ca", NodeAdminAuth: "basic"}, ""},
	} {
		got, err := ResolveNode(c.values)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.values, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: got %v, want an error with %q", c.values, err, c.want)
		case c.want == "" && c.values[NodeAdminAuth] == "basic" && (got.Admin.Auth != "basic" || !got.Admin.TLSEnabled() || got.Admin.ClientAuth != "required" || !got.Admin.ProbesOpen):
			t.Errorf("%v: resolved %+v", c.values, got.Admin)
		}
	}
}
