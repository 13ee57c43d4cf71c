package security

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"strings"
	"testing"
)

func TestPrincipalMappingRules(t *testing.T) {
	const dn = "CN=Alice,OU=Eng,O=Acme,C=US"
	cases := []struct {
		rules, dn, want, wantErr string
	}{
		{rules: "", dn: dn, want: dn},
		{rules: "DEFAULT", dn: dn, want: dn},
		{rules: "RULE:^CN=(.*?),OU=(.*?),O=(.*?),C=(.*?)$/$1@$3/L", dn: dn, want: "alice@acme"},
		{rules: "RULE:^CN=(.*?),.*$/$1/U", dn: dn, want: "ALICE"},
		// The first rule that matches wins; one that does not match is skipped.
		{rules: "RULE:^CN=bob,.*$/robert/, RULE:^CN=([^,]*),.*$/$1/, DEFAULT", dn: dn, want: "Alice"},
		// A pattern matches the whole subject, not part of it.
		{rules: "RULE:CN=Alice/x/", dn: dn, wantErr: "no principal mapping rule applies"},
		{rules: "RULE:CN=Alice/x/,DEFAULT", dn: dn, want: dn},
		// Commas and escaped slashes inside a pattern or replacement.
		{rules: `RULE:^CN=([^,]*),OU=Eng,.*$/eng\/$1/`, dn: dn, want: "eng/Alice"},
		{rules: "RULE:^CN=a,O=b$/ab/\nDEFAULT", dn: "CN=a,O=b", want: "ab"},
		{rules: "RULE:^(.*)$/$9/", dn: dn, wantErr: "empty name"},
		// The example of docs/operations.md.
		{rules: "RULE:^CN=([^,]*),O=Acme(,.*)?$/$1/L,DEFAULT", dn: "CN=Alice,O=Acme,C=US", want: "alice"},
		{rules: "RULE:^CN=([^,]*),O=Acme(,.*)?$/$1/L,DEFAULT", dn: "CN=Bob,O=Other", want: "CN=Bob,O=Other"},
	}
	for _, c := range cases {
		m, err := ParsePrincipalMappingRules(c.rules)
		if err != nil {
			t.Fatalf("parse %q: %v", c.rules, err)
		}
		got, err := m.Name(c.dn)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q on %q: got %q, %v; want error %q", c.rules, c.dn, got, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q on %q: got %q, %v; want %q", c.rules, c.dn, got, err, c.want)
		}
	}
}

func TestPrincipalMappingRulesRefused(t *testing.T) {
	for rules, want := range map[string]string{
		"RULE:abc":         "both slashes",
		"RULE:abc/def":     "no closing slash",
		"RULE:(/x/":        "pattern",
		"rule:^.*$/x/":     "want RULE:pattern/replacement/[LU] or DEFAULT",
		"DEFAULT,":         "empty rule",
		"DEFAULT x":        "unexpected",
		"RULE:^.*$/x/Q":    "unexpected",
		"DEFAULT,,DEFAULT": "want RULE",
		"RULE:^.*$/x/LDEF": "unexpected",
	} {
		_, err := ParsePrincipalMappingRules(rules)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error with %q", rules, err, want)
		}
	}
}

func TestPrincipalOfCertificate(t *testing.T) {
	m, err := ParsePrincipalMappingRules("RULE:^CN=([^,]*)(,.*)?$/$1/L")
	if err != nil {
		t.Fatal(err)
	}
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: "Client-1", Organization: []string{"Acme"}}}
	p, err := m.Principal(cert)
	if err != nil || p != "User:client-1" {
		t.Fatalf("got %q, %v; want User:client-1", p, err)
	}
}

// FuzzPrincipalMappingRules parses arbitrary rules and applies what parses to arbitrary
// subjects: an error or a non-empty name, never a panic.
func FuzzPrincipalMappingRules(f *testing.F) {
	for _, s := range []string{"", "DEFAULT", "RULE:^CN=(.*?),.*$/$1/L,DEFAULT", `RULE:a\/b/c\//U`, "RULE:/", "RULE:(//", "DEFAULT,\n"} {
		f.Add(s, "CN=alice,O=acme")
	}
	f.Fuzz(func(t *testing.T, rules, dn string) {
		m, err := ParsePrincipalMappingRules(rules)
		if err != nil {
			return
		}
		if len(m.rules) == 0 {
			t.Fatalf("%q parsed to no rules", rules)
		}
		name, err := m.Name(dn)
		if err == nil && name == "" {
			t.Fatalf("%q on %q: empty name without an error", rules, dn)
		}
	})
}
